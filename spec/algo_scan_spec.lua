-- luagpu.algo scans: every scalar type against plain Lua on random lengths
-- up to 2^20, both ways of chaining tiles (look-back and three passes),
-- segments from flags and rows, signed sums and products that wrap (every
-- path; NumPy for cumsum), custom operators, views, queues, and the
-- error messages.
local gpu = require "luagpu"
local algo = require "luagpu.algo"
local support = require "support"
local has_error = support.has_error

local dev = gpu.device()

local SCALARS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                 "float", "double"}
local BITS = {char = 8, uchar = 8, short = 16, ushort = 16, int = 32, uint = 32}
local SIGNED = {char = true, short = true, int = true, long = true}
local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
               ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
               long = {math.mininteger, math.maxinteger}, ulong = {0, 1 << 40}}

-- v wrapped to type t, as the device's arithmetic in t wraps (long: Lua's
-- own integers wrap the same way; ulong values stay below 2^63 here).
local function wrap(t, v)
  local bits = BITS[t]
  if not bits then return v end
  local m = 1 << bits
  v = v % m
  if SIGNED[t] and v >= m // 2 then v = v - m end
  return v
end

-- n random values of type t: integers over the whole range (ulong: up to
-- 2^40), floats multiples of 1/8 in [-1, 1] (their sums up to 2^20 terms
-- are exact in float).
local function random_values(t, n)
  local v = {}
  if t == "float" or t == "double" then
    for i = 1, n do v[i] = math.random(-8, 8) / 8 end
  else
    local r = RANGE[t]
    for i = 1, n do v[i] = math.random(r[1], r[2]) end
  end
  return v
end

local function buffer(t, v)
  local b = dev:buffer(t, #v)
  if #v > 0 then b:write(v):wait() end
  return b
end

local function get(b) return #b > 0 and b:get():totable() or {} end

-- The scan of v in plain Lua: op(a, b), neutral, exclusive, head(i) (a
-- segment starts at i), conv(x) (the value wrapped to the output type).
local function reference(v, op, neutral, exclusive, head, conv)
  local out, run = {}, neutral
  for i = 1, #v do
    if head and head(i) then run = neutral end
    local before = run
    run = conv(op(run, v[i]))
    out[i] = exclusive and before or run
  end
  return out
end

local function same(want, got, what)
  assert.equal(#want, #got, what .. ": length")
  for i = 1, #want do
    if want[i] ~= got[i] and not (want[i] ~= want[i] and got[i] ~= got[i]) then
      error(("%s: element %d is %s, expected %s"):format(what, i, tostring(got[i]),
                                                       tostring(want[i])), 2)
    end
  end
end

local function add(a, b) return a + b end

-- Lengths: the edges, then random ones up to 2^20 (up to 2^16 for the
-- types in small, to keep the spec short).
local SMALL = {char = true, uchar = true, short = true, ushort = true, long = true,
               ulong = true, double = true}
local function lengths(t)
  local top = SMALL[t] and 1 << 16 or 1 << 20
  return {0, 1, 2, 3, 31, 4097, math.random(5000, 40000), math.random(40000, top)}
end

describe("algo.scan", function()
  for _, t in ipairs(SCALARS) do
    it("sums " .. t .. " buffers, inclusive and exclusive, of random lengths", function()
      if t == "double" and not dev.fp64 then return pending("no fp64 on " .. dev.name .. ": double not checked") end
      for _, n in ipairs(lengths(t)) do
        local v = random_values(t, n)
        local b = buffer(t, v)
        local conv = function(x) return wrap(t, x) end
        for _, ex in ipairs {false, true} do
          local out, ev = algo.scan(b, {exclusive = ex})
          assert.equal("Event", gpu.type(ev))
          assert.equal(t, out.type)
          same(reference(v, add, 0, ex, nil, conv),
               get(out), ("%s n=%d exclusive=%s"):format(t, n, ex))
        end
      end
    end)
  end

  it("takes both ways of chaining tiles, with segments from flags and rows", function()
    for _, n in ipairs {0, 1, 1000, 4097, 65539, math.random(100000, 250000)} do
      local v = random_values("int", n)
      local b = buffer("int", v)
      local f = {}
      for i = 1, n do f[i] = math.random(1, 40) == 1 and math.random(1, 3) or 0 end
      local flags = buffer("uchar", f)
      local rl = n % 3 == 0 and n > 0 and 3 or n % 7 == 0 and n > 0 and 7 or nil
      local conv = function(x) return wrap("int", x) end
      for _, lookback in ipairs {false, true} do
        for _, ex in ipairs {false, true} do
          local what = ("n=%d lookback=%s exclusive=%s"):format(n, lookback, ex)
          same(reference(v, add, 0, ex, nil, conv),
               get((algo.scan(b, {exclusive = ex, lookback = lookback}))), what)
          same(reference(v, add, 0, ex, function(i) return f[i] ~= 0 end, conv),
               get((algo.scan(b, {exclusive = ex, lookback = lookback, flags = flags}))),
               what .. " flags")
          if rl then
            same(reference(v, add, 0, ex, function(i) return (i - 1) % rl == 0 end, conv),
                 get((algo.scan(b, {exclusive = ex, lookback = lookback, row_length = rl}))),
                 what .. " rows of " .. rl)
          end
        end
      end
    end
  end)

  it("scans rows of any length, one row when row_length is the length", function()
    local v = random_values("int", 6000)
    local b = buffer("int", v)
    for _, rl in ipairs {1, 2, 5, 1000, 6000} do
      local head = function(i) return (i - 1) % rl == 0 end
      same(reference(v, add, 0, false, head, function(x) return wrap("int", x) end),
           get((algo.scan(b, {row_length = rl}))), "rows of " .. rl)
    end
  end)

  it("computes min and max scans, with the extreme integers and NaN", function()
    local v = random_values("int", 50001)
    v[1], v[2], v[100] = -2147483648, 2147483647, -2147483648
    local b = buffer("int", v)
    same(reference(v, math.min, 2147483647, false, nil, function(x) return x end),
         get((algo.scan(b, {op = "min"}))), "min")
    same(reference(v, math.min, 2147483647, true, nil, function(x) return x end),
         get((algo.scan(b, {op = "min", exclusive = true}))), "min exclusive")
    local f = {1.5, -0.0, 0 / 0, 2, -1 / 0, 1 / 0}
    same({1.5, 1.5, 1.5, 2, 2, 1 / 0}, get((algo.scan(buffer("float", f), {op = "max"}))),
         "fmax skips NaN")
    same({-1 / 0, 1.5, 1.5, 1.5, 2, 2}, get((algo.scan(buffer("float", f),
         {op = "max", exclusive = true}))), "exclusive max starts at -inf")
  end)

  it("accumulates in another type, given by acc or by the out buffer", function()
    local v = random_values("uchar", 70000)
    local b = buffer("uchar", v)
    local want = reference(v, add, 0, false, nil, function(x) return x end)
    local out = algo.scan(b, {acc = "long"})
    assert.equal("long", out.type)
    same(want, get(out), "acc long")
    local mine = dev:buffer("long", 70000)
    local got, ev = algo.scan(b, {out = mine})
    assert.equal(mine, got)
    ev:wait()
    same(want, get(mine), "out long")
  end)

  it("scans views, in place, on other queues and after waits", function()
    local v = random_values("int", 20000)
    local big = buffer("int", v)
    local part = {}
    for i = 1, 9000 do part[i] = v[i + 6] end
    local conv = function(x) return wrap("int", x) end
    local want = reference(part, add, 0, true, nil, conv)
    local outer = dev:buffer("int", 12000)
    local view = outer:sub(3, 9002)
    algo.scan(big:sub(7, 9006), {exclusive = true, out = view})
    same(want, get(view), "view to view")
    local copy = buffer("int", part)
    algo.scan(copy, {exclusive = true, out = copy})
    same(want, get(copy), "in place")
    local ooo = dev:queue{out_of_order = true}
    local src = dev:buffer("int", 9000)
    local wev = src:write(part, {queue = ooo})
    local out, ev = algo.scan(src, {exclusive = true, queue = ooo, wait = {wev}})
    ev:wait()
    same(want, get(out), "out-of-order queue")
    local tensorish = setmetatable({}, {__tobuffer = function() return big:sub(7, 9006) end})
    same(want, get((algo.scan(tensorish, {exclusive = true}))), "a value with __tobuffer")
  end)

  it("runs custom scanners: a map, an order-sensitive operator", function()
    local s = algo.scanner{type = "int", acc = "long", map = "(long)x * x", op = "a + b",
                           neutral = "0"}
    assert.matches("luagpu.Scanner: int %-> long", tostring(s))
    local v = random_values("short", 30000)
    local sq = {}
    for i = 1, #v do sq[i] = v[i] * v[i] end
    local out = s(buffer("int", v))
    assert.equal("long", out.type)
    same(reference(sq, add, 0, false, nil, function(x) return x end), get(out), "squares")
    -- "the last non-zero": associative, not commutative
    local last = algo.scanner{type = "int", op = "b != 0 ? b : a", neutral = 0}
    local z = {}
    for i = 1, 50000 do z[i] = math.random(1, 5) == 1 and math.random(1, 9) or 0 end
    local zb = buffer("int", z)
    local pick = function(a, c) return c ~= 0 and c or a end
    same(reference(z, pick, 0, false, nil, function(x) return x end), get((last(zb))),
         "last non-zero")
  end)

  it("reuses its programs", function()
    local b = buffer("int", random_values("int", 5000))
    algo.scan(b)
    local built = algo.stats.programs_built
    for _ = 1, 3 do algo.scan(b, {exclusive = true}) end
    assert.equal(built, algo.stats.programs_built)
  end)
end)

-- Signed sums and products past the type's limits wrap modulo 2^bits
-- (issue 27 item 4): computed in the unsigned type of the same width, on
-- every path (three passes, look-back, the CPU's vectors, segments, rows).
describe("algo.scan of signed integers", function()
  local TOP = {char = 127, short = 32767, int = 2147483647, long = math.maxinteger}
  local SIGNED_TYPES = {"char", "short", "int", "long"}
  local function mul(a, b) return a * b end  -- long: Lua's integers wrap as two's complement

  -- n values of t near its limits: for sums the extremes and their
  -- neighbours among random ones; for products odd ones (never 0 modulo 2^bits).
  local function near_limits(t, n, prod)
    local top, v = TOP[t], {}
    local low = -top - 1
    local picks = prod and {top, top - 2, low + 1, low + 3, -1, 3, -3}
                         or {top, top - 1, low, low + 1, -1, 1}
    for i = 1, n do
      local x
      if math.random(1, 3) == 1 then
        x = math.random(low // 2, top // 2) * 2 + 1   -- odd, anywhere
        if not prod and math.random(1, 2) == 1 then x = x - 1 end
      else
        x = picks[math.random(1, #picks)]
      end
      v[i] = x
    end
    return v
  end

  for _, t in ipairs(SIGNED_TYPES) do
    it("wraps " .. t .. " sums and products near the limits on every path", function()
      local conv = function(x) return wrap(t, x) end
      for _, op in ipairs {"sum", "prod"} do
        local f, neutral = op == "sum" and add or mul, op == "sum" and 0 or 1
        for _, n in ipairs {5, 4097, 70007} do
          local v = near_limits(t, n, op == "prod")
          local b = buffer(t, v)
          local fl = {}
          for i = 1, n do fl[i] = math.random(1, 50) == 1 and 1 or 0 end
          local flags = buffer("uchar", fl)
          local rl = n == 4097 and 241 or n == 70007 and 10001 or 5
          for _, lookback in ipairs {false, true} do
            for _, ex in ipairs {false, true} do
              local what = ("%s %s n=%d lookback=%s exclusive=%s"):format(t, op, n, lookback, ex)
              local o = {op = op, exclusive = ex, lookback = lookback}
              same(reference(v, f, neutral, ex, nil, conv), get((algo.scan(b, o))), what)
              o.flags = flags
              same(reference(v, f, neutral, ex, function(i) return fl[i] ~= 0 end, conv),
                   get((algo.scan(b, o))), what .. " flags")
              o.flags, o.row_length = nil, rl
              same(reference(v, f, neutral, ex, function(i) return (i - 1) % rl == 0 end, conv),
                   get((algo.scan(b, o))), what .. " rows of " .. rl)
            end
          end
        end
      end
    end)
  end

  it("keeps -0.0 in floating cumsums: a prefix of -0.0s sums to -0.0, as NumPy's", function()
    -- (the scan started from +0.0: x:cumsum() of {-0.0} gave +0.0)
    local function same(want, got, what)
      assert.equal(want, got, what)
      if want == 0 then assert.equal(1 / want, 1 / got, what .. ": the sign of zero") end
    end
    local pick = {-0.0, -0.0, -0.0, 0.0, 1, -1, 2}
    for _, t in ipairs {"float", "double"} do
      for _, shape in ipairs {{1}, {1000}, {5, 300}} do
        local n = shape[2] and shape[1] * shape[2] or shape[1]
        local v = {}
        for i = 1, n do v[i] = pick[math.random(#pick)] end
        v[1] = -0.0
        local x = dev:tensor(t, shape, v)
        local dims = shape[2] and {1, 2} or {1}
        for _, d in ipairs(dims) do
          local got = x:cumsum(d):totable()
          local rows, cols = shape[1], shape[2] or 1
          -- the reference: Lua's own + from each line's first element
          local function at(tab, i, j) return shape[2] and tab[i][j] or tab[i] end
          local outer, inner = d == 1 and cols or rows, d == 1 and rows or cols
          for o = 1, outer do
            local acc
            for k = 1, inner do
              local i, j = d == 1 and k or o, d == 1 and o or k
              local val = v[(i - 1) * cols + j]
              acc = acc and acc + val or val
              same(acc, at(got, i, j), ("%s %s cumsum(%d) at %d,%d"):format(t,
                   table.concat(shape, "x"), d, i, j))
            end
          end
        end
      end
    end
  end)

  it("agrees with NumPy's wrapping cumsum in x:cumsum of int and long tensors", function()
    local np = require "algo_numpy"
    if not np.python() then return pending("python3 with numpy not found: not checked") end
    for _, t in ipairs {"int", "long"} do
      local v = near_limits(t, 3 * 4000, false)
      local x = dev:tensor(t, {3, 4000}, v)
      local nt = t == "int" and "int32" or "int64"
      local file = os.tmpname()
      support.write_file(file, table.concat(v, " "))
      local out = np.run(([[
import sys, numpy as np
a = np.array([int(w) for w in open(sys.argv[1]).read().split()], dtype=np.int64).astype(np.%s)
a = a.reshape(3, 4000)
print(' '.join(str(int(w)) for w in np.cumsum(a, axis=1, dtype=np.%s).ravel()))
print(' '.join(str(int(w)) for w in np.cumsum(a, axis=0, dtype=np.%s).ravel()))
]]):format(nt, nt, nt), file)
      os.remove(file)
      local lines = {}
      for line in out:gmatch("[^\n]+") do
        local vals = {}
        for w in line:gmatch("%S+") do vals[#vals + 1] = math.tointeger(w) end
        lines[#lines + 1] = vals
      end
      same(lines[1], x:cumsum():get():totable(), t .. " cumsum along dim 2")
      same(lines[2], x:cumsum(1):get():totable(), t .. " cumsum along dim 1")
    end
  end)

  it("computes built-in sums and products in the unsigned type (nothing to assume away)", function()
    -- The numbers above come out right on PoCL even with a signed + (its
    -- compiler does not exploit that overflow in a scan), so this checks
    -- the operators every scan program is built with: compiled on dev
    -- within scan.cl, op(MAX, 1) > MAX and op(MAX, 2) / 2 == MAX are 0
    -- (a signed + or * lets the compiler fold them to 1); and their text.
    local B = require "luagpu.algo.base"
    local name = algo.classes[dev.type] and dev.type or "gpu"
    local cls = algo.classes[name]
    local built, build, saved = {}, B.build, cls.scan_groups_per_cu
    finally(function() B.build, cls.scan_groups_per_cu = build, saved end)
    B.build = function(fn, d, defines, file, custom)
      if file == "scan.cl" then built[#built + 1] = defines end
      return build(fn, d, defines, file, custom)
    end
    cls.scan_groups_per_cu = saved % 1000 + 1       -- a new class: every program built again
    for _, t in ipairs(SIGNED_TYPES) do
      local b = buffer(t, {1, 2, 3, 4, 5, 6, 7, 8, 9})
      for _, op in ipairs {"sum", "prod"} do
        for _, lookback in ipairs {false, true} do
          algo.scan(b, {op = op, lookback = lookback})
          algo.scan(b, {op = op, lookback = lookback, row_length = 3})
        end
      end
    end
    B.build, cls.scan_groups_per_cu = build, saved
    local probe = [[
__kernel void lg_probe(__global const ACC *x, __global int *r) {
  ACC a = x[0];
  r[0] = IS_SUM ? lg_op(a, (ACC)1) > a : lg_op(a, (ACC)2) / (ACC)2 == a;
#if defined(SUB) && VECTORIZE   /* scan.cl defined lg_vop */
  {
    ACCV v = vload8(0, x);
    r[1] = IS_SUM ? any(lg_vop(v, (ACCV)(1)) > v) : any(lg_vop(v, (ACCV)(2)) / (ACCV)(2) == v);
  }
#else
  r[1] = 0;
#endif
}]]
    local seen = {}
    for _, defines in ipairs(built) do
      local d, lines = {}, {}
      for _, kv in ipairs(defines) do
        d[kv[1]] = tostring(kv[2])
        lines[#lines + 1] = ("#define %s %s"):format(kv[1], kv[2])
      end
      local t = d.ACC
      if TOP[t] then
        local sum = d.NEUTRAL == "0"
        local sym = sum and "+" or "*"
        seen[t .. sym] = true
        local u = t == "long" and "ulong" or "uint"
        local us = t == "long" and "ulong" or "u" .. t
        lines[#lines + 1] = "#define IS_SUM " .. (sum and 1 or 0)
        lines[#lines + 1] = "#line 1"
        lines[#lines + 1] = gpu.kernel_source("scan.cl")
        lines[#lines + 1] = probe
        local p = dev:build(table.concat(lines, "\n"))
        local x = buffer(t, {TOP[t], TOP[t], TOP[t], TOP[t], TOP[t], TOP[t], TOP[t], TOP[t]})
        local r = dev:buffer("int", 2)
        p.lg_probe(x, r):run({1}):wait()
        same({0, 0}, get(r), ("%s %s (SEGMENTED %s LOOKBACK %s)"):format(t, sym, d.SEGMENTED,
                                                                       d.LOOKBACK))
        -- the vectors: PoCL's compiler gives signed vectors wrapping
        -- arithmetic, so only their text shows it
        assert.equal(("as_%s8(as_%s8(a) %s as_%s8(b))"):format(t, us, sym, us), d.VOP8,
                     t .. " VOP8")
        assert.equal(("as_%s4(as_%s4(a) %s as_%s4(b))"):format(t, us, sym, us), d.VOP4,
                     t .. " VOP4")
        assert.equal(("(%s)((%s)(a) %s (%s)(b))"):format(t, u, sym, u), d.OP, t .. " OP")
      end
    end
    for _, t in ipairs(SIGNED_TYPES) do
      assert.is_true(seen[t .. "+"] and seen[t .. "*"], t .. ": programs built")
    end
  end)
end)

describe("algo.scan errors", function()
  local b = dev:buffer("int", 10)
  it("names what was expected and what was given", function()
    has_error("luagpu: algo.scan: argument #1: expected a buffer, got nil", algo.scan)
    has_error("luagpu: algo.scan: argument #1: expected a buffer of scalars, got float4 elements",
              algo.scan, dev:buffer("float4", 3))
    has_error("argument #2: expected an options table, got number", algo.scan, b, 5)
    has_error("argument #2: unknown option 'exlusive'", algo.scan, b, {exlusive = true})
    has_error("argument #2: option exclusive: expected a boolean, got 1", algo.scan, b,
              {exclusive = 1})
    has_error("argument #2: option row_length: 3 does not divide the 10 elements", algo.scan,
              b, {row_length = 3})
    for _, bad in ipairs {0, -1, 2.5, 0 / 0, 1 / 0, 2 ^ 62, "5"} do
      has_error("argument #2: option row_length: expected an integer from 1 to 2^40, got",
                algo.scan, b, {row_length = bad})
    end
    has_error("argument #2: option flags: expected a buffer of integers, got float elements",
              algo.scan, b, {flags = dev:buffer("float", 10)})
    has_error("argument #2: option flags: expected 10 elements, got 9", algo.scan, b,
              {flags = dev:buffer("int", 9)})
    has_error("argument #2: option flags: expected a buffer, got table", algo.scan, b,
              {flags = {}})
    has_error("argument #2: option out: expected 10 elements, got 11", algo.scan, b,
              {out = dev:buffer("int", 11)})
    has_error("argument #2: option out: expected a buffer of int, got float", algo.scan, b,
              {out = dev:buffer("float", 10), acc = "int"})
    has_error("argument #2: option out: the output overlaps the input (give the same buffer, " ..
              "or one apart)", algo.scan, b:sub(1, 5), {out = b:sub(2, 6)})
    local f = dev:buffer("int", 11)
    has_error("argument #2: option out: the output overlaps option flags (give the same " ..
              "buffer, or one apart)", algo.scan, b, {flags = f:sub(2, 11), out = f:sub(1, 10)})
    has_error("argument #2: option op: expected \"sum\", \"prod\", \"min\" or \"max\", got \"avg\"",
              algo.scan, b, {op = "avg"})
    has_error("argument #2: option acc: expected a scalar element type (char .. double), got 'int3'",
              algo.scan, b, {acc = "int3"})
    has_error("argument #2: option lookback: expected a boolean, got \"yes\"", algo.scan, b,
              {lookback = "yes"})
    local r = dev:buffer("int", 4)
    r:release()
    has_error("argument #1: attempt to use a released buffer", algo.scan, r)
  end)

  it("checks scanners' definitions and inputs", function()
    has_error("luagpu: algo.scanner: argument #1: expected a table {type =, op =, neutral =}, got nil",
              algo.scanner)
    has_error("missing field 'type'", algo.scanner, {op = "a + b", neutral = 0})
    has_error("missing field 'op' (an OpenCL C expression)", algo.scanner,
              {type = "int", neutral = 0})
    has_error("field 'neutral': expected a finite number or an OpenCL C expression, got",
              algo.scanner, {type = "float", op = "a + b", neutral = 0 / 0})
    has_error("unknown field 'opp'", algo.scanner, {type = "int", opp = "a"})
    has_error("field 'type': expected a scalar element type (char .. double), got 'vec'",
              algo.scanner, {type = "vec", op = "a", neutral = 0})
    has_error("map '(x', op 'a + b', neutral '0' for int -> int do not compile",
              algo.scanner, {type = "int", map = "(x", op = "a + b", neutral = 0, device = dev})
    for _, field in ipairs {"map", "op", "neutral"} do
      local def = {type = "int", map = "x", op = "a + b", neutral = "0"}
      def[field] = def[field] .. "\0 junk"
      has_error(("luagpu: algo.scanner: field '%s': expected an OpenCL C expression, got a " ..
                 "control character (byte 0) at position %d"):format(field, #def[field] - 5),
                algo.scanner, def)
    end
    local s = algo.scanner{type = "int", op = "a + b", neutral = 0}
    has_error("luagpu: scanner: argument #1: expected a buffer of int, got float", s,
              dev:buffer("float", 3))
    has_error("luagpu: scanner: argument #2: unknown option 'acc'", s, dev:buffer("int", 3),
              {acc = "long"})
  end)

  it("checks the device class's settings", function()
    local name = algo.classes[dev.type] and dev.type or "gpu"
    local cls = algo.classes[name]
    -- setting, a bad value, the call that reads it, what the message says
    for _, case in ipairs {
      {"scan_local", 3, algo.scan, "expected a power of two from 4 to 1024, got 3"},
      {"scan_ptx_items", 2, algo.scan, "expected a power of two from 4 to 128, got 2"},
      {"scan_ptx", 1, algo.scan, "expected true or false, got 1"},
      {"scan_ptx_ticket", "no", algo.scan, 'expected true or false, got "no"'},
      {"sort_ptx", "yes", algo.sort, "expected true, false or 'emulated', got \"yes\""},
      {"sort_ptx_local", 16, algo.sort, "expected a power of two from 32 to 256, got 16"},
      {"sort_items", 0 / 0, algo.sort, "expected an integer from 1 to 256, got"},
      {"sort_ptx_local_bytes", -1, algo.sort, "expected an integer from 0 to 1048576, got -1"},
      {"sort_ptx_local_bytes", 2 ^ 63, algo.sort, "expected an integer from 0 to 1048576, got"},
    } do
      local setting, bad, call, message = case[1], case[2], case[3], case[4]
      local saved = cls[setting]
      cls[setting] = bad
      local ok, e = pcall(call, b)
      cls[setting] = saved
      assert.is_false(ok)
      assert.matches(("algo.classes.%s.%s: %s"):format(name, setting, message), e, 1, true)
    end
  end)

  it("raises at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, e = pcall(function() algo.scan(b, {row_length = 4}) end)
    assert.is_false(ok)
    assert.matches("algo_scan_spec.lua:" .. line .. ": luagpu: algo.scan:", e, 1, true)
  end)
end)

describe("algo calls with event = false", function()
  it("return false for the Event, and give the same results", function()
    local n = 3000
    local v, w = {}, {}
    for i = 1, n do v[i] = math.random(-100, 100); w[i] = v[i] end
    local b = dev:buffer("int", n)
    b:write(v):wait()
    -- a prefix sum, then a sort and an argsort of rows, each asked for no Event
    local out, ev = algo.scan(b, {out = dev:buffer("int", n), event = false})
    assert.is_false(ev)
    local sorted = dev:buffer("int", n)
    local _, ev2 = algo.sort(b, {out = sorted, row_length = 100, event = false})
    assert.is_false(ev2)
    local pos, ev3 = algo.argsort(b, {event = false})
    assert.is_false(ev3)
    -- the default queue is in order: reading after them sees their results
    local s, h, p = out:read():wait(), sorted:read():wait(), pos:read():wait()
    local acc = 0
    for i = 1, n do
      acc = acc + w[i]
      assert.equal(acc, s[i])
    end
    for r = 0, n // 100 - 1 do
      local row = {}
      for j = 1, 100 do row[j] = w[r * 100 + j] end
      table.sort(row)
      for j = 1, 100 do assert.equal(row[j], h[r * 100 + j]) end
    end
    for i = 2, n do
      local a, c = w[p[i - 1]], w[p[i]]
      assert.is_true(a < c or (a == c and p[i - 1] < p[i]))
    end
    -- asked for (true, or the default), an Event comes back
    local _, e4 = algo.scan(b, {event = true})
    assert.equal("Event", gpu.type(e4))
    has_error("luagpu: algo.scan: argument #2: option event: expected a boolean, got 1",
              algo.scan, b, {event = 1})
    has_error("luagpu: algo.sort: argument #2: option event: expected a boolean, got \"no\"",
              algo.sort, b, {event = "no"})
  end)
end)
