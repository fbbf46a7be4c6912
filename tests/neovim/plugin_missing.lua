-- Without the server: `cmd` names a program that is not there. Opening a
-- file starts nothing, and `:BareAgent {prompt}` says what to do.
-- Run by tests/it/neovim_plugin.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

T.setup({ cmd = { 'no-such-bareagent' } })
vim.cmd.edit(T.root .. '/greet.py')
vim.cmd('BareAgent hello')
T.wait_for('the message', function()
  return T.noted('is not on PATH') ~= nil
end, 5000)
T.check(T.statusline() == '', 'no statusline without a server: ' .. T.statusline())
T.done()
