-- The agent's `code` tool answered by the plugin from the pyright your
-- config attaches to python buffers: main.py is open with an unsaved new
-- call of add; the agent asks for add's references in calc.py (no buffer
-- holds it: the plugin loads it and waits for pyright), the type of
-- `total`, the definition, callers and workspace symbols, then renames add
-- (an edit, allowed in accept-edits) across both buffers. What reached the
-- model is checked in tests/it/neovim_code.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

T.pyright_for_python()
T.setup({ settings = { permissionMode = 'accept-edits' } })
local main = T.edit('main.py')
vim.api.nvim_buf_set_lines(main, -1, -1, false, { 'again = add(3, 4)' })

vim.cmd('BareAgent who calls add?')
T.wait_for('the end of the turn', function()
  return T.chat_has('_done')
end, 90000)
T.check(vim.bo[main].modified, 'main.py is still unsaved')
T.out('MAIN ' .. T.buffer_text(main):gsub('\n', ' | '))
local calc = vim.fn.bufnr(T.root .. '/calc.py')
T.out('CALC ' .. T.buffer_text(calc):gsub('\n', ' | '))
T.done()
