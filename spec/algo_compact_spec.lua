-- luagpu.algo compaction (copy_if, nonzero, partition) and histograms
-- against plain Lua, with their error messages.
local gpu = require "luagpu"
local algo = require "luagpu.algo"
local support = require "support"
local has_error = support.has_error

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

describe("algo compaction and histogram errors", function()
  local b = dev:buffer("int", 10)
  it("name what was expected and what was given", function()
    has_error("luagpu: algo.copy_if: argument #2: expected a predicate (an OpenCL C expression " ..
              "in x and i), got nil", algo.copy_if, b)
    has_error("argument #2: expected a predicate (an OpenCL C expression in x and i), got an " ..
              "empty string", algo.copy_if, b, " ")
    has_error("luagpu: algo.copy_if: predicate 'x >' for int do not compile", algo.copy_if, b,
              "x >")
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
