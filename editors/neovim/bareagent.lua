-- bareagent in Neovim 0.11+, without a plugin. Put this in your init.lua
-- (or source it). `bareagent` must be on PATH (`cargo install --path .`).
--
-- It attaches to every buffer. Approvals appear as a vim.ui.select prompt
-- (window/showMessageRequest: Allow once / for session / always, Reject);
-- they are also code actions (`gra`) while pending.
--
--   :Agent PROMPT    ask (no argument: send the prompt written in the chat file)
--   :AgentChat       the chat in a split, following the reply as it streams
--   :AgentStatus     model, sandbox, sessions, pending approvals
--   :AgentModel      pick the model for the next turn
--   :AgentApprove  :AgentReject  :AgentCancel  :AgentNew

local cmd = { 'bareagent' }
local chat_suffix = '/.bareagent/chat.md'

local function notify(text, level)
  vim.notify('bareagent: ' .. text, level or vim.log.levels.INFO)
end

local function is_chat(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name:sub(-#chat_suffix) == chat_suffix
end

local function chat_windows()
  return vim.tbl_filter(function(win)
    return is_chat(vim.api.nvim_win_get_buf(win))
  end, vim.api.nvim_tabpage_list_wins(0))
end

-- Turns of the main session that are running: while one is, a chat window
-- whose cursor is on the last line follows the reply; one the user moved up
-- stays where it is.
local running = {}
local following = {}

local function follow(buf)
  if following[buf] then
    return
  end
  following[buf] = true
  local to_end = {}
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function(_, _, _, _, old_last, new_last)
      if next(running) == nil or vim.api.nvim_get_mode().mode:sub(1, 1) == 'i' then
        return
      end
      local before = vim.api.nvim_buf_line_count(buf) - (new_last - old_last)
      for _, win in ipairs(vim.fn.win_findbuf(buf)) do
        if vim.api.nvim_win_get_cursor(win)[1] >= before then
          to_end[win] = true
        end
      end
      vim.schedule(function()
        for win in pairs(to_end) do
          if vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == buf then
            vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
          end
        end
        to_end = {}
      end)
    end,
    on_detach = function()
      following[buf] = nil
    end,
  })
end

vim.api.nvim_create_autocmd('BufWinEnter', {
  pattern = '*' .. chat_suffix,
  callback = function(args)
    follow(args.buf)
  end,
})

-- The chat opens in a split (or its window, if one shows it), the cursor at
-- the position the server gives (where to type) or at the end.
local function show_document(err, result, ctx, config)
  if not result or result.external or vim.uri_to_fname(result.uri):sub(-#chat_suffix) ~= chat_suffix then
    return vim.lsp.handlers['window/showDocument'](err, result, ctx, config)
  end
  local win = chat_windows()[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('split ' .. vim.fn.fnameescape(vim.uri_to_fname(result.uri)))
  end
  local buf = vim.api.nvim_get_current_buf()
  follow(buf)
  local last = vim.api.nvim_buf_line_count(buf)
  local at = result.selection and result.selection.start
  vim.api.nvim_win_set_cursor(0, { at and math.min(at.line + 1, last) or last, 0 })
  return { success = true }
end

local function on_event(_, event)
  if type(event) ~= 'table' or event.session ~= 'main' then
    return
  end
  if event.type == 'turn_started' then
    running[event.turn] = true
  elseif event.type == 'turn_finished' or event.type == 'turn_failed' then
    running[event.turn] = nil
    -- The answer's first line, where the chat does not show it.
    if event.type == 'turn_finished' and #chat_windows() == 0 then
      local first = (event.text or ''):match('[^\n]*%S[^\n]*')
      if first then
        notify(first)
      end
    end
  end
end

vim.lsp.config('bareagent', {
  cmd = cmd,
  root_markers = { '.bareagent', '.git' },
  -- No `filetypes`: the agent works on any file, the chat file included.
  init_options = {
    -- provider = 'anthropic',        -- or 'openai'; keys come from the environment
    -- model = 'claude-sonnet-4-5',
    -- permissionMode = 'default',    -- default | accept-edits | plan | bypass
    saveDocuments = true,             -- we answer bareagent/saveDocuments, below
    -- No codeIntelligence: the plugin answers the agent's code questions
    -- from your language servers; without it, bareagent starts its own.
  },
  handlers = {
    -- Before a command runs, the agent asks to save the buffers it edited
    -- (never one holding your own unsaved work), so the command sees its
    -- edits; `:w` keeps the undo history.
    ['bareagent/saveDocuments'] = function(_, params)
      local saved = {}
      for _, uri in ipairs((params or {}).uris or {}) do
        local buf = vim.uri_to_bufnr(uri)
        if vim.api.nvim_buf_is_loaded(buf) then
          local ok = pcall(vim.api.nvim_buf_call, buf, function() vim.cmd('silent write') end)
          if ok then table.insert(saved, uri) end
        end
      end
      return { saved = saved }
    end,
    ['window/showDocument'] = show_document,
    ['bareagent/event'] = on_event,
  },
})
vim.lsp.enable('bareagent')

-- The client, waiting (2 s at most) for one that was just started: it
-- attaches a few milliseconds after the buffer opens.
local function client()
  local function ready()
    local found = vim.lsp.get_clients({ name = 'bareagent' })[1]
    return found and found.initialized and found or nil
  end
  if ready() then
    return ready()
  end
  if vim.fn.executable(cmd[1]) == 0 then
    return nil, '`' .. cmd[1] .. '` is not on PATH: install it (`cargo install --path .` in its repository) or put its directory on PATH'
  end
  vim.wait(2000, function()
    return ready() ~= nil
  end, 10)
  return ready(), 'not running in this buffer (:checkhealth vim.lsp says why)'
end

local function run(command, arguments, on_result)
  local found, why = client()
  if not found then
    notify(why, vim.log.levels.WARN)
    return
  end
  found:exec_cmd({ title = command, command = command, arguments = arguments }, { bufnr = 0 }, function(err, result)
    if err then
      -- The message alone: the code (-32602, …) is for programs.
      notify(err.message or tostring(err), vim.log.levels.ERROR)
    elseif on_result then
      on_result(result)
    elseif type(result) == 'table' and type(result.message) == 'string' then
      notify(result.message)
    end
  end)
end

local function status_text(s)
  local lines = {}
  local model = s.model or {}
  if model.error then
    table.insert(lines, 'model: ' .. model.error)
  else
    table.insert(lines, string.format('model: %s %s (from %s)', model.provider, model.model, model.modelFrom))
  end
  table.insert(lines, 'sandbox: ' .. tostring(s.sandbox))
  for _, session in ipairs(s.sessions or {}) do
    local busy = type(session.running) == 'number'
    local state = busy and ('turn ' .. session.running .. ' running') or 'idle'
    local usage = session.usage or {}
    table.insert(lines, string.format('session %s: %s, %d messages, %d tokens out', session.name, state, session.messages or 0, usage.output_tokens or 0))
  end
  local pending = s.pendingApprovals or {}
  if #pending == 0 then
    table.insert(lines, 'no pending approvals')
  end
  for _, approval in ipairs(pending) do
    table.insert(lines, string.format('pending approval %d: %s %s', approval.id, approval.tool, approval.summary))
  end
  return table.concat(lines, '\n')
end

local function command(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts or {})
end

-- :Agent fix the failing test   (no argument: send the prompt written in the chat file)
command('Agent', function(o)
  run('bareagent.ask', o.args ~= '' and { { prompt = o.args } } or nil, function(result)
    if type(result) == 'table' and result.queued then
      notify(result.message or 'queued for the running turn')
    elseif type(result) == 'table' and type(result.message) == 'string' then
      notify(result.message)
    end
  end)
end, { nargs = '?' })
command('AgentChat', function()
  run('bareagent.openChat', nil, function(result)
    -- The server shows it through window/showDocument; if that failed, here.
    if type(result) == 'table' and result.shown == false and type(result.uri) == 'string' then
      show_document(nil, { uri = result.uri }, {})
    end
  end)
end)
command('AgentStatus', function()
  run('bareagent.status', nil, function(result)
    notify(status_text(result))
  end)
end)
command('AgentModel', function()
  run('bareagent.setModel', nil, function(offered)
    vim.ui.select(offered.choices, {
      prompt = 'Model for the next turn',
      format_item = function(c)
        return c.provider .. ' ' .. c.model .. (c.configured and '' or '  (no key set)')
      end,
    }, function(choice)
      if choice then
        run('bareagent.setModel', { { provider = choice.provider, model = choice.model } })
      end
    end)
  end)
end)
command('AgentCancel', function() run('bareagent.cancel') end)
command('AgentApprove', function() run('bareagent.approve', nil, function() end) end)
command('AgentReject', function() run('bareagent.reject', nil, function() end) end)
command('AgentNew', function() run('bareagent.newSession', nil, function() end) end)
