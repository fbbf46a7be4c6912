-- The plugin-free snippet (editors/neovim/bareagent.lua) in a real Neovim,
-- as a user meets it: sourced, then commands typed right away. Run by
-- tests/it/neovim.rs as `nvim --headless --clean -l snippet.lua`, with
-- SCENARIO naming what to do; `bareagent` is found on PATH, the model from
-- ANTHROPIC_BASE_URL. Every message the user would see is printed as
-- `NOTIFY <text>` (print() goes to stderr in -l mode); `OK` ends a success.

local root = assert(os.getenv('WORKSPACE'), 'WORKSPACE')
local snippet = assert(os.getenv('SNIPPET'), 'SNIPPET')
local scenario = assert(os.getenv('SCENARIO'), 'SCENARIO')

local function out(line)
  io.stderr:write(line .. '\n')
end

local function fail(message)
  out('FAIL: ' .. message)
  os.exit(1)
end

local notes = {}
vim.notify = function(text, level)
  table.insert(notes, text)
  out('NOTIFY ' .. text:gsub('\n', ' | '))
end

local asked = {}
vim.ui.select = function(items, opts, on_choice)
  local titles = {}
  for _, item in ipairs(items) do
    table.insert(titles, type(item) == 'table' and (item.title or vim.inspect(item)) or item)
  end
  table.insert(asked, titles)
  out('ASKED ' .. table.concat(titles, ' / '))
  for i, title in ipairs(titles) do
    if title:find('^Allow always') then
      return on_choice(items[i], i)
    end
  end
  on_choice(nil, nil)
end

local function noted(pattern)
  for _, text in ipairs(notes) do
    if text:find(pattern) then
      return text
    end
  end
end

local function wait_for(what, condition, ms)
  if not vim.wait(ms or 20000, condition, 20) then
    fail('timed out waiting for ' .. what .. '; notes: ' .. vim.inspect(notes))
  end
end

local function chat_buf()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf):find('/.bareagent/chat.md$') then
      return buf
    end
  end
end

local function last_line(buf)
  return vim.api.nvim_buf_line_count(buf)
end

local function buffer_has(buf, text)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'):find(text, 1, true) ~= nil
end

dofile(snippet)
vim.cmd.cd(root)
local ok, err = pcall(vim.cmd.edit, root .. '/greet.py')
if not ok then
  out('EDIT ' .. tostring(err))
end

if scenario == 'first_turn' then
  -- Typed right after start: the client is not there yet.
  vim.cmd('Agent say hello')
  wait_for('the answer', function() return noted('^bareagent: Hello there%.$') end)
  vim.cmd('AgentStatus')
  wait_for('the status', function() return noted('^bareagent: model:') end)
  vim.cmd('AgentApprove')
  wait_for('the error', function() return noted('approval') end)
elseif scenario == 'not_on_path' then
  vim.cmd('Agent say hello')
  wait_for('the message', function() return noted('PATH') end, 5000)
elseif scenario == 'follow' then
  vim.cmd('Agent')  -- nothing to send yet: an error, shown without its code
  wait_for('the error', function() return noted('nothing to ask') end)
  vim.cmd('AgentChat')
  wait_for('the chat split', function() return chat_buf() ~= nil and #vim.api.nvim_tabpage_list_wins(0) == 2 end)
  local buf = chat_buf()
  local follower = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(follower) ~= buf then
    fail('the chat window does not have the focus')
  end
  if vim.api.nvim_win_get_cursor(follower)[1] ~= last_line(buf) then
    fail('the cursor is not at the end of the chat')
  end
  -- A second window on the chat, where the user scrolls up.
  vim.cmd('split')
  local reader = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_cursor(reader, { 1, 0 })
  vim.cmd('Agent a long answer please')
  wait_for('the first part', function() return buffer_has(buf, 'First part') end)
  wait_for('the follower at the end', function()
    return vim.api.nvim_win_get_cursor(follower)[1] == last_line(buf)
  end, 2000)
  if buffer_has(buf, 'second part') then
    fail('the reply came in one piece; the test needs it streamed')
  end
  out('MIDWAY follower=' .. vim.api.nvim_win_get_cursor(follower)[1] .. ' of ' .. last_line(buf))
  wait_for('the footer', function() return buffer_has(buf, 'model call') and buffer_has(buf, 'second part') end)
  wait_for('the follower at the end', function()
    return vim.api.nvim_win_get_cursor(follower)[1] == last_line(buf)
  end, 2000)
  out('FOLLOWER ' .. vim.api.nvim_win_get_cursor(follower)[1] .. ' of ' .. last_line(buf))
  out('READER ' .. vim.api.nvim_win_get_cursor(reader)[1])
  if noted('First part') then
    fail('the first line was shown though the chat is visible')
  end
elseif scenario == 'allow_always' then
  vim.cmd('Agent run echo')
  wait_for('the answer', function() return noted('^bareagent: Ran it%.$') end)
else
  fail('unknown scenario ' .. scenario)
end

out('OK')
for _, c in ipairs(vim.lsp.get_clients()) do
  c:stop()
end
vim.wait(2000, function() return #vim.lsp.get_clients() == 0 end, 20)
os.exit(0)
