/**
 * `bareagent/codeIntelligence`: the agent's `code` tool asks a language
 * server request (`textDocument/references`, …), and VS Code answers it from
 * its own providers — whatever language extensions the user has, on the
 * buffers as they are, unsaved changes included. The answer is the LSP
 * result (see codeResults.ts); a failure is a ResponseError the model reads.
 */
import * as vscode from 'vscode';
import { ErrorCodes, LSPErrorCodes, ResponseError } from 'vscode-languageclient/node';
import {
  CallItemLike,
  Pos,
  asCallItem,
  asHover,
  asIncomingCalls,
  asLocations,
  asOutgoingCalls,
  asSymbols,
  asWorkspaceEdit,
  withoutDeclarations,
} from './codeResults';

export interface CodeRequest {
  method: string;
  params: any;
}

type Found = (vscode.Location | vscode.LocationLink)[] | undefined;

const run = <T>(command: string, ...args: unknown[]): Thenable<T> => vscode.commands.executeCommand<T>(command, ...args);

/**
 * Opens the file (not shown), so the answer sees its buffer. (Opening it
 * is enough for its language's extension to answer: VS Code activates it
 * before it runs the providers, as the cold question in the test shows.)
 */
async function open(uri: string): Promise<vscode.TextDocument> {
  return vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
}

const at = (p: Pos) => new vscode.Position(p.line, p.character);

/** The call hierarchy item `item` names, prepared again: a provider's item does not survive JSON. */
async function callItem(item: CallItemLike & { uri: string }): Promise<vscode.CallHierarchyItem> {
  const doc = await open(item.uri);
  const items = (await run<vscode.CallHierarchyItem[]>('vscode.prepareCallHierarchy', doc.uri, at(item.selectionRange.start))) ?? [];
  const found = items.find((i) => i.name === item.name) ?? items[0];
  if (!found) throw new Error(`no call hierarchy item for ${item.name} any more at ${item.uri}`);
  return found;
}

/** The answer to one request, or why there is none. */
export async function answerCode(request: CodeRequest): Promise<unknown> {
  const { method, params } = request ?? {};
  try {
    return await answer(method, params ?? {});
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return new ResponseError(LSPErrorCodes.RequestFailed, `${method}: ${message}`);
  }
}

async function answer(method: string, params: any): Promise<unknown> {
  if (method === 'workspace/symbol') {
    return asSymbols(await run<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', String(params.query ?? '')));
  }
  if (method === 'callHierarchy/incomingCalls') {
    return asIncomingCalls(await run('vscode.provideIncomingCalls', await callItem(params.item)));
  }
  if (method === 'callHierarchy/outgoingCalls') {
    return asOutgoingCalls(await run('vscode.provideOutgoingCalls', await callItem(params.item)));
  }
  const doc = await open(params.textDocument?.uri);
  const position = params.position ? at(params.position) : undefined;
  const answered = await (async (): Promise<unknown> => {
    switch (method) {
      case 'textDocument/definition':
        return asLocations(await run<Found>('vscode.executeDefinitionProvider', doc.uri, position));
      case 'textDocument/implementation':
        return asLocations(await run<Found>('vscode.executeImplementationProvider', doc.uri, position));
      case 'textDocument/references': {
        const references = (await run<vscode.Location[]>('vscode.executeReferenceProvider', doc.uri, position)) ?? [];
        if (params.context?.includeDeclaration !== false) return asLocations(references);
        const declarations = (await run<Found>('vscode.executeDefinitionProvider', doc.uri, position)) ?? [];
        return asLocations(withoutDeclarations(references, declarations));
      }
      case 'textDocument/hover':
        return asHover(await run<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, position));
      case 'textDocument/documentSymbol':
        return asSymbols(await run<vscode.DocumentSymbol[]>('vscode.executeDocumentSymbolProvider', doc.uri));
      case 'textDocument/prepareCallHierarchy':
        return ((await run<vscode.CallHierarchyItem[]>('vscode.prepareCallHierarchy', doc.uri, position)) ?? []).map(asCallItem);
      case 'textDocument/rename': {
        const edit = await run<vscode.WorkspaceEdit | undefined>('vscode.executeDocumentRenameProvider', doc.uri, position, String(params.newName));
        if (!edit) throw new Error('no rename provider answered');
        return asWorkspaceEdit(edit.entries());
      }
      default:
        return new ResponseError(ErrorCodes.MethodNotFound, `VS Code does not answer ${method}`);
    }
  })();
  // VS Code answers nothing, not an error, where no extension knows the language.
  const empty = answered === null || (Array.isArray(answered) && answered.length === 0);
  if (empty && doc.languageId === 'plaintext') {
    throw new Error(`no language extension handles ${vscode.workspace.asRelativePath(doc.uri)} (plain text)`);
  }
  return answered;
}
