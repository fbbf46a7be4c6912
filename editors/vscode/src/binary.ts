/**
 * Finds the `bareagent` binary: the `bareagent.path` setting, else
 * `bareagent` on PATH. When there is none, says so with a "Set path" button.
 */
import * as vscode from 'vscode';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { binarySetting } from './settings';
import { inspector } from './config';

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const names = process.platform === 'win32' ? [`${name}.exe`, name] : [name];
  for (const dir of dirs) {
    for (const n of names) {
      const candidate = path.join(dir, n);
      if (executable(candidate)) return candidate;
    }
  }
  return undefined;
}

/** The binary to start, or why there is none (after telling the user). */
export function findBinary(): { path: string } | { missing: string } {
  const configured = binarySetting(inspector(), vscode.workspace.isTrusted);
  if (configured) {
    const expanded = configured.replace(/^~(?=$|\/)/, process.env.HOME ?? '~');
    if (executable(expanded)) return { path: expanded };
    const missing = `bareagent.path is set to \`${configured}\`, which is not an executable file.`;
    void notFound(missing);
    return { missing };
  }
  const found = onPath('bareagent');
  if (found) return { path: found };
  // The editor's PATH, not the terminal's: a GUI-started editor (or code-server) may not have the shell's.
  const missing =
    'the `bareagent` binary is not on the PATH the editor sees (see the "bareagent" output for it). Install it (`cargo install --path .` in its repository) or set its path.';
  void notFound(missing);
  return { missing };
}

async function notFound(message: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(`bareagent: ${message}`, 'Set path', 'Open settings');
  if (choice === 'Set path') await vscode.commands.executeCommand('bareagent.vscode.setPath');
  if (choice === 'Open settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'bareagent.path');
}

/** Asks for the binary and saves it in the user's settings (never the workspace's). */
export async function setPath(): Promise<void> {
  const picked = await vscode.window.showOpenDialog({
    canSelectFiles: true,
    canSelectFolders: false,
    canSelectMany: false,
    title: 'The bareagent binary',
    openLabel: 'Use this binary',
  });
  if (!picked || picked.length === 0) return;
  await vscode.workspace
    .getConfiguration('bareagent')
    .update('path', picked[0].fsPath, vscode.ConfigurationTarget.Global);
}
