-- luagpu.core.settings: settings per device class that a script may change
-- (reduce.classes, algo.classes): their checks, and the checked copy the
-- helper reads, checked again only when a value changed.
--
--   S.int_in(lo, hi), S.pow2_in(lo, hi), S.boolean(), S.boolean_or(word)
--        checks: function(v) -> the value (an integer where one is
--        needed) or nil when it is not allowed, and what is allowed, in words
--   S.watched(t)  a table of settings with t's values whose assignments
--        are counted: the reader then knows it unchanged by one comparison
--        (reads, pairs and assignments work as on t; a value put there by
--        rawset makes the reader compare every value, as for a plain table)
--   S.reader(owner, classes, list) -> function(fn, dev [, extra])
--        the reader of owner's ("algo.classes") settings for dev's class
--        (classes[dev.type], else classes.gpu): each {name, check, words}
--        of list checked; returns the checked table (not to be changed)
--        and a signature of the values (plus extra, a string: part of the
--        helper's cache keys, so changed settings build again)

local H = require "luagpu.core.check"

local type, ipairs, tostring, load, setmetatable = type, ipairs, tostring, load, setmetatable
local next, pairs = next, pairs
local format, concat = string.format, table.concat
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer

local S = {}

function S.int_in(lo, hi)
  return function(v)
    local i = integer(v)
    if i and i >= lo and i <= hi then return i end
  end, format("an integer from %d to %d", lo, hi)
end

function S.pow2_in(lo, hi)
  return function(v)
    local i = integer(v)
    if i and i >= lo and i <= hi and i & (i - 1) == 0 then return i end
  end, format("a power of two from %d to %d", lo, hi)
end

function S.boolean()
  return function(v) if type(v) == "boolean" then return v end end, "true or false"
end

function S.boolean_or(word)
  return function(v) if type(v) == "boolean" or v == word then return v end end,
         format("true, false or '%s'", word)
end

-- watched table -> {values = its values, changes = assignments so far}
local WATCHED = setmetatable({}, {__mode = "k"})

function S.watched(t)
  local values = {}
  for k, v in pairs(t) do values[k] = v end
  local w = {values = values, changes = 0}
  local proxy = setmetatable({}, {
    __index = values,
    __newindex = function(_, k, v) values[k] = v; w.changes = w.changes + 1 end,
    __pairs = function() return next, values, nil end,
    __metatable = "luagpu settings",
  })
  WATCHED[proxy] = w
  return proxy
end

function S.reader(owner, classes, list)
  -- per class name: {cls = the table, raw = its values as read, extra,
  -- checked, sig}: a call whose class holds the same values skips the checks
  local memo = {}
  -- unchanged(cls, raw): whether cls holds the values raw holds, each
  -- setting read by a constant key (one function made here, not a loop
  -- over list per call)
  local tests = {}
  for i, s in ipairs(list) do tests[i] = format("cls[%q] == raw[%d]", s[1], i) end
  local unchanged = load("local cls, raw = ...; return " .. concat(tests, " and "),
                         "=(" .. owner .. " settings)")
  local types = setmetatable({}, {__mode = "k"})   -- dev -> dev.type (fixed)
  return function(fn, dev, extra)
    local dtype = types[dev]
    if dtype == nil then dtype = dev.type; types[dev] = dtype end
    local name = classes[dtype] ~= nil and dtype or "gpu"
    local cls = classes[name]
    local m = memo[name]
    if m and m.cls == cls and m.extra == extra then
      local w = m.watched
      if w and w.changes == m.changes and next(cls) == nil or unchanged(cls, m.raw) then
        return m.checked, m.sig
      end
    end
    if type(cls) ~= "table" then
      fail(fn, "%s.%s: expected a table of settings, got %s", owner, name, typename(cls))
    end
    local checked, sig, raw = {}, {}, {}
    for i, s in ipairs(list) do
      local v = cls[s[1]]
      local ok = s[2](v)
      if ok == nil then
        fail(fn, "%s.%s.%s: expected %s, got %s", owner, name, s[1], s[3], show(v))
      end
      checked[s[1]], sig[i], raw[i] = ok, tostring(ok), v
    end
    sig = concat(sig, ",") .. (extra or "")
    -- (values read with one put there by rawset: compared every time)
    local w = WATCHED[cls]
    if w and next(cls) ~= nil then w = nil end
    memo[name] = {cls = cls, raw = raw, extra = extra, checked = checked, sig = sig,
                  watched = w, changes = w and w.changes}
    return checked, sig
  end
end

return S
