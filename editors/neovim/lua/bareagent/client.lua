-- The language client: starting `bareagent` for file buffers (vim.lsp.config
-- + vim.lsp.enable on Neovim 0.11, vim.lsp.start from an autocmd on 0.10),
-- finding the client for a buffer, running the server's commands, and the
-- handlers for what the server sends (events, saveDocuments,
-- codeIntelligence, dialogs).
-- It knows nothing of how events are shown: it hands them to `on_event`.

local M = {}

local NAME = 'bareagent'
local has_011 = vim.fn.has('nvim-0.11') == 1

-- Set by setup().
local opts
local on_event = function(_) end

local function notify(text, level)
  vim.notify('bareagent: ' .. text, level or vim.log.levels.INFO)
end
M.notify = notify

--- The file a buffer holds, or nil for buffers that are not files (help,
--- terminals, the chat split, `scheme://` buffers).
function M.file_name(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  return name
end

-- Where a buffer's agent works: the nearest root marker, else the current
-- directory. Buffers that are not files get no agent.
local function root_of(buf)
  if not M.file_name(buf) then
    return nil
  end
  return vim.fs.root(buf, opts.root_markers) or vim.fn.getcwd()
end

-- Before a command runs, the agent asks to save the buffers it edited
-- (never one holding the user's own unsaved work), so the command sees its
-- edits. `:write` keeps the undo history.
local function save_documents(_, params)
  local saved = {}
  for _, uri in ipairs((params or {}).uris or {}) do
    local buf = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(buf) then
      local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
        vim.cmd('silent write')
      end)
      if ok then
        table.insert(saved, uri)
      else
        notify('could not save ' .. vim.uri_to_fname(uri) .. ': ' .. tostring(err), vim.log.levels.WARN)
      end
    end
  end
  return { saved = saved }
end

-- The server asks each approval as a dialog too. With approvals answered
-- in the chat split, the dialog is answered "not now" (null), which leaves
-- the approval pending (docs/protocol.md): the split shows it and its keys
-- answer it. Other dialogs go to Neovim's own handler (vim.ui.select).
local function is_approval_dialog(params)
  for _, action in ipairs((params or {}).actions or {}) do
    if action.title == 'Allow once' then
      return true
    end
  end
  return false
end

local function show_message_request(err, params, ctx, config)
  if opts.approvals == 'chat' and is_approval_dialog(params) then
    return vim.NIL
  end
  return vim.lsp.handlers['window/showMessageRequest'](err, params, ctx, config)
end

local function handle_event(_, event, ctx)
  if type(event) == 'table' then
    -- Which server sent it: an approval is answered by the server that asked.
    event.client_id = ctx and ctx.client_id
    on_event(event)
  end
end

-- The client's configuration, as vim.lsp.config and vim.lsp.start take it.
local function config()
  local init_options = vim.tbl_extend('force', {}, opts.settings or {}, {
    -- We answer bareagent/saveDocuments and bareagent/codeIntelligence
    -- (code.lua), and send bareagent/diagnostics.
    saveDocuments = true,
    codeIntelligence = true,
    diagnostics = opts.diagnostics,
  })
  return {
    name = NAME,
    cmd = opts.cmd,
    root_markers = opts.root_markers,
    init_options = init_options,
    handlers = {
      ['bareagent/event'] = handle_event,
      ['bareagent/saveDocuments'] = save_documents,
      ['bareagent/codeIntelligence'] = require('bareagent.code').answer,
      ['window/showMessageRequest'] = show_message_request,
    },
    on_init = function(client)
      require('bareagent.diagnostics').send_all(client)
    end,
  }
end

local group = vim.api.nvim_create_augroup('bareagent.client', { clear = true })

--- Starts the agent for file buffers, with `options` (see setup()).
function M.setup(options, event_handler)
  opts = options
  on_event = event_handler
  vim.api.nvim_clear_autocmds({ group = group })
  if has_011 then
    local cfg = config()
    cfg.name = nil
    -- Every file buffer, whatever its filetype; one client per root.
    cfg.root_dir = function(buf, on_dir)
      local root = root_of(buf)
      if root then
        on_dir(root)
      end
    end
    -- Configured before it is enabled: enabling starts clients for the
    -- buffers already open, with the configuration given by then. (Never
    -- vim.lsp.enable(NAME, false) on a second setup(): it stops the
    -- running servers, and their conversations with them.)
    vim.lsp.config(NAME, cfg)
    vim.lsp.enable(NAME)
    -- vim.lsp.enable starts clients on FileType; a buffer without a
    -- filetype fires none, so start for those on BufReadPost/BufNewFile.
    vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
      group = group,
      callback = function(args)
        vim.schedule(function()
          if vim.api.nvim_buf_is_valid(args.buf) and vim.bo[args.buf].filetype == '' then
            M.start(args.buf)
          end
        end)
      end,
    })
  else
    vim.api.nvim_create_autocmd({ 'FileType', 'BufReadPost', 'BufNewFile' }, {
      group = group,
      callback = function(args)
        M.start(args.buf)
      end,
    })
  end
  -- Servers already running take the new settings now.
  for _, client in ipairs(M.clients()) do
    M.notify_server('workspace/didChangeConfiguration', { settings = { bareagent = opts.settings or {} } }, client)
  end
  -- Buffers already open (setup() called late, or by lazy-loading).
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      M.start(buf)
    end
  end
end

--- Starts (or reuses) the client for `buf`'s root; with `force`, for a
--- buffer that is not a file too, rooted at the current directory.
--- Returns the client id, or nil.
function M.start(buf, force)
  local root = root_of(buf) or (force and (vim.fs.root(vim.fn.getcwd(), opts.root_markers) or vim.fn.getcwd()))
  if not root then
    return nil
  end
  -- On 0.11 the resolved vim.lsp.config: what the user gave
  -- vim.lsp.config('bareagent', …) after setup() applies here too.
  local cfg = has_011 and vim.deepcopy(vim.lsp.config[NAME] or config()) or config()
  cfg.name = NAME
  cfg.root_dir = root
  cfg.root_markers = nil
  if force and root_of(buf) == nil then
    -- A client without attaching a buffer that is not a file.
    if has_011 then
      return vim.lsp.start(cfg, { bufnr = buf, attach = false })
    end
    return vim.lsp.start_client(cfg)
  end
  return vim.lsp.start(cfg, { bufnr = buf })
end

local function initialized(client)
  return client and client.initialized and not (client.is_stopped and client:is_stopped()) and client or nil
end

--- The bareagent clients, initialized or not.
function M.clients()
  return vim.lsp.get_clients({ name = NAME })
end

--- The client for the current buffer (or any), waiting up to 5 s for one
--- being started; nil and why when there is none.
function M.get()
  local function ready()
    local buf = vim.api.nvim_get_current_buf()
    local found = vim.lsp.get_clients({ name = NAME, bufnr = buf })[1] or M.clients()[1]
    return initialized(found)
  end
  if ready() then
    return ready()
  end
  if vim.fn.executable(opts.cmd[1]) == 0 then
    return nil,
      '`'
        .. opts.cmd[1]
        .. '` is not on PATH: install it (`cargo install --path .` in its repository), put its directory on PATH, or set `cmd` in setup()'
  end
  if #M.clients() == 0 then
    M.start(vim.api.nvim_get_current_buf(), true)
  end
  vim.wait(5000, function()
    return ready() ~= nil
  end, 10)
  return ready(), 'the server did not start (:checkhealth vim.lsp and :LspLog say why)'
end

--- Runs server command `command` with `argument` (a table, or nil), then
--- `on_result(result)`; an error is shown by its message alone. `client_id`
--- picks the server (default: the current buffer's, else any).
function M.run(command, argument, on_result, client_id)
  local client, why
  if client_id then
    client = initialized(vim.lsp.get_client_by_id(client_id))
    why = 'the server that asked has stopped'
  else
    client, why = M.get()
  end
  if not client then
    notify(why, vim.log.levels.WARN)
    return
  end
  local params = { command = command, arguments = argument and { argument } or nil }
  local function handler(err, result)
    if err then
      notify(err.message or tostring(err), vim.log.levels.ERROR)
    elseif on_result then
      on_result(result)
    elseif type(result) == 'table' and type(result.message) == 'string' then
      notify(result.message)
    end
  end
  local buf = vim.api.nvim_get_current_buf()
  if has_011 then
    client:request('workspace/executeCommand', params, handler, buf)
  else
    client.request('workspace/executeCommand', params, handler, buf)
  end
end

--- Sends notification `method` to every initialized bareagent client (or
--- to `only`).
function M.notify_server(method, params, only)
  for _, client in ipairs(only and { only } or M.clients()) do
    if initialized(client) then
      if has_011 then
        client:notify(method, params)
      else
        client.notify(method, params)
      end
    end
  end
end

return M
