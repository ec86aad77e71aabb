-- luagpu.reduce: sum/min/max over every scalar type, views, custom
-- reducers, the async form, and the error messages.
local gpu = require "luagpu"
local reduce = require "luagpu.reduce"

local dev = gpu.device()

local SCALARS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                 "float", "double"}
local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
               ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
               long = {math.mininteger, math.maxinteger}, ulong = {0, math.maxinteger}}
local ISFLOAT = {float = true, double = true}

-- Lengths: 1, small primes, 2^k - 1 and 2^k + 1, and one that fills every
-- group of the first pass many times over.
local LENGTHS = {1, 2, 3, 7, 31, 127, 1023, 1025, 4093, 65537, 200003}

local function random_value(t)
  if ISFLOAT[t] then return math.random() * 2 - 1 end
  local r = RANGE[t]
  return math.random(r[1], r[2])
end

-- A buffer of n random values of type t, and the values as stored (floats
-- rounded to the buffer's precision).
local function random_buffer(t, n)
  local vals = {}
  for i = 1, n do vals[i] = random_value(t) end
  local b = dev:buffer(t, n)
  b:write(vals):wait()
  return b, b:get():totable()
end

-- sum (integers wrap at 64 bits, as the device's long accumulators do),
-- sum of magnitudes, min and max of vals[first..last].
local function reference(vals, first, last)
  local s, mag, lo, hi = 0, 0, vals[first], vals[first]
  for i = first, last do
    local v = vals[i]
    s = s + v
    mag = mag + math.abs(v)
    if v < lo then lo = v end
    if v > hi then hi = v end
  end
  return s, mag, lo, hi
end

local function check_all(t, b, vals, first, last)
  local s, mag, lo, hi = reference(vals, first, last)
  local got = reduce.sum(b)
  if ISFLOAT[t] then
    assert.equal("float", math.type(got))
    local tol = (t == "float" and 1e-5 or 1e-12) * math.max(mag, 1e-30)
    assert(math.abs(got - s) <= tol,
           ("%s sum of %d: got %.17g, expected %.17g"):format(t, last - first + 1, got, s))
  else
    assert.equal("integer", math.type(got))
    assert.equal(s, got)
  end
  assert.equal(lo, reduce.min(b))
  assert.equal(hi, reduce.max(b))
end

local support = require "support"
local err, has_error = support.errmsg, support.has_error

-- "spec/reduce_spec.lua:LINE: ", the position Lua gives an error raised by
-- a call on the line that calls here().
local function here()
  local info = debug.getinfo(2, "Sl")
  return ("%s:%d: "):format(info.short_src, info.currentline)
end

describe("reduce.sum, reduce.min, reduce.max", function()
  for _, t in ipairs(SCALARS) do
    it("reduce " .. t .. " buffers and views of many lengths", function()
      if t == "double" and not dev.fp64 then return pending("no fp64 on " .. dev.name .. ": double not checked") end
      local big, vals = random_buffer(t, LENGTHS[#LENGTHS] + 9)
      for _, n in ipairs(LENGTHS) do
        local b, v = random_buffer(t, n)
        check_all(t, b, v, 1, n)
        -- views at aligned and unaligned offsets of a larger buffer
        for _, first in ipairs{1, 2, 8} do
          check_all(t, big:sub(first, first + n - 1), vals, first, first + n - 1)
        end
      end
      -- a view of a view
      local v = big:sub(5, -3):sub(3, 1000)
      check_all(t, v, vals, 7, 1004)
      -- a value that stands for a view (a tensor's __tobuffer)
      check_all(t, setmetatable({}, {__tobuffer = function() return big:sub(2, 301) end}),
                vals, 2, 301)
    end)
  end

  it("sum a million random floats to a relative 1e-5", function()
    local n = 1000000
    local a = gpu.array("float", n)
    for i = 1, n do a[i] = math.random() end
    local b = dev:buffer("float", n)
    b:write(a):wait()
    local s = 0
    for i = 1, n do s = s + a[i] end
    local got = reduce.sum(b)
    assert(math.abs(got - s) / s < 1e-5, ("got %.9g, expected %.9g"):format(got, s))
    if dev.fp64 then
      local d = reduce.sum(b, {acc = "double"})
      assert(math.abs(d - s) / s < 1e-12, ("acc double: got %.17g, expected %.17g"):format(d, s))
    end
  end)

  it("sum integers in 64 bits: exact past the element type's range, wrapping at 2^64", function()
    local n = 300001
    local b = dev:buffer("int", n)
    b:fill(2147483647):wait()
    assert.equal(2147483647 * n, reduce.sum(b))
    local u = dev:buffer("uint", n)
    u:fill(4294967295):wait()
    assert.equal(4294967295 * n, reduce.sum(u))
    local c = dev:buffer("char", n)
    c:fill(-128):wait()
    assert.equal(-128 * n, reduce.sum(c))
    local l = dev:buffer("long", 3)
    l:write({math.maxinteger, 1, 5}):wait()
    assert.equal(math.mininteger + 5, reduce.sum(l))       -- wraps, as in C and Lua
    local ul = dev:buffer("ulong", 2)
    ul:write({math.maxinteger, math.maxinteger}):wait()
    assert.equal(-2, reduce.sum(ul))                        -- 2^64 - 2, read as Lua reads ulong
  end)

  it("takes wait lists and queues, and reuses what it built", function()
    local b = dev:buffer("int", 5000)
    local t = {}
    for i = 1, 5000 do t[i] = i end
    local ev = b:write(t)
    assert.equal(5000 * 5001 // 2, reduce.sum(b, {wait = {ev}}))
    reduce.min(b)   -- built here, whatever ran before this spec
    reduce.max(b)
    local built = reduce.programs_built
    local q = dev:queue()
    local ooo = dev:queue{out_of_order = true}
    for _ = 1, 5 do
      assert.equal(5000 * 5001 // 2, reduce.sum(b, {queue = q}))
      assert.equal(5000, reduce.max(b))
      assert.equal(1, reduce.min(b:sub(1, 3)))
      assert.equal(5000 * 5001 // 2 - 1, reduce.sum(b:sub(2, -1), {queue = ooo}))
    end
    -- in flight on three queues at once, sharing the cached buffers
    local e1 = reduce.sum(b, {queue = q, async = true})
    local e2 = reduce.sum(b:sub(1, 100), {queue = ooo, async = true})
    local e3 = reduce.sum(b:sub(1, 10), {async = true})
    assert.equal(55, e3:wait())
    assert.equal(5050, e2:wait())
    assert.equal(5000 * 5001 // 2, e1:wait())
    assert.equal(built, reduce.programs_built)
  end)
end)

describe("the async form", function()
  it("returns the result's Event and the Events of every pass", function()
    local b, vals = random_buffer("int", 100003)
    local s = reference(vals, 1, #vals)
    local ev, passes = reduce.sum(b, {async = true})
    assert.equal("luagpu.Event", tostring(ev):match("^luagpu%.Event"))
    assert.equal(1, #passes)                 -- single pass: the last group folds
    assert.equal(s, ev:wait())
    local start, stop = passes[1]:profile().start, ev:profile()["end"]
    for _, p in ipairs(passes) do
      local pr = p:profile()
      assert(pr.duration >= 0)
      assert(pr.start >= start and pr["end"] <= stop)
    end
    -- small inputs take one pass
    local ev1, passes1 = reduce.max(b:sub(1, 10), {async = true})
    assert.equal(1, #passes1)
    local _, _, _, hi = reference(vals, 1, 10)
    assert.equal(hi, ev1:wait())
    -- several in flight at once, sharing the cached buffers
    local evs = {}
    for i = 1, 4 do evs[i] = reduce.sum(b:sub(i, -1), {async = true}) end
    for i = 1, 4 do
      assert.equal((reference(vals, i, #vals)), evs[i]:wait())
    end
  end)

  it("with reduce.QUIET (luagpu's helpers) asks only for the read's Event", function()
    local b, vals = random_buffer("int", 100003)
    local s = reference(vals, 1, #vals)
    local _, _, lo, hi = reference(vals, 1, #vals)
    for _ = 1, 2 do                           -- the checked call, then the quick path
      local ev, passes = reduce.sum(b, reduce.QUIET)
      assert.same({}, passes)
      local e2 = reduce.min(b, reduce.QUIET)
      local e3 = reduce.max(b:sub(1, 10), reduce.QUIET)
      assert.equal(s, ev:wait())
      assert.equal(lo, e2:wait())
      assert.equal((select(4, reference(vals, 1, 10))), e3:wait())
    end
    assert.is_true(hi >= lo)
    -- a tensor gives the Event (and LAUNCH its function) too, not the number;
    -- a list of buffers takes neither
    local x = dev:tensor("int", {4}, {1, 2, 3, 4})
    local ev, passes = reduce.sum(x, reduce.QUIET)
    assert.same({}, passes)
    assert.equal(10, ev:wait())
    assert.equal(4, reduce.max(x, reduce.LAUNCH)():wait())
    for _, o in ipairs{reduce.QUIET, reduce.LAUNCH} do
      has_error("luagpu: reduce.sum: argument #2: a list of buffers takes only option acc",
                reduce.sum, {b, b:sub(1, 10)}, o)
    end
  end)

  it("asks for no pass Events on an in-order queue without profiling", function()
    local b, vals = random_buffer("int", 70001)
    local q = dev:queue{profiling = false}
    for _, single in ipairs{true, false} do
      reduce.single_pass = single
      local ev, passes = reduce.sum(b, {async = true, queue = q})
      assert.same({}, passes)
      assert.equal((reference(vals, 1, #vals)), ev:wait())
      assert.equal((reference(vals, 3, #vals)), reduce.sum(b:sub(3, -1), {queue = q}))
    end
    reduce.single_pass = true
    local ooo = dev:queue{profiling = false, out_of_order = true}
    local ev, passes = reduce.sum(b, {async = true, queue = ooo})
    assert.equal(1, #passes)
    assert.equal((reference(vals, 1, #vals)), ev:wait())
  end)
end)

describe("a call again on the same buffer (the quick path)", function()
  it("reads the buffer anew and notices class settings, single_pass and releases", function()
    local b, vals = random_buffer("int", 100003)
    local v = b:sub(5, -3)
    local s, sv = reference(vals, 1, #vals), reference(vals, 5, #vals - 2)
    for _ = 1, 3 do
      assert.equal(s, reduce.sum(b))
      assert.equal(sv, reduce.sum(v))
      local ev, passes = reduce.sum(b, {async = true})
      assert.equal(1, #passes)
      assert.equal(s, ev:wait())
    end
    vals[1], vals[#vals] = 12345, -678
    b:sub(1, 1):write({12345}):wait()
    b:sub(-1, -1):write({-678}):wait()
    s = reference(vals, 1, #vals)
    assert.equal(s, reduce.sum(b))
    -- a class setting changed: built again
    local name = reduce.classes[dev.type] and dev.type or "gpu"
    local cls = reduce.classes[name]
    local unroll = cls.unroll
    finally(function()
      cls.unroll = unroll
      reduce.single_pass = true
    end)
    local built = reduce.programs_built
    cls.unroll = 3 - unroll
    assert.equal(s, reduce.sum(b))
    assert.equal(built + 1, reduce.programs_built)
    assert.equal(s, reduce.sum(b))
    assert.equal(built + 1, reduce.programs_built)
    cls.unroll = 3
    assert.equal(("luagpu: reduce.sum: reduce.classes.%s.unroll: expected 1 or 2, got 3")
                 :format(name), err(reduce.sum, b))
    cls.unroll = unroll
    -- two passes, then one again
    reduce.single_pass = false
    local ev, passes = reduce.sum(b, {async = true})
    assert.equal(2, #passes)
    assert.equal(s, ev:wait())
    reduce.single_pass = true
    ev, passes = reduce.sum(b, {async = true})
    assert.equal(1, #passes)
    assert.equal(s, ev:wait())
    -- other options still checked
    assert.equal("luagpu: reduce.sum: argument #2: unknown option 'asink' (expected wait, " ..
                 "queue, async, acc, devices, shares)", err(reduce.sum, b, {asink = true}))
    assert.equal("luagpu: reduce.sum: argument #2: async: expected a boolean, got 1",
                 err(reduce.sum, b, {async = 1}))
    b:release()
    assert.equal("luagpu: reduce.sum: argument #1: attempt to use a released buffer",
                 err(reduce.sum, b))
    assert.equal("luagpu: reduce.sum: argument #1: attempt to use a released buffer",
                 err(reduce.sum, v, {async = true}))
  end)
end)

describe("reduce.single_pass = false", function()
  it("folds the partials in a second kernel, with the same results", function()
    reduce.single_pass = false
    finally(function() reduce.single_pass = true end)
    local b, vals = random_buffer("int", 100003)
    local s = reference(vals, 1, #vals)
    local ev, passes = reduce.sum(b, {async = true})
    assert.equal(2, #passes)
    assert.equal(s, ev:wait())
    assert.equal(s, reduce.sum(b))
    local f = random_buffer("float", 65537)
    reduce.single_pass = true
    local one = reduce.sum(f)
    reduce.single_pass = false
    assert.equal(one, reduce.sum(f))         -- the same order of additions
  end)
end)

describe("reduce.new", function()
  local sq = reduce.new{type = "float", acc = dev.fp64 and "double" or "float",
                        map = "(ACC)x * x", op = "a + b", neutral = "0"}
  local dot = reduce.new{type = "int", acc = "long", map = "(long)x * y", op = "a + b",
                         neutral = 0}

  it("pastes a number field with every digit it has", function()
    -- (tostring kept 14: a neutral of -DBL_MAX came out larger than every
    -- double, so fmax of -DBL_MAX's gave -1.7976931348622999e308)
    if not dev.fp64 then return pending("the device has no double") end
    local low = -1.7976931348623157e308
    local b = dev:buffer("double", 4, {host = gpu.array("double", 4):fill(low)})
    local r = reduce.new{type = "double", op = "fmax(a, b)", neutral = low}
    assert.equal(low, r(b))
    local third = reduce.new{type = "double", map = "x * 0 + " .. "1", op = "a + b", neutral = 0}
    assert.equal(4, third(b))
    local tenth = reduce.new{type = "double", op = "fmax(a, b)", neutral = 0.1}
    assert.equal(0.1, tenth(b))
  end)

  it("reduces with a custom map and op: sum of squares", function()
    local b, vals = random_buffer("float", 70001)
    local s = 0
    for i = 1, #vals do s = s + vals[i] * vals[i] end
    assert(math.abs(sq(b) - s) / s < 1e-5)
    assert.equal(1, sq.inputs)
    local v = b:sub(3, 3)
    assert(math.abs(sq(v) - vals[3] ^ 2) <= 1e-6 * vals[3] ^ 2)
  end)

  it("takes two buffers when the map reads y: dot products, aligned or not", function()
    assert.equal(2, dot.inputs)
    local n = 65539
    local x, xv = random_buffer("int", n + 3)
    local y, yv = random_buffer("int", n + 3)
    local function ref(xo, yo, len)
      local s = 0
      for i = 1, len do s = s + xv[xo + i] * yv[yo + i] end
      return s
    end
    assert.equal(ref(0, 0, n + 3), dot(x, y))
    assert.equal(ref(1, 1, n), dot(x:sub(2, n + 1), y:sub(2, n + 1)))
    assert.equal(ref(1, 3, n), dot(x:sub(2, n + 1), y:sub(4, n + 3)))   -- no common alignment
    assert.equal(ref(0, 2, 5), dot(x:sub(1, 5), y:sub(3, 7), {}))
    local ev, passes = dot(x, y, {async = true})
    assert.equal(ref(0, 0, n + 3), ev:wait())
    assert.is_true(#passes >= 1)
  end)

  it("gives the map the 0-based index i, and takes other ops", function()
    local idx = reduce.new{type = "short", acc = "long", map = "(long)x * (long)i",
                           op = "a + b", neutral = "0"}
    local amax = reduce.new{type = "int", acc = "uint", map = "abs(x)", op = "max(a, b)",
                            neutral = "0"}
    local prod = reduce.new{type = "double", map = "x", op = "a * b", neutral = "1"}
    local b, vals = random_buffer("short", 5003)
    local s = 0
    for i = 1, #vals do s = s + vals[i] * (i - 1) end
    assert.equal(s, idx(b))
    local s2 = 0
    for i = 11, 20 do s2 = s2 + vals[i] * (i - 11) end
    assert.equal(s2, idx(b:sub(11, 20)))
    local ib, ivals = random_buffer("int", 3001)
    local m = 0
    for _, v in ipairs(ivals) do m = math.max(m, math.abs(v)) end
    assert.equal(m, amax(ib))
    if dev.fp64 then
      local d = dev:buffer("double", 40)
      local t, p = {}, 1
      for i = 1, 40 do t[i] = 1 + (i % 7) / 64; p = p * t[i] end
      d:write(t):wait()
      assert(math.abs(prod(d) - p) <= 1e-12 * p)
    end
  end)

  it("compiles when a device is given, and reports a map that does not compile", function()
    local ok = reduce.new{type = "float", map = "x * 2", op = "a + b", neutral = "0",
                          device = dev}
    local b = dev:buffer("float", 10)
    b:fill(1.5):wait()
    assert.equal(30, ok(b))
    local e = err(reduce.new, {type = "float", map = "x * zz", op = "a + b", neutral = "0",
                               device = dev})
    assert.matches("luagpu: reduce.new: map 'x * zz', op 'a + b', neutral '0' for float " ..
                   "do not compile on ", e, 1, true)
    assert.matches("zz", e:match("\n(.*)$"), 1, true)   -- the build log names it
    local late = reduce.new{type = "float", map = "x", op = "a +* b", neutral = "0"}
    has_error("luagpu: reducer: map 'x', op 'a +* b', neutral '0' for float do not compile",
              late, b)
  end)
end)

describe("bad input", function()
  local b = dev:buffer("float", 100)
  local sq = reduce.new{type = "float", map = "x * x", op = "a + b", neutral = "0"}
  local dot = reduce.new{type = "float", map = "x * y", op = "a + b", neutral = "0"}

  it("raises for what is not a live buffer of scalars", function()
    has_error("luagpu: reduce.sum: argument #1: expected a buffer, got nil", reduce.sum)
    has_error("luagpu: reduce.min: argument #1: expected a buffer, got table", reduce.min, {})
    has_error("luagpu: reduce.max: argument #1: expected a buffer, got luagpu.Device",
              reduce.max, dev)
    has_error("luagpu: reducer: argument #1: expected a buffer, got number", sq, 3)
    local r = dev:buffer("float", 10)
    local v = r:sub(2, 5)
    r:release()
    has_error("luagpu: reduce.sum: argument #1: attempt to use a released buffer", reduce.sum, r)
    has_error("luagpu: reduce.max: argument #1: attempt to use a released buffer", reduce.max, v)
    has_error("luagpu: reduce.sum: argument #1: expected a buffer of scalars, got float4 " ..
              "elements", reduce.sum, dev:buffer("float4", 8))
    has_error("luagpu: reducer: argument #1: expected a buffer of float, got int",
              sq, dev:buffer("int", 8))
    has_error("luagpu: reducer: argument #2: expected a buffer, got nil", dot, b)
    has_error("luagpu: reducer: argument #2: expected 100 elements, got 99", dot, b, b:sub(2, -1))
    has_error("luagpu: reducer: argument #2: expected a buffer of float, got double",
              dot, b, dev:buffer("double", 100))
  end)

  it("raises for bad options", function()
    has_error("luagpu: reduce.sum: argument #2: expected an options table, got number",
              reduce.sum, b, 5)
    has_error("luagpu: reduce.sum: argument #2: unknown option 'asink' (expected wait, queue, " ..
              "async, acc, devices, shares)", reduce.sum, b, {asink = true})
    has_error("luagpu: reduce.min: argument #2: unknown option 'acc' (expected wait, queue, " ..
              "async, devices, shares)", reduce.min, b, {acc = "double"})
    -- a key's own __tostring is not called (one returning a table raised
    -- Lua's "'__tostring' must return a string" from luagpu's checks)
    for _, mt in ipairs{{__tostring = function() return {} end},
                        {__tostring = function() error("boom") end}} do
      has_error("luagpu: reduce.sum: argument #2: unknown option table (expected wait, queue, " ..
                "async, acc, devices, shares)", reduce.sum, b, {[setmetatable({}, mt)] = 1})
    end
    has_error("luagpu: reduce.sum: argument #2: unknown option \"a\\0b\" (expected",
              reduce.sum, b, {["a\0b"] = 1})
    has_error("luagpu: reduce.sum: argument #2: option acc: expected \"float\" or \"double\" " ..
              "for a float buffer, got long for a int buffer",
              reduce.sum, dev:buffer("int", 4), {acc = "long"})
    has_error("luagpu: reducer: argument #3: unknown option 'x' (expected wait, queue, async)",
              dot, b, b, {x = 1})
  end)

  it("checks every option itself and reports it under its own name", function()
    local ev = b:fill(1)
    ev:wait()
    local gone_q, gone_ev = dev:queue(), b:fill(1)
    gone_ev:wait()
    gone_q:release()
    gone_ev:release()
    local function sum_error(msg, opts)
      assert.equal("luagpu: reduce.sum: argument #2: " .. msg, err(reduce.sum, b, opts))
    end
    sum_error("queue: expected a luagpu.Queue, got number", {queue = 5})
    sum_error("queue: expected a luagpu.Queue, got luagpu.Device", {queue = dev})
    sum_error("queue: attempt to use a released queue", {queue = gone_q})
    sum_error("wait: expected a luagpu.Event, got number", {wait = 5})
    sum_error("wait[2]: expected a luagpu.Event, got string", {wait = {ev, "ev"}})
    sum_error("wait: attempt to use a released event", {wait = gone_ev})
    sum_error("wait[2]: attempt to use a released event", {wait = {ev, gone_ev}})
    sum_error("async: expected a boolean, got 1", {async = 1})
    sum_error("option acc: expected \"float\" or \"double\" for a float buffer, got table " ..
              "for a float buffer", {acc = {}})
    assert.equal("luagpu: reducer: argument #3: queue: expected a luagpu.Queue, got number",
                 err(dot, b, b, {queue = 5}))
    assert.equal("luagpu: reducer: argument #2: wait[1]: attempt to use a released event",
                 err(sq, b, {wait = {gone_ev}}))
    -- odd tables: option names and wait lists are read raw, as the C side reads them
    -- (no __pairs hides a key, no __len or __index makes up events)
    local hidden = setmetatable({asink = true}, {__pairs = function() return next, {} end})
    sum_error("unknown option 'asink' (expected wait, queue, async, acc, devices, shares)", hidden)
    local made_up = setmetatable({}, {__len = function() return 2 end,
                                      __index = function() return "ev" end})
    assert.equal(100, reduce.sum(b, {wait = made_up}))
    local many = {}
    for i = 1, 65536 do many[i] = ev end
    sum_error("wait: 65536 events are too many (at most 65535)", {wait = many})
    -- the values of options are read as any field is: a proxy's work
    assert.equal(100, reduce.sum(b, setmetatable({}, {__index = {queue = dev:queue()}})))
  end)

  it("points at the line that called it, in the caller's file", function()
    local e, at = err(function() reduce.sum(nil) end), here()
    assert.matches("reduce_spec%.lua:%d+: $", at)
    assert.equal(at .. "luagpu: reduce.sum: argument #1: expected a buffer, got nil", e)
    e, at = err(function() reduce.max(b, {queue = 5}) end), here()
    assert.equal(at .. "luagpu: reduce.max: argument #2: queue: expected a luagpu.Queue, " ..
                 "got number", e)
    e, at = err(function() gpu.reduce.min(dev:buffer("int", 0)) end), here()
    assert.equal(at .. "luagpu: reduce.min: argument #1: the min of an empty buffer is " ..
                 "undefined", e)
    e, at = err(function() sq(dev:buffer("int", 4)) end), here()
    assert.equal(at .. "luagpu: reducer: argument #1: expected a buffer of float, got int", e)
    e, at = err(function() reduce.new{type = "quux", op = "a + b", neutral = "0"} end), here()
    assert.equal(at .. "luagpu: reduce.new: field 'type': expected a scalar element type " ..
                 "(char .. double), got 'quux'", e)
    -- from a function of the script's own: its line, not its caller's
    local function total(x)
      local s = reduce.sum(x)
      return s
    end
    local line = debug.getinfo(total, "S").linedefined + 1
    e = err(function() total(5) end)
    assert.equal(("%s:%d: luagpu: reduce.sum: argument #1: expected a buffer, got number")
                 :format(debug.getinfo(1, "S").short_src, line), e)
    -- called straight from pcall, a C function: no position, as for C functions
    assert.equal("luagpu: reduce.sum: argument #1: expected a buffer, got nil",
                 err(reduce.sum, nil))
  end)

  it("checks reduce.classes where it reads them, naming the setting and what it allows",
     function()
    local name = reduce.classes[dev.type] and dev.type or "gpu"
    local cls = reduce.classes[name]
    local saved = {}
    for k, v in pairs(cls) do saved[k] = v end
    finally(function()
      reduce.classes[name] = cls
      for k, v in pairs(saved) do cls[k] = v end
    end)
    local ones = dev:buffer("float", 1000)
    ones:fill(1):wait()
    local bad = {
      {"vector_bytes", 12, "a power of two from 1 to 128, got 12"},
      {"vector_bytes", 256, "a power of two from 1 to 128, got 256"},
      {"vector_bytes", "64", "a power of two from 1 to 128, got \"64\""},
      {"local_size", 0 / 0, "a power of two from 1 to 65536 (cut to the device's limit), " ..
       "got nan"},
      {"local_size", 48, "a power of two from 1 to 65536 (cut to the device's limit), got 48"},
      {"groups_per_cu", 0, "an integer from 1 to 1024, got 0"},
      {"groups_per_cu", 1 << 40, "an integer from 1 to 1024, got 1099511627776"},
      {"strided", 1, "true or false, got 1"},
      {"unroll", 3, "1 or 2, got 3"},
      {"min_vectors", 2.5, "an integer from 1 to 1073741824, got 2.5"},
      {"min_vectors", nil, "an integer from 1 to 1073741824, got nil"},
    }
    for _, c in ipairs(bad) do
      local key, value, allowed = c[1], c[2], c[3]
      cls[key] = value
      local e, at = err(function() reduce.sum(ones) end), here()
      assert.equal(("%sluagpu: reduce.sum: reduce.classes.%s.%s: expected %s")
                   :format(at, name, key, allowed), e)
      cls[key] = saved[key]
    end
    reduce.classes[name] = 5
    assert.equal(("luagpu: reduce.sum: reduce.classes.%s: expected a table of settings, got " ..
                  "number"):format(name), err(reduce.sum, ones))
    reduce.classes[name] = cls
    -- integral floats are integers; the sum of 1000 ones is 1000 again
    cls.vector_bytes = 16.0
    assert.equal(1000, reduce.sum(ones))
  end)

  it("guards the values of reduce.new's fields", function()
    b:fill(1):wait()   -- whatever the specs before this one did with b
    local r = reduce.new{type = "float", op = "a + b", neutral = 0, inputs = 1.0}
    assert.equal(1, r.inputs)
    assert.equal(100, r(b))
    assert.equal("luagpu: reduce.new: field 'inputs': expected 1 or 2, got 1.5",
                 err(reduce.new, {type = "float", op = "a + b", neutral = "0", inputs = 1.5}))
    assert.equal("luagpu: reduce.new: field 'neutral': expected a finite number or an OpenCL C " ..
                 "expression, got inf (write \"INFINITY\" or \"NAN\")",
                 err(reduce.new, {type = "float", op = "a + b", neutral = math.huge}))
    assert.equal("luagpu: reduce.new: unknown field 'mapp' (expected type, acc, map, op, " ..
                 "neutral, inputs, device)",
                 err(reduce.new, {type = "float", mapp = "x", op = "a + b", neutral = "0"}))
  end)

  it("raises for bad reduce.new definitions", function()
    has_error("luagpu: reduce.new: argument #1: expected a table {type =, map =, op =, " ..
              "neutral =}, got string", reduce.new, "float")
    has_error("luagpu: reduce.new: missing field 'type'", reduce.new,
              {map = "x", op = "a + b", neutral = "0"})
    has_error("luagpu: reduce.new: field 'type': expected a scalar element type (char .. " ..
              "double), got 'quux'", reduce.new, {type = "quux", op = "a + b", neutral = "0"})
    has_error("got 'float4'", reduce.new, {type = "float4", op = "a + b", neutral = "0"})
    has_error("luagpu: reduce.new: field 'acc': expected a scalar element type (char .. " ..
              "double), got 'half'", reduce.new,
              {type = "float", acc = "half", op = "a + b", neutral = "0"})
    has_error("luagpu: reduce.new: missing field 'op'", reduce.new,
              {type = "float", neutral = "0"})
    has_error("luagpu: reduce.new: missing field 'neutral'", reduce.new,
              {type = "float", op = "a + b"})
    has_error("luagpu: reduce.new: field 'map': expected an OpenCL C expression (a string), " ..
              "got table", reduce.new, {type = "float", map = {}, op = "a + b", neutral = "0"})
    has_error("luagpu: reduce.new: field 'op': expected an OpenCL C expression (a string), " ..
              "got an empty string", reduce.new, {type = "float", op = " ", neutral = "0"})
    has_error("luagpu: reduce.new: unknown field 'mapp'", reduce.new,
              {type = "float", mapp = "x", op = "a + b", neutral = "0"})
    has_error("luagpu: reduce.new: field 'inputs': expected 1 or 2, got 3", reduce.new,
              {type = "float", op = "a + b", neutral = "0", inputs = 3})
    has_error("luagpu: reduce.new: field 'device': expected a luagpu.Device, got luagpu.Buffer",
              reduce.new, {type = "float", op = "a + b", neutral = "0", device = b})
  end)
end)

describe("the examples", function()
  local luagpu = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"
  for _, script in ipairs{"examples/reduce.lua 20011", "examples/statistics.lua 20011"} do
    it("run: " .. script, function()
      local p = assert(io.popen(luagpu .. " " .. script .. " 2>&1"))
      local out = p:read("a")
      local ok = p:close()
      assert.is_true(ok, out)
      assert.matches("\nok\n$", out)
    end)
  end
end)

describe("reduce over an empty buffer", function()
  local gpu = require "luagpu"
  local reduce = require "luagpu.reduce"
  local dev = gpu.device()
  it("sums to 0 and refuses min and max", function()
    for _, t in ipairs { "float", "int", "uchar" } do
      local b = dev:buffer(t, 0)
      assert.equals(0, #b)
      assert.equals(0, reduce.sum(b))
      local ok, err = pcall(reduce.min, b)
      assert.is_false(ok)
      assert.matches("reduce.min: argument #1: the min of an empty buffer is undefined", err, 1, true)
      ok, err = pcall(reduce.max, b)
      assert.is_false(ok)
      assert.matches("reduce.max: argument #1: the max of an empty buffer is undefined", err, 1, true)
    end
  end)
end)
