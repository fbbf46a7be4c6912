-- :[range]BareAgent {prompt} | cancel | new | rewind | chat | status | model | effort | approve |
-- approve-session | approve-always | reject | review  (see :help bareagent).
-- The command sets the plugin up with its defaults if setup() was not called.

if vim.g.loaded_bareagent then
  return
end
vim.g.loaded_bareagent = true

vim.api.nvim_create_user_command('BareAgent', function(o)
  require('bareagent.command').run(o.args, o.range > 0 and { o.line1, o.line2 } or nil)
end, {
  nargs = '*',
  range = true,
  desc = 'bareagent: ask the agent, or cancel|new|rewind|chat|status|model|effort|approve|reject|review',
  complete = function(arglead, cmdline, cursorpos)
    return require('bareagent.command').complete(arglead, cmdline, cursorpos)
  end,
})
