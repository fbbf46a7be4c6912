-- Answers `bareagent/codeIntelligence`: the agent's `code` tool asks a
-- language-server request about a file (`textDocument/references`, …), and
-- the plugin asks the other language servers attached to that file's buffer
-- (loading it where it is not, so your LSP setup attaches its servers), on
-- the buffer as it is, unsaved changes included. Never blocking: the
-- handler runs in the coroutine Neovim gives each server request, and
-- yields while it waits.
--
-- Positions in the request and its answer are UTF-16 (LSP's default); a
-- server that counts in UTF-8 or UTF-32 (`offset_encoding`) gets its
-- params converted, and its answer converted back, against the text it
-- sees (the buffer where one is loaded, else the file).

local M = {}

local NAME = 'bareagent'
local has_011 = vim.fn.has('nvim-0.11') == 1
local uv = vim.uv or vim.loop

-- How long a server may take to attach to a buffer loaded for the request
-- (configs start them on FileType, at once), and then to initialize.
M.appear_ms = 1000
M.attach_ms = 10000
-- How long the whole answer may take, servers waited for included: the
-- agent waits 30 s, and an answer after that is lost.
M.answer_ms = 28000

local codes = vim.lsp.protocol.ErrorCodes

local function failure(message)
  return vim.lsp.rpc.rpc_response_error(codes.RequestFailed, message)
end

--- Waits `ms` in the handler's coroutine.
local function sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    coroutine.resume(co)
  end, ms)
  coroutine.yield()
end

-- Character offsets --------------------------------------------------------

local function byte_of(line, encoding, index)
  if encoding == 'utf-8' then
    return math.min(index, #line)
  end
  if has_011 then
    return vim.str_byteindex(line, encoding, index, false)
  end
  local ok, byte = pcall(vim.str_byteindex, line, index, encoding == 'utf-16')
  return ok and byte or #line
end

local function index_of(line, encoding, byte)
  if encoding == 'utf-8' then
    return byte
  end
  if has_011 then
    return vim.str_utfindex(line, encoding, byte, false)
  end
  local utf32, utf16 = vim.str_utfindex(line, math.min(byte, #line))
  return encoding == 'utf-16' and utf16 or utf32
end

--- The lines of the file at `uri` as a server sees them: its loaded
--- buffer, else the disk (read once per answer, in `cache`).
local function lines_of(uri, cache)
  if cache[uri] then
    return cache[uri]
  end
  local name = vim.uri_to_fname(uri)
  local lines
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) == name then
      lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      break
    end
  end
  if not lines then
    local ok, read = pcall(vim.fn.readfile, name)
    lines = ok and read or {}
  end
  cache[uri] = lines
  return lines
end

-- Keys whose value is a range in the document of the object's own `uri`
-- (or the enclosing one's).
local RANGES = { range = true, selectionRange = true }

--- Converts, in place, every position and range in `node` (params or a
--- result) from encoding `from` to `to`. `uri` is the document the
--- request is about: ranges of objects without a `uri` of their own
--- (document symbols, a hover, a link's origin) are in it.
function M.convert(node, uri, from, to, cache)
  if from == to or type(node) ~= 'table' then
    return node
  end
  cache = cache or {}
  local function position(pos, in_uri)
    if type(pos) ~= 'table' or type(pos.line) ~= 'number' or type(pos.character) ~= 'number' or not in_uri then
      return
    end
    local line = lines_of(in_uri, cache)[pos.line + 1] or ''
    pos.character = index_of(line, to, byte_of(line, from, pos.character))
  end
  local function range(r, in_uri)
    if type(r) == 'table' then
      position(r.start, in_uri)
      position(r['end'], in_uri)
    end
  end
  local function walk(t, current)
    local here = current
    if type(t.uri) == 'string' then
      here = t.uri
    elseif type(t.textDocument) == 'table' and type(t.textDocument.uri) == 'string' then
      here = t.textDocument.uri
    end
    for key, value in pairs(t) do
      if type(value) ~= 'table' or key == 'data' then
        -- `data` is the server's own, opaque.
      elseif key == 'position' then
        position(value, here)
      elseif key == 'targetRange' or key == 'targetSelectionRange' then
        range(value, t.targetUri)
      elseif key == 'originSelectionRange' then
        range(value, current)
      elseif RANGES[key] then
        range(value, here)
      elseif key == 'fromRanges' then
        -- An incoming call's ranges are in the caller; an outgoing call's
        -- in the item asked about.
        local caller = type(t.from) == 'table' and t.from.uri or current
        for _, r in ipairs(value) do
          range(r, caller)
        end
        if type(t.from) == 'table' then
          walk(t.from, here)
        end
      elseif key == 'changes' then
        for changed, edits in pairs(value) do
          if type(edits) == 'table' then
            walk(edits, changed)
          end
        end
      elseif key ~= 'from' or t.fromRanges == nil then
        walk(value, here)
      end
    end
  end
  walk(node, uri)
  return node
end

-- Servers ------------------------------------------------------------------

local function supports(client, method, buf)
  if has_011 then
    return client:supports_method(method, buf)
  end
  return client.supports_method(method, { bufnr = buf })
end

local function running(client)
  return client.initialized and not (client.is_stopped and client:is_stopped())
end

--- The initialized servers, other than bareagent, that answer `method`:
--- those attached to `buf`, or with no `buf`, all of them.
local function servers(method, buf)
  local found = {}
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    if client.name ~= NAME and running(client) and supports(client, method, buf) then
      table.insert(found, client)
    end
  end
  return found
end

--- Whether a server other than bareagent is attached to `buf` but not yet
--- initialized (its capabilities are not known yet).
local function starting(buf)
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    if client.name ~= NAME and not running(client) then
      return true
    end
  end
  return false
end

--- The buffer of `uri`, loaded (filetype detected, so the servers you set
--- up for it attach) where it was not; and whether it was just loaded.
local function buffer_of(uri)
  local buf = vim.uri_to_bufnr(uri)
  if vim.api.nvim_buf_is_loaded(buf) then
    return buf, false
  end
  vim.fn.bufload(buf)
  if vim.bo[buf].filetype == '' then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent! filetype detect')
    end)
  end
  return buf, true
end

--- The servers for `method` on `buf`, waiting a moment for one to attach
--- to a buffer just loaded, and a while for one attached to initialize.
local function wait_for_servers(method, buf, fresh, deadline)
  local appear = uv.now() + (fresh and M.appear_ms or 0)
  deadline = math.min(deadline, uv.now() + M.attach_ms)
  while true do
    local found = servers(method, buf)
    if #found > 0 or uv.now() >= deadline or not (starting(buf) or uv.now() < appear) then
      return found
    end
    sleep(50)
  end
end

--- One request to one server, from the handler's coroutine, cancelled at
--- `deadline`: its error and result, in UTF-16.
local function ask(client, method, params, buf, uri, deadline)
  local encoding = client.offset_encoding or 'utf-16'
  local sent = M.convert(vim.deepcopy(params), uri, 'utf-16', encoding)
  local co = coroutine.running()
  local done, err, result = false, nil, nil
  local function finish(e, r)
    if done then
      return
    end
    done, err, result = true, e, r
    vim.schedule(function()
      coroutine.resume(co)
    end)
  end
  local handler = function(e, r)
    finish(e, r)
  end
  local ok, id
  if has_011 then
    ok, id = client:request(method, sent, handler, buf)
  else
    ok, id = client.request(method, sent, handler, buf)
  end
  if not ok then
    return { message = client.name .. ' has stopped' }
  end
  local timer = uv.new_timer()
  timer:start(math.max(0, deadline - uv.now()), 0, function()
    vim.schedule(function()
      if not done then
        if has_011 then
          client:cancel_request(id)
        else
          client.cancel_request(id)
        end
        finish({ message = ('did not answer %s in time'):format(method) })
      end
    end)
  end)
  coroutine.yield()
  timer:stop()
  timer:close()
  if err then
    return err
  end
  return nil, M.convert(result, uri, encoding, 'utf-16')
end

local function empty(result)
  return result == nil or result == vim.NIL or (type(result) == 'table' and next(result) == nil)
end

local function names(clients)
  local list = {}
  for _, client in ipairs(clients) do
    table.insert(list, client.name)
  end
  return table.concat(list, ', ')
end

--- `workspace/symbol` from every server that answers it, merged.
local function workspace_symbols(request, deadline)
  local method = 'workspace/symbol'
  local found = servers(method)
  if #found == 0 and type(request.uri) == 'string' then
    local buf, fresh = buffer_of(request.uri)
    found = wait_for_servers(method, buf, fresh, deadline)
  end
  if #found == 0 then
    return nil, failure('no language server running in Neovim answers workspace/symbol')
  end
  local merged, errors = {}, {}
  for _, client in ipairs(found) do
    local err, result = ask(client, method, request.params or {}, nil, nil, deadline)
    if err then
      table.insert(errors, client.name .. ': ' .. (err.message or vim.inspect(err)))
    elseif type(result) == 'table' then
      vim.list_extend(merged, result)
    end
  end
  if #errors == #found then
    return nil, failure(table.concat(errors, '; '))
  end
  return merged
end

--- The handler: the answer of the first server attached to the file that
--- answers without an error and with something (else the last empty
--- answer), or an error saying why there is none.
function M.answer(_, request)
  if not coroutine.running() then
    return nil, failure('this Neovim runs server requests outside a coroutine: cannot wait for a server')
  end
  if type(request) ~= 'table' or type(request.method) ~= 'string' then
    return nil, vim.lsp.rpc.rpc_response_error(codes.InvalidParams, 'expected {method, params}')
  end
  local deadline = uv.now() + M.answer_ms
  local method, params = request.method, request.params or {}
  if method == 'workspace/symbol' then
    return workspace_symbols(request, deadline)
  end
  local uri = (type(params.textDocument) == 'table' and params.textDocument.uri)
    or (type(params.item) == 'table' and params.item.uri)
  if type(uri) ~= 'string' then
    return nil, vim.lsp.rpc.rpc_response_error(codes.InvalidParams, method .. ' names no document')
  end
  local buf, fresh = buffer_of(uri)
  local found = wait_for_servers(method, buf, fresh, deadline)
  local file = vim.fn.fnamemodify(vim.uri_to_fname(uri), ':~:.')
  if #found == 0 then
    local attached = {}
    for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
      if client.name ~= NAME then
        table.insert(attached, client)
      end
    end
    if #attached == 0 then
      return nil, failure(('no language server is attached to %s in Neovim'):format(file))
    end
    return nil, failure(('no language server attached to %s (%s) supports %s'):format(file, names(attached), method))
  end
  local errors, answer = {}, nil
  for _, client in ipairs(found) do
    local err, result = ask(client, method, params, buf, uri, deadline)
    if err then
      table.insert(errors, client.name .. ': ' .. (err.message or vim.inspect(err)))
    elseif not empty(result) then
      return result
    else
      answer = result
    end
  end
  if answer ~= nil or #errors < #found then
    return answer == nil and vim.NIL or answer
  end
  return nil, failure(table.concat(errors, '; '))
end

return M
