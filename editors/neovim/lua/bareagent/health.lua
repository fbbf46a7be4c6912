-- `:checkhealth bareagent`: what a set-up needs, and what is running.

local M = {}

function M.check()
  local health = vim.health
  health.start('bareagent')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.10 or later is needed; this is ' .. tostring(vim.version()))
  end
  local agent = require('bareagent')
  if not agent.options then
    health.info('setup() has not run yet (the first :BareAgent runs it with the defaults)')
  end
  local cmd = (agent.options or {}).cmd or { 'bareagent' }
  local path = vim.fn.exepath(cmd[1])
  if path ~= '' then
    local version = vim.fn.system({ path, '--version' })
    health.ok(string.format('`%s` is %s (%s)', cmd[1], path, vim.trim(version)))
  else
    health.error('`' .. cmd[1] .. '` is not found', {
      '`cargo install --path .` in the bareagent repository, then restart Neovim',
      "or give its path: require('bareagent').setup({ cmd = { '/path/to/bareagent' } })",
    })
  end
  local keys = vim.tbl_filter(function(name)
    return vim.env[name] and vim.env[name] ~= ''
  end, { 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENAI_BASE_URL' })
  if #keys > 0 then
    health.ok('model credentials in the environment: ' .. table.concat(keys, ', '))
  else
    health.warn('no ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL in the environment', {
      'set one in the shell Neovim starts from (keys are never read from the settings)',
    })
  end
  local clients = require('bareagent.client').clients()
  if #clients == 0 then
    health.info('no bareagent server is running (one starts for a file buffer of a project)')
  end
  for _, client in ipairs(clients) do
    health.ok(string.format('server %d running for %s', client.id, client.root_dir or '(no root)'))
  end
end

return M
