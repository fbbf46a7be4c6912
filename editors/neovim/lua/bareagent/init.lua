-- bareagent for Neovim: `require('bareagent').setup{}` starts the agent (a
-- language server) for file buffers and wires what the plugin adds to the
-- plain-LSP surface: the chat split, the review in diff mode, the
-- statusline, saving before commands, the editor's diagnostics sent back.
-- This module owns the options and the user-facing actions; each part
-- lives in its own module (client, chat, review, state, diagnostics).

local M = {}

local defaults = {
  -- The server command.
  cmd = { 'bareagent' },
  -- Where a buffer's agent works: the nearest of these, else the current directory.
  root_markers = { '.bareagent', '.git' },
  -- Passed as initializationOptions: provider, model, baseUrl,
  -- permissionMode, permissions = { allow = {}, ask = {}, deny = {} }, …
  -- (docs/protocol.md, "Settings"). Keys come from the environment only.
  settings = {},
  -- 'chat': approvals are answered in the chat split (keys below) or with
  -- :BareAgent approve…; 'select': Neovim's own dialog (vim.ui.select).
  approvals = 'chat',
  chat = {
    position = 'right', -- right | left | bottom | top
    size = 0.4, -- a fraction of the editor, or columns/lines
    open_on_ask = true, -- :BareAgent {prompt} shows the chat (focus stays)
    open_on_approval = true, -- a pending approval shows the chat
  },
  -- Send the editor's diagnostics to the agent (bareagent/diagnostics).
  diagnostics = { enabled = true, debounce_ms = 200 },
  -- Keys in the chat split and the review (normal mode, buffer-local); '' disables one.
  keys = {
    allow = 'a',
    allow_session = 's',
    allow_always = 'A',
    reject = 'r',
    review = 'd',
    ask = 'i',
    cancel = '<C-c>',
    close = 'q',
  },
}

M.options = nil

local function notify(text, level)
  require('bareagent.client').notify(text, level)
end

local function on_event(event)
  local state = require('bareagent.state')
  local chat = require('bareagent.chat')
  local shown = state.statusline()
  state.on_event(event)
  chat.on_event(event)
  require('bareagent.review').on_event(event)
  if event.type == 'approval_requested' and M.options.approvals == 'chat' then
    if M.options.chat.open_on_approval and not chat.visible() then
      chat.open(false)
    end
    local k = M.options.keys
    notify(string.format(
      'approval needed: %s %s — in the chat: %s allow, %s for session, %s always, %s reject%s',
      tostring(event.tool), type(event.summary) == 'string' and event.summary or '',
      k.allow, k.allow_session, k.allow_always, k.reject,
      type(event.diff) == 'string' and (', ' .. k.review .. ' review') or ''
    ))
  elseif event.type == 'turn_finished' and not chat.visible() then
    -- The answer's first line, where the chat does not show it.
    local first = (type(event.text) == 'string' and event.text or ''):match('[^\n]*%S[^\n]*')
    if first then
      notify(first)
    end
  end
  -- Not on every text delta: only when what the statusline says changed.
  if state.statusline() ~= shown then
    vim.cmd('redrawstatus!')
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'BareAgent', modeline = false, data = event })
end

--- Sets the plugin up; `opts` overrides the defaults above. Calling it
--- again applies the new options.
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  local o = M.options
  if o.approvals ~= 'chat' and o.approvals ~= 'select' then
    notify("approvals must be 'chat' or 'select'; using 'chat'", vim.log.levels.WARN)
    o.approvals = 'chat'
  end
  require('bareagent.chat').setup(vim.tbl_extend('force', o.chat, { keys = o.keys }))
  require('bareagent.review').setup({ keys = o.keys })
  require('bareagent.diagnostics').setup(o.diagnostics)
  require('bareagent.client').setup({
    cmd = o.cmd,
    root_markers = o.root_markers,
    settings = o.settings,
    approvals = o.approvals,
    diagnostics = o.diagnostics.enabled,
  }, on_event)
end

local function ensure_setup()
  if not M.options then
    M.setup({})
  end
end

local function run(command, argument, on_result, client_id)
  ensure_setup()
  require('bareagent.client').run(command, argument, on_result, client_id)
end

--- Asks the agent (the main session); the chat split shows the reply.
function M.ask(prompt)
  ensure_setup()
  if M.options.chat.open_on_ask then
    require('bareagent.chat').open(false)
  end
  run('bareagent.ask', { prompt = prompt }, function(result)
    if type(result) == 'table' and type(result.message) == 'string' then
      notify(result.message)
    end
  end)
end

--- Asks for a prompt (vim.ui.input), then asks the agent.
function M.prompt()
  vim.ui.input({ prompt = 'Ask bareagent: ' }, function(text)
    if text and text:match('%S') then
      M.ask(text)
    end
  end)
end

function M.cancel()
  run('bareagent.cancel', nil, function(result)
    if type(result) ~= 'table' or type(result.cancelled) ~= 'number' then
      notify('nothing is running')
    end
  end)
end

function M.new_session()
  run('bareagent.newSession', nil, function()
    require('bareagent.state').reset_tokens()
    require('bareagent.chat').note('new session')
  end)
end

--- Undoes the last turn: its edits (one undoable edit), and the turn in
--- the agent's memory. Files changed since are kept, and named.
function M.rewind()
  run('bareagent.rewind', nil, function(result)
    if type(result) == 'table' and type(result.message) == 'string' then
      notify(result.message)
    end
  end)
end

--- Shows the chat split and moves into it.
function M.chat()
  ensure_setup()
  require('bareagent.chat').open(true)
end

local function status_text(s)
  local lines = {}
  local model = type(s.model) == 'table' and s.model or {}
  if type(model.error) == 'string' then
    table.insert(lines, 'model: ' .. model.error)
  else
    table.insert(lines, string.format('model: %s %s (from %s)', tostring(model.provider), tostring(model.model), tostring(model.modelFrom)))
  end
  local reasoning = type(s.reasoning) == 'table' and s.reasoning or {}
  if type(reasoning.error) == 'string' then
    table.insert(lines, 'effort: ' .. reasoning.error)
  else
    local effort = type(reasoning.effort) == 'string' and reasoning.effort or "the model's default"
    local wire = type(reasoning.wire) == 'string' and (', OpenAI ' .. reasoning.wire .. ' API') or ''
    table.insert(lines, string.format('effort: %s, thinking %s%s', effort, tostring(reasoning.thinking), wire))
  end
  table.insert(lines, 'sandbox: ' .. tostring(s.sandbox))
  for _, session in ipairs(type(s.sessions) == 'table' and s.sessions or {}) do
    local busy = type(session.running) == 'number'
    local usage = type(session.usage) == 'table' and session.usage or {}
    table.insert(lines, string.format('session %s: %s, %d messages, %d tokens out', tostring(session.name),
      busy and ('turn ' .. session.running .. ' running') or 'idle', session.messages or 0, usage.output_tokens or 0))
  end
  local pending = type(s.pendingApprovals) == 'table' and s.pendingApprovals or {}
  if #pending == 0 then
    table.insert(lines, 'no pending approvals')
  end
  for _, approval in ipairs(pending) do
    table.insert(lines, string.format('pending approval %d: %s %s', approval.id, tostring(approval.tool), tostring(approval.summary)))
  end
  return table.concat(lines, '\n')
end

function M.status()
  run('bareagent.status', nil, function(result)
    if type(result) == 'table' then
      notify(status_text(result))
    end
  end)
end

--- Picks the model for the next turn (vim.ui.select).
function M.model()
  run('bareagent.setModel', nil, function(offered)
    if type(offered) ~= 'table' or type(offered.choices) ~= 'table' then
      return
    end
    -- The provider in use's models are what its API lists for the key;
    -- when it could not be asked, the built-in list, and the note says why.
    local listed = type(offered.listedBy) == 'table' and offered.listedBy or {}
    if type(listed.note) == 'string' then
      vim.notify('bareagent: ' .. listed.note, vim.log.levels.INFO)
    end
    vim.ui.select(offered.choices, {
      prompt = listed.source == 'api' and 'Model for the next turn (listed for your key)' or 'Model for the next turn',
      format_item = function(c)
        return c.provider .. ' ' .. c.model .. (c.configured and '' or '  (no key set)')
      end,
    }, function(choice)
      if choice then
        run('bareagent.setModel', { provider = choice.provider, model = choice.model })
      end
    end)
  end)
end

--- Picks the effort or thinking for the next turn (vim.ui.select).
function M.effort()
  run('bareagent.setEffort', nil, function(offered)
    if type(offered) ~= 'table' then
      return
    end
    local choices = {}
    for _, effort in ipairs(type(offered.efforts) == 'table' and offered.efforts or {}) do
      table.insert(choices, { label = 'effort ' .. effort, pick = { effort = effort } })
    end
    for _, thinking in ipairs(type(offered.thinking) == 'table' and offered.thinking or {}) do
      table.insert(choices, { label = 'thinking ' .. thinking, pick = { thinking = thinking } })
    end
    table.insert(choices, { label = 'back to the settings', pick = { effort = 'default' } })
    vim.ui.select(choices, {
      prompt = 'Effort for the next turn',
      format_item = function(c)
        return c.label
      end,
    }, function(choice)
      if choice then
        run('bareagent.setEffort', choice.pick)
      end
    end)
  end)
end

local ANSWERS = {
  allow = { command = 'bareagent.approve', words = 'allowed once' },
  session = { command = 'bareagent.approveSession', words = 'allowed for the session' },
  always = { command = 'bareagent.approveAlways', words = 'allowed always' },
  reject = { command = 'bareagent.reject', words = 'rejected' },
}

--- Answers approval `id` (default: the oldest pending) with `how`:
--- 'allow' (once), 'session', 'always' or 'reject'.
function M.answer(how, id)
  local answer = ANSWERS[how]
  if not answer then
    notify('unknown answer ' .. tostring(how), vim.log.levels.ERROR)
    return
  end
  local state = require('bareagent.state')
  local approval = id and state.pending[id] or (not id and state.oldest_pending()) or nil
  id = id or (approval and approval.id)
  if id then
    -- Before the command runs: approval_resolved may come before its answer.
    require('bareagent.chat').answered(id, answer.words)
  end
  run(answer.command, id and { id = id } or nil, function() end, approval and approval.client_id)
end

--- Reviews pending edit `id` (default: the oldest pending) in diff mode.
function M.review(id)
  ensure_setup()
  local state = require('bareagent.state')
  local approval = id and state.pending[id] or (not id and state.oldest_pending())
  if not approval then
    notify('no approval is pending', vim.log.levels.WARN)
    return
  end
  require('bareagent.review').open(approval)
end

--- For the statusline: '' without a server, else e.g. 'bareagent: idle',
--- 'bareagent: running · 1.2k↑ 340↓', 'bareagent: waiting for approval'.
function M.statusline()
  return require('bareagent.state').statusline()
end

return M
