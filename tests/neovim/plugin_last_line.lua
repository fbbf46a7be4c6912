-- Two edits of greet.py in one turn, the first on its last line (Neovim
-- applies that in two steps: the text, then the removal of the extra empty
-- line, `fix_eol` in vim.lsp.util.apply_text_edits). The model answers the
-- first after a pause, so Neovim sends the first step at once (its last
-- notification, the user's change, is older than its 150 ms debounce) and
-- the second after the debounce: two didChange for one edit. The second
-- edit, after both, must still apply. Run by tests/it/neovim_plugin.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

T.setup({ settings = { permissionMode = 'accept-edits' } })
local buf = T.edit('greet.py')
-- A change of the user's, sent before the prompt: Neovim's next change
-- notification, more than its debounce later, goes out at once.
vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'def greet(name):  # mine' })
vim.cmd('BareAgent fix greet.py')
T.wait_for('the end of the turn', function()
  return T.chat_has('_done')
end)
T.check(
  T.buffer_text(buf) == "def hello(name):  # mine\n    return 'hi ' + name",
  'both edits are in the buffer: ' .. T.buffer_text(buf)
)
T.done()
