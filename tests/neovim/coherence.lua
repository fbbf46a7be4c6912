-- End-to-end, with only editors/neovim/bareagent.lua: the agent edits two
-- open buffers, one clean and one holding the user's unsaved work, then runs
-- a command that imports both. Run by tests/it/neovim.rs as
-- `nvim --headless --clean -l coherence.lua`, with `bareagent` on PATH.
-- Prints RESULT lines to stderr for the test to check.

local root = assert(os.getenv("WORKSPACE"), "WORKSPACE")
local model_url = assert(os.getenv("MODEL_URL"), "MODEL_URL")
local snippet = assert(os.getenv("SNIPPET"), "SNIPPET")

local function say(line) io.stderr:write(line .. "\n") end
local function fail(message)
  say("FAIL: " .. message)
  os.exit(1)
end

-- Settings first: the snippet's own merge over them, and Neovim 0.11 takes
-- no configuration given after `vim.lsp.enable`.
local finished = false
vim.lsp.config('bareagent', {
  init_options = { provider = 'anthropic', baseUrl = model_url, permissionMode = 'bypass' },
})
dofile(snippet)
-- The end of the turn, as the user sees it: the final status message.
local show = vim.lsp.handlers['window/showMessage']
vim.lsp.handlers['window/showMessage'] = function(err, result, ctx, config)
  if result and (result.message or ''):find('bareagent: done', 1, true) then finished = true end
  return show(err, result, ctx, config)
end

vim.cmd.edit(root .. "/mine.py")
local mine = vim.api.nvim_get_current_buf()
-- The user's own unsaved work: it must never be written for them.
vim.api.nvim_buf_set_lines(mine, -1, -1, false, { "", "def users():", "    return 2" })
vim.cmd.edit(root .. "/calc.py")
local calc = vim.api.nvim_get_current_buf()

if not vim.wait(10000, function()
  local client = vim.lsp.get_clients({ name = 'bareagent', bufnr = calc })[1]
  return client ~= nil and client.initialized
end, 20) then
  fail("the client did not attach")
end
local client = vim.lsp.get_clients({ name = 'bareagent' })[1]
client:exec_cmd({ title = "Ask", command = "bareagent.ask", arguments = { { prompt = "rename add" } } }, { bufnr = calc })
if not vim.wait(30000, function() return finished end, 50) then
  fail("the turn did not finish: " .. vim.inspect(vim.api.nvim_buf_get_lines(calc, 0, -1, false))
    .. " with init_options " .. vim.inspect(client.config.init_options) .. " clients " .. #vim.lsp.get_clients())
end

say("RESULT calc first line: " .. vim.api.nvim_buf_get_lines(calc, 0, 1, false)[1])
say("RESULT calc modified: " .. tostring(vim.bo[calc].modified))
say("RESULT mine modified: " .. tostring(vim.bo[mine].modified))
vim.cmd("silent! checktime")
local messages = vim.api.nvim_exec2("messages", { output = true }).output
say("RESULT W12: " .. tostring(messages:find("W12", 1, true) ~= nil))
vim.api.nvim_buf_call(calc, function() vim.cmd("silent undo") end)
say("RESULT calc after undo: " .. vim.api.nvim_buf_get_lines(calc, 0, 1, false)[1])
client:stop()
vim.wait(2000, function() return client:is_stopped() end, 20)
os.exit(0)
