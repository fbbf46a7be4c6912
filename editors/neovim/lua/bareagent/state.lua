-- What the agent is doing, as the `bareagent/event` stream tells it: the
-- turns running, the approvals pending, the tokens used. The chat split,
-- the review and the statusline read it; only events change it.

local M = {
  --- turn number -> session name, for turns running.
  running = {},
  --- approval id -> the approval_requested event, for approvals pending.
  pending = {},
  --- Tokens of this Neovim's model calls: input (cache included) and output.
  tokens = { input = 0, output = 0 },
}

--- Updates the state with one event.
function M.on_event(event)
  local kind = event.type
  if kind == 'turn_started' then
    M.running[event.turn] = event.session or 'main'
  elseif kind == 'turn_finished' or kind == 'turn_failed' then
    M.running[event.turn] = nil
    -- Cancelling a turn drops its approvals (docs/protocol.md).
    for id, approval in pairs(M.pending) do
      if approval.turn == event.turn then
        M.pending[id] = nil
      end
    end
  elseif kind == 'approval_requested' then
    M.pending[event.id] = event
  elseif kind == 'approval_resolved' then
    M.pending[event.id] = nil
  elseif kind == 'usage' and type(event.call) == 'table' then
    local call = event.call
    M.tokens.input = M.tokens.input
      + (call.input_tokens or 0)
      + (call.cache_creation_input_tokens or 0)
      + (call.cache_read_input_tokens or 0)
    M.tokens.output = M.tokens.output + (call.output_tokens or 0)
  end
end

--- The oldest pending approval (the server asks them in order), or nil.
function M.oldest_pending()
  local oldest
  for id, approval in pairs(M.pending) do
    if not oldest or id < oldest.id then
      oldest = approval
    end
  end
  return oldest
end

--- 'waiting' (an approval is pending), 'running' or 'idle'.
function M.activity()
  if next(M.pending) then
    return 'waiting'
  elseif next(M.running) then
    return 'running'
  end
  return 'idle'
end

local function short(n)
  if n >= 1000000 then
    return string.format('%.1fM', n / 1000000)
  elseif n >= 1000 then
    return string.format('%.1fk', n / 1000)
  end
  return tostring(n)
end

local WORDS = { idle = 'idle', running = 'running', waiting = 'waiting for approval' }

--- The statusline text: '' when no bareagent client runs, else e.g.
--- 'bareagent: running · 1.2k↑ 340↓'.
function M.statusline()
  if #vim.lsp.get_clients({ name = 'bareagent' }) == 0 then
    return ''
  end
  local text = 'bareagent: ' .. WORDS[M.activity()]
  if M.tokens.input + M.tokens.output > 0 then
    text = text .. ' · ' .. short(M.tokens.input) .. '↑ ' .. short(M.tokens.output) .. '↓'
  end
  return text
end

--- Forgets the tokens counted (a new session).
function M.reset_tokens()
  M.tokens = { input = 0, output = 0 }
end

return M
