-- Shared by the specs: checking that a call raises, and with what message.
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

return support
