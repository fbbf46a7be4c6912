-- The review of a pending edit, before it is approved: a new tab where the
-- file's own buffer (unsaved changes included) and a scratch buffer holding
-- the text the edit would leave (`proposed` of its approval_requested
-- event) are diffed side by side in Neovim's diff mode. The approval keys
-- work in the scratch buffer; once the approval is answered (here, in the
-- chat, anywhere) the review tab closes.
--
-- The scratch buffer is read-only: what is reviewed is what is approved.
-- Edits the user wants go into the file's buffer (the server refuses an
-- edit whose file changed since the question, and the model reads again).

local M = {}

local opts = { keys = {} }
--- approval id -> { tab, file_win, scratch }
local open = {}

function M.setup(review_opts)
  opts = vim.tbl_deep_extend('force', opts, review_opts or {})
end

local function str(value)
  return type(value) == 'string' and value or nil
end

local function lines_of(text)
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

local function scratch_buffer(name, lines, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].modifiable = false
  if filetype and filetype ~= '' then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

local function map_keys(buf, id)
  local agent = require('bareagent')
  local k = opts.keys
  local function map(lhs, fn, desc)
    if lhs and lhs ~= '' then
      vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'bareagent: ' .. desc })
    end
  end
  map(k.allow, function() agent.answer('allow', id) end, 'allow once')
  map(k.allow_session, function() agent.answer('session', id) end, 'allow for the session')
  map(k.allow_always, function() agent.answer('always', id) end, 'allow always')
  map(k.reject, function() agent.answer('reject', id) end, 'reject')
  map(k.close, function() M.close(id) end, 'close the review')
end

local function winbar(id)
  local k = opts.keys
  return string.format(
    'proposed by bareagent (approval %d) · %s allow · %s for session · %s always · %s reject · %s close',
    id, k.allow, k.allow_session, k.allow_always, k.reject, k.close
  )
end

--- Opens the review of approval `approval` (its approval_requested event).
function M.open(approval)
  if open[approval.id] then
    local review = open[approval.id]
    if vim.api.nvim_tabpage_is_valid(review.tab) then
      vim.api.nvim_set_current_tabpage(review.tab)
      return
    end
    open[approval.id] = nil
  end
  local proposed, uri = str(approval.proposed), str(approval.uri)
  if not proposed or not uri then
    local diff = str(approval.diff)
    if not diff then
      require('bareagent.client').notify('approval ' .. approval.id .. ' is not an edit: nothing to review', vim.log.levels.WARN)
      return
    end
    -- The server could not compute the new text: its diff is what there is.
    vim.cmd('tabnew')
    local buf = scratch_buffer('bareagent://review/' .. approval.id .. '.diff', lines_of(diff), 'diff')
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo.winbar = winbar(approval.id)
    map_keys(buf, approval.id)
    open[approval.id] = { tab = vim.api.nvim_get_current_tabpage(), scratch = buf }
    return
  end
  local file_buf = vim.uri_to_bufnr(uri)
  vim.fn.bufload(file_buf)
  vim.cmd('tab sbuffer ' .. file_buf)
  local tab = vim.api.nvim_get_current_tabpage()
  local file_win = vim.api.nvim_get_current_win()
  local name = 'bareagent://review/' .. approval.id .. '/' .. (str(approval.path) or vim.fn.fnamemodify(vim.uri_to_fname(uri), ':t'))
  local scratch = scratch_buffer(name, lines_of(proposed), vim.bo[file_buf].filetype)
  vim.cmd('rightbelow vsplit')
  local scratch_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(scratch_win, scratch)
  vim.wo[scratch_win].winbar = winbar(approval.id)
  for _, win in ipairs({ file_win, scratch_win }) do
    vim.api.nvim_win_call(win, function()
      vim.cmd('diffthis')
    end)
  end
  map_keys(scratch, approval.id)
  open[approval.id] = { tab = tab, file_win = file_win, scratch = scratch }
end

--- Closes the review of approval `id`, if open: diff mode off in the
--- file's window, the tab closed.
function M.close(id)
  local review = open[id]
  open[id] = nil
  if not review then
    return
  end
  if review.file_win and vim.api.nvim_win_is_valid(review.file_win) then
    vim.api.nvim_win_call(review.file_win, function()
      vim.cmd('diffoff')
    end)
  end
  if vim.api.nvim_tabpage_is_valid(review.tab) then
    if #vim.api.nvim_list_tabpages() > 1 then
      local number = vim.api.nvim_tabpage_get_number(review.tab)
      vim.cmd('tabclose ' .. number)
    else
      for _, win in ipairs(vim.api.nvim_tabpage_list_wins(review.tab)) do
        if vim.api.nvim_win_get_buf(win) == review.scratch then
          pcall(vim.api.nvim_win_close, win, true)
        end
      end
    end
  end
end

--- The review tab of approval `id`, if it is open (for tests and statuslines).
function M.tab(id)
  local review = open[id]
  return review and vim.api.nvim_tabpage_is_valid(review.tab) and review.tab or nil
end

function M.on_event(event)
  if event.type == 'approval_resolved' then
    M.close(event.id)
  elseif event.type == 'turn_failed' or event.type == 'turn_finished' then
    local pending = require('bareagent.state').pending
    for id in pairs(open) do
      if not pending[id] then
        M.close(id)
      end
    end
  end
end

return M
