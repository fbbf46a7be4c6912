/**
 * The chat view's page: renders the `bareagent/event` stream (markdown as
 * it streams, tool calls with their status, edit summaries, thinking
 * collapsed, todos, usage) and pending approvals with their buttons; sends
 * the user's actions to the extension. Each turn is a box of its own, marked
 * when it is rewound; workspace paths in replies open the file. Markdown is rendered with raw HTML
 * off: a reply can never inject markup or script into the view.
 */
import MarkdownIt from 'markdown-it';
import type { EditorEvent } from '../editorEvent';
import { usageText } from '../modelChoices';
import { onlyRealLinks, pathMentions } from '../replyLinks';

declare function acquireVsCodeApi(): { postMessage(message: unknown): void };
const vscode = acquireVsCodeApi();
const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
// Web links only where the reply says so (a scheme, or `www.`): never `calc.py`.
const linkMatch = md.linkify.match.bind(md.linkify);
md.linkify.match = (text: string) => onlyRealLinks(linkMatch(text));

type Ev = EditorEvent;
type ApprovalRequested = Extract<EditorEvent, { type: 'approval_requested' }>;

const log = document.getElementById('log')!;
const approvals = document.getElementById('approvals')!;
const todos = document.getElementById('todos')!;
const usage = document.getElementById('usage')!;
const prompt = document.getElementById('prompt') as HTMLTextAreaElement;
const completions = document.getElementById('completions')!;
const modelButton = document.getElementById('model')!;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Where the current turn's rows go: its box in the log (the log itself before any turn). */
let turnBox: HTMLElement = log;

function follow(fn: () => void): void {
  // Keep following the end only when the user is already there.
  const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  fn();
  if (atEnd) log.scrollTop = log.scrollHeight;
}

/** The reply being streamed in the current turn. */
let reply: { box: HTMLElement; text: string; queued: boolean } | undefined;
let thinking: { body: HTMLElement; text: string } | undefined;
const tools = new Map<string, HTMLElement>();

function newReply(): { box: HTMLElement; text: string; queued: boolean } {
  const box = el('div', 'msg assistant markdown');
  turnBox.append(box);
  return { box, text: '', queued: false };
}

function renderReply(): void {
  const r = reply;
  if (!r || r.queued) return;
  r.queued = true;
  requestAnimationFrame(() => {
    r.queued = false;
    follow(() => renderMarkdown(r.box, r.text));
  });
}

// ---- workspace paths in replies ----

/** Each reply's markdown, to render again once its paths are known. */
const sources = new Map<HTMLElement, string>();
/** Paths the extension looked up: the file's URI, or null when there is none. */
const known = new Map<string, string | null>();
const asked = new Set<string>();
let pathRequest = 0;

function renderMarkdown(box: HTMLElement, text: string): void {
  sources.set(box, text);
  box.innerHTML = md.render(text);
  linkPaths(box);
}

/** Turns the names of existing workspace files in `box` into links; asks about the others. */
function linkPaths(box: HTMLElement): void {
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    // Not in a link already, nor in a code block (whose text is code, not prose).
    if (!n.parentElement?.closest('a, pre')) texts.push(n as Text);
  }
  const unknown: string[] = [];
  for (const node of texts) {
    const value = node.nodeValue ?? '';
    let at = 0;
    const parts: (string | HTMLElement)[] = [];
    for (const mention of pathMentions(value)) {
      if (!known.has(mention.path)) {
        if (!asked.has(mention.path)) unknown.push(mention.path);
        continue;
      }
      const uri = known.get(mention.path);
      if (!uri) continue;
      parts.push(value.slice(at, mention.index));
      const a = el('a', 'path', mention.text);
      a.href = '#';
      a.title = `Open ${mention.path}${mention.line ? ` at line ${mention.line}` : ''}`;
      a.dataset.uri = uri;
      if (mention.line) a.dataset.line = String(mention.line);
      if (mention.column) a.dataset.column = String(mention.column);
      parts.push(a);
      at = mention.index + mention.text.length;
    }
    if (parts.length === 0) continue;
    parts.push(value.slice(at));
    node.replaceWith(...parts);
  }
  if (unknown.length > 0) {
    const paths = [...new Set(unknown)];
    paths.forEach((p) => asked.add(p));
    vscode.postMessage({ type: 'resolvePaths', request: ++pathRequest, paths });
  }
}

log.addEventListener('click', (ev) => {
  const a = (ev.target as HTMLElement).closest<HTMLAnchorElement>('a.path');
  if (!a) return;
  ev.preventDefault();
  const line = a.dataset.line ? Number(a.dataset.line) : undefined;
  const column = a.dataset.column ? Number(a.dataset.column) : undefined;
  vscode.postMessage({ type: 'openPath', uri: a.dataset.uri, line, column });
});

function summarise(name: string, input: any): string {
  if (!input || typeof input !== 'object') return name;
  const main = input.path ?? input.command ?? input.pattern ?? input.query ?? input.url;
  return main !== undefined ? `${name} ${String(main)}` : name;
}

/** A diff with each line coloured as VS Code's own diffs are: added, removed, hunk header. */
function diffBlock(diff: string): HTMLElement {
  const pre = el('pre', 'diff');
  for (const line of diff.replace(/\n$/, '').split('\n')) {
    const kind = line.startsWith('+++') || line.startsWith('---')
      ? 'file'
      : line.startsWith('+')
        ? 'add'
        : line.startsWith('-')
          ? 'del'
          : line.startsWith('@@')
            ? 'hunk'
            : 'same';
    pre.append(el('span', `line ${kind}`, line || ' '));
  }
  return pre;
}

function diffStat(diff: string): string {
  let plus = 0;
  let minus = 0;
  for (const line of diff.split('\n')) {
    if (line.startsWith('+') && !line.startsWith('+++')) plus++;
    if (line.startsWith('-') && !line.startsWith('---')) minus++;
  }
  return `+${plus} -${minus}`;
}

function onEvent(e: Ev): void {
  follow(() => {
    switch (e.type) {
      case 'turn_started':
        turnBox = el('div', 'turn');
        turnBox.dataset.turn = String(e.turn);
        log.append(turnBox);
        turnBox.append(el('div', 'msg user', e.prompt ?? ''));
        reply = undefined;
        thinking = undefined;
        break;
      case 'user_message':
        turnBox.append(el('div', 'msg user', e.text ?? ''));
        reply = undefined;
        break;
      case 'text_delta':
        thinking = undefined;
        if (!reply) reply = newReply();
        reply.text += e.text ?? '';
        renderReply();
        break;
      case 'thinking_delta': {
        if (!thinking) {
          const details = el('details', 'thinking');
          details.append(el('summary', undefined, 'Thinking'));
          const body = el('div', 'body');
          details.append(body);
          turnBox.append(details);
          thinking = { body, text: '' };
        }
        thinking.text += e.text ?? '';
        thinking.body.textContent = thinking.text;
        break;
      }
      case 'tool_call': {
        reply = undefined;
        thinking = undefined;
        const row = el('details', 'tool running');
        row.dataset.id = String(e.id);
        const summary = el('summary');
        summary.append(el('span', 'status', '…'), el('span', 'name', summarise(e.name, e.input)));
        row.append(summary, el('pre', 'input', JSON.stringify(e.input, null, 2)));
        tools.set(String(e.id), row);
        turnBox.append(row);
        break;
      }
      case 'tool_result': {
        const row = tools.get(String(e.id));
        if (!row) break;
        row.classList.remove('running');
        row.classList.add(e.is_error ? 'error' : 'ok');
        row.querySelector('.status')!.textContent = e.is_error ? '✗' : '✓';
        row.append(el('pre', 'result', String(e.content ?? '')));
        break;
      }
      case 'file_changed':
        turnBox.append(el('div', 'file-changed', `edited ${e.path} (${diffStat(String(e.diff ?? ''))})`));
        break;
      case 'file_touched':
        turnBox.append(el('div', 'file-changed', `${e.how} ${e.path} (while ${e.tool} ran)`));
        break;
      case 'todos':
        renderTodos(e.todos ?? []);
        break;
      case 'usage': {
        // The session's tokens, as the status bar counts them.
        usage.textContent = usageText(e.session_total ?? e.total ?? {});
        break;
      }
      case 'approval_requested':
        addApproval(e);
        break;
      case 'approval_resolved':
        approvals.querySelector(`[data-id="${Number(e.id)}"]`)?.remove();
        break;
      case 'turn_finished':
        if (!reply && e.text) {
          reply = newReply();
          reply.text = e.text;
          renderReply();
        }
        reply = undefined;
        break;
      case 'turn_failed':
        turnBox.append(el('div', 'msg failed', e.message === 'cancelled' ? 'Cancelled.' : `Failed: ${e.message}`));
        reply = undefined;
        approvals.replaceChildren();
        break;
      case 'stream_fallback':
        turnBox.append(el('div', 'note', `streaming failed, retried without it: ${e.reason}`));
        break;
      case 'rewound':
        markRewound(e.restored, e.refused);
        break;
      case 'notice':
        turnBox.append(el('div', 'note', e.text.replace(/^bareagent: /, '')));
        break;
    }
  });
}

/** The last turn still shown as done is undone: marked, with what the rewind put back. */
function markRewound(restored: string[], refused: { path: string; reason: string }[]): void {
  const turns = [...log.querySelectorAll<HTMLElement>('.turn:not(.rewound)')];
  const last = turns[turns.length - 1];
  const said = [
    restored.length > 0 ? `restored ${restored.join(', ')}` : '',
    refused.length > 0 ? `left as they are: ${refused.map((r) => `${r.path} (${r.reason})`).join(', ')}` : '',
  ].filter(Boolean);
  const note = el('div', 'note rewound-note', `Rewound: this turn was undone${said.length ? `; ${said.join('; ')}` : ''}.`);
  if (!last) {
    log.append(note);
    return;
  }
  last.classList.add('rewound');
  last.append(note);
  if (turnBox === last) turnBox = log;
}

function renderTodos(list: { content: string; status: string }[]): void {
  todos.hidden = list.length === 0;
  todos.replaceChildren(el('div', 'title', 'Todos'));
  for (const t of list) {
    const mark = t.status === 'completed' ? '☑' : t.status === 'in_progress' ? '▶' : '☐';
    todos.append(el('div', `todo ${t.status}`, `${mark} ${t.content}`));
  }
}

const EDIT_TOOLS = new Set(['edit_file', 'multi_edit', 'write_file']);

function addApproval(e: ApprovalRequested): void {
  const card = el('div', 'approval');
  card.dataset.id = String(e.id);
  card.append(el('div', 'question', `Allow ${e.tool}: ${e.summary ?? ''}?`));
  if (e.reason) card.append(el('div', 'reason', String(e.reason)));
  if (e.diff) card.append(diffBlock(String(e.diff)));
  const buttons = el('div', 'buttons');
  const button = (label: string, action: () => void, title?: string) => {
    const b = el('button', undefined, label);
    if (title) b.title = title;
    b.addEventListener('click', action);
    buttons.append(b);
  };
  if (EDIT_TOOLS.has(e.tool)) button('Review', () => vscode.postMessage({ type: 'review', id: e.id }), 'Open the diff editor');
  const answer = (decision: string) => () => vscode.postMessage({ type: 'answer', id: e.id, decision });
  button('Allow once', answer('approve'));
  button('Allow for session', answer('approveSession'));
  button('Always', answer('approveAlways'), e.rule ? `Save the rule ${e.rule}` : undefined);
  button('Reject', answer('reject'));
  card.append(buttons);
  approvals.append(card);
}

// ---- the input box, with @path completion ----

let completionRequest = 0;
let selected = 0;

function atWord(): { start: number; word: string } | undefined {
  const upto = prompt.value.slice(0, prompt.selectionStart);
  const m = /(^|\s)@([^\s@]*)$/.exec(upto);
  return m ? { start: upto.length - m[2].length, word: m[2] } : undefined;
}

function showCompletions(items: string[]): void {
  completions.replaceChildren();
  selected = 0;
  completions.hidden = items.length === 0;
  items.forEach((item, i) => {
    const option = el('div', i === 0 ? 'option selected' : 'option', item);
    option.setAttribute('role', 'option');
    option.addEventListener('mousedown', (ev) => {
      ev.preventDefault();
      accept(item);
    });
    completions.append(option);
  });
}

function accept(item: string): void {
  const at = atWord();
  if (!at) return;
  const end = prompt.selectionStart;
  prompt.value = `${prompt.value.slice(0, at.start)}${item} ${prompt.value.slice(end)}`;
  const caret = at.start + item.length + 1;
  prompt.setSelectionRange(caret, caret);
  showCompletions([]);
  prompt.focus();
}

let askRequest = 0;

/** Sends the prompt; the box is emptied only once the server took it (see 'asked'). */
function send(): void {
  const text = prompt.value.trim();
  if (!text) return;
  vscode.postMessage({ type: 'ask', request: ++askRequest, prompt: text });
  showCompletions([]);
}

prompt.addEventListener('input', () => {
  const at = atWord();
  if (!at) return showCompletions([]);
  vscode.postMessage({ type: 'complete', request: ++completionRequest, prefix: at.word });
});

prompt.addEventListener('keydown', (ev) => {
  const options = [...completions.querySelectorAll<HTMLElement>('.option')];
  if (!completions.hidden && options.length > 0) {
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      options[selected].classList.remove('selected');
      selected = (selected + (ev.key === 'ArrowDown' ? 1 : options.length - 1)) % options.length;
      options[selected].classList.add('selected');
      return;
    }
    if (ev.key === 'Tab' || ev.key === 'Enter') {
      ev.preventDefault();
      accept(options[selected].textContent ?? '');
      return;
    }
    if (ev.key === 'Escape') return showCompletions([]);
  }
  if (ev.key === 'Enter' && !ev.shiftKey) {
    ev.preventDefault();
    send();
  }
});

document.getElementById('send')!.addEventListener('click', send);
document.getElementById('cancel')!.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
document.getElementById('new')!.addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
modelButton.addEventListener('click', () => vscode.postMessage({ type: 'pickModel' }));

window.addEventListener('message', (ev: MessageEvent) => {
  const m = ev.data;
  switch (m?.type) {
    case 'event':
      onEvent(m.event);
      break;
    case 'replay':
      clear();
      for (const e of m.events) onEvent(e);
      break;
    case 'clear':
      clear();
      break;
    case 'model':
      modelButton.textContent = m.label;
      break;
    case 'completions':
      if (m.request === completionRequest) showCompletions(m.items);
      break;
    case 'asked':
      // Unless the user has typed on since.
      if (prompt.value.trim() === m.prompt) prompt.value = '';
      break;
    case 'paths': {
      for (const [path, uri] of Object.entries(m.found as Record<string, string | null>)) known.set(path, uri);
      for (const [box, text] of sources) {
        if (box.isConnected) renderMarkdown(box, text);
        else sources.delete(box);
      }
      break;
    }
    case 'error':
      follow(() => turnBox.append(el('div', 'msg failed', m.message)));
      break;
  }
});

function clear(): void {
  log.replaceChildren();
  approvals.replaceChildren();
  todos.replaceChildren();
  todos.hidden = true;
  usage.textContent = '';
  tools.clear();
  sources.clear();
  turnBox = log;
  reply = undefined;
  thinking = undefined;
}

vscode.postMessage({ type: 'ready' });
