-- A cancel from the plugin: the turn reads a file, then waits on a model
-- reply the model server holds; `:BareAgent cancel` stops it, the chat
-- split and the statusline say so, and the next prompt runs as usual.
-- Run by tests/it/neovim_plugin.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

T.setup()
T.edit('greet.py')
vim.cmd('BareAgent read greet.py, then think for a long time')
-- The read is done: the loop is now waiting on the held model call.
T.wait_for('the read', function()
  return T.chat_has('- `read_file` greet.py ✓')
end)
T.check(T.statusline():find('^bareagent: running') ~= nil, 'statusline while waiting: ' .. T.statusline())
vim.cmd('BareAgent cancel')
T.wait_for('the cancel in the chat', function()
  return T.chat_line('_cancelled_') ~= nil
end)
T.check(T.statusline():find('^bareagent: idle') ~= nil, 'statusline after the cancel: ' .. T.statusline())
T.check(not T.chat_has('_done'), 'the cancelled turn did not finish')

vim.cmd('BareAgent are you there?')
T.wait_for('the next answer', function()
  return T.chat_has('Still here.') and T.chat_has('_done')
end)
T.done()
