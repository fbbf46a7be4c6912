/**
 * What becomes a link in a reply. A web link only where the text says it is
 * one (an explicit scheme, or `www.`): markdown-it's fuzzy linking turns
 * `calc.py` into http://calc.py (`.py`, `.rs`, `.md`, `.sh` are real
 * top-level domains). A workspace path (`src/calc.py`, `calc.py:12`) is a
 * candidate the extension checks on disk; those that exist open the file.
 * No `vscode` import: the unit tests run it under plain Node.
 */

/** The part of linkify-it's match markdown-it reads. */
type Match = { schema: string; raw: string };

/** Drops linkify-it's schemaless guesses but `www.…`. */
export function onlyRealLinks<T extends Match>(matches: T[] | null): T[] {
  return (matches ?? []).filter((m) => m.schema !== '' || /^www\./i.test(m.raw));
}

/** A path a reply names, with the line (and column) it may point at. */
export type PathMention = { text: string; path: string; line?: number; column?: number; index: number };

// A name with an extension (`calc.py`, `src/a.test.ts`) or a path with a
// slash (`src/lsp`), optionally `:line[:column]`; not inside a longer word,
// a URL or another path.
const PATH = /(?<![\w/.@:-])((?:\.{1,2}\/|\/)?(?:[\w@-][\w.@-]*\/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}|(?:\.{1,2}\/|\/)?(?:[\w@-][\w.@-]*\/)+[\w-][\w.-]*)(?::(\d+)(?::(\d+))?)?(?![\w/-]|\.[\w])/g;

/** The paths `text` names, in order. */
export function pathMentions(text: string): PathMention[] {
  const found: PathMention[] = [];
  for (const m of text.matchAll(PATH)) {
    const path = m[1];
    // A domain-looking word with no slash and a URL-ish tail is left alone.
    if (/^www\./i.test(path)) continue;
    found.push({
      text: m[0],
      path,
      line: m[2] ? Number(m[2]) : undefined,
      column: m[3] ? Number(m[3]) : undefined,
      index: m.index ?? 0,
    });
  }
  return found;
}

/**
 * Whether a path a reply named may be opened as the workspace folder's:
 * no `..` segment (`Uri.joinPath` would climb out of the folder with it),
 * and under the folder's own path (an absolute one too).
 */
export function insideFolder(path: string, folder: string): boolean {
  if (path.split('/').some((segment) => segment === '..')) return false;
  if (!path.startsWith('/')) return true;
  const root = folder.endsWith('/') ? folder : `${folder}/`;
  return path.startsWith(root);
}
