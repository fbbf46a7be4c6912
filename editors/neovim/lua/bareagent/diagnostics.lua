-- The editor's diagnostics, fed back to the agent: on DiagnosticChanged
-- (whatever set them — language servers, linters, vim.diagnostic.set), the
-- complete current set of that file goes to every bareagent server as a
-- `bareagent/diagnostics` notification, debounced per buffer. An empty set
-- is sent too: it clears what the server had. The server's own
-- diagnostics (pending approvals, source "bareagent") are not sent back.

local M = {}

local METHOD = 'bareagent/diagnostics'
local has_011 = vim.fn.has('nvim-0.11') == 1

local opts = { enabled = true, debounce_ms = 200 }
--- buffer -> the timer of its pending send
local timers = {}

local function file_uri(buf)
  local name = require('bareagent.client').file_name(buf)
  return name and vim.uri_from_fname(name)
end

-- A byte column as the client's position encoding counts it.
local function character(buf, lnum, col, encoding)
  if not col or col <= 0 or encoding == 'utf-8' then
    return math.max(col or 0, 0)
  end
  local line = vim.api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1]
  if not line then
    return col
  end
  col = math.min(col, #line)
  if has_011 then
    return vim.str_utfindex(line, encoding, col, false)
  end
  local utf32, utf16 = vim.str_utfindex(line, col)
  return encoding == 'utf-16' and utf16 or utf32
end

--- The buffer's diagnostics as LSP Diagnostic objects, for `client`.
function M.collect(buf, client)
  local encoding = client.offset_encoding or 'utf-16'
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source ~= 'bareagent' then
      local end_lnum = d.end_lnum or d.lnum
      table.insert(out, {
        range = {
          start = { line = d.lnum, character = character(buf, d.lnum, d.col, encoding) },
          ['end'] = { line = end_lnum, character = character(buf, end_lnum, d.end_col or d.col, encoding) },
        },
        severity = d.severity,
        source = d.source,
        code = d.code,
        message = d.message,
      })
    end
  end
  return out
end

--- Sends `buf`'s diagnostics to every bareagent server (or to `only`).
function M.send(buf, only)
  local uri = file_uri(buf)
  if not uri or uri:match('/%.bareagent/') then
    return
  end
  local agent = require('bareagent.client')
  for _, client in ipairs(only and { only } or agent.clients()) do
    agent.notify_server(METHOD, { uri = uri, diagnostics = M.collect(buf, client) }, client)
  end
end

--- Sends every file buffer's diagnostics to `client`, just started.
function M.send_all(client)
  if not opts.enabled then
    return
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and #vim.diagnostic.get(buf) > 0 then
      M.send(buf, client)
    end
  end
end

local group = vim.api.nvim_create_augroup('bareagent.diagnostics', { clear = true })

function M.setup(diagnostics_opts)
  opts = vim.tbl_extend('force', opts, diagnostics_opts or {})
  vim.api.nvim_clear_autocmds({ group = group })
  if not opts.enabled then
    return
  end
  vim.api.nvim_create_autocmd('DiagnosticChanged', {
    group = group,
    callback = function(args)
      local buf = args.buf
      if not file_uri(buf) then
        return
      end
      local timer = timers[buf]
      if timer then
        timer:stop()
      else
        timer = assert(vim.uv.new_timer())
        timers[buf] = timer
      end
      timer:start(opts.debounce_ms, 0, vim.schedule_wrap(function()
        if timers[buf] == timer then
          timers[buf] = nil
        end
        if not timer:is_closing() then
          timer:close()
        end
        -- What is current now, whatever changed since the timer started.
        M.send(buf)
      end))
    end,
  })
end

return M
