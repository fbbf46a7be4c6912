-- Approvals in the plugin: three edits of greet.py ask in turn.
--  1. `d` in the chat opens the review: a new tab, two windows in diff
--     mode, the file's buffer (with the user's unsaved line) against a
--     scratch buffer holding the proposed text; `a` there allows it once,
--     the review closes, the buffer changes.
--  2. `r` in the chat rejects the second edit.
--  3. `s` in the chat allows the third for the session.
--  4. `A` in the chat allows a command always (the rule is saved).
-- The dialog the server also sends (window/showMessageRequest) is left to
-- the split: vim.ui.select must never be called.
-- Run by tests/it/neovim_plugin.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

local selects = 0
vim.ui.select = function(_, _, on_choice)
  selects = selects + 1
  on_choice(nil, nil)
end

T.setup()
local buf = T.edit('greet.py')
-- The user's unsaved work, which the review must show as the current text.
vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'def greet(name):  # mine' })
local chat = require('bareagent.chat')

vim.cmd('BareAgent fix greet.py')
local state = require('bareagent.state')
-- The chat shows approval `n` (of this run) waiting, with its keys.
local function question(n)
  local pending = state.oldest_pending()
  local keys = 0
  for _, line in ipairs(T.chat_lines()) do
    if line:find('^  %[a%] allow once') then
      keys = keys + 1
    end
  end
  return pending ~= nil and pending.id == n and keys == 1
end
T.wait_for('the first question', function()
  return question(1)
end)
T.check(T.statusline():find('^bareagent: waiting for approval') ~= nil, 'statusline: ' .. T.statusline())
T.check(chat.visible(), 'the approval shows the chat')
T.check(T.noted('approval needed: edit_file') ~= nil, 'a note says an approval waits')

-- 1. Review, then allow from the review.
vim.cmd('BareAgent chat')
T.press('d')
local wins = vim.api.nvim_tabpage_list_wins(0)
T.check(#vim.api.nvim_list_tabpages() == 2, 'the review is a new tab')
T.check(#wins == 2, 'two windows in the review tab: ' .. #wins)
local file_win, scratch_win
for _, win in ipairs(wins) do
  T.check(vim.wo[win].diff, 'window ' .. win .. ' is in diff mode')
  if vim.api.nvim_win_get_buf(win) == buf then
    file_win = win
  else
    scratch_win = win
  end
end
T.check(file_win ~= nil, "one window shows the file's own buffer")
local scratch = vim.api.nvim_win_get_buf(scratch_win)
local proposed = T.buffer_text(scratch)
T.out('PROPOSED ' .. proposed:gsub('\n', ' | '))
T.check(proposed == "def greet(name):  # mine\n    return 'hi ' + name", 'the proposed text: ' .. proposed)
T.check(not vim.bo[scratch].modifiable, 'the proposed text is read-only')
T.check(vim.api.nvim_buf_get_name(scratch):find('bareagent://review/', 1, true) ~= nil, 'its name says what it is')
T.check(T.buffer_text(buf):find('+ nme', 1, true) ~= nil, 'the file is not changed before the answer')
vim.api.nvim_set_current_win(scratch_win)
T.press('a')
T.wait_for('the edit in the buffer', function()
  return T.buffer_text(buf):find("'hi ' + name", 1, true) ~= nil
end)
T.wait_for('the review to close', function()
  return #vim.api.nvim_list_tabpages() == 1
end)
T.check(not vim.wo[vim.fn.win_findbuf(buf)[1]].diff, 'diff mode is off again in the file window')
T.wait_for('the answer in the chat', function()
  return T.chat_line('  → allowed once') ~= nil
end)
T.wait_for('the edit summary', function()
  return T.chat_line('- ✎ greet.py (+1 −1)') ~= nil
end)

-- 2. Reject from the chat.
T.wait_for('the second question', function()
  return question(2)
end)
vim.cmd('BareAgent chat')
-- On the first question's lines, answered already, a key does nothing:
-- it never falls through to the second, unread one.
vim.api.nvim_win_set_cursor(0, { T.chat_line('  → allowed once'), 0 })
T.press('a')
T.check(T.noted('approval 1 is no longer pending; nothing done') ~= nil, 'a stale key says so: ' .. vim.inspect(T.notes))
T.check(state.pending[2] ~= nil, 'the second question is still pending')
vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
T.press('r')
T.wait_for('the rejection in the chat', function()
  return T.chat_line('  → rejected') ~= nil
end)

-- 3. Allow for the session from the chat.
T.wait_for('the third question', function()
  return question(3)
end)
vim.cmd('BareAgent chat')
T.press('s')
T.wait_for('the session answer in the chat', function()
  return T.chat_line('  → allowed for the session') ~= nil
end)
T.wait_for('the third edit', function()
  return T.buffer_text(buf):find("'Hello, ' + name", 1, true) ~= nil
end)

-- 4. Allow a command always from the chat: the rule is saved.
T.wait_for('the fourth question', function()
  return question(4)
end)
T.check(T.chat_has('[A] always: bash(touch made.txt:*)'), 'the key names the rule it saves')
for _, line in ipairs(T.chat_lines()) do
  if line:find('^  %[a%] allow once') then
    T.check(not line:find('[d] review', 1, true), 'no review for a command: ' .. line)
  end
end
vim.cmd('BareAgent chat')
T.press('A')
T.wait_for('the always answer in the chat', function()
  return T.chat_line('  → allowed always') ~= nil
end)
T.wait_for('the end of the turn', function()
  return T.chat_has('_done')
end)
T.check(T.statusline():find('^bareagent: idle') ~= nil, 'statusline: ' .. T.statusline())
T.check(selects == 0, 'vim.ui.select was called ' .. selects .. ' times')
T.check(vim.bo[buf].modified, 'the edits stay unsaved')
T.done()
