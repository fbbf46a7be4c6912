-- The editor's diagnostics fed back to the agent. other.py has a warning
-- before the plugin starts (the agent never touches it); the agent edits greet.py
-- and breaks it; as soon as the edit lands in the buffer, a "linter" here
-- reports the error with vim.diagnostic.set, as a language server would.
-- Then the warning on other.py is cleared (an empty set is sent).
-- The checks on what reached the model (and, in the lsp.log at debug level,
-- every message Neovim sent) are in tests/it/neovim_plugin.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

vim.lsp.log.set_level('debug')
local ns = vim.api.nvim_create_namespace('test-linter')
-- Reported before the plugin is set up: sent when the server starts.
vim.cmd.edit(T.root .. '/other.py')
local other = vim.api.nvim_get_current_buf()
vim.diagnostic.set(ns, other, {
  { lnum = 0, col = 7, end_col = 9, message = "'os' imported but unused", severity = vim.diagnostic.severity.WARN, source = 'ruff', code = 'F401' },
})
T.setup({ settings = { permissionMode = 'accept-edits' } })
local buf = T.edit('greet.py')

vim.cmd('BareAgent rename the argument')
T.wait_for('the edit in the buffer', function()
  return T.buffer_text(buf):find('+ nmae', 1, true) ~= nil
end)
vim.diagnostic.set(ns, buf, {
  { lnum = 1, col = 21, end_col = 25, message = "undefined name 'nmae'", severity = vim.diagnostic.severity.ERROR, source = 'pyflakes' },
})
T.wait_for('the end of the turn', function()
  return T.chat_has('_done')
end)
vim.diagnostic.reset(ns, other)
-- The clear is sent after the debounce; the log shows it once written.
T.wait_for('the cleared set in the log', function()
  local log = io.open(vim.lsp.log.get_filename()):read('*a')
  return log:find('other%.py"[^\n]*diagnostics = {}') ~= nil or log:find('diagnostics = {},[^\n]*other%.py"') ~= nil
end)
T.done()
