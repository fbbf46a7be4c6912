// Drives a real VS Code (code-server, started by tests/it/vscode.rs) in
// headless Chromium through playwright-core, as a user would: opens files,
// asks in the bareagent chat view, reviews an edit in the diff editor,
// approves in the view, and waits for what the editor and the view show.
// It checks what only the UI shows (the diff editor, the buffer, the dirty
// mark, the reply in the view); the Rust test checks what the model was sent
// and the files. Each step prints `STEP name` on stdout, facts as `FACT k v`.
//
// Env: SCENARIO (turn | palette | code | down), URL (code-server with ?folder=), ARTEFACTS (screenshots), PLAYWRIGHT_MODULES
// (the node_modules holding playwright-core), CHROMIUM (default /usr/bin/chromium).
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const require = createRequire(join(process.env.PLAYWRIGHT_MODULES, '/'));
const { chromium } = require('playwright-core');

const artefacts = process.env.ARTEFACTS;
mkdirSync(artefacts, { recursive: true });
const STEP_MS = 60_000;
// A hung step must not hang the test: the whole run has a deadline.
setTimeout(() => {
  console.log('FAIL the driver ran past its deadline');
  process.exit(3);
}, 300_000).unref();

const step = (name) => console.log(`STEP ${name}`);
const STATUS = '#bareagent\\.bareagent\\.bareagent\\.status';
const fact = (key, value) => console.log(`FACT ${key} ${value}`);
const text = (s) => (s ?? '').replace(/\u00a0/g, ' ');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.setDefaultTimeout(STEP_MS);

const scenarios = { turn, palette, code, down };
try {
  const scenario = scenarios[process.env.SCENARIO];
  if (!scenario) throw new Error(`unknown SCENARIO ${process.env.SCENARIO}`);
  await scenario();
  console.log('DONE');
} catch (error) {
  console.log(`FAIL ${error?.stack ?? error}`);
  await page.screenshot({ path: join(artefacts, 'failure.png') }).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}

/** Polls `probe` until it returns a truthy value, or fails with `what`. */
async function until(what, probe, ms = STEP_MS) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await probe();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    await page.waitForTimeout(200);
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

async function openFile(name) {
  await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => {});
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor();
  await input.fill(name);
  await until(`quick open to list ${name}`, async () =>
    text(await page.locator('.quick-input-list .monaco-list-row').first().textContent()).includes(name),
  );
  await page.keyboard.press('Enter');
  await tab(name).waitFor();
}

function tab(name) {
  return page.locator('.tabs-container .tab').filter({ hasText: new RegExp(`^\\s*${name.replace('.', '\\.')}`) });
}

/** The text of `name`'s editor, shown as the active one. */
async function editorText(name) {
  await tab(name).first().click();
  const lines = page.locator('.editor-group-container.active .editor-container .monaco-editor .view-lines').first();
  return text(await lines.innerText());
}

/** Runs a command from the palette by its title. */
async function runCommand(title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor();
  await input.fill(`>${title}`);
  // The row whose label is exactly the title ("Ask" also matches "Ask about selection").
  const exact = new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const row = page.locator('.quick-input-list .monaco-list-row').filter({
    has: page.locator('.label-name', { hasText: exact }),
  });
  await row.first().click();
}

/** Answers the input box a command opened. */
async function answerInputBox(answer) {
  const input = page.locator('.quick-input-widget input');
  await input.waitFor();
  await input.fill(answer);
  await input.press('Enter');
}

async function workbench() {
  step('workbench');
  await page.goto(process.env.URL);
  await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
}

async function chatView() {
  await page.locator('.activitybar a.action-label[aria-label="bareagent"]').click({ force: true });
  const view = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  await view.locator('#prompt').waitFor();
  return view;
}

/** The notifications (shown or not) whose text has `what`, from the notification center. */
async function notificationsWith(what) {
  await runCommand('Notifications: Show Notifications');
  await page.locator('.notifications-center').waitFor();
  const count = await page.locator('.notifications-center .notification-list-item', { hasText: what }).count();
  await page.keyboard.press('Escape');
  return count;
}

/** Each button of a toast: its label, and whether the toast cut it (`Allo…`). */
async function toastButtons(toast) {
  return toast.locator('.notification-list-item-buttons-container .monaco-button').evaluateAll((buttons) =>
    buttons.map((b) => ({ label: b.textContent, cut: b.scrollWidth > b.clientWidth + 1 })),
  );
}

/** The links in the view's element `where`: text, web address and file. */
async function links(where) {
  return where.locator('a').evaluateAll((all) =>
    all.map((a) => ({ text: a.textContent, href: a.getAttribute('href'), file: a.dataset.uri ?? null })),
  );
}

async function problems() {
  return text(await page.locator('#status\\.problems').textContent());
}

async function turn() {
  await workbench();

  step('open files');
  // calc.ts first, so VS Code's TypeScript server is warm when it matters.
  await openFile('calc.ts');
  await openFile('greet.py');

  step('chat view');
  const view = await chatView();
  // The model label comes from bareagent.status: the server is up.
  await until('the model label', async () => text(await view.locator('#model').textContent()).includes('anthropic'));

  step('@path completion');
  await view.locator('#prompt').click();
  await view.locator('#prompt').pressSequentially('Make @gre');
  await until('a completion for greet_test.py', async () =>
    (await view.locator('#completions .option').allTextContents()).includes('greet_test.py'),
  );
  await view.locator('#completions .option', { hasText: /^greet\.py$/ }).click();
  const typed = await view.locator('#prompt').inputValue();
  fact('completed', JSON.stringify(typed));
  await view.locator('#prompt').pressSequentially('say Hello, and check it with the test.');

  step('ask');
  await view.locator('#prompt').press('Enter');
  await until('the prompt in the view', async () => (await view.locator('.msg.user').count()) >= 1);

  step('review');
  const edit = view.locator('.approval', { hasText: 'edit_file' });
  await edit.waitFor();
  fact('approval-diff', JSON.stringify(text(await edit.locator('.diff').textContent())));
  fact('edit-question', JSON.stringify(text(await edit.locator('.question').textContent())));
  // Added and removed lines coloured (their background), as VS Code's diffs are.
  const colour = async (kind) => {
    const line = edit.locator(`.diff .${kind}`).first();
    return (await line.count()) === 0 ? 'none' : line.evaluate((e) => getComputedStyle(e).backgroundColor);
  };
  fact('diff-colours', JSON.stringify({ add: await colour('add'), del: await colour('del'), same: await colour('same') }));
  await edit.getByRole('button', { name: 'Review' }).click();
  const reviewTab = page.locator('.tabs-container .tab', { hasText: 'current ↔ proposed' });
  await reviewTab.waitFor();
  const diff = page.locator('.editor-group-container.active .monaco-diff-editor');
  await diff.waitFor();
  const side = async (which) => text(await diff.locator(`.editor.${which} .view-lines`).innerText());
  // Both sides load on their own: wait for each.
  await until('the buffer on the left of the diff', async () => (await side('original')).includes("'hi '"));
  await until('the proposed text on the right', async () => (await side('modified')).includes("'Hello, '"));
  fact('review-original', JSON.stringify(await side('original')));
  fact('review-proposed', JSON.stringify(await side('modified')));
  await page.screenshot({ path: join(artefacts, 'review.png') });

  step('approve edit');
  await edit.getByRole('button', { name: 'Allow once' }).click();
  await until('the edit in the greet.py buffer', async () => (await editorText('greet.py')).includes("'Hello, '"));
  fact('buffer', JSON.stringify(await editorText('greet.py')));
  // The Review tab has served: it closes once the question is answered.
  await until('the Review tab closed', async () => (await reviewTab.count()) === 0, 15_000).catch(() => {});
  fact('review-tabs-left', await reviewTab.count());

  step('approve command');
  const command = view.locator('.approval', { hasText: 'bash' });
  await command.waitFor();
  fact('command-question', JSON.stringify(text(await command.locator('.question').textContent())));
  await command.getByRole('button', { name: 'Allow for session' }).click();

  step('reply');
  const reply = view.locator('.msg.assistant', { hasText: 'greet now says' });
  await reply.waitFor();
  fact('reply', JSON.stringify(text(await reply.textContent())));
  fact('edit-line', JSON.stringify(text(await view.locator('.file-changed', { hasText: 'greet.py' }).first().textContent())));
  // Paths are checked on disk before they become links: wait for the one that exists.
  await until('greet_test.py linked', async () => (await reply.locator('a.path').count()) > 0, 15_000).catch(() => {});
  fact('reply-links', JSON.stringify(await links(reply)));
  step('open a path from the reply');
  const pathLink = reply.locator('a.path', { hasText: 'greet_test.py' });
  if ((await pathLink.count()) > 0) {
    await pathLink.first().click();
    await tab('greet_test.py').first().waitFor();
    fact('opened-from-reply', await tab('greet_test.py').first().evaluate((e) => e.classList.contains('active')));
  } else {
    fact('opened-from-reply', 'no link');
  }
  await until('the command tool row marked ok', async () =>
    (await view.locator('details.tool.ok', { hasText: 'bash' }).count()) === 1,
  );
  // saveDocuments: the buffer was saved before the command ran.
  fact('greet.py-dirty', await tab('greet.py').first().evaluate((e) => e.classList.contains('dirty')));
  await until('the idle status bar', async () =>
    text(await page.locator('#bareagent\\.bareagent\\.bareagent\\.status').textContent()).includes('idle'),
  );
  fact('status', JSON.stringify(text(await page.locator('#bareagent\\.bareagent\\.bareagent\\.status').textContent())));
  // The view showed the reply: no "done" notification besides.
  fact('done-notifications', await notificationsWith('bareagent: done'));
  await page.screenshot({ path: join(artefacts, 'workbench.png') });
  // A wider side bar for the picture of the view.
  const sash = await page.locator('#workbench\\.parts\\.sidebar').boundingBox();
  await page.mouse.move(sash.x + sash.width + 1, sash.y + 300);
  await page.mouse.down();
  await page.mouse.move(sash.x + 480, sash.y + 300, { steps: 8 });
  await page.mouse.up();
  await page.locator('#workbench\\.parts\\.sidebar').screenshot({ path: join(artefacts, 'vscode-chat.png') });

  step('diagnostics');
  await tab('calc.ts').first().click();
  await view.locator('#prompt').fill('Use c in calc.ts.');
  await view.locator('#prompt').press('Enter');
  const breaking = view.locator('.approval', { hasText: 'calc.ts' });
  await breaking.waitFor();
  await breaking.getByRole('button', { name: 'Allow once' }).click();
  await until('the TypeScript error in the Problems count', async () => {
    const problems = text(await page.locator('#status\\.problems').textContent());
    return /^\s*[1-9]/.test(problems) && problems;
  });
  fact('problems', JSON.stringify(text(await page.locator('#status\\.problems').textContent())));
  // The next question is shown in the view; closing the view turns it into
  // VS Code's own notification, answered there.
  step('native approval');
  await view.locator('.approval', { hasText: 'calc.ts' }).waitFor();
  // (Its badge covers the icon's centre.)
  await page.locator('.activitybar a.action-label[aria-label^="Explorer"]').click({ force: true });
  const toast = page.locator('.notification-toast', { hasText: 'wants to run edit_file calc.ts' });
  await toast.waitFor();
  await toast.getByRole('button', { name: /^Allow( once)?$/ }).first().click();
  await page.locator('.activitybar a.action-label[aria-label="bareagent"]').click();
  await view.locator('.msg.assistant', { hasText: 'calc.ts is fixed' }).waitFor();
  // The questions answered in the view left no notification behind.
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget input').fill('>Notifications: Show Notifications');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Show Notifications' }).first().click();
  await page.locator('.notifications-center').waitFor();
  const left = await page.locator('.notifications-center .notification-list-item', { hasText: 'wants to run' }).count();
  fact('approval-notifications-left', left);
  await page.keyboard.press('Escape');
  await until('no problem left', async () => /^\s*0\s+0/.test(text(await page.locator('#status\\.problems').textContent())));
  fact('calc.ts', JSON.stringify(await editorText('calc.ts')));
  await page.screenshot({ path: join(artefacts, 'diagnostics.png') });

  step('fix this diagnostic');
  await openFile('lint.ts');
  await until('the TypeScript error in lint.ts', async () => /^\s*[1-9]/.test(await problems()));
  // F8 puts the cursor on the problem (and peeks it: Escape closes that).
  await page.keyboard.press('F8');
  await page.keyboard.press('Escape');
  await runCommand('bareagent: Fix this diagnostic');
  await view.locator('.msg.assistant', { hasText: 'I see the type error.' }).waitFor();
  await until('the idle status bar', async () => text(await page.locator(STATUS).textContent()).includes('idle'));
  fact('status-end', JSON.stringify(text(await page.locator(STATUS).textContent())));

  // VS Code's own measure of the activation (code loading + activate()).
  step('running extensions');
  await runCommand('Developer: Show Running Extensions');
  const row = page.locator('.runtime-extensions-editor .monaco-list-row', { hasText: 'bareagent' });
  await row.first().waitFor();
  await until('an activation time', async () => /\d+\s*ms/.test(await row.first().innerText()));
  fact('running-extension', JSON.stringify(text(await row.first().innerText())));
}

/** Restricted Mode, and the palette commands. */
async function palette() {
  await workbench();
  // code-server opens a folder not yet trusted in Restricted Mode (no dialog).
  step('restricted mode');
  await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor();
  fact('restricted', true);

  // VS Code's TypeScript does not run in Restricted Mode here: the
  // diagnostics commands are in the `turn` scenario.
  // Asked with the view hidden: the question comes as VS Code's own
  // notification (no language server runs here, so nothing else moves).
  step('an edit asks');
  await openFile('broken.ts');
  const view = await chatView();
  await view.locator('#prompt').fill('Fix broken.ts.');
  await view.locator('#prompt').press('Enter');
  await until('the prompt in the view', async () => (await view.locator('.msg.user').count()) >= 1);
  await page.locator('.activitybar a.action-label[aria-label^="Explorer"]').click({ force: true });
  const toast = page.locator('.notification-toast', { hasText: 'wants to run edit_file broken.ts' });
  await toast.waitFor();
  fact('fix-question', JSON.stringify(text(await toast.locator('.notification-list-item-message').innerText())));
  fact('toast-buttons', JSON.stringify(await toastButtons(toast)));
  await page.screenshot({ path: join(artefacts, 'approval-toast.png') });
  // Review opens the diff editor, and the question is asked again.
  const reviewTab = page.locator('.tabs-container .tab', { hasText: 'current ↔ proposed' });
  const review = toast.getByRole('button', { name: 'Review', exact: true });
  if ((await review.count()) > 0) {
    await review.click();
    await reviewTab.waitFor();
    fact('toast-review', JSON.stringify(text(await reviewTab.first().textContent())));
  } else {
    fact('toast-review', 'no Review button');
  }
  const again = page.locator('.notification-toast', { hasText: 'wants to run edit_file broken.ts' });
  await again.getByRole('button', { name: /^Allow( once)?$/ }).first().click();
  await page.locator('.activitybar a.action-label[aria-label="bareagent"]').click();
  await view.locator('.msg.assistant', { hasText: 'Fixed broken.ts.' }).waitFor();

  step('rewind');
  await runCommand('bareagent: Rewind the last turn');
  const rewound = view.locator('.turn.rewound', { hasText: 'Fix broken.ts.' });
  await until('the turn marked rewound', async () => (await rewound.count()) > 0, 20_000).catch(() => {});
  fact('rewound-turns', JSON.stringify(await view.locator('.turn.rewound').allInnerTexts()));

  step('status');
  await runCommand('bareagent: Status');
  const status = page.locator('.notification-toast', { hasText: 'bareagent — model:' });
  await status.waitFor();
  fact('status', JSON.stringify(text(await status.locator('.notification-list-item-message').innerText())));

  step('ask about selection');
  await openFile('greet.py');
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+A');
  await runCommand('bareagent: Ask about selection');
  await answerInputBox('What does this do?');
  await view.locator('.msg.assistant', { hasText: 'It greets a person by name.' }).waitFor();

  step('ask about an untitled selection');
  await runCommand('File: New Untitled Text File');
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
  await page.keyboard.insertText('x = 1\ny = 2');
  await page.keyboard.press('Control+A');
  await runCommand('bareagent: Ask about selection');
  await answerInputBox('What is this?');
  await view.locator('.msg.assistant', { hasText: 'It sets two numbers.' }).waitFor();

  step('cancel');
  await view.locator('#prompt').fill('Take your time.');
  await view.locator('#prompt').press('Enter');
  await until('the running status bar', async () =>
    text(await page.locator('#bareagent\\.bareagent\\.bareagent\\.status').textContent()).includes('running'),
  );
  await view.locator('#cancel').click();
  await view.locator('.msg.failed', { hasText: 'Cancelled.' }).waitFor();
  fact('cancelled', true);

  // New session while a turn runs: the old turn ends ("cancelled") after the view was cleared.
  step('new session');
  await view.locator('#prompt').fill('Take more time.');
  await view.locator('#prompt').press('Enter');
  await until('the running status bar', async () => text(await page.locator(STATUS).textContent()).includes('running'));
  await runCommand('bareagent: New session');
  await until('an empty view', async () => (await view.locator('.msg').count()) === 0);
  // The status bar is drawn by the workbench, apart from the view: its text
  // follows on its own channel (a reset that never comes times out here).
  await until('the status bar of the new session', async () => {
    const shown = text(await page.locator(STATUS).textContent());
    return shown.includes('idle') && !shown.includes('tokens');
  });
  fact('status-after-new', JSON.stringify(text(await page.locator(STATUS).textContent())));

  step('ask');
  await runCommand('bareagent: Ask');
  await answerInputBox('Hello after a new session');
  await view.locator('.msg.assistant', { hasText: 'Hello again.' }).waitFor();
  fact('view-after-new', JSON.stringify(await view.locator('.msg').allInnerTexts()));

  step('open chat file');
  await runCommand('bareagent: Open chat file');
  await tab('chat.md').waitFor();
  fact('chat-file', 'chat.md');
  await page.screenshot({ path: join(artefacts, 'palette.png') });
}

/**
 * The agent's `code` tool answered by VS Code's own TypeScript support, on a
 * buffer with an unsaved new call: the model's questions and what it was
 * told are checked by the Rust test.
 */
async function code() {
  await workbench();

  // Before any TypeScript file is open, TypeScript's extension is not
  // running yet: VS Code starts it for the answer.
  step('ask cold');
  const view = await chatView();
  await until('the model label', async () => text(await view.locator('#model').textContent()).includes('anthropic'));
  await view.locator('#prompt').fill('What is add?');
  await view.locator('#prompt').press('Enter');
  await view.locator('.msg.assistant', { hasText: 'add adds' }).waitFor({ timeout: 120_000 });

  step('open files');
  await openFile('calc.ts');
  await openFile('main.ts');

  step('unsaved call');
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+End');
  // As text, not keys: no suggestion or auto-closed bracket gets in the way.
  await page.keyboard.insertText('export const again = add(3, 4);');
  await until('main.ts marked unsaved', async () => tab('main.ts').first().evaluate((e) => e.classList.contains('dirty')));

  step('ask');
  // The view is still shown (clicking its icon again would hide it).
  await view.locator('#prompt').fill('Who calls add? Then rename it to sum.');
  await view.locator('#prompt').press('Enter');

  step('review the rename');
  const rename = view.locator('.approval', { hasText: 'code' });
  await rename.waitFor({ timeout: 120_000 });
  fact('rename-diff', JSON.stringify(text(await rename.locator('.diff').textContent())));
  await rename.getByRole('button', { name: 'Allow once' }).click();
  await view.locator('.msg.assistant', { hasText: 'add is called' }).waitFor({ timeout: 120_000 });
  fact('calc.ts', JSON.stringify(await editorText('calc.ts')));
  fact('main.ts-dirty', await tab('main.ts').first().evaluate((e) => e.classList.contains('dirty')));
  fact('main.ts', JSON.stringify(await editorText('main.ts')));
  await page.screenshot({ path: join(artefacts, 'code.png') });
}

/** The server cannot run (its binary exits at once): what the user sees when asking. */
async function down() {
  await workbench();
  step('ask with the server down');
  const view = await chatView();
  await view.locator('#prompt').fill('A prompt typed with care.');
  await view.locator('#prompt').press('Enter');
  const failed = view.locator('.msg.failed');
  await failed.first().waitFor();
  fact('down-error', JSON.stringify(text(await failed.first().innerText())));
  fact('down-prompt', JSON.stringify(await view.locator('#prompt').inputValue()));
  const toast = page.locator('.notification-toast', { hasText: 'bareagent: ' }).filter({ hasText: 'not' });
  await toast.first().waitFor();
  fact('down-toast', JSON.stringify(text(await toast.first().locator('.notification-list-item-message').innerText())));
  fact('down-toast-buttons', JSON.stringify(await toastButtons(toast.first())));
  await page.screenshot({ path: join(artefacts, 'down.png') });
}
