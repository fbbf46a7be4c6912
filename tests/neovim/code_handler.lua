-- The plugin's `bareagent/codeIntelligence` handler (lua/bareagent/code.lua)
-- against a real pyright that the user's config (below) starts for python
-- buffers: called as Neovim calls a server request's handler (in a
-- coroutine), it loads a file no buffer holds, waits for pyright to attach,
-- and answers from it, on an unsaved buffer; it refuses where no server is
-- attached or none supports the method; and it converts positions for a
-- server that counts in UTF-8. Run by tests/it/neovim_code.rs.

local T = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'plugin_common.lua'))

vim.opt.runtimepath:prepend(assert(os.getenv('PLUGIN'), 'PLUGIN'))
vim.cmd.cd(T.root)
T.pyright_for_python()

local code = require('bareagent.code')
local uri = function(path)
  return vim.uri_from_fname(T.root .. '/' .. path)
end

--- The handler's answer to `request`, called the way Neovim calls it.
local function answer(request)
  local result, err
  local finished = false
  local started = vim.uv.hrtime()
  coroutine.wrap(function()
    result, err = code.answer(nil, request)
    finished = true
  end)()
  T.wait_for('the answer to ' .. request.method, function()
    return finished
  end, 60000)
  -- A figure for the closing note, never asserted.
  T.out(('TOOK %s %.0f ms'):format(request.method, (vim.uv.hrtime() - started) / 1e6))
  return result, err
end

-- No server runs yet: workspace/symbol with a file of the language wanted
-- loads it, so pyright starts and answers.
local symbols, serr = answer({ method = 'workspace/symbol', params = { query = 'add' }, uri = uri('main.py') })
T.check(serr == nil, 'workspace/symbol: ' .. vim.inspect(serr))
T.out('SYMBOLS ' .. type(symbols) .. ' of ' .. #symbols)

-- main.py is open with an unsaved new call of add; calc.py is in no buffer.
vim.cmd.edit(T.root .. '/main.py')
local main = vim.api.nvim_get_current_buf()
vim.api.nvim_buf_set_lines(main, -1, -1, false, { 'again = add(3, 4)' })
T.check(vim.fn.bufloaded(T.root .. '/calc.py') == 0, 'calc.py is not loaded yet')

-- References of add, from its definition in calc.py (loaded for the request).
local refs, err = answer({
  method = 'textDocument/references',
  params = {
    textDocument = { uri = uri('calc.py') },
    position = { line = 0, character = 4 },
    context = { includeDeclaration = false },
  },
})
T.check(err == nil, 'references: ' .. vim.inspect(err))
local found = {}
for _, location in ipairs(refs) do
  table.insert(found, ('%s:%d:%d'):format(vim.fs.basename(vim.uri_to_fname(location.uri)), location.range.start.line, location.range.start.character))
end
table.sort(found)
T.out('REFERENCES ' .. table.concat(found, ' '))
T.check(vim.fn.bufloaded(T.root .. '/calc.py') == 1, 'calc.py was loaded for the request')

-- Hover: the type pyright infers for `total`.
local hover, herr = answer({
  method = 'textDocument/hover',
  params = { textDocument = { uri = uri('main.py') }, position = { line = 2, character = 0 } },
})
T.check(herr == nil, 'hover: ' .. vim.inspect(herr))
T.out('HOVER ' .. vim.inspect(hover.contents):gsub('\n', ' '))

-- No server for a text file; none that answers a method pyright lacks.
local _, none = answer({
  method = 'textDocument/references',
  params = { textDocument = { uri = uri('notes.txt') }, position = { line = 0, character = 0 }, context = { includeDeclaration = true } },
})
T.out('NO SERVER ' .. (none and none.message or 'no error'))
local _, unsupported = answer({
  method = 'textDocument/implementation',
  params = { textDocument = { uri = uri('main.py') }, position = { line = 2, character = 8 } },
})
T.out('UNSUPPORTED ' .. (unsupported and unsupported.message or 'no error'))

-- A server counting in UTF-8 (in-process, as `cmd` may be): it answers
-- hover with a range at the position it was asked, and never answers a
-- definition.
local asked_at = {}
local function utf8_server(dispatchers)
  local closing, id = false, 0
  return {
    request = function(method, params, callback)
      id = id + 1
      local answer
      if method == 'initialize' then
        answer = { capabilities = { positionEncoding = 'utf-8', hoverProvider = true, definitionProvider = true } }
      elseif method == 'textDocument/hover' then
        table.insert(asked_at, params.position.character)
        local at = params.position
        answer = { contents = { kind = 'plaintext', value = 'add' }, range = { start = at, ['end'] = { line = at.line, character = at.character + 3 } } }
      elseif method == 'shutdown' then
        answer = vim.NIL
      end
      if answer then
        vim.schedule(function()
          callback(nil, answer)
        end)
      end
      return true, id
    end,
    notify = function(method)
      if method == 'exit' then
        closing = true
        dispatchers.on_exit(0, 15)
      end
      return true
    end,
    is_closing = function()
      return closing
    end,
    terminate = function()
      closing = true
    end,
  }
end
local wide_buf = vim.fn.bufadd(T.root .. '/wide.txt')
vim.fn.bufload(wide_buf)
local utf8_id = vim.lsp.start({ name = 'utf8-server', cmd = utf8_server, root_dir = T.root }, { bufnr = wide_buf })
T.wait_for('the UTF-8 server', function()
  local client = vim.lsp.get_client_by_id(utf8_id)
  return client and client.initialized
end)
local wide_hover, wide_err = answer({
  method = 'textDocument/hover',
  params = { textDocument = { uri = uri('wide.txt') }, position = { line = 0, character = 3 } },
})
T.check(wide_err == nil, 'hover in wide.txt: ' .. vim.inspect(wide_err))
T.out(('UTF8 asked at %s, answered %d-%d'):format(table.concat(asked_at, ','), wide_hover.range.start.character, wide_hover.range['end'].character))
code.answer_ms = 500
local _, late = answer({
  method = 'textDocument/definition',
  params = { textDocument = { uri = uri('wide.txt') }, position = { line = 0, character = 3 } },
})
code.answer_ms = 28000
T.out('LATE ' .. (late and late.message or 'no error'))

-- Positions for a server counting in UTF-8: 'add' on the line below is at
-- UTF-16 character 3 (é is one code unit, 😀 two) and UTF-8 byte 6.
local wide = uri('wide.txt')
local params = code.convert({ textDocument = { uri = wide }, position = { line = 0, character = 3 } }, wide, 'utf-16', 'utf-8')
T.out('PARAMS ' .. params.position.character)
local result = code.convert({
  { uri = wide, range = { start = { line = 0, character = 6 }, ['end'] = { line = 0, character = 9 } } },
  { originSelectionRange = { start = { line = 0, character = 6 }, ['end'] = { line = 0, character = 9 } }, targetUri = uri('calc.py'), targetRange = { start = { line = 0, character = 4 }, ['end'] = { line = 0, character = 7 } }, targetSelectionRange = { start = { line = 0, character = 4 }, ['end'] = { line = 0, character = 7 } } },
  { from = { name = 'f', uri = wide, range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 9 } }, selectionRange = { start = { line = 0, character = 6 }, ['end'] = { line = 0, character = 9 } }, data = { range = { start = { line = 0, character = 6 } } } }, fromRanges = { { start = { line = 0, character = 6 }, ['end'] = { line = 0, character = 9 } } } },
}, wide, 'utf-8', 'utf-16')
T.out('LOCATION ' .. result[1].range.start.character .. '-' .. result[1].range['end'].character)
T.out('LINK ' .. result[2].originSelectionRange.start.character .. ' ' .. result[2].targetSelectionRange.start.character)
T.out('CALL ' .. result[3].from.selectionRange.start.character .. ' ' .. result[3].fromRanges[1].start.character .. ' data ' .. result[3].from.data.range.start.character)
local edit = code.convert({ changes = { [wide] = { { range = { start = { line = 0, character = 6 }, ['end'] = { line = 0, character = 9 } }, newText = 'sum' } } } }, uri('calc.py'), 'utf-8', 'utf-16')
-- A rename asked in calc.py edits wide.txt: its ranges are in wide.txt.
T.out('EDIT ' .. edit.changes[wide][1].range.start.character)
T.done()
