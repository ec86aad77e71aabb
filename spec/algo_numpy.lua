-- For the algo specs: python3 with NumPy as a reference (python3-numpy is
-- a test dependency).
local support = require "support"

local M = {}

-- The python3 that has NumPy, or nil (then the caller marks its check
-- pending; under CI a missing NumPy fails).
function M.python()
  for _, py in ipairs {"python3", "/usr/bin/python3"} do
    if os.execute(py .. ' -c "import numpy" >/dev/null 2>&1') then return py end
  end
  assert(not os.getenv("CI"), "python3 with numpy not found under CI")
end

-- Runs the python3 program text with the arguments (strings); asserts that
-- it succeeded and returns what it printed.
function M.run(text, ...)
  local py3 = assert(M.python(), "python3 with numpy not found")
  local file = os.tmpname()
  support.write_file(file, text)
  local args = {}
  for i, a in ipairs {...} do args[i] = support.shell_quote(a) end
  local f = io.popen(py3 .. " " .. file .. " " .. table.concat(args, " ") .. " 2>&1")
  local out = f:read("a")
  local ok = f:close()
  os.remove(file)
  assert(ok, out)
  return out
end

-- A new temporary folder, removed when the running test ends (finally:
-- busted's, which a spec file sees).
function M.tmpdir(finally)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir " .. support.shell_quote(dir)))
  finally(function() os.execute("rm -rf " .. support.shell_quote(dir)) end)
  return dir
end

return M
