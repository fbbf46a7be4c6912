// What the extension decides without VS Code: which links in a reply are
// web links and which names are paths, which events the view shows after
// New session, the level of each server log line, and the approval toast.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import MarkdownIt from 'markdown-it';
import { insideFolder, onlyRealLinks, pathMentions } from '../src/replyLinks';
import { CurrentSession } from '../src/sessionFilter';
import { ServerLog, exitReason } from '../src/serverLog';
import { shortApproval } from '../src/approvalToast';

function render(text: string): string {
  const md = new MarkdownIt({ html: false, linkify: true });
  const match = md.linkify.match.bind(md.linkify);
  md.linkify.match = (t: string) => onlyRealLinks(match(t));
  return md.render(text);
}

test('file names are not web links; a scheme or www. is', () => {
  const html = render("I'll read calc.py and README.md first; see https://example.org/x and www.rust-lang.org.");
  assert.doesNotMatch(html, /href="http:\/\/calc\.py"/);
  assert.doesNotMatch(html, /README\.md<\/a>/);
  assert.match(html, /<a href="https:\/\/example\.org\/x">/);
  assert.match(html, /<a href="http:\/\/www\.rust-lang\.org">/);
});

test('paths in prose, with a line and column, and not inside words or URLs', () => {
  const found = pathMentions('Read calc.py, then src/lsp/turn.rs:12:5 and tests/ (see a.b/c). Not www.x.com or e-mail.');
  assert.deepEqual(
    found.map((m) => [m.path, m.line, m.column]),
    [
      ['calc.py', undefined, undefined],
      ['src/lsp/turn.rs', 12, 5],
      ['a.b/c', undefined, undefined],
    ],
  );
  assert.equal(found[0].text, 'calc.py');
  assert.equal(found[1].text, 'src/lsp/turn.rs:12:5');
  assert.deepEqual(pathMentions('The end of greet.py.').map((m) => m.path), ['greet.py']);
});

test("after New session, the old session's turns are dropped, the new one's shown", () => {
  const s = new CurrentSession();
  const failed = (turn: number) => ({ type: 'turn_failed' as const, turn, session: 'main', message: 'cancelled' });
  assert.ok(s.accept({ type: 'turn_started', turn: 4, session: 'main', prompt: 'p' }));
  s.finish();
  assert.equal(s.accept(failed(4)), false);
  assert.ok(s.accept({ type: 'turn_started', turn: 6, session: 'main', prompt: 'q' }));
  assert.ok(s.accept(failed(6)));
  assert.equal(s.accept({ type: 'turn_started', turn: 7, session: 'other', prompt: 'r' }), false);
  assert.ok(s.accept({ type: 'approval_resolved', id: 3 }));
});

test("the server's stderr at its own levels, its end kept for the error", () => {
  const log = new ServerLog();
  assert.deepEqual(log.line('2026-12-02T07:42:41.123456Z  INFO server started'), { level: 'info', text: 'server started' });
  assert.deepEqual(log.line('2026-12-02T07:42:41.2Z DEBUG saved uri=x'), { level: 'debug', text: 'saved uri=x' });
  assert.equal(log.line('   a continuation').level, 'debug');
  assert.equal(log.line('2026-12-02T07:42:41.3Z  WARN careful').level, 'warn');
  log.reset();
  assert.equal(log.line('error: no config').level, 'error');
  assert.equal(
    exitReason(3, null, log.tail()),
    'the server exited with code 3; it said:\nerror: no config',
  );
  assert.equal(exitReason(null, 'SIGKILL', []), 'the server was killed by SIGKILL without a word on stderr');
});

test('the approval toast: the question without its diff, short labels mapped back', () => {
  const actions = ['Allow once', 'Allow for session', 'Allow always: edit_file(calc.py)', 'Reject', 'Show diff'].map(
    (title) => ({ title }),
  );
  const toast = shortApproval('bareagent wants to run edit_file calc.py (+1 -1) (asks).\n\n--- a/calc.py\n+++ b/calc.py', actions, true);
  assert.deepEqual(toast.labels, ['Allow', 'Session', 'Always', 'Reject', 'Review']);
  assert.doesNotMatch(toast.message, /---/);
  assert.match(toast.message, /Always: save the rule edit_file\(calc\.py\)/);
  assert.equal(toast.answers.get('Always'), actions[2]);
  assert.equal(toast.answers.get('Review'), 'review');
  assert.equal(shortApproval('q', actions, false).answers.get('Review'), actions[4]);
});

test('a path a reply names opens only inside the workspace folder', () => {
  const cases: [string, boolean][] = [
    ['calc.py', true],
    ['src/x.rs', true],
    ['/ws/src/x.rs', true],
    ['../../etc/passwd', false],
    ['src/../../etc/passwd', false],
    ['/ws/../etc/passwd', false],
    ['/wsx/secret', false],
    ['/etc/passwd', false],
  ];
  for (const [path, inside] of cases) assert.equal(insideFolder(path, '/ws'), inside, path);
});
