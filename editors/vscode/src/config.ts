/** Reads the `bareagent.*` settings from VS Code for the pure rules in settings.ts. */
import * as vscode from 'vscode';
import { Inspect, serverSettings, ServerSettings } from './settings';

export function inspector(): Inspect {
  const config = vscode.workspace.getConfiguration('bareagent');
  return <T>(key: string) => {
    const seen = config.inspect<T>(key);
    return seen && { ...seen, value: config.get<T>(key) };
  };
}

/** What the server gets as its `bareagent` settings now. */
export function currentSettings(): ServerSettings {
  return serverSettings(inspector(), vscode.workspace.isTrusted);
}
