-- The plugin's event handlers fed the fixtures every editor's tests share
-- (editors/protocol/events.json, held to the server's schema by
-- tests/it/editor_events.rs), without a server: through the handler the
-- LSP client calls for `bareagent/event`, decoded as it decodes a message.
-- After each event it prints what the plugin's state says (`SEEN …`), and
-- after each approval what its review shows (`REVIEW …`); the
-- notifications and the chat are printed too. tests/it/neovim_plugin.rs
-- compares all of it with its snapshot, so a field the server renames or
-- drops, which the fixtures must follow, changes what is shown here.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

-- No server: a review opens the file's buffer, which must start none.
T.setup({ cmd = { 'no-such-bareagent' } })
local path = vim.fs.joinpath(assert(os.getenv('PLUGIN')), '..', 'protocol', 'events.json')
local events = vim.json.decode(table.concat(vim.fn.readfile(path), '\n'), { luanil = { object = true } })
T.check(#events > 0, 'no fixtures in ' .. path)
local handler = vim.lsp.config.bareagent.handlers['bareagent/event']
local state = require('bareagent.state')

local function sorted_keys(map, show)
  local keys = {}
  for key, value in pairs(map) do
    table.insert(keys, show(key, value))
  end
  table.sort(keys)
  return table.concat(keys, ' ')
end

--- Opens the review of approval `id` as the user would, and prints what it shows.
local function review(id)
  require('bareagent').review(id)
  local tab = require('bareagent.review').tab(id)
  if tab then
    local buf = vim.api.nvim_get_current_buf()
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    T.out(string.format('REVIEW %d: %s · %s', id, vim.api.nvim_buf_get_name(buf), table.concat(lines, ' | ')))
  end
end

for _, event in ipairs(events) do
  handler(nil, event, { client_id = 1 })
  if event.type == 'approval_requested' then
    review(event.id)
  end
  T.out(string.format(
    'SEEN %s: %s · running [%s] · pending [%s] · tokens %d in %d out',
    event.type,
    state.activity(),
    sorted_keys(state.running, function(turn, session) return turn .. '@' .. session end),
    sorted_keys(state.pending, function(id) return tostring(id) end),
    state.tokens.input,
    state.tokens.output
  ))
end
T.done()
