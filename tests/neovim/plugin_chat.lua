-- The plugin's commands and its chat split, in a real Neovim: `:BareAgent
-- {prompt}` opens the split (the focus stays), the reply streams into it
-- (checked midway: the model server stalls after the first text), the
-- window at the end follows, thinking is folded, the statusline says what
-- runs; then tool calls with their status, the plan, `:BareAgent status`,
-- `model`, `new`, and the completion of subcommands and `@path`.
-- Run by tests/it/neovim_plugin.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

T.setup()
local buf = T.edit('greet.py')
local code_win = vim.api.nvim_get_current_win()
T.check(T.statusline() == 'bareagent: idle', 'statusline at start: ' .. T.statusline())

-- Completion: subcommands for the first word, files after `@`.
local subs = vim.fn.getcompletion('BareAgent ca', 'cmdline')
T.check(vim.deep_equal(subs, { 'cancel' }), 'subcommands: ' .. vim.inspect(subs))
local all = vim.fn.getcompletion('BareAgent ', 'cmdline')
for _, name in ipairs({ 'cancel', 'chat', 'model', 'effort', 'new', 'status', 'review', 'approve' }) do
  T.check(vim.list_contains(all, name), name .. ' in ' .. vim.inspect(all))
end
local files = vim.fn.getcompletion('BareAgent explain @gr', 'cmdline')
T.check(vim.deep_equal(files, { '@greet.py' }), '@path: ' .. vim.inspect(files))
local dirs = vim.fn.getcompletion('BareAgent look at @sr', 'cmdline')
T.check(vim.deep_equal(dirs, { '@src/' }), '@dir: ' .. vim.inspect(dirs))
local none = vim.fn.getcompletion('BareAgent fix ca', 'cmdline')
T.check(#none == 0, 'no subcommands after the first word: ' .. vim.inspect(none))

-- Turn 1: streamed, with thinking.
vim.cmd('BareAgent say hello about @greet.py')
T.wait_for('the chat split', function()
  return require('bareagent.chat').visible()
end)
T.check(vim.api.nvim_get_current_win() == code_win, 'the focus stays in the code window')
local chat_win = vim.fn.win_findbuf(require('bareagent.chat').buf())[1]
T.wait_for('the first part', function()
  return T.chat_has('First part')
end)
T.check(not T.chat_has('second part'), 'the reply came in one piece; the test needs it streamed')
T.check(T.statusline():find('^bareagent: running') ~= nil, 'statusline while streaming: ' .. T.statusline())
local count = vim.api.nvim_buf_line_count(require('bareagent.chat').buf())
T.check(vim.api.nvim_win_get_cursor(chat_win)[1] == count, 'the chat window follows the end midway')
T.out('MIDWAY ' .. T.chat_text():gsub('\n', ' | '))
T.wait_for('the end of the turn', function()
  return T.chat_has('_done')
end)
local lines = T.chat_lines()
T.check(vim.api.nvim_win_get_cursor(chat_win)[1] == #lines, 'the chat window follows the end')
local you = T.chat_line('## You')
T.check(you ~= nil and lines[you + 1] == 'say hello about @greet.py', 'the prompt under ## You')
local thinking = T.chat_line('Let me think about greetings.')
T.check(thinking ~= nil, 'the thinking is shown')
vim.api.nvim_win_call(chat_win, function()
  T.check(vim.fn.foldclosed(thinking) ~= -1, 'the thinking is folded')
  T.check(vim.fn.foldclosedend(thinking) == thinking + 1, 'both thinking lines are in the fold')
  T.check(vim.fn.foldclosed(T.chat_line('First part of the answer.')) == -1, 'the answer is not folded')
end)
T.check(T.chat_line('Then, after a pause, the second part.') ~= nil, 'the second part')
T.check(T.chat_line('_done · 10 tokens in, 5 out_') ~= nil, 'the usage line')
T.check(T.statusline() == 'bareagent: idle · 10↑ 5↓', 'statusline after: ' .. T.statusline())
T.check(not T.noted('First part'), 'the first line is not notified while the chat shows it')

-- Turn 2: a plan, a read that works and one that fails, then an answer.
vim.cmd('BareAgent plan and read')
T.wait_for('the answer', function()
  return T.chat_has('All read.')
end)
T.wait_for('the end of turn 2', function()
  return select(2, T.chat_text():gsub('_done', '')) == 2
end)
for _, expected in ipairs({
  '- `todo_write` ✓',
  '- Plan:',
  '  - [x] read greet.py',
  '  - [~] answer',
  '- `read_file` greet.py ✓',
}) do
  T.check(T.chat_line(expected) ~= nil, 'a line ' .. expected)
end
local failed
for _, l in ipairs(T.chat_lines()) do
  if l:find('^%- `read_file` missing%.py ✗ ') then
    failed = l
  end
end
T.check(failed ~= nil, 'the failed read is marked ✗ with its error')
T.out('FAILED ' .. failed)

-- setup() again: the running server takes the new settings.
T.setup({ settings = { model = 'claude-opus-4-1' } })
-- :BareAgent status
vim.cmd('BareAgent status')
T.wait_for('the status', function()
  return T.noted('^bareagent: model:')
end)
T.check(T.noted('session main: idle, 6 messages') ~= nil, 'status: ' .. vim.inspect(T.notes))
T.check(T.noted('^bareagent: model: anthropic claude%-opus%-4%-1 ') ~= nil, 'the new setting: ' .. vim.inspect(T.notes))

-- :BareAgent model picks through vim.ui.select.
local offered
vim.ui.select = function(items, opts, on_choice)
  offered = items
  for i, item in ipairs(items) do
    if item.provider == 'anthropic' and item.model ~= 'claude-sonnet-4-5' then
      return on_choice(item, i)
    end
  end
  on_choice(nil, nil)
end
vim.cmd('BareAgent model')
T.wait_for('the model chosen', function()
  return offered ~= nil and T.noted('next turn') ~= nil
end)
-- The provider in use offers what its API listed for the key.
local function offers(model)
  return vim.iter(offered):any(function(item)
    return item.provider == 'anthropic' and item.model == model
  end)
end
T.check(offers('claude-listed-1'), 'the API list is offered: ' .. vim.inspect(offered))
T.check(not offers('claude-haiku-4-5'), 'not the built-in list: ' .. vim.inspect(offered))

-- :BareAgent effort picks through vim.ui.select too; the status says it.
vim.ui.select = function(items, opts, on_choice)
  for i, item in ipairs(items) do
    if item.label == 'effort high' then
      return on_choice(item, i)
    end
  end
  on_choice(nil, nil)
end
vim.cmd('BareAgent effort')
T.wait_for('the effort in the status', function()
  vim.cmd('BareAgent status')
  return T.noted('effort: high, thinking auto') ~= nil
end)

-- :BareAgent new
vim.cmd('BareAgent new')
T.wait_for('the new session note', function()
  return T.chat_has('_new session_')
end)
T.check(T.statusline() == 'bareagent: idle', 'tokens reset: ' .. T.statusline())

-- `i` in the chat asks (vim.ui.input gives the prompt).
vim.ui.input = function(input_opts, on_confirm)
  T.check(input_opts.prompt == 'Ask bareagent: ', 'the prompt: ' .. vim.inspect(input_opts))
  on_confirm('typed in the chat')
end
vim.cmd('BareAgent chat')
T.press('i')
T.wait_for('the answer to what was typed', function()
  return T.chat_has('Typed answer.') and select(2, T.chat_text():gsub('_done', '')) == 3
end)
local typed = T.chat_line('typed in the chat')
T.check(typed ~= nil and T.chat_lines()[typed - 1] == '## You', 'the typed prompt under ## You')
vim.cmd.wincmd('p')

-- A range quotes those lines after the prompt.
T.check(vim.api.nvim_get_current_buf() == buf, 'back in greet.py')
vim.cmd('2BareAgent explain this line')
T.wait_for('the answer about the line', function()
  return T.chat_has('Selection explained.') and select(2, T.chat_text():gsub('_done', '')) == 4
end)

-- :BareAgent cancel with nothing running says so.
vim.cmd('BareAgent cancel')
T.wait_for('nothing to cancel', function()
  return T.noted('nothing is running')
end)

-- :BareAgent chat moves into the split; q closes it.
vim.cmd('BareAgent chat')
T.check(vim.api.nvim_get_current_buf() == require('bareagent.chat').buf(), ':BareAgent chat focuses the split')
T.press('q')
T.check(not require('bareagent.chat').visible(), 'q closes the split')
T.check(vim.api.nvim_buf_is_valid(buf), 'the code buffer is still there')

-- :checkhealth bareagent reports the server found and running.
vim.cmd('checkhealth bareagent')
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
T.out('HEALTH ' .. health:gsub('\n', ' | '))
for _, expected in ipairs({ 'OK Neovim 0.', 'is ' .. T.bin, 'OK model credentials in the environment: ANTHROPIC_API_KEY', 'running for ' .. T.root }) do
  T.check(health:find(expected, 1, true) ~= nil, expected .. ' in the health report')
end
T.check(not health:find('ERROR', 1, true), 'no error in the health report')
vim.cmd('tabclose')

-- The help file: every link to a bareagent tag has its tag, and every
-- subcommand is documented.
local doc = io.open(vim.api.nvim_get_runtime_file('doc/bareagent.txt', false)[1]):read('*a')
local tags = {}
for tag in doc:gmatch('%*([^%s*]+)%*') do
  tags[tag] = true
end
for link in doc:gmatch('|([^|%s]+)|') do
  if link:lower():find('bareagent') then
    T.check(tags[link], 'the help links to a missing tag ' .. link)
  end
end
for _, sub in ipairs(require('bareagent.command').subcommands()) do
  T.check(doc:find(':BareAgent ' .. sub, 1, true) ~= nil, ':BareAgent ' .. sub .. ' is in the help')
end

T.done()
