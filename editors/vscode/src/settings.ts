/**
 * The settings the extension passes to the server (as `initializationOptions`,
 * in answer to `workspace/configuration`, and on change), read with the
 * workspace's trust in mind. Pure: it sees settings through `inspect`, so the
 * unit tests feed it tables of cases without VS Code.
 *
 * In an untrusted workspace the values a repository can plant
 * (`.vscode/settings.json`, a `.code-workspace` file) are not taken for the
 * settings that widen what the agent may do or where it sends the code:
 * only the user's own (global) value is. VS Code itself filters these for
 * `restrictedConfigurations`; this is the same rule enforced here too, so it
 * holds whatever the editor does.
 */

/** What `WorkspaceConfiguration.inspect` returns, reduced to what is read here. */
export interface Inspected<T> {
  /** The value VS Code resolves (`get`), objects merged across levels. */
  value?: T;
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
  // Language-specific values are never read: the agent is not per-language.
}

export type Inspect = <T>(key: string) => Inspected<T> | undefined;

/** Settings a workspace may not set while it is untrusted. */
export const RESTRICTED = ['path', 'permissionMode', 'baseUrl', 'permissions'] as const;

/** The value of `key` as VS Code would resolve it, or only the user's when restricted. */
export function resolve<T>(inspect: Inspect, key: string, trusted: boolean): T | undefined {
  const seen = inspect<T>(key);
  if (!seen) return undefined;
  const restricted = (RESTRICTED as readonly string[]).includes(key);
  if (trusted || !restricted) return seen.value;
  return seen.globalValue ?? seen.defaultValue;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The `bareagent` section as the server reads it (docs/protocol.md "Settings"). */
export interface ServerSettings {
  provider?: string;
  model?: string;
  baseUrl?: string;
  permissionMode?: string;
  permissions?: { allow: string[]; ask: string[]; deny: string[] };
  maxIterations?: number;
  edits?: { save: string };
  diagnosticsSettleMs?: number;
  effort?: string;
  thinking?: string;
  wire?: string;
}

/**
 * The server's settings. Empty values are left out, so the server falls
 * back to its config files rather than receiving `""` (which it would
 * reject, dropping every setting).
 */
export function serverSettings(inspect: Inspect, trusted: boolean): ServerSettings {
  const out: ServerSettings = {};
  const provider = nonEmpty(resolve(inspect, 'provider', trusted));
  if (provider) out.provider = provider;
  const model = nonEmpty(resolve(inspect, 'model', trusted));
  if (model) out.model = model;
  const baseUrl = nonEmpty(resolve(inspect, 'baseUrl', trusted));
  if (baseUrl) out.baseUrl = baseUrl;
  const mode = nonEmpty(resolve(inspect, 'permissionMode', trusted));
  if (mode) out.permissionMode = mode;
  // `allow` only widens: untrusted, it is the user's alone. `ask` and `deny`
  // only narrow, so a workspace's are kept whatever its trust.
  const rules = resolve<Record<string, unknown>>(inspect, 'permissions', trusted) ?? {};
  const narrowing = resolve<Record<string, unknown>>(inspect, 'permissions', true) ?? {};
  const lists = { allow: strings(rules.allow), ask: strings(narrowing.ask), deny: strings(narrowing.deny) };
  if (lists.allow.length + lists.ask.length + lists.deny.length > 0) out.permissions = lists;
  const max = resolve<number | null>(inspect, 'maxIterations', trusted);
  if (typeof max === 'number' && max > 0) out.maxIterations = Math.floor(max);
  const save = nonEmpty(resolve(inspect, 'edits.save', trusted));
  if (save) out.edits = { save };
  const settle = resolve<number | null>(inspect, 'diagnosticsSettleMs', trusted);
  if (typeof settle === 'number' && settle >= 0) out.diagnosticsSettleMs = Math.floor(settle);
  // How the model is asked: like the model's name, a workspace may say.
  for (const key of ['effort', 'thinking', 'wire'] as const) {
    const value = nonEmpty(resolve(inspect, key, trusted));
    if (value) out[key] = value;
  }
  return out;
}

/** The binary to start: the setting (user-level only when untrusted), else `bareagent` on PATH. */
export function binarySetting(inspect: Inspect, trusted: boolean): string | undefined {
  return nonEmpty(resolve(inspect, 'path', trusted));
}
