/**
 * VS Code's answers (what `vscode.executeReferenceProvider` and the other
 * provider commands return) as the Language Server Protocol's results, for
 * `bareagent/codeIntelligence`. Pure: it reads VS Code's values by their
 * shape alone, so the unit tests feed it plain objects without VS Code.
 * (vscode-languageclient's code2Protocol converter has no hover, document
 * symbol, location link or workspace edit conversions.)
 *
 * Positions are VS Code's own: lines from 0, characters in UTF-16 code
 * units, as LSP counts them by default.
 */

/** An LSP position or range, and what VS Code's have of them. */
export interface Pos {
  line: number;
  character: number;
}
export interface Rng {
  start: Pos;
  end: Pos;
}

/** A `vscode.Uri`: only its string form is read. */
export interface UriLike {
  toString(): string;
}

export interface LocationLike {
  uri: UriLike;
  range: Rng;
}

export interface LocationLinkLike {
  targetUri: UriLike;
  targetRange: Rng;
  targetSelectionRange?: Rng;
}

/** `vscode.MarkdownString`, or the deprecated `MarkedString`. */
export type HoverContent = string | { value: string; language?: string };

export interface HoverLike {
  contents: HoverContent[];
  range?: Rng;
}

export interface SymbolLike {
  name: string;
  /** VS Code's `SymbolKind`: LSP's, less one. */
  kind: number;
  tags?: readonly number[];
  detail?: string;
  containerName?: string;
  /** A `DocumentSymbol` has ranges and children; a `SymbolInformation` a location. */
  range?: Rng;
  selectionRange?: Rng;
  children?: SymbolLike[];
  location?: LocationLike;
}

export interface CallItemLike {
  name: string;
  kind: number;
  tags?: readonly number[];
  detail?: string;
  uri: UriLike;
  range: Rng;
  selectionRange: Rng;
}

export interface TextEditLike {
  range: Rng;
  newText: string;
}

export function asRange(range: Rng): Rng {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

function isLink(value: LocationLike | LocationLinkLike): value is LocationLinkLike {
  return (value as LocationLinkLike).targetUri !== undefined;
}

/** A location or a link, as a `Location`: a link points at its target's name where it has one. */
export function asLocation(value: LocationLike | LocationLinkLike): { uri: string; range: Rng } {
  if (isLink(value)) {
    return { uri: value.targetUri.toString(), range: asRange(value.targetSelectionRange ?? value.targetRange) };
  }
  return { uri: value.uri.toString(), range: asRange(value.range) };
}

/** Definitions, references, implementations: always `Location[]` (LSP allows no mix of links and locations). */
export function asLocations(values: readonly (LocationLike | LocationLinkLike)[] | undefined | null) {
  return (values ?? []).map(asLocation);
}

/** Where a location starts, to compare two. */
function startOf(value: LocationLike | LocationLinkLike): string {
  const { uri, range } = asLocation(value);
  return `${uri}:${range.start.line}:${range.start.character}`;
}

/** References less the declarations (`context.includeDeclaration: false`). */
export function withoutDeclarations(
  references: readonly (LocationLike | LocationLinkLike)[],
  declarations: readonly (LocationLike | LocationLinkLike)[],
): (LocationLike | LocationLinkLike)[] {
  const declared = new Set(declarations.map(startOf));
  return references.filter((r) => !declared.has(startOf(r)));
}

function asMarkdown(content: HoverContent): string {
  if (typeof content === 'string') return content;
  if (content.language !== undefined) return '```' + content.language + '\n' + content.value + '\n```';
  return content.value;
}

/** What every provider said on hover, as one `Hover` (markdown; a rule between providers), or null. */
export function asHover(hovers: readonly HoverLike[] | undefined | null) {
  const said = (hovers ?? [])
    .map((h) => h.contents.map(asMarkdown).filter((text) => text.trim() !== '').join('\n\n'))
    .filter((text) => text !== '');
  if (said.length === 0) return null;
  const range = (hovers ?? []).find((h) => h.range)?.range;
  return {
    contents: { kind: 'markdown', value: said.join('\n\n---\n\n') },
    ...(range ? { range: asRange(range) } : {}),
  };
}

function kindAndTags(symbol: { kind: number; tags?: readonly number[] }) {
  return { kind: symbol.kind + 1, ...(symbol.tags?.length ? { tags: [...symbol.tags] } : {}) };
}

/** A `DocumentSymbol` (with its children) where VS Code has one, else a `SymbolInformation`. */
export function asSymbol(symbol: SymbolLike): object {
  if (symbol.range && symbol.selectionRange) {
    return {
      name: symbol.name,
      ...(symbol.detail ? { detail: symbol.detail } : {}),
      ...kindAndTags(symbol),
      range: asRange(symbol.range),
      selectionRange: asRange(symbol.selectionRange),
      children: (symbol.children ?? []).map(asSymbol),
    };
  }
  return {
    name: symbol.name,
    ...kindAndTags(symbol),
    ...(symbol.containerName ? { containerName: symbol.containerName } : {}),
    location: symbol.location ? asLocation(symbol.location) : undefined,
  };
}

export function asSymbols(symbols: readonly SymbolLike[] | undefined | null) {
  return (symbols ?? []).map(asSymbol);
}

export function asCallItem(item: CallItemLike) {
  return {
    name: item.name,
    ...kindAndTags(item),
    ...(item.detail ? { detail: item.detail } : {}),
    uri: item.uri.toString(),
    range: asRange(item.range),
    selectionRange: asRange(item.selectionRange),
  };
}

export function asIncomingCalls(calls: readonly { from: CallItemLike; fromRanges: Rng[] }[] | undefined | null) {
  return (calls ?? []).map((c) => ({ from: asCallItem(c.from), fromRanges: c.fromRanges.map(asRange) }));
}

export function asOutgoingCalls(calls: readonly { to: CallItemLike; fromRanges: Rng[] }[] | undefined | null) {
  return (calls ?? []).map((c) => ({ to: asCallItem(c.to), fromRanges: c.fromRanges.map(asRange) }));
}

/** A `vscode.WorkspaceEdit`'s text edits (`entries()`), as a `WorkspaceEdit` with `changes`. */
export function asWorkspaceEdit(entries: readonly [UriLike, readonly TextEditLike[]][]) {
  const changes: Record<string, { range: Rng; newText: string }[]> = {};
  for (const [uri, edits] of entries) {
    const key = uri.toString();
    changes[key] = [...(changes[key] ?? []), ...edits.map((e) => ({ range: asRange(e.range), newText: e.newText }))];
  }
  return { changes };
}
