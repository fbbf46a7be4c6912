// Writes src/editorEvent.ts, the TypeScript types of `bareagent/event`,
// from the JSON Schema the server checks in
// (editors/protocol/bareagent-event.schema.json). `npm run generate:events`
// after the schema changed; with `--check` it only says whether the file
// is current (test/events.test.ts runs that).
import { compile } from 'json-schema-to-typescript';
import { readFileSync, writeFileSync } from 'node:fs';

const SCHEMA = '../protocol/bareagent-event.schema.json';
const OUTPUT = 'src/editorEvent.ts';

const banner = `// The params of the server's \`bareagent/event\` notification, generated
// from editors/protocol/bareagent-event.schema.json by \`npm run generate:events\`: do not edit.`;

const schema = JSON.parse(readFileSync(SCHEMA, 'utf8'));
compile(schema, 'EditorEvent', {
  bannerComment: banner,
  // Every object in the schema is closed; `input` (any JSON) is `unknown`.
  additionalProperties: false,
  unknownAny: true,
  style: { singleQuote: true, printWidth: 120 },
}).then((types) => {
  if (!process.argv.includes('--check')) {
    writeFileSync(OUTPUT, types);
    return;
  }
  let current = '';
  try {
    current = readFileSync(OUTPUT, 'utf8');
  } catch {}
  if (current !== types) {
    console.error(`${OUTPUT} is not what ${SCHEMA} makes: run \`npm run generate:events\` in editors/vscode.`);
    process.exit(1);
  }
});
