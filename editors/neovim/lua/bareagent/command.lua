-- `:BareAgent`: a prompt, or one of the subcommands below; and its
-- completion (subcommands first, `@path` of files anywhere in a prompt).
-- The `@path` stays in the prompt as written: the agent reads the file.

local M = {}

local function agent()
  return require('bareagent')
end

local SUBCOMMANDS = {
  cancel = function() agent().cancel() end,
  new = function() agent().new_session() end,
  rewind = function() agent().rewind() end,
  chat = function() agent().chat() end,
  status = function() agent().status() end,
  model = function() agent().model() end,
  effort = function() agent().effort() end,
  approve = function() agent().answer('allow') end,
  ['approve-session'] = function() agent().answer('session') end,
  ['approve-always'] = function() agent().answer('always') end,
  reject = function() agent().answer('reject') end,
  review = function() agent().review() end,
}

--- The subcommand names, sorted.
function M.subcommands()
  local names = vim.tbl_keys(SUBCOMMANDS)
  table.insert(names, 'ask')
  table.sort(names)
  return names
end

-- The prompt with the lines `range` of the current buffer quoted after it.
local function with_selection(prompt, range)
  local buf = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  local shown = name ~= '' and vim.fn.fnamemodify(name, ':.') or '[No Name]'
  local lines = vim.api.nvim_buf_get_lines(buf, range[1] - 1, range[2], false)
  local fence = '```'
  for _, line in ipairs(lines) do
    while line:find(fence, 1, true) do
      fence = fence .. '`'
    end
  end
  return table.concat({
    prompt,
    '',
    string.format('Lines %d-%d of @%s:', range[1], range[2], shown),
    fence .. vim.bo[buf].filetype,
    table.concat(lines, '\n'),
    fence,
  }, '\n')
end

--- Runs `:[range]BareAgent {args}`: a subcommand when the argument is
--- exactly its name; `ask {prompt}` or any other text is a prompt (with a
--- range, the lines are quoted after it); nothing asks for one.
function M.run(args, range)
  local text = vim.trim(args or '')
  if range and text ~= '' and not SUBCOMMANDS[text] then
    return agent().ask(with_selection((text:gsub('^ask%s+', '')), range))
  end
  if text == '' then
    return agent().prompt()
  end
  local first, rest = text:match('^(%S+)%s*(.*)$')
  if first == 'ask' then
    if rest == '' then
      return agent().prompt()
    end
    return agent().ask(rest)
  end
  local sub = SUBCOMMANDS[text]
  if sub then
    return sub()
  end
  agent().ask(text)
end

--- Completion of `:BareAgent`: `@` + files and directories (relative to the
--- current directory) for a word starting with `@`, subcommands for the
--- first word.
function M.complete(arglead, cmdline, cursorpos)
  if arglead:sub(1, 1) == '@' then
    return vim.tbl_map(function(path)
      return '@' .. path
    end, vim.fn.getcompletion(arglead:sub(2), 'file'))
  end
  local before = cmdline:sub(1, cursorpos)
  local words = vim.split(vim.trim(before), '%s+')
  local first_word = #words == 1 or (#words == 2 and arglead ~= '')
  if not first_word then
    return {}
  end
  return vim.tbl_filter(function(name)
    return vim.startswith(name, arglead)
  end, M.subcommands())
end

return M
