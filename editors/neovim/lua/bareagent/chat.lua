-- The chat split: one scratch buffer (`bareagent://chat`) rendering the
-- `bareagent/event` stream as markdown — the prompt, the reply as it
-- streams, tool calls with their status, edits, thinking (folded), todos,
-- and pending approvals with the keys that answer them. Windows whose
-- cursor is on the last line follow the reply; one moved up stays put.
--
-- Text is only ever appended, or a line replaced by one line (a tool's
-- status, an approval's answer), so the line numbers kept here stay right.

local state = require('bareagent.state')

local M = {}

local NAME = 'bareagent://chat'

local opts = { position = 'right', size = 0.4, open_on_ask = true, open_on_approval = true, keys = {} }
local buf
local st

local function reset()
  st = {
    fresh = true, -- the buffer holds only its first empty line
    mode = nil, -- what the last line is: 'text', 'thinking', 'block', 'heading'
    tools = {}, -- tool call id -> { line = 0-based, text = without status }
    approvals = {}, -- approval id -> { first = 0-based, keys = 0-based }
    answers = {}, -- approval id -> how the user answered, from here
    thinking = {}, -- { first, last } 1-based line ranges, folded
  }
end
reset()

local function str(value)
  return type(value) == 'string' and value or nil
end

function M.setup(chat_opts)
  opts = vim.tbl_deep_extend('force', opts, chat_opts or {})
end

--- The chat buffer, if it exists.
function M.buf()
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
end

--- Its lines, for tests and for users' own tools.
function M.lines()
  return M.buf() and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
end

local function windows()
  return M.buf() and vim.fn.win_findbuf(buf) or {}
end

--- Windows of the current tab showing the chat.
local function tab_windows()
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_tabpage(win) == vim.api.nvim_get_current_tabpage()
  end, windows())
end

function M.visible()
  return #tab_windows() > 0
end

-- Writes with `fn`, then moves the windows that were at the end to the new end.
local function write(fn)
  local count = vim.api.nvim_buf_line_count(buf)
  local followers = vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_cursor(win)[1] >= count
  end, windows())
  vim.bo[buf].modifiable = true
  fn()
  vim.bo[buf].modifiable = false
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(followers) do
    vim.api.nvim_win_set_cursor(win, { last, 0 })
  end
end

local function last_text()
  return vim.api.nvim_buf_get_lines(buf, -2, -1, false)[1] or ''
end

-- Appends whole lines; returns the 0-based index of the first.
local function append(lines)
  local first
  write(function()
    if st.fresh then
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
      st.fresh = false
      first = 0
    else
      first = vim.api.nvim_buf_line_count(buf)
      vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
    end
  end)
  return first
end

local function set_line(index, text)
  write(function()
    vim.api.nvim_buf_set_lines(buf, index, index + 1, false, { text })
  end)
end

-- Makes the last line blank, so what follows is its own paragraph.
local function separate()
  if not st.fresh and last_text() ~= '' then
    append({ '' })
  end
end

-- Streams `text` into the last line, starting a paragraph of `mode` first.
local function stream(mode, text)
  if st.mode ~= mode then
    separate()
    append({ '' })
    st.mode = mode
    if mode == 'thinking' then
      local line = vim.api.nvim_buf_line_count(buf)
      table.insert(st.thinking, { first = line, last = line })
    end
  end
  local pieces = vim.split(text, '\n', { plain = true })
  if mode == 'thinking' then
    -- The fold grows before the lines do, so the fold expression sees them.
    st.thinking[#st.thinking].last = vim.api.nvim_buf_line_count(buf) + #pieces - 1
  end
  write(function()
    local row = vim.api.nvim_buf_line_count(buf) - 1
    local col = #last_text()
    vim.api.nvim_buf_set_text(buf, row, col, row, col, pieces)
  end)
end

-- Appends block lines (tool calls, approvals, notes) after a stream.
local function block(lines)
  if st.mode ~= 'block' then
    separate()
  end
  st.mode = 'block'
  return append(lines)
end

local function heading(lines)
  separate()
  local first = append(lines)
  st.mode = 'heading'
  return first
end

--- The fold expression of chat windows: thinking is folded.
function M.foldexpr()
  local lnum = vim.v.lnum
  for _, range in ipairs(st.thinking) do
    if lnum >= range.first and lnum <= range.last then
      return '1'
    end
  end
  return '0'
end

function M.foldtext()
  local n = vim.v.foldend - vim.v.foldstart + 1
  return string.format('▸ thinking (%d line%s)', n, n == 1 and '' or 's')
end

local function brief(input)
  if type(input) ~= 'table' then
    return ''
  end
  local text = str(input.path) or str(input.command) or str(input.pattern) or str(input.description)
  if not text and input.todos then
    return '' -- the plan is shown below it
  elseif not text then
    local ok, encoded = pcall(vim.json.encode, input)
    text = ok and encoded or ''
  end
  text = text:gsub('\n.*', ' …')
  if vim.fn.strchars(text) > 100 then
    text = vim.fn.strcharpart(text, 0, 100) .. '…'
  end
  return text
end

local function counts(diff)
  local added, removed = 0, 0
  for line in (str(diff) or ''):gmatch('[^\n]+') do
    if line:match('^%+') and not line:match('^%+%+%+ ') then
      added = added + 1
    elseif line:match('^%-') and not line:match('^%-%-%- ') then
      removed = removed + 1
    end
  end
  return added, removed
end

local function approval_keys(event)
  local k = opts.keys
  local parts = {
    '[' .. k.allow .. '] allow once',
    '[' .. k.allow_session .. '] for session',
    '[' .. k.allow_always .. '] always' .. (str(event.rule) and (': ' .. event.rule) or ''),
    '[' .. k.reject .. '] reject',
  }
  if str(event.diff) then
    table.insert(parts, '[' .. k.review .. '] review')
  end
  return '  ' .. table.concat(parts, '  ')
end

local STATUS = { completed = '[x]', in_progress = '[~]', pending = '[ ]' }

local render = {}

function render.turn_started(event)
  local title = '## You'
  local lines = { title }
  vim.list_extend(lines, vim.split(str(event.prompt) or '', '\n', { plain = true }))
  table.insert(lines, '')
  local session = str(event.session)
  table.insert(lines, '## Agent' .. ((session and session ~= 'main') and (' (session ' .. session .. ')') or ''))
  heading(lines)
end

function render.user_message(event)
  local lines = { '## You (sent during the turn)' }
  vim.list_extend(lines, vim.split(str(event.text) or '', '\n', { plain = true }))
  vim.list_extend(lines, { '', '## Agent' })
  heading(lines)
end

function render.text_delta(event)
  stream('text', str(event.text) or '')
end

function render.thinking_delta(event)
  stream('thinking', str(event.text) or '')
end

function render.tool_call(event)
  local about = brief(event.input)
  local text = '- `' .. (str(event.name) or '?') .. '`' .. (about ~= '' and (' ' .. about) or '')
  local line = block({ text .. ' …' })
  st.tools[event.id] = { line = line, text = text }
end

function render.tool_result(event)
  local tool = st.tools[event.id]
  if not tool then
    return
  end
  local status = ' ✓'
  if event.is_error == true then
    local first = (str(event.content) or ''):match('[^\n]*') or ''
    if vim.fn.strchars(first) > 160 then
      first = vim.fn.strcharpart(first, 0, 160) .. '…'
    end
    status = ' ✗ ' .. first
  end
  set_line(tool.line, tool.text .. status)
end

function render.approval_requested(event)
  local question = '- ? ' .. (str(event.tool) or '?') .. ' ' .. (str(event.summary) or '')
  if str(event.reason) then
    question = question .. ' — ' .. event.reason
  end
  local first = block({ question, approval_keys(event) })
  st.approvals[event.id] = { first = first, keys = first + 1, open = true }
end

function render.approval_resolved(event)
  local approval = st.approvals[event.id]
  if approval and approval.open then
    set_line(approval.keys, '  → ' .. (st.answers[event.id] or 'answered'))
    approval.open = false
  end
end

function render.file_changed(event)
  local added, removed = counts(event.diff)
  block({ string.format('- ✎ %s (+%d −%d)', str(event.path) or '?', added, removed) })
end

-- A file changed while an MCP tool ran: how, no lines (not known).
function render.file_touched(event)
  block({ string.format('- ✎ %s (%s while %s ran)', str(event.path) or '?', str(event.how) or 'changed', str(event.tool) or '?') })
end

function render.todos(event)
  local lines = { '- Plan:' }
  for _, todo in ipairs(type(event.todos) == 'table' and event.todos or {}) do
    table.insert(lines, '  - ' .. (STATUS[todo.status] or '[ ]') .. ' ' .. (str(todo.content) or ''))
  end
  block(lines)
end

function render.stream_fallback(event)
  block({ '- (streaming failed: ' .. (str(event.reason) or '?') .. '; asked again without it)' })
end

-- A line from bareagent between the turn's events: a retry, the sandbox's state.
function render.notice(event)
  local text = (str(event.text) or ''):gsub('^bareagent: ', '')
  block({ '- _' .. text .. '_' })
end

local function usage_text(usage)
  if type(usage) ~= 'table' then
    return ''
  end
  local input = (usage.input_tokens or 0)
    + (usage.cache_creation_input_tokens or 0)
    + (usage.cache_read_input_tokens or 0)
  local reasoning = usage.reasoning_tokens or 0
  local thought = reasoning > 0 and string.format(' (%d reasoning)', reasoning) or ''
  return string.format(' · %d tokens in, %d out%s', input, usage.output_tokens or 0, thought)
end

function render.turn_finished(event)
  heading({ '_done' .. usage_text(event.usage) .. '_' })
end

function render.turn_failed(event)
  local message = str(event.message) or 'failed'
  if message == 'cancelled' then
    heading({ '_cancelled_' })
  else
    heading({ '**Stopped:** ' .. message })
  end
  -- Its approvals are dropped with it.
  for id, approval in pairs(st.approvals) do
    if approval.open and not state.pending[id] then
      set_line(approval.keys, '  → dropped')
      approval.open = false
    end
  end
end

local function create()
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, NAME)
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  reset()
  local k = opts.keys
  append({ string.format(
    'bareagent · %s ask · %s allow · %s for session · %s always · %s reject · %s review · %s cancel · %s close',
    k.ask, k.allow, k.allow_session, k.allow_always, k.reject, k.review, k.cancel, k.close
  ) })
  st.mode = 'heading'
  vim.bo[buf].modifiable = false
  -- However the buffer comes into a window, thinking is folded there.
  vim.api.nvim_create_autocmd('BufWinEnter', {
    buffer = buf,
    callback = function()
      M.set_window_options(vim.api.nvim_get_current_win())
    end,
  })
  local agent = require('bareagent')
  local function map(lhs, fn, desc)
    if lhs and lhs ~= '' then
      vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'bareagent: ' .. desc })
    end
  end
  -- On the approval under the cursor; never, when that one is answered,
  -- on another that came since (the user has not read it).
  local function on_approval(fn)
    return function()
      local id, why = M.approval_at_cursor()
      if why then
        require('bareagent.client').notify(why, vim.log.levels.WARN)
      else
        fn(id)
      end
    end
  end
  map(k.allow, on_approval(function(id) agent.answer('allow', id) end), 'allow once')
  map(k.allow_session, on_approval(function(id) agent.answer('session', id) end), 'allow for the session')
  map(k.allow_always, on_approval(function(id) agent.answer('always', id) end), 'allow always')
  map(k.reject, on_approval(function(id) agent.answer('reject', id) end), 'reject')
  map(k.review, on_approval(function(id) agent.review(id) end), 'review the edit')
  map(k.ask, function() agent.prompt() end, 'ask')
  map(k.cancel, function() agent.cancel() end, 'cancel the turn')
  map(k.close, function() M.close() end, 'close the chat')
end

--- Renders one event (the buffer is created on the first).
function M.on_event(event)
  local fn = render[event.type]
  if not fn then
    return
  end
  if not M.buf() then
    create()
  end
  fn(event)
end

--- Remembers how the user answered approval `id` here, for its line.
function M.answered(id, how)
  st.answers[id] = how
end

--- The approval whose lines hold the cursor (in a chat window), else the
--- oldest pending one: its id (nil when none is pending). When the cursor
--- is on one no longer pending: nil and why.
function M.approval_at_cursor()
  if vim.api.nvim_get_current_buf() == buf then
    local row = vim.api.nvim_win_get_cursor(0)[1] - 1
    for id, approval in pairs(st.approvals) do
      if row >= approval.first and row <= approval.keys then
        if approval.open and state.pending[id] then
          return id
        end
        return nil, string.format('approval %d is no longer pending; nothing done', id)
      end
    end
  end
  local oldest = state.oldest_pending()
  return oldest and oldest.id
end

--- A note in the chat, such as "new session".
function M.note(text)
  if not M.buf() then
    create()
  end
  heading({ '---', '_' .. text .. '_' })
end

function M.set_window_options(win)
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'bareagent.chat'.foldexpr()"
  wo.foldtext = "v:lua.require'bareagent.chat'.foldtext()"
  wo.foldlevel = 0
  wo.foldenable = true
end

--- Shows the chat in a split of the current tab (or its window there),
--- the cursor at the end; `focus` moves into it.
function M.open(focus)
  if not M.buf() then
    create()
  end
  local win = tab_windows()[1]
  if not win then
    local from = vim.api.nvim_get_current_win()
    local vertical = opts.position == 'right' or opts.position == 'left'
    local total = vertical and vim.o.columns or vim.o.lines
    local size = opts.size < 1 and math.floor(total * opts.size) or opts.size
    local where = (opts.position == 'left' or opts.position == 'top') and 'topleft' or 'botright'
    vim.cmd(string.format('%s %d%s', where, size, vertical and 'vsplit' or 'split'))
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    M.set_window_options(win)
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
    if not focus then
      vim.api.nvim_set_current_win(from)
    end
  end
  if focus then
    vim.api.nvim_set_current_win(win)
  end
  return win
end

--- Closes the chat windows of the current tab (the buffer stays).
function M.close()
  for _, win in ipairs(tab_windows()) do
    if #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(win, false)
    end
  end
end

return M
