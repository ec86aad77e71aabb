-- luagpu.core.check: the base every pure-Lua helper (luagpu.reduce,
-- luagpu.matmul, ...) is written on:
--
--   raising        H.fail(fn, fmt, ...): "luagpu: FN: message" at the line of
--                  the script that called the helper (the first frame outside
--                  the helpers' folder)
--   values         H.class_of, H.typename, H.show, H.integer
--   arguments      H.check_object, H.to_buffer, H.check_buffer, H.check_keys,
--                  H.expression, H.check_expression
--   options        H.option_names, H.check_options, H.check_wait
--
-- Enqueueing and scratch buffers: luagpu.core.steps; element types:
-- luagpu.core.types; programs: luagpu.core.programs.
--
-- fn, in every check, is the name of the function checked for ("reduce.sum",
-- "matmul"); where, the part of a message that names the value
-- ("argument #2: queue"). Not meant for scripts.

local gpu = require "luagpu"

local type, next, ipairs, tostring, error = type, next, ipairs, tostring, error
local rawlen, rawget, setmetatable, getmetatable = rawlen, rawget, setmetatable, getmetatable
local format, concat = string.format, table.concat
local max, mtype, tointeger = math.max, math.type, math.tointeger
-- absent where a sandbox removed the debug library: errors then carry no position
local getinfo = debug and debug.getinfo

local H = {}

-- Events in a wait option: the C side takes 65536, and one is kept for the
-- wait on the last user of a cached scratch buffer.
H.MAX_WAIT = 65535

------------------------------------------------------------------ raising

-- The folder of the helpers' chunk names ("@lua/luagpu/", or
-- "@[luagpu built-in]/luagpu/" for the copies embedded in the build), the
-- one above this file's core/: a frame whose chunk is a .lua file in it, or
-- in a folder below it, belongs to a helper.
local HELPERS_DIR = getinfo and getinfo(1, "S").source
HELPERS_DIR = HELPERS_DIR and (HELPERS_DIR:match("^(.*[/\\])[^/\\]+[/\\][^/\\]*$") or HELPERS_DIR)

-- (the C side's errors skip the helpers' frames too: host/internal.h's
-- LG_HELPERS_DIR_KEY)
if HELPERS_DIR and debug.getregistry then
  debug.getregistry()["luagpu.helpers_dir"] = HELPERS_DIR
end

local function is_helper(source)
  return source:sub(1, #HELPERS_DIR) == HELPERS_DIR and source:sub(-4) == ".lua"
end

-- The level, for the error() in H.fail, of the first function on the stack
-- that is not a helper's: the script's line that called the helper (0, no
-- position, when there is none, as from pcall, or no debug library).
local function caller_level()
  if not getinfo then return 0 end
  local level = 3                    -- 1: caller_level, 2: H.fail, 3: its caller
  while true do
    local info = getinfo(level, "S")
    if not info then return 0 end
    if not is_helper(info.source) then return level - 1 end
    level = level + 1
  end
end

-- Raises "luagpu: FN: " .. format(fmt, ...) at the helper's caller.
function H.fail(fn, fmt, ...)
  error("luagpu: " .. fn .. ": " .. format(fmt, ...), caller_level())
end
local fail = H.fail

------------------------------------------------------------------ values

-- The class of a luagpu object ("Buffer") and whether it was released;
-- nil for other values.
function H.class_of(v)
  local t = gpu.type(v)
  if t == nil then return nil end
  local live = t:match("^released (.*)")
  return live or t, live ~= nil
end
local class_of = H.class_of

-- The class of a luagpu object ("luagpu.Buffer", released or not); other
-- values: their Lua type.
function H.typename(v)
  local t = class_of(v)
  return t and "luagpu." .. t or type(v)
end
local typename = H.typename

-- v for a message: numbers and booleans as Lua writes them, strings quoted,
-- anything else by its type.
function H.show(v)
  local t = type(v)
  if t == "number" then
    -- NaN as "nan" whatever its sign bit (C libraries print "-nan")
    return v ~= v and "nan" or tostring(v)
  end
  if t == "boolean" then return tostring(v) end
  if t == "string" then return format("%q", v) end
  return typename(v)
end

-- v as an integer when it is a number with an integral value, else nil
-- (math.tointeger alone would also convert strings).
function H.integer(v)
  return mtype(v) and tointeger(v)
end

------------------------------------------------------------------ arguments

-- Checks v to be a live luagpu object of class cls ("Queue"); expected says
-- what was expected in the message (default "a luagpu.Queue"). Returns v.
function H.check_object(fn, where, v, cls, expected)
  local c, released = class_of(v)
  if c ~= cls then
    fail(fn, "%s: expected %s, got %s", where, expected or "a luagpu." .. cls, typename(v))
  end
  if released then fail(fn, "%s: attempt to use a released %s", where, cls:lower()) end
  return v
end
local check_object = H.check_object

-- v, or the Buffer that v stands for when v's metatable has a __tobuffer
-- function (a Tensor: its buffer, or an error when it is not contiguous,
-- naming fn and where, "argument #1", when given).
function H.to_buffer(v, fn, where)
  local mt = getmetatable(v)
  local convert = type(mt) == "table" and rawget(mt, "__tobuffer")
  if type(convert) == "function" then return convert(v, fn, where) end
  return v
end
local to_buffer = H.to_buffer

-- Checks argument #arg to be a live buffer (a view of a live one counts, and
-- a value H.to_buffer converts); returns its element type, its root buffer,
-- its offset in the root (elements) and the buffer itself.
function H.check_buffer(fn, arg, b)
  local where = "argument #" .. arg
  b = to_buffer(b, fn, where)
  check_object(fn, where, b, "Buffer", "a buffer")
  return b.type, b.root, b.offset, b
end

-- " (did you mean 'sum'?)" for a name k a lookup did not find, naming the
-- closest string key of the tables given (an edit distance of at most 2,
-- and less than half of k's length), or "" (on the error path only).
local function distance(a, b)
  local la, lb = #a, #b
  if math.abs(la - lb) > 2 then return 3 end
  local prev, cur = {}, {}
  for j = 0, lb do prev[j] = j end
  for i = 1, la do
    cur[0] = i
    local ca = a:byte(i)
    for j = 1, lb do
      local c = prev[j - 1] + (ca == b:byte(j) and 0 or 1)
      if prev[j] + 1 < c then c = prev[j] + 1 end
      if cur[j - 1] + 1 < c then c = cur[j - 1] + 1 end
      cur[j] = c
    end
    prev, cur = cur, prev
  end
  return prev[lb]
end

function H.did_you_mean(k, ...)
  if type(k) ~= "string" or #k > 64 then return "" end
  local best, bd = nil, 3
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if type(t) == "table" then
      for name in next, t do
        if type(name) == "string" and name:byte(1) ~= 95 then
          local d = distance(k, name)
          if d < bd or d == bd and best and name < best then best, bd = name, d end
        end
      end
    end
  end
  if best and bd <= 2 and bd * 2 < #k then return " (did you mean '" .. best .. "'?)" end
  return ""
end

-- Device dev named for a message that names two (two PoCL devices, or two
-- cards of one model, share a name): "gpu.device(K) 'NAME'", K its place
-- in gpu.devices(). Only on the error path.
function H.device_label(dev)
  local ok, list = pcall(gpu.devices)
  local name = tostring(H.class_of(dev) == "Device" and dev.name or dev)
  for k = 1, ok and type(list) == "table" and #list or 0 do
    if rawequal(list[k], dev) then return format("gpu.device(%d) '%s'", k, name) end
  end
  return "'" .. name .. "'"
end

-- The names a table may hold: {set =, list = "a, b, c" (for messages),
-- label = what a message puts before one ("option " or "")}.
function H.option_names(names, label)
  local set = {}
  for _, k in ipairs(names) do set[k] = true end
  return {set = set, list = concat(names, ", "), label = label or ""}
end

-- Checks that table t holds only names of known (read raw: a __pairs hides
-- none); raises "WHEREunknown NOUN 'k' (expected a, b, c)".
function H.check_keys(fn, where, t, known, noun)
  for k in next, t do
    if not known.set[k] then
      -- (a key's own __tostring is not called: it may raise or lie)
      local kt = type(k)
      local name = kt == "string" and not k:find("[%z\1-\31\127]") and "'" .. k .. "'"
                   or (kt == "number" or kt == "boolean") and "'" .. H.show(k) .. "'" or H.show(k)
      fail(fn, "%sunknown %s %s (expected %s)", where, noun, name, known.list)
    end
  end
end

-- What may not appear in an expression pasted into generated source: all
-- that ends it or reaches the preprocessor, also through digraphs (%: is #,
-- <% %> braces), trigraphs (??= is #, ??/ a backslash) and line splicing
-- (a backslash before a newline can make "/\<newline>/" a comment).
local NOT_IN_EXPRESSION = {";", "{", "}", "#", "\\", "/*", "//", "<%", "%>", "<:", ":>",
                           "%:", "??"}

-- Checks the string s to be one OpenCL C expression that cannot leave its
-- place in generated source (where: "argument #1", "field 'map'"); returns s.
-- The longest expression taken: OpenCL compilers recurse once per level of
-- its nesting (a build runs on a thread with a large stack: capture.c), and
-- one of 64 KiB already takes seconds to compile.
H.MAX_EXPRESSION = 65536

-- Identifiers that act as directives inside an expression: _Pragma("...")
-- runs a pragma (clang's "__debug crash" kills the process; "GCC
-- dependency <file>" opens a file, and hangs on a FIFO).
local NOT_IN_EXPRESSION_WORDS = {_Pragma = true, __pragma = true}

function H.check_expression(fn, where, s)
  if #s > H.MAX_EXPRESSION then
    fail(fn, "%s: expected an OpenCL C expression of at most %d characters, got %d", where,
         H.MAX_EXPRESSION, #s)
  end
  -- a NUL would end the source where the driver reads it; other control
  -- characters but tabs, line breaks and form feeds are no C either
  local at = s:find("[%z\1-\8\14-\31\127]")
  if at then
    fail(fn, "%s: expected an OpenCL C expression, got a control character (byte %d) at " ..
         "position %d", where, s:byte(at), at)
  end
  for i = 1, #NOT_IN_EXPRESSION do
    if s:find(NOT_IN_EXPRESSION[i], 1, true) then
      fail(fn, "%s: expected one expression (no ';', braces, comments, directives, " ..
           "backslashes, digraphs or trigraphs), got %q", where, s)
    end
  end
  for word in s:gmatch("[%a_][%w_]*") do
    if NOT_IN_EXPRESSION_WORDS[word] then
      fail(fn, "%s: expected one expression (no directives: %s), got %q", where, word, s)
    end
  end
  return s
end

-- The first word of build options s that is not an OpenCL compiler option
-- (-cl-..., as -cl-mad-enable or NVIDIA's -cl-nv-maxrregcount=64), or nil.
-- The options a parameter table or module field adds to a helper's build
-- are checked so: a -D there turned on the kernels' own switches (matmul's
-- EVEN wrote past C), an -I or -U reached the preprocessor.
function H.not_cl_option(s)
  for word in s:gmatch("%S+") do
    if not word:find("^%-cl%-[%w%-_=.]+$") then return word end
  end
  return nil
end

-- The OpenCL C literal of Lua number v (finite): an integer as its digits,
-- a float with every digit that tells it apart (%.17g; tostring keeps 14,
-- so -DBL_MAX came out larger than every double) and always as a floating
-- literal ("1.0", not "1").
function H.number_literal(v)
  if math.type(v) == "integer" then return tostring(v) end
  local s = format("%.17g", v)
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s
end

-- An OpenCL C expression from field field of def, a helper's definition
-- table (default when absent): a string, or a finite number.
function H.expression(fn, def, field, default)
  local v = def[field]
  if v == nil then
    if default then return default end
    fail(fn, "missing field '%s' (an OpenCL C expression)", field)
  end
  if type(v) == "number" then
    if v ~= v or v == 1 / 0 or v == -1 / 0 then
      fail(fn, "field '%s': expected a finite number or an OpenCL C expression, got %s " ..
           "(write \"INFINITY\" or \"NAN\")", field, H.show(v))
    end
    v = H.number_literal(v)
  end
  if type(v) ~= "string" or not v:find("%S") then
    fail(fn, "field '%s': expected an OpenCL C expression (a string), got %s", field,
         type(v) == "string" and "an empty string" or H.typename(v))
  end
  H.check_expression(fn, "field '" .. field .. "'", v)
  return (v:gsub("[\r\n]", " "))
end

------------------------------------------------------------------ options

-- Checks ev, the i-th Event of a wait option (i nil: the option itself).
local function check_event(fn, where, ev, i)
  local cls, released = class_of(ev)
  if cls ~= "Event" or released then
    check_object(fn, i and format("%s[%d]", where, i) or where, ev, "Event")
  end
end

-- The wait option (nil, an Event or a list of Events) as a new list,
-- checked. A list is read raw, as the C side reads one: its metatable's
-- __len and __index are not called.
function H.check_wait(fn, where, w)
  local list = {}
  if w == nil then return list end
  if type(w) ~= "table" then
    check_event(fn, where, w)
    list[1] = w
    return list
  end
  local n = rawlen(w)
  if n > H.MAX_WAIT then
    fail(fn, "%s: %d events are too many (at most %d)", where, n, H.MAX_WAIT)
  end
  for i = 1, n do
    local ev = rawget(w, i)
    check_event(fn, where, ev, i)
    list[i] = ev
  end
  return list
end

-- Checks opts, argument #arg of fn: nil or a table of the options in known
-- (from H.option_names). Returns a new table: wait (a new list) and queue,
-- checked; arg; the other known options as given (read as fields, so a
-- proxy's __index works), for the helper to check.
function H.check_options(fn, arg, opts, known)
  if opts == nil then return {wait = {}, arg = arg} end
  if type(opts) ~= "table" then
    fail(fn, "argument #%d: expected an options table, got %s", arg, typename(opts))
  end
  local at = "argument #" .. arg .. ": "
  H.check_keys(fn, at, opts, known, "option")
  local o = {}
  for k in next, known.set do o[k] = opts[k] end
  local named = at .. known.label
  if o.queue ~= nil then check_object(fn, named .. "queue", o.queue, "Queue") end
  o.wait = H.check_wait(fn, named .. "wait", o.wait)
  o.arg = arg
  return o
end

return H
