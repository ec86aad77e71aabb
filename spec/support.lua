-- Shared by the specs: checking that a call raises, and with what message;
-- files, shell quoting and random data.
local assert = require "luassert"

local support = {}

-- Calls f(...), asserts that it raised, and returns the message.
function support.errmsg(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

-- Asserts that f(...) raises a message containing text (plain, not a pattern).
function support.has_error(text, f, ...)
  assert.matches(text, support.errmsg(f, ...), 1, true)
end

-- s quoted for sh.
function support.shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

function support.write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

function support.read_file(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

-- n random integers in [lo, hi].
function support.random_ints(n, lo, hi)
  local t = {}
  for i = 1, n do t[i] = math.random(lo, hi) end
  return t
end

-- n random multiples of 1/scale in [-range, range]: exact in float.
function support.random_floats(n, range, scale)
  local t = {}
  for i = 1, n do t[i] = math.random(-range, range) / scale end
  return t
end

return support
