-- The README's set-up without a plugin manager, as a user has it: the plugin
-- linked into the packpath, `require('bareagent').setup(...)` in init.lua
-- (written by tests/it/neovim_plugin.rs), Neovim started normally (not
-- --clean), this script run after start-up with `-c luafile`. The command
-- exists, the help is there once tagged, a prompt gets its answer.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

T.check(vim.fn.exists(':BareAgent') == 2, ':BareAgent exists after start-up')
local doc = vim.api.nvim_get_runtime_file('doc/bareagent.txt', false)[1]
T.check(doc ~= nil, 'the help file is on the runtimepath')
vim.cmd.helptags(vim.fs.dirname(doc))
vim.cmd('help bareagent-review')
T.check(vim.bo.filetype == 'help', ':help bareagent-review opens the help')
vim.cmd('helpclose')

local buf = T.edit('greet.py')
vim.cmd('BareAgent hello')
T.wait_for('the answer in the chat', function()
  return T.chat_has('Hello from the packpath.') and T.chat_has('_done')
end)
T.check(vim.api.nvim_buf_is_valid(buf), 'the buffer is still there')
T.done()
