-- End-to-end: a real Neovim starts bareagent for a buffer, runs bareagent.ask,
-- answers the approval through vim.ui.select, and sees the buffer change.
-- Run by tests/it/neovim.rs as `nvim --headless --clean -l turn.lua`; settings
-- come from the environment. Output goes to stderr (print() does, in -l mode).

local bin = assert(os.getenv("BAREAGENT_BIN"), "BAREAGENT_BIN")
local root = assert(os.getenv("WORKSPACE"), "WORKSPACE")
local model_url = assert(os.getenv("MODEL_URL"), "MODEL_URL")

local function fail(message)
  io.stderr:write("FAIL: " .. message .. "\n")
  os.exit(1)
end

if os.getenv("NVIM_LSP_DEBUG") then
  vim.lsp.set_log_level("debug")
end
vim.cmd.edit(root .. "/greet.py")
local buf = vim.api.nvim_get_current_buf()
-- An unsaved change: the agent must read this, not the disk.
vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "    return 'Hello, ' + nme  # unsaved" })

-- The approval dialog (window/showMessageRequest) arrives through vim.ui.select.
local asked = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(asked, opts.prompt or "")
  for i, item in ipairs(items) do
    local title = type(item) == "table" and item.title or item
    if title == "Allow once" then
      return on_choice(item, i)
    end
  end
  on_choice(nil, nil)
end

local id = vim.lsp.start({
  name = "bareagent",
  cmd = { bin },
  root_dir = root,
  init_options = { provider = "anthropic", baseUrl = model_url, permissionMode = "default" },
})
if not id then
  fail("the client did not start")
end
local client = assert(vim.lsp.get_client_by_id(id))
if not vim.wait(10000, function() return client.initialized end, 20) then
  fail("no initialize response")
end

client:exec_cmd({ title = "Ask", command = "bareagent.ask", arguments = { { prompt = "Fix the typo in greet.py" } } }, { bufnr = buf })

local changed = vim.wait(20000, function()
  local line = vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] or ""
  return line:find("+ name", 1, true) ~= nil
end, 50)
if not changed then
  fail("the buffer did not change: " .. vim.inspect(vim.api.nvim_buf_get_lines(buf, 0, -1, false)))
end
if #asked ~= 1 then
  fail("expected one approval question, got " .. vim.inspect(asked))
end
if not vim.bo[buf].modified then
  fail("the edit should stay unsaved in the buffer")
end
io.stderr:write("OK " .. vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] .. "\n")
io.stderr:write("ASKED " .. asked[1] .. "\n")
client:stop()
vim.wait(2000, function() return client:is_stopped() end, 20)
os.exit(0)
