-- Shared by the tests/neovim/plugin_*.lua scripts: loads the plugin from
-- editors/neovim the way a user's runtimepath would, sets it up against the
-- built server and the scripted model server, and gives the scripts small
-- helpers. Everything the user would see is printed (`NOTIFY …`, `CHAT …`);
-- print() goes to stderr in -l mode. A script ends with `done()` (OK) or
-- `fail()`.

local T = {}

T.bin = assert(os.getenv('BAREAGENT_BIN'), 'BAREAGENT_BIN')
T.root = assert(os.getenv('WORKSPACE'), 'WORKSPACE')
T.model_url = assert(os.getenv('MODEL_URL'), 'MODEL_URL')
local plugin = assert(os.getenv('PLUGIN'), 'PLUGIN')

function T.out(line)
  io.stderr:write(line .. '\n')
end

T.notes = {}
vim.notify = function(text, level)
  table.insert(T.notes, text)
  T.out('NOTIFY ' .. text:gsub('\n', ' | '))
end

function T.noted(pattern)
  for _, text in ipairs(T.notes) do
    if text:find(pattern) then
      return text
    end
  end
end

function T.chat_lines()
  return require('bareagent.chat').lines()
end

function T.chat_text()
  return table.concat(T.chat_lines(), '\n')
end

function T.dump_chat()
  for _, line in ipairs(T.chat_lines()) do
    T.out('CHAT ' .. line)
  end
end

function T.fail(message)
  T.dump_chat()
  T.out('FAIL: ' .. message)
  os.exit(1)
end

function T.check(condition, message)
  if not condition then
    T.fail(message)
  end
end

--- Waits for `condition` (20 s at most, unless `ms`), else fails.
function T.wait_for(what, condition, ms)
  if not vim.wait(ms or 20000, condition, 10) then
    T.fail('timed out waiting for ' .. what .. '; notes: ' .. vim.inspect(T.notes))
  end
end

--- Whether the chat holds `text` (plain).
function T.chat_has(text)
  return T.chat_text():find(text, 1, true) ~= nil
end

--- The index (1-based) of the first chat line equal to `line`, or nil.
function T.chat_line(line)
  for i, l in ipairs(T.chat_lines()) do
    if l == line then
      return i
    end
  end
end

--- Presses `keys` in the current window as the user would (mappings apply).
function T.press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'mx', false)
end

function T.statusline()
  return require('bareagent').statusline()
end

--- The plugin on the runtimepath, plugin/ sourced, setup() with `opts`.
function T.setup(opts)
  vim.opt.runtimepath:prepend(plugin)
  vim.cmd.runtime('plugin/bareagent.lua')
  vim.cmd.cd(T.root)
  opts = vim.tbl_deep_extend('force', {
    cmd = { T.bin },
    settings = { provider = 'anthropic', baseUrl = T.model_url, permissionMode = 'default' },
  }, opts or {})
  require('bareagent').setup(opts)
end

--- Opens `path` (relative to the workspace) and waits for the agent to attach.
function T.edit(path)
  vim.cmd.edit(T.root .. '/' .. path)
  local buf = vim.api.nvim_get_current_buf()
  T.wait_for('the client on ' .. path, function()
    local client = vim.lsp.get_clients({ name = 'bareagent', bufnr = buf })[1]
    return client ~= nil and client.initialized
  end)
  return buf
end

function T.buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

--- The user's own LSP setup, as a config has it: pyright (`$PYRIGHT`)
--- for python buffers, rooted at the workspace.
function T.pyright_for_python()
  vim.cmd('filetype on')
  local pyright = assert(os.getenv('PYRIGHT'), 'PYRIGHT')
  vim.api.nvim_create_autocmd('FileType', {
    pattern = 'python',
    callback = function(args)
      vim.lsp.start({ name = 'pyright', cmd = { pyright, '--stdio' }, root_dir = T.root }, { bufnr = args.buf })
    end,
  })
end

function T.done()
  T.dump_chat()
  T.out('OK')
  for _, c in ipairs(vim.lsp.get_clients()) do
    c:stop()
  end
  vim.wait(2000, function()
    return #vim.lsp.get_clients() == 0
  end, 20)
  os.exit(0)
end

return T
