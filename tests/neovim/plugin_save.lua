-- bareagent/saveDocuments answered by the plugin: the agent edits two open
-- buffers, calc.py (clean) and mine.py (holding the user's unsaved work),
-- then runs a command that imports both. The plugin saves calc.py before
-- the command (undo stays, no W12); mine.py is never written.
-- Run by tests/it/neovim_plugin.rs, which checks what the command saw.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

vim.lsp.log.set_level('debug')
T.setup({ settings = { permissionMode = 'bypass' } })
local mine = T.edit('mine.py')
-- The user's own unsaved work: it must never be written for them.
vim.api.nvim_buf_set_lines(mine, -1, -1, false, { '', 'def users():', '    return 2' })
local calc = T.edit('calc.py')

vim.cmd('BareAgent rename add')
T.wait_for('the end of the turn', function()
  return T.chat_has('_done')
end, 30000)
T.check(vim.api.nvim_buf_get_lines(calc, 0, 1, false)[1] == 'def product(a, b):', 'the edit is in calc.py')
T.check(not vim.bo[calc].modified, 'calc.py was saved before the command')
T.check(vim.bo[mine].modified, "mine.py keeps the user's unsaved work, unsaved")
vim.cmd('silent! checktime')
local messages = vim.api.nvim_exec2('messages', { output = true }).output
T.check(not messages:find('W12', 1, true), 'no W12: ' .. messages)
vim.api.nvim_buf_call(calc, function()
  vim.cmd('silent undo')
end)
T.check(vim.api.nvim_buf_get_lines(calc, 0, 1, false)[1] == 'def add(a, b):', 'undo still takes the edit back')
T.done()
