/**
 * The chat view's page: renders the `bareagent/event` stream (markdown as
 * it streams, tool calls with their status, edit summaries, thinking
 * collapsed, todos, usage) and pending approvals with their buttons; sends
 * the user's actions to the extension. Markdown is rendered with raw HTML
 * off: a reply can never inject markup or script into the view.
 */
import MarkdownIt from 'markdown-it';
import type { EditorEvent } from '../editorEvent';
import { usageText } from '../modelChoices';

declare function acquireVsCodeApi(): { postMessage(message: unknown): void };
const vscode = acquireVsCodeApi();
const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

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
  log.append(box);
  return { box, text: '', queued: false };
}

function renderReply(): void {
  const r = reply;
  if (!r || r.queued) return;
  r.queued = true;
  requestAnimationFrame(() => {
    r.queued = false;
    follow(() => (r.box.innerHTML = md.render(r.text)));
  });
}

function summarise(name: string, input: any): string {
  if (!input || typeof input !== 'object') return name;
  const main = input.path ?? input.command ?? input.pattern ?? input.query ?? input.url;
  return main !== undefined ? `${name} ${String(main)}` : name;
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
        log.append(el('div', 'msg user', e.prompt ?? ''));
        reply = undefined;
        thinking = undefined;
        break;
      case 'user_message':
        log.append(el('div', 'msg user', e.text ?? ''));
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
          log.append(details);
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
        log.append(row);
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
        log.append(el('div', 'file-changed', `edited ${e.path} (${diffStat(String(e.diff ?? ''))})`));
        break;
      case 'file_touched':
        log.append(el('div', 'file-changed', `${e.how} ${e.path} (while ${e.tool} ran)`));
        break;
      case 'todos':
        renderTodos(e.todos ?? []);
        break;
      case 'usage': {
        usage.textContent = usageText(e.total ?? {});
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
        log.append(el('div', 'msg failed', e.message === 'cancelled' ? 'Cancelled.' : `Failed: ${e.message}`));
        reply = undefined;
        approvals.replaceChildren();
        break;
      case 'stream_fallback':
        log.append(el('div', 'note', `streaming failed, retried without it: ${e.reason}`));
        break;
      case 'notice':
        log.append(el('div', 'note', e.text.replace(/^bareagent: /, '')));
        break;
    }
  });
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
  if (e.diff) card.append(el('pre', 'diff', String(e.diff)));
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

function send(): void {
  const text = prompt.value.trim();
  if (!text) return;
  vscode.postMessage({ type: 'ask', prompt: text });
  prompt.value = '';
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
    case 'error':
      follow(() => log.append(el('div', 'msg failed', m.message)));
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
  reply = undefined;
  thinking = undefined;
}

vscode.postMessage({ type: 'ready' });
