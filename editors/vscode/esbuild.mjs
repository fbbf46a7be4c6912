// Bundles the extension (Node, CommonJS, `vscode` external) and the chat
// view's script (browser, IIFE). `--production` minifies; `--tests` builds
// the unit tests of the modules that do not import `vscode`.
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';

const production = process.argv.includes('--production');
const common = { bundle: true, minify: production, sourcemap: !production, logLevel: 'warning' };

if (process.argv.includes('--tests')) {
  const tests = readdirSync('test').filter((f) => f.endsWith('.test.ts')).map((f) => `test/${f}`);
  await esbuild.build({ ...common, entryPoints: tests, outdir: 'out-test', platform: 'node', format: 'cjs', sourcemap: false });
} else {
  // A stale file (a source map from a dev build) must not end up in the .vsix.
  rmSync('dist', { recursive: true, force: true });
  await Promise.all([
    esbuild.build({
      ...common,
      entryPoints: ['src/extension.ts'],
      outfile: 'dist/extension.js',
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: ['vscode'],
    }),
    esbuild.build({
      ...common,
      entryPoints: ['src/webview/chat.ts'],
      outfile: 'dist/chat.js',
      platform: 'browser',
      format: 'iife',
      target: 'es2022',
    }),
    esbuild.build({ ...common, entryPoints: ['src/webview/chat.css'], outfile: 'dist/chat.css', sourcemap: false }),
  ]);
}
