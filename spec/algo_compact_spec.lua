-- luagpu.algo compaction (copy_if, nonzero, partition) and histograms
-- against plain Lua, with their error messages.
local gpu = require "luagpu"
local algo = require "luagpu.algo"
local support = require "support"
local has_error = support.has_error
local numpy = require "algo_numpy"

local dev = gpu.device()

local function buffer(t, v)
  local b = dev:buffer(t, #v)
  if #v > 0 then b:write(v):wait() end
  return b
end

local function get(b) return #b > 0 and b:get():totable() or {} end

local function same(want, got, what)
  assert.equal(#want, #got, what .. ": length")
  for i = 1, #want do
    if want[i] ~= got[i] and not (want[i] ~= want[i] and got[i] ~= got[i]) then
      error(("%s: element %d is %s, expected %s"):format(what, i, tostring(got[i]),
                                                       tostring(want[i])), 2)
    end
  end
end

local function lengths()
  return {0, 1, 2, 1000, math.random(2000, 70000), math.random(70000, 1 << 20)}
end

describe("algo.copy_if, algo.nonzero, algo.partition", function()
  it("keep the elements a predicate selects, in order, with their count", function()
    for _, n in ipairs(lengths()) do
      local v = {}
      for i = 1, n do v[i] = math.random(-20, 20) / 4 end
      local b = buffer("float", v)
      local kept, rest, where = {}, {}, {}
      for i = 1, n do
        if v[i] > 1 and (i - 1) % 3 ~= 0 then kept[#kept + 1] = v[i] else rest[#rest + 1] = v[i] end
        if v[i] ~= 0 then where[#where + 1] = i end
      end
      local what = "n=" .. n
      local out, count, ev = algo.copy_if(b, "x > 1 && i % 3 != 0")
      assert.equal(#kept, count)
      assert.equal(count, #out)
      assert.equal("float", out.type)
      if n > 0 then assert.equal("Event", gpu.type(ev)) end
      same(kept, get(out), what .. " copy_if")
      local pos, c2 = algo.nonzero(b)
      assert.equal(#where, c2)
      assert.equal("long", pos.type)
      same(where, get(pos), what .. " nonzero")
      local part, c3 = algo.partition(b, "x > 1 && i % 3 != 0")
      assert.equal(#kept, c3)
      local both = table.move(rest, 1, #rest, #kept + 1, table.move(kept, 1, #kept, 1, {}))
      same(both, get(part), what .. " partition")
    end
  end)

  it("take views, 0-based positions of another type, and out buffers", function()
    local v = {}
    for i = 1, 5000 do v[i] = math.random(0, 3) end
    local big = buffer("int", v)
    local view = big:sub(11, 4010)
    local where = {}
    for i = 11, 4010 do if v[i] ~= 0 then where[#where + 1] = i - 11 end end
    local pos, c = algo.nonzero(view, {base = 0, type = "uint"})
    assert.equal("uint", pos.type)
    same(where, get(pos), "0-based uint positions")
    local out = dev:buffer("int", 4000)
    local got, c2 = algo.copy_if(view, "x == 3", {out = out})
    assert.equal(out, got)
    local threes = 0
    for i = 11, 4010 do if v[i] == 3 then threes = threes + 1 end end
    assert.equal(threes, c2)
    for i, x in ipairs(get(out)) do if i <= c2 then assert.equal(3, x) end end
  end)
end)

describe("algo.histogram", function()
  it("counts values in fixed-width bins over a range", function()
    for _, n in ipairs(lengths()) do
      local v = {}
      for i = 1, n do v[i] = math.random(-700, 700) / 128 end
      if n >= 4 then v[1], v[2], v[3], v[4] = 0 / 0, 4.0, -4.0, 1 / 0 end
      local b = buffer("float", v)
      for _, bins in ipairs {1, 64, 10000} do
        local want = {}
        for k = 1, bins do want[k] = 0 end
        local scale = bins / 8
        for i = 1, n do
          local x = v[i]
          if x >= -4 and x <= 4 then
            local k = math.min(math.floor((x + 4) * scale), bins - 1) + 1
            want[k] = want[k] + 1
          end
        end
        local counts, ev = algo.histogram(b, {bins = bins, range = {-4, 4}})
        assert.equal("uint", counts.type)
        assert.equal("Event", gpu.type(ev))
        same(want, get(counts), ("n=%d bins=%d"):format(n, bins))
      end
    end
  end)

  it("counts integer keys, skipping those outside the bins, and accumulates", function()
    local n = 200003
    local v = {}
    for i = 1, n do v[i] = math.random(-3, 9000) end
    v[1], v[2] = -2147483648, 2147483647
    local b = buffer("int", v)
    for _, bins in ipairs {7, 9001} do
      local want = {}
      for k = 1, bins do want[k] = 0 end
      for i = 1, n do
        if v[i] >= 0 and v[i] < bins then want[v[i] + 1] = want[v[i] + 1] + 1 end
      end
      same(want, get((algo.histogram(b, {bins = bins}))), "bins=" .. bins)
      local out = dev:buffer("uint", bins)
      out:fill(1):wait()
      algo.histogram(b, {bins = bins, out = out})
      same(want, get(out), "into out, cleared first")
      algo.histogram(b:sub(1, 1000), {bins = bins, out = out, accumulate = true})
      for i = 1, 1000 do
        if v[i] >= 0 and v[i] < bins then want[v[i] + 1] = want[v[i] + 1] + 1 end
      end
      same(want, get(out), "accumulated")
    end
    local u = {}
    for i = 1, 1000 do u[i] = math.random(0, 255) end
    local want = {}
    for k = 1, 256 do want[k] = 0 end
    for i = 1, 1000 do want[u[i] + 1] = want[u[i] + 1] + 1 end
    same(want, get((algo.histogram(buffer("uchar", u), {bins = 256}))), "uchar keys")
  end)
end)

describe("algo.histogram over ranges", function()
  -- double and int buffers (the arithmetic in double) against
  -- numpy.histogram: random ranges and bins, elements on the edges NumPy
  -- computes, at lo and hi and just outside, NaN and infinities
  local GEN = [==[
import sys, numpy as np
d, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
cases = []
for case in range(12):
    lo = rng.uniform(-100, 100)
    hi = lo + (rng.uniform(1e-3, 1) if case % 3 == 0 else rng.uniform(1, 500))
    bins = int(rng.integers(1, 300)) if case != 5 else 10000
    edges = np.linspace(lo, hi, bins + 1)
    x = np.concatenate([rng.uniform(lo - (hi - lo) / 8, hi + (hi - lo) / 8, 5000),
                        rng.choice(edges, 500), [lo, hi, np.nextafter(lo, -np.inf),
                        np.nextafter(hi, np.inf), np.nan, np.inf, -np.inf]])
    rng.shuffle(x)
    if case % 4 == 3:      # integer elements, a range around them
        x = rng.integers(-1000, 1000, 5000).astype(np.int32)
        lo, hi = rng.uniform(-1200, 0), rng.uniform(1, 1200)
    np.save(f"{d}/x{case}.npy", x)
    cases.append(f"{case} {lo!r} {hi!r} {bins}")
print("\n".join(cases))
]==]
  local CHECK = [==[
import sys, numpy as np
d = sys.argv[1]
bad = []
for line in sys.argv[2:]:
    case, lo, hi, bins = line.split()
    x = np.load(f"{d}/x{case}.npy")
    want, _ = np.histogram(x[~np.isnan(x)] if x.dtype.kind == "f" else x, int(bins),
                           (float(lo), float(hi)))
    got = np.load(f"{d}/c{case}.npy")
    if not (got == want).all():
        k = np.nonzero(got != want)[0][0]
        bad.append(f"case {case} ({lo}, {hi}, bins {bins}): bin {k} is {got[k]}, "
                   f"expected {want[k]}")
print("\n".join(bad) if bad else "ok")
]==]

  it("count as numpy.histogram does (double and int elements)", function()
    if not numpy.python() then
      pending("python3 with numpy not found: not checked against NumPy")
      return
    end
    if not dev.fp64 then pending("no fp64 on " .. dev.name) return end
    local dir = numpy.tmpdir(finally)
    local cases = {}
    for line in numpy.run(GEN, dir, tostring(math.random(1, 1 << 30))):gmatch("[^\n]+") do
      cases[#cases + 1] = line
      local case, lo, hi, bins = line:match("^(%d+) (%S+) (%S+) (%d+)$")
      local x = gpu.load(("%s/x%s.npy"):format(dir, case))
      local b = dev:buffer(x.type, #x)
      b:write(x):wait()
      local counts = algo.histogram(b, {bins = tonumber(bins), range = {tonumber(lo),
                                                                         tonumber(hi)}})
      counts:get():save(("%s/c%s.npy"):format(dir, case))
    end
    assert.equal("ok\n", numpy.run(CHECK, dir, table.unpack(cases)))
  end)

  -- ranges wider than the element type's numbers (hi - lo overflows), with
  -- edges exact in double, against the edges compared in plain Lua
  local P1023 = 2.0 ^ 1023
  local WIDE = {
    {"double", {-P1023, P1023}, 4}, {"double", {-P1023, P1023}, 1024},
    {"double", {-P1023, 1.5 * P1023}, 5}, {"double", {-0x1.fffffffffffffp1023,
                                                      0x1.fffffffffffffp1023}, 2},
    {"float", {-2.0 ^ 127, 2.0 ^ 127}, 8}, {"float", {-2.0 ^ 128, 2.0 ^ 128}, 16},
    {"float", {-1e39, 1e39}, 4}, {"float", {-1e308, 1e308}, 2},
    {"long", {-P1023, P1023}, 2}, {"int", {-2.0 ^ 200, 2.0 ^ 201}, 3},
  }
  -- n random elements of type t spread over its magnitudes, both signs,
  -- with its extremes, zeros and infinities
  local function wide_values(t, n)
    local v = {}
    for i = 1, n do
      if t == "long" or t == "int" then
        local m = t == "long" and 62 or 30
        v[i] = math.random(-(1 << math.random(0, m)), 1 << math.random(0, m))
      else
        -- no subnormal floats: devices may flush them to zero
        local e = t == "float" and math.random(-125, 127) or math.random(-1060, 1023)
        v[i] = (math.random() + 0.5) * 2.0 ^ e * (math.random(2) == 1 and -1 or 1)
        if t == "float" then v[i] = string.unpack("<f", string.pack("<f", v[i])) end
      end
    end
    local ext = t == "long" and {math.mininteger, math.maxinteger, 0, -1}
                or t == "int" and {-2147483648, 2147483647, 0, -1}
                or t == "float" and {-0x1.fffffep127, 0x1.fffffep127, 0.0, -0.0, 1 / 0, -1 / 0,
                                     2.0 ^ -126, -(2.0 ^ -126)}
                or {-0x1.fffffffffffffp1023, 0x1.fffffffffffffp1023, 0.0, -0.0, 1 / 0, -1 / 0,
                    2.0 ^ -1074, -(2.0 ^ -1074)}
    for k, e in ipairs(ext) do v[k] = e end
    return v
  end

  it("count a range wider than the element type's numbers (hi - lo overflows)", function()
    for _, c in ipairs(WIDE) do
      local t, lo, hi, bins = c[1], c[2][1], c[2][2], c[3]
      if t == "double" and not dev.fp64 then goto next end
      do
        local v = wide_values(t, 20000)
        -- bin k holds edge k <= x < edge k + 1 (the last also hi); the
        -- edges lo + k * w with w = (hi - lo) / bins, exact here
        local w = (hi / 2 - lo / 2) / bins * 2
        local want = {}
        for k = 1, bins do want[k] = 0 end
        for _, x in ipairs(v) do
          if x >= lo and x <= hi then
            local k = bins
            while k > 1 and x < (lo / 2 + (k - 1) * (w / 2)) * 2 do k = k - 1 end
            want[k] = want[k] + 1
          end
        end
        local got = get((algo.histogram(buffer(t, v), {bins = bins, range = {lo, hi}})))
        same(want, got, ("%s over {%g, %g}, %d bins"):format(t, lo, hi, bins))
      end
      ::next::
    end
    if not dev.fp64 then pending("no fp64 on " .. dev.name .. ": double elements not checked") end
  end)

  it("count the ends of a float range near float's largest numbers", function()
    -- the ends rounded to float (as NumPy compares float32 elements), so
    -- 3e38 itself is in the last bin
    local b = buffer("float", {3e38, -3e38, 0.0, -1.0, 1e38, 3.4e38, -3.4e38})
    same({1, 1, 2, 1}, get((algo.histogram(b, {bins = 4, range = {-3e38, 3e38}}))),
         "{-3e38, 3e38}")
    same({3, 4}, get((algo.histogram(b, {bins = 2, range = {-1e39, 1e39}}))), "{-1e39, 1e39}")
    same({0, 0}, get((algo.histogram(b, {bins = 2, range = {1e39, 1e40}}))),
         "a range past float's numbers")
    has_error("luagpu: algo.histogram: argument #2: option range: {1, 1.000000000001} is too " ..
              "narrow for float arithmetic (both ends round to 1.0)", algo.histogram, b,
              {bins = 4, range = {1, 1 + 1e-12}})
  end)
end)

describe("algo compaction and histogram errors", function()
  local b = dev:buffer("int", 10)
  it("name what was expected and what was given", function()
    has_error("luagpu: algo.copy_if: argument #2: expected a predicate (an OpenCL C expression " ..
              "in x and i), got nil", algo.copy_if, b)
    has_error("argument #2: expected a predicate (an OpenCL C expression in x and i), got an " ..
              "empty string", algo.copy_if, b, " ")
    has_error("luagpu: algo.copy_if: predicate 'x >' for int do not compile", algo.copy_if, b,
              "x >")
    -- a NUL would end the source where the driver reads it; other control
    -- characters are no C either
    for _, bad in ipairs {{"x > 0\0 || 1", 0, 6}, {"\1x", 1, 1}, {"x\27[0m > 0", 27, 2},
                          {"x > \127", 127, 5}} do
      for _, f in ipairs {algo.copy_if, algo.partition} do
        has_error(("argument #2: expected an OpenCL C expression, got a control character " ..
                   "(byte %d) at position %d"):format(bad[2], bad[3]), f, b, bad[1])
      end
    end
    local kept, n = algo.copy_if(buffer("int", {1, 2, 3}), "x\t>\f1 &&\r\nx < 9")
    assert.equal(2, n)
    same({2, 3}, get(kept), "tabs, form feeds and line breaks")
    has_error("argument #3: option out: expected a buffer of int, got float", algo.copy_if, b,
              "x > 0", {out = dev:buffer("float", 10)})
    local ones = buffer("int", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
    has_error("argument #3: option out: expected at least 10 elements, got 5", algo.copy_if,
              ones, "x > 0", {out = dev:buffer("int", 5)})
    has_error("luagpu: algo.partition: argument #3: option out: expected 10 elements, got 11",
              algo.partition, b, "x > 0", {out = dev:buffer("int", 11)})
    has_error("argument #3: option out: the output is the input", algo.partition, b, "x > 0",
              {out = b})
    has_error("luagpu: algo.nonzero: argument #2: option base: expected 0 or 1, got -1",
              algo.nonzero, b, {base = -1})
    -- unsigned types hold their whole range (uchar was refused past 127)
    assert.equal(200, select(2, algo.nonzero(buffer("int", (function()
      local t = {} for i = 1, 200 do t[i] = 1 end return t end)()), {type = "uchar", base = 0})))
    has_error("luagpu: algo.nonzero: argument #2: option type: uchar cannot hold positions up " ..
              "to 256", algo.nonzero, dev:buffer("int", 256), {type = "uchar"})
    has_error("luagpu: algo.histogram: argument #2: option range: expected two numbers {lo, hi}, " ..
              "got a third: 2", algo.histogram, dev:buffer("float", 4), {bins = 2, range = {0, 1, 2}})
    -- an out of floats names out, not the type option the call did not give
    has_error("luagpu: algo.nonzero: argument #2: option out: expected a buffer of integers, " ..
              "got float elements", algo.nonzero, b, {out = dev:buffer("float", 10)})
    has_error("luagpu: algo.nonzero: argument #2: option type: expected an integer element " ..
              "type, got \"double\"", algo.nonzero, b, {type = "double"})
    has_error("luagpu: algo.nonzero: argument #2: option type: char cannot hold positions up to 200",
              algo.nonzero, dev:buffer("int", 200), {type = "char"})
    has_error("luagpu: algo.histogram: argument #2: option bins is missing", algo.histogram, b)
    for _, bad in ipairs {0, -3, 2.5, 0 / 0, 2 ^ 40} do
      has_error("argument #2: option bins: expected an integer from 1 to 2147483647, got",
                algo.histogram, b, {bins = bad})
    end
    has_error("argument #2: option range is missing (needed for float values", algo.histogram,
              dev:buffer("float", 4), {bins = 4})
    has_error("argument #2: option range: expected a table {lo, hi}, got number", algo.histogram,
              b, {bins = 4, range = 3})
    has_error("argument #2: option range: expected finite numbers {lo, hi}, got inf at 2",
              algo.histogram, b, {bins = 4, range = {0, 1 / 0}})
    has_error("argument #2: option range: expected lo < hi, got {2, 2}", algo.histogram, b,
              {bins = 4, range = {2, 2}})
    has_error("argument #2: option out: expected 4 elements (one per bin), got 5",
              algo.histogram, b, {bins = 4, out = dev:buffer("uint", 5)})
    has_error("argument #2: option out: expected a buffer of uint, got int", algo.histogram, b,
              {bins = 4, out = dev:buffer("int", 4)})
    has_error("argument #2: option accumulate needs option out", algo.histogram, b,
              {bins = 4, accumulate = true})
  end)
end)

describe("algo compaction and histogram outputs", function()
  it("are checked, and refused when they overlap the input, before anything is written",
     function()
    local function check(what, text, data, f, ...)
      has_error(text, f, ...)
      same(data.want, get(data.b), what .. ": the buffer is left as it was")
    end
    local v = {1, 2, 3, 0, 1, 1, 1, 1}
    local d = {b = buffer("uint", v), want = v}
    local b = d.b
    check("histogram into its input", "luagpu: algo.histogram: argument #2: option out: the " ..
          "output is the input (give another buffer)", d, algo.histogram, b, {bins = 8, out = b})
    check("histogram into a view", "luagpu: algo.histogram: argument #2: option out: expected " ..
          "a whole buffer, got a view", d, algo.histogram, b, {bins = 4, out = b:sub(5, 8)})
    check("histogram of a view into its parent", "luagpu: algo.histogram: argument #2: option " ..
          "out: the output overlaps the input (give a buffer apart from it)", d, algo.histogram,
          b:sub(5, 8), {bins = 8, out = b})
    check("histogram with an accumulate that needs out", "option accumulate needs option out",
          d, algo.histogram, b, {bins = 8, accumulate = true})
    -- apart in one buffer: the keys 1, 1, 1, 1 counted into its first four
    algo.histogram(b:sub(5, 8), {bins = 4, out = b:sub(1, 4)})
    same({0, 4, 0, 0, 1, 1, 1, 1}, get(b), "histogram into the same buffer, apart")

    local w = {5, -1, 7, 0, 9, 2, -3, 4, 6, 8}
    local e = {b = buffer("int", w), want = w}
    local c = e.b
    check("copy_if into its input", "luagpu: algo.copy_if: argument #3: option out: the output " ..
          "is the input (give another buffer)", e, algo.copy_if, c, "x > 0", {out = c})
    check("copy_if into an overlapping view", "luagpu: algo.copy_if: argument #3: option out: " ..
          "the output overlaps the input (give a buffer apart from it)", e, algo.copy_if,
          c:sub(1, 5), "x > 0", {out = c:sub(3, 10)})
    check("partition into its input", "luagpu: algo.partition: argument #3: option out: the " ..
          "output is the input (give another buffer)", e, algo.partition, c, "x > 0", {out = c})
    check("nonzero into its input", "luagpu: algo.nonzero: argument #2: option out: the " ..
          "output is the input (give another buffer)", e, algo.nonzero, c, {out = c})
    check("nonzero into an overlapping view", "luagpu: algo.nonzero: argument #2: option out: " ..
          "the output overlaps the input (give a buffer apart from it)", e, algo.nonzero,
          c:sub(1, 6), {out = c:sub(6, 10), base = 0})
    -- apart in one buffer
    local out, count = algo.copy_if(c:sub(1, 5), "x > 0", {out = c:sub(6, 10)})
    assert.equal(3, count)
    assert.equal(5, #out)
    same({5, -1, 7, 0, 9, 5, 7, 9, 6, 8}, get(c), "copy_if into the same buffer, apart")
  end)
end)

describe("examples/algo_particles.lua", function()
  it("compacts, sorts and counts particles, checked in plain Lua", function()
    local saved_arg, saved_print = _G.arg, _G.print
    local lines = {}
    _G.arg = {[0] = "examples/algo_particles.lua", "30000", "8"}
    _G.print = function(...) lines[#lines + 1] = table.concat({...}, " ") end
    local ok, e = pcall(dofile, "examples/algo_particles.lua")
    _G.arg, _G.print = saved_arg, saved_print
    assert(ok, e)
    assert.equal("particles: ok", lines[#lines])
  end)
end)
