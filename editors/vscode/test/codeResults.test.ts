// VS Code's provider answers, as plain objects of the shapes VS Code
// returns, converted to the LSP results `bareagent/codeIntelligence` sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  asCallItem,
  asHover,
  asIncomingCalls,
  asLocations,
  asOutgoingCalls,
  asSymbols,
  asWorkspaceEdit,
  withoutDeclarations,
} from '../src/codeResults';

/** A `vscode.Uri`'s string form is its `toString()`, not a property. */
const uri = (path: string) => ({ toString: () => `file://${path}`, fsPath: path });
const range = (line: number, from: number, to: number) => ({
  start: { line, character: from },
  end: { line, character: to },
  isEmpty: from === to,
});

test('locations and links become Location[], a link at its target name', () => {
  const location = { uri: uri('/w/a.ts'), range: range(3, 2, 5) };
  const link = {
    originSelectionRange: range(0, 0, 3),
    targetUri: uri('/w/b.ts'),
    targetRange: range(10, 0, 40),
    targetSelectionRange: range(10, 16, 19),
  };
  const bare = { targetUri: uri('/w/c.ts'), targetRange: range(1, 0, 9) };
  assert.deepEqual(asLocations([location, link, bare]), [
    { uri: 'file:///w/a.ts', range: { start: { line: 3, character: 2 }, end: { line: 3, character: 5 } } },
    { uri: 'file:///w/b.ts', range: { start: { line: 10, character: 16 }, end: { line: 10, character: 19 } } },
    { uri: 'file:///w/c.ts', range: { start: { line: 1, character: 0 }, end: { line: 1, character: 9 } } },
  ]);
  assert.deepEqual(asLocations(undefined), []);
});

test('references without the declaration drop the definition site only', () => {
  const declaration = { uri: uri('/w/a.ts'), range: range(0, 16, 19) };
  const use = { uri: uri('/w/b.ts'), range: range(4, 2, 5) };
  const sameLineOtherFile = { uri: uri('/w/b.ts'), range: range(0, 16, 19) };
  const link = { targetUri: uri('/w/a.ts'), targetRange: range(0, 0, 30), targetSelectionRange: range(0, 16, 19) };
  assert.deepEqual(withoutDeclarations([declaration, use, sameLineOtherFile], [link]), [use, sameLineOtherFile]);
});

test('hover: markdown strings and marked strings of every provider, one markdown value', () => {
  const hovers = [
    { contents: [{ value: 'function add(a: number, b: number): number', language: 'typescript' }, { value: 'Adds.' }], range: range(2, 9, 12) },
    { contents: ['', 'from another provider'] },
  ];
  assert.deepEqual(asHover(hovers), {
    contents: {
      kind: 'markdown',
      value: '```typescript\nfunction add(a: number, b: number): number\n```\n\nAdds.\n\n---\n\nfrom another provider',
    },
    range: { start: { line: 2, character: 9 }, end: { line: 2, character: 12 } },
  });
  assert.equal(asHover([]), null);
  assert.equal(asHover([{ contents: [{ value: '  ' }] }]), null);
});

test('document symbols keep their children; kinds are LSP kinds (VS Code counts from 0)', () => {
  // VS Code's SymbolKind.Class is 4 and Method 5; LSP's are 5 and 6.
  const method = { name: 'area', detail: '', kind: 5, range: range(2, 2, 4), selectionRange: range(2, 2, 6), children: [] };
  const klass = {
    name: 'Shape',
    detail: 'exported',
    kind: 4,
    tags: [1],
    range: range(1, 0, 5),
    selectionRange: range(1, 6, 11),
    children: [method],
    // A merged SymbolInformation & DocumentSymbol also has a location.
    location: { uri: uri('/w/a.ts'), range: range(1, 0, 5) },
  };
  assert.deepEqual(asSymbols([klass]), [
    {
      name: 'Shape',
      detail: 'exported',
      kind: 5,
      tags: [1],
      range: { start: { line: 1, character: 0 }, end: { line: 1, character: 5 } },
      selectionRange: { start: { line: 1, character: 6 }, end: { line: 1, character: 11 } },
      children: [
        {
          name: 'area',
          kind: 6,
          range: { start: { line: 2, character: 2 }, end: { line: 2, character: 4 } },
          selectionRange: { start: { line: 2, character: 2 }, end: { line: 2, character: 6 } },
          children: [],
        },
      ],
    },
  ]);
});

test('workspace symbols are SymbolInformation with their container', () => {
  const found = { name: 'add', kind: 11, containerName: 'calc', location: { uri: uri('/w/calc.ts'), range: range(0, 16, 19) } };
  assert.deepEqual(asSymbols([found]), [
    {
      name: 'add',
      kind: 12,
      containerName: 'calc',
      location: { uri: 'file:///w/calc.ts', range: { start: { line: 0, character: 16 }, end: { line: 0, character: 19 } } },
    },
  ]);
});

test('call hierarchy items and calls carry uris as strings and LSP kinds', () => {
  const item = (name: string, path: string, line: number) => ({
    name,
    kind: 11,
    detail: '',
    uri: uri(path),
    range: range(line, 0, 30),
    selectionRange: range(line, 16, 16 + name.length),
  });
  const expected = (name: string, path: string, line: number) => ({
    name,
    kind: 12,
    uri: `file://${path}`,
    range: { start: { line, character: 0 }, end: { line, character: 30 } },
    selectionRange: { start: { line, character: 16 }, end: { line, character: 16 + name.length } },
  });
  assert.deepEqual(asCallItem(item('add', '/w/calc.ts', 0)), expected('add', '/w/calc.ts', 0));
  assert.deepEqual(asIncomingCalls([{ from: item('total', '/w/main.ts', 3), fromRanges: [range(4, 9, 12)] }]), [
    { from: expected('total', '/w/main.ts', 3), fromRanges: [{ start: { line: 4, character: 9 }, end: { line: 4, character: 12 } }] },
  ]);
  assert.deepEqual(asOutgoingCalls([{ to: item('add', '/w/calc.ts', 0), fromRanges: [range(4, 9, 12)] }]), [
    { to: expected('add', '/w/calc.ts', 0), fromRanges: [{ start: { line: 4, character: 9 }, end: { line: 4, character: 12 } }] },
  ]);
});

test('a rename is one WorkspaceEdit of changes per file', () => {
  const edit = (line: number, from: number, to: number) => ({ range: range(line, from, to), newText: 'sum' });
  assert.deepEqual(
    asWorkspaceEdit([
      [uri('/w/calc.ts'), [edit(0, 16, 19)]],
      [uri('/w/main.ts'), [edit(0, 9, 12), edit(4, 9, 12)]],
    ]),
    {
      changes: {
        'file:///w/calc.ts': [{ range: { start: { line: 0, character: 16 }, end: { line: 0, character: 19 } }, newText: 'sum' }],
        'file:///w/main.ts': [
          { range: { start: { line: 0, character: 9 }, end: { line: 0, character: 12 } }, newText: 'sum' },
          { range: { start: { line: 4, character: 9 }, end: { line: 4, character: 12 } }, newText: 'sum' },
        ],
      },
    },
  );
});
