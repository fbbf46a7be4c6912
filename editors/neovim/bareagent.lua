-- bareagent in Neovim 0.11+, without a plugin. Put this in your init.lua
-- (or source it). `bareagent` must be on PATH (`cargo install --path .`).
--
-- It attaches to every buffer. Approvals appear as a vim.ui.select prompt
-- (window/showMessageRequest); they are also code actions (`gra`) while pending.

vim.lsp.config('bareagent', {
  cmd = { 'bareagent' },
  root_markers = { '.bareagent', '.git' },
  -- No `filetypes`: the agent works on any file, the chat file included.
  init_options = {
    -- provider = 'anthropic',        -- or 'openai'; keys come from the environment
    -- model = 'claude-sonnet-4-5',
    -- permissionMode = 'default',    -- default | accept-edits | plan | bypass
    saveDocuments = true,             -- we answer bareagent/saveDocuments, below
  },
  handlers = {
    -- Before a command runs, the agent asks to save the buffers it edited
    -- (never one holding your own unsaved work), so the command sees its
    -- edits; `:w` keeps the undo history.
    ['bareagent/saveDocuments'] = function(_, params)
      local saved = {}
      for _, uri in ipairs((params or {}).uris or {}) do
        local buf = vim.uri_to_bufnr(uri)
        if vim.api.nvim_buf_is_loaded(buf) then
          local ok = pcall(vim.api.nvim_buf_call, buf, function() vim.cmd('silent write') end)
          if ok then table.insert(saved, uri) end
        end
      end
      return { saved = saved }
    end,
  },
})
vim.lsp.enable('bareagent')

local function run(command, arguments)
  local client = vim.lsp.get_clients({ name = 'bareagent' })[1]
  if not client then
    vim.notify('bareagent is not running in this buffer', vim.log.levels.WARN)
    return
  end
  client:exec_cmd({ title = command, command = command, arguments = arguments }, { bufnr = 0 })
end

-- :Agent fix the failing test   (no argument: send the prompt written in the chat file)
vim.api.nvim_create_user_command('Agent', function(o)
  run('bareagent.ask', o.args ~= '' and { { prompt = o.args } } or nil)
end, { nargs = '?' })
vim.api.nvim_create_user_command('AgentCancel', function() run('bareagent.cancel') end, {})
vim.api.nvim_create_user_command('AgentApprove', function() run('bareagent.approve') end, {})
vim.api.nvim_create_user_command('AgentReject', function() run('bareagent.reject') end, {})
vim.api.nvim_create_user_command('AgentChat', function() run('bareagent.openChat') end, {})
vim.api.nvim_create_user_command('AgentNew', function() run('bareagent.newSession') end, {})
