-- The plugin's event handlers fed the fixtures every editor's tests share
-- (editors/protocol/events.json, held to the server's schema by
-- tests/it/editor_events.rs), without a server: through the handler the
-- LSP client calls for `bareagent/event`, decoded as it decodes a message.
-- After each event it prints what the plugin's state says (`SEEN …`); the
-- notifications and the chat are printed too. tests/it/neovim_plugin.rs
-- compares all of it with its snapshot, so a field the server renames or
-- drops, which the fixtures must follow, changes what is shown here.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

T.setup()
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

for _, event in ipairs(events) do
  handler(nil, event, { client_id = 1 })
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
