-- luagpu.tensor: reductions (whole and along dims, keepdim), rand/randn
-- (against a plain-Lua Philox-4x32-10), the memory pool, against plain-Lua
-- references (spec/tensor_support.lua).
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"

local has_error = support.has_error

-- Plain-Lua reductions of a list of values; nil for an undefined one.
local REF = {
  sum = function(v) local s = 0 for _, x in ipairs(v) do s = s + x end return s end,
  prod = function(v) local s = 1 for _, x in ipairs(v) do s = s * x end return s end,
  mean = function(v) local s = 0 for _, x in ipairs(v) do s = s + x end return s / #v end,
  min = function(v) local m = v[1] for _, x in ipairs(v) do if x < m then m = x end end return m end,
  max = function(v) local m = v[1] for _, x in ipairs(v) do if x > m then m = x end end return m end,
  argmin = function(v) local b = 1 for i, x in ipairs(v) do if x < v[b] then b = i end end return b end,
  argmax = function(v) local b = 1 for i, x in ipairs(v) do if x > v[b] then b = i end end return b end,
  any = function(v) for _, x in ipairs(v) do if x ~= 0 then return 1 end end return 0 end,
  all = function(v) for _, x in ipairs(v) do if x == 0 then return 0 end end return 1 end,
}

-- The reference of reducing r along dim d.
local function reduce_ref(r, op, d, keepdim)
  local shape = {}
  for i, n in ipairs(r.shape) do
    if i ~= d then shape[#shape + 1] = n elseif keepdim then shape[#shape + 1] = 1 end
  end
  return S.build(shape, function(idx)
    local j, p = {}, 1
    for i = 1, #r.shape do
      if i == d then j[i] = 1; if keepdim then p = p + 1 end
      else j[i] = idx[p]; p = p + 1 end
    end
    local vals = {}
    for l = 1, r.shape[d] do
      j[d] = l
      vals[l] = S.at(r, j)
    end
    return REF[op](vals)
  end)
end

describe("tensor reductions", function()
  local dev = gpu.device()
  math.randomseed(11)

  local function random_tensor(t, shape, lo, hi)
    local vals = {}
    for i = 1, S.numel(shape) do vals[i] = math.random(lo, hi) end
    if t == "float" then for i, v in ipairs(vals) do vals[i] = v / 4 end end
    return dev:tensor(t, shape, vals), {shape = shape, data = vals}
  end

  it("every reduction of float and int, whole and along every dim, keepdim, views", function()
    local ops = {"sum", "prod", "mean", "min", "max", "argmin", "argmax", "any", "all"}
    local shapes = {{3, 5, 4}, {1, 7, 1}, {2, 0, 3}, {40, 33}}
    -- every reduction on float; on int those whose kernels differ (a program each)
    local int_ops = {"sum", "prod", "min", "argmax", "all"}
    for _, t in ipairs{"float", "int"} do
      local ops = t == "float" and ops or int_ops
      for si, shape in ipairs(shapes) do
        local x, r = random_tensor(t, shape, -2, 2)
        if si == 1 then     -- a non-contiguous view
          x = x:transpose(1, 3)
          r = S.build({shape[3], shape[2], shape[1]}, function(idx)
            return S.at(r, {idx[3], idx[2], idx[1]})
          end)
        end
        for _, op in ipairs(ops) do
          local empty = S.numel(r.shape) == 0
          local undefined = op == "min" or op == "max" or op == "argmin" or op == "argmax"
          if empty and undefined then
            has_error("luagpu: tensor:" .. op .. ": the " .. op .. " of an empty tensor is undefined",
                      x[op], x)
          elseif not empty then
            local want = REF[op](r.data)
            local got = x[op](x)
            if op == "any" or op == "all" then want = want == 1 end
            if type(want) == "number" and math.type(want) == "float" then
              assert.near(want, got, 1e-5 * math.max(1, math.abs(want)), op)
            else
              assert.equal(want, got, op)
            end
          end
          for d = 1, #r.shape do
            local keep = d % 2 == 0
            if r.shape[d] == 0 and undefined and S.numel(reduce_ref(r, "sum", d, keep).shape) > 0 then
              has_error("the " .. op .. " of an empty dim is undefined (dim " .. d .. " has size 0)",
                        x[op], x, d, keep)
            elseif r.shape[d] > 0 or not undefined then
              local got = x[op](x, d, keep)
              local ref = reduce_ref(r, op, d, keep)
              if op == "mean" and r.shape[d] == 0 then ref = S.map(ref, function() return 0 / 0 end) end
              S.check(assert, got, ref, (t == "float" or op == "mean") and 1e-5 or nil)
            end
          end
        end
      end
    end
  end)

  it("types of results, sums of every type, and large row and column sums", function()
    local x = dev:tensor("uchar", {2, 3}, {200, 200, 200, 1, 2, 3})
    assert.equal(600, x:sum(2):totable()[1])
    assert.equal("long", x:sum(1).type)
    assert.equal("long", x:argmax(1).type)
    assert.equal("uchar", x:any(1).type)
    assert.equal("double", x:mean(1).type)
    assert.equal(606, x:sum())
    for _, t in ipairs(S.TYPES) do
      local y, r = random_tensor(t, {6, 5}, 0, 9)
      if t == "short" or t == "double" then assert.equal(REF.sum(r.data), y:sum(), t) end
      S.check(assert, y:sum(1), reduce_ref(r, "sum", 1))
    end
    -- few long rows and columns: the dim is cut into parts and folded by a
    -- second kernel
    local big, r = random_tensor("int", {3, 4000}, -3, 3)
    S.check(assert, big:sum(2), reduce_ref(r, "sum", 2))
    S.check(assert, big:argmax(2), reduce_ref(r, "argmax", 2))
    S.check(assert, big:sum(1), reduce_ref(r, "sum", 1))
    local rt = S.build({4000, 3}, function(idx) return S.at(r, {idx[2], idx[1]}) end)
    local tall = big:t():contiguous()
    S.check(assert, tall:sum(1), reduce_ref(rt, "sum", 1))
    S.check(assert, tall:argmin(1), reduce_ref(rt, "argmin", 1))
    S.check(assert, big:t():sum(2), reduce_ref(rt, "sum", 2))
    assert.equal(REF.sum(r.data), big:sum())
    assert.equal(REF.argmin(r.data), big:argmin())
    assert.equal(-1, (big * 0 + 1):slice(2, 1, 3):neg():prod())
    assert.equal(REF.max(r.data) ~= 0, big:any())
    -- whole sums again after the values changed in place (luagpu.reduce keeps
    -- what it found per buffer object: the tensor's storage hands it the same one)
    for _ = 1, 3 do
      local v, rv = random_tensor("int", {50, 40}, -9, 9)
      assert.equal(REF.sum(rv.data), v:sum())
      assert.equal(REF.sum(rv.data), v:sum())
      v:set(5)
      assert.equal(5 * 2000, v:sum())
      assert.equal(5, v:max())
      local row = v:slice(1, 7, 7)
      assert.equal(5 * 40, row:sum())
    end
  end)

  it("column reductions 4 columns at a time (cols4; argmin and argmax with positions), split and folded, at any offset", function()
    local R = require "luagpu.tensor.reduce"
    local OPS = {float = {"sum", "prod", "mean", "min", "max", "any", "all", "argmax"},
                 int = {"sum", "min", "all", "argmin"}, uchar = {"sum", "any", "argmax"}}
    for _, t in ipairs{"float", "int", "uchar"} do
      local ops = OPS[t]
      for _, case in ipairs{{{37, 8}, 1}, {{3, 300, 12}, 2}, {{2000, 4}, 1}, {{5, 6, 4}, 1}} do
        local shape, d = case[1], case[2]
        local x, r = random_tensor(t, shape, 0, 3)
        for _, op in ipairs(ops) do
          if not (op == "mean" and t ~= "float") then
            S.check(assert, x[op](x, d), reduce_ref(r, op, d), op == "mean" and 1e-5 or nil)
          end
        end
      end
      -- a view at offset 8 (4-wide) and at offset 2 (one column at a time)
      for _, skip in ipairs{8, 2} do
        local n = skip + 6 * 8
        local flat, rf = random_tensor(t, {n}, 0, 3)
        local x = flat:slice(1, skip + 1, -1):reshape{6, 8}
        local r = {shape = {6, 8}, data = {table.unpack(rf.data, skip + 1)}}
        S.check(assert, x:sum(1), reduce_ref(r, "sum", 1))
        S.check(assert, x:max(1), reduce_ref(r, "max", 1))
      end
    end
    -- the same results with one column per work-item
    local x, r = random_tensor("int", {500, 12}, -3, 3)
    local waves = R.cols4_waves
    R.cols4_waves = false
    S.check(assert, x:sum(1), reduce_ref(r, "sum", 1))
    R.cols4_waves = waves
    S.check(assert, x:sum(1), reduce_ref(r, "sum", 1))
  end)

  -- Float sums along a dim of 10^6 elements: each work-item folds blocks
  -- of its loads into fresh accumulators (one accumulator was 1e5 off by
  -- 22 down columns and by 5.6 along rows, of 0.1s)
  it("sums 10^6 floats along either dim to within a few units in 10^6", function()
    for _, c in ipairs{{{1000000, 4}, 1}, {{1000000, 3}, 1}, {{4, 1000000}, 2}} do
      local s = dev:tensor("float", c[1], 0.1):sum(c[2])
      for _, v in ipairs(s:totable()) do
        assert.is_true(math.abs(v - 1e5) < 2, ("%s along %d of {%d, %d}"):format(v, c[2],
                       c[1][1], c[1][2]))
      end
    end
    assert.is_true(math.abs(dev:tensor("float", {4, 1000000}, 0.1):mean(2)[1] - 0.1) < 2e-6)
  end)

  -- luagpu.tensor.reduce's sizes: a script's new table makes the kernels
  -- again (groups of other shapes, the same results); a bad one raises
  it("takes other group sizes from a script, and raises for bad ones", function()
    local R = require "luagpu.tensor.reduce"
    local cls = dev.type == "cpu" and "cpu" or "gpu"
    local saved = R.sizes[cls]
    local x, r = random_tensor("float", {37, 300}, -3, 3)
    local ok, err = pcall(function()
      for _, sz in ipairs{{LS = 32, CX = 8, CY = 8, waves = 2}, {LS = 4, CX = 3, CY = 2, waves = 1}} do
        R.sizes[cls] = sz
        for _, op in ipairs{"sum", "max", "argmax"} do
          for d = 1, 2 do S.check(assert, x[op](x, d), reduce_ref(r, op, d)) end
        end
      end
      R.sizes[cls] = {LS = 3, CX = 8, CY = 8, waves = 2}
      has_error("luagpu: tensor:sum: reduce.sizes: LS: expected a power of two from 1 to 1024, " ..
                "got 3", x.sum, x, 1)
      R.sizes[cls] = {LS = 32, CX = 8, CY = 8}
      has_error("luagpu: tensor:max: reduce.sizes: waves: expected an integer from 1 to 1048576, " ..
                "got nil", x.max, x, 2)
    end)
    R.sizes[cls] = saved
    assert(ok, err)
    S.check(assert, x:sum(2), reduce_ref(r, "sum", 2))
  end)

  it("raises on bad dims and keepdim", function()
    local x = dev:tensor("float", {3, 4})
    has_error("luagpu: tensor:sum: argument #1: dim 3 is out of range (1 to 2, or -2 to -1)", x.sum, x, 3)
    has_error("luagpu: tensor:sum: argument #2: keepdim: expected a boolean, got 1", x.sum, x, 1, 1)
    has_error("luagpu: tensor:mean: argument #1: expected an integer dim, got \"1\"", x.mean, x, "1")
  end)
end)

-- Philox-4x32-10 in plain Lua: the 4 words of block b for key (k0, k1).
local function philox(b, k0, k1)
  local c0, c1, c2, c3 = b & 0xffffffff, (b >> 32) & 0xffffffff, 0, 0
  for _ = 1, 10 do
    local p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
    local hi0, lo0 = (p0 >> 32) & 0xffffffff, p0 & 0xffffffff
    local hi1, lo1 = (p1 >> 32) & 0xffffffff, p1 & 0xffffffff
    c0, c1, c2, c3 = hi1 ~ c1 ~ k0, lo1, hi0 ~ c3 ~ k1, lo0
    k0, k1 = (k0 + 0x9E3779B9) & 0xffffffff, (k1 + 0xBB67AE85) & 0xffffffff
  end
  return {c0, c1, c2, c3}
end

describe("tensor random numbers", function()
  local dev = gpu.device()

  it("rand: Philox-4x32-10 from the seed, the same on every device", function()
    local seed = 0x123456789
    local x = dev:rand("float", {3, 7}, seed)
    local got = x:get():totable()
    for i = 1, 21 do
      local w = philox((i - 1) // 4, seed & 0xffffffff, seed >> 32)[(i - 1) % 4 + 1]
      assert.equal((w >> 8) * 2.0^-24, got[i])
    end
    local d = dev:rand("double", {5}, seed):get():totable()
    for i = 1, 5 do
      local w = philox((i - 1) // 2, seed & 0xffffffff, seed >> 32)
      local a, b = w[(i - 1) % 2 * 2 + 1], w[(i - 1) % 2 * 2 + 2]
      assert.equal(((a >> 5) * 67108864 + (b >> 6)) * 2.0^-53, d[i])
    end
    for _, other in ipairs(gpu.devices()) do
      assert.same(got, other:rand("float", {3, 7}, seed):get():totable())
    end
    assert.are_not.same(got, dev:rand("float", {3, 7}, seed + 1):get():totable())
  end)

  it("rand and randn have the right moments", function()
    local n = 1 << 16
    local u = dev:rand("float", {n}, 1)
    assert.near(0.5, u:mean(), 0.01)
    assert.is_true(u:min() >= 0 and u:max() < 1)
    local z = dev:randn("float", {n}, 2)
    assert.near(0, z:mean(), 0.02)
    assert.near(1, (z * z):mean(), 0.03)
    local zd = dev:randn("double", {1001}, 3)
    assert.near(1, (zd * zd):mean(), 0.15)
    has_error("luagpu: device:rand: argument #1: expected \"float\" or \"double\", got \"int\"",
              dev.rand, dev, "int", {2})
    has_error("luagpu: device:randn: argument #3: seed: expected an integer, got 1.5",
              dev.randn, dev, "float", {2}, 1.5)
  end)
end)

describe("tensor memory", function()
  local dev = gpu.device()

  it("reports used and pooled bytes; dead tensors' blocks are reused", function()
    collectgarbage()
    local m0 = dev:memory()
    assert.is_true(m0.used >= 0 and m0.pooled >= 0)
    local x = dev:tensor("float", {1 << 16})
    local m1 = dev:memory()
    assert.is_true(m1.used >= m0.used + (1 << 18))
    x = nil
    collectgarbage()
    local m2 = dev:memory()
    assert.equal(m1.used - (1 << 18), m2.used)
    assert.is_true(m2.pooled >= 1 << 18)
    local made = m2.made
    local y = dev:tensor("float", {1 << 16})
    assert.equal(made, dev:memory().made)
    assert.same({0, 0}, {y:slice(1, 1, 2):totable()[1], y:max()})
    require("luagpu.core.pool").trim(dev)
    assert.equal(0, dev:memory().pooled)
  end)
end)

describe("tensor reductions against NumPy", function()
  local dev = gpu.device()
  math.randomseed(27)

  -- Python: the 1-based position of the first least (greatest) non-NaN
  -- value along axis (every element when None), 1 when all are NaN.
  local ARG = [[
def arg(a, axis, greater):
    m = a.reshape(1, -1) if axis is None else np.moveaxis(a, axis, -1)
    rows = m.reshape(-1, m.shape[-1])
    res = []
    for row in rows:
        best = None
        for i, v in enumerate(row):
            if v == v and (best is None or (v > row[best] if greater else v < row[best])):
                best = i
        res.append((best or 0) + 1)
    return np.array(res, dtype=np.int64).reshape(m.shape[:-1])
]]

  -- Random values of a float type: numbers (never 0, so that fmin's choice
  -- between -0.0 and 0.0 does not matter), NaNs (about nan_share of them)
  -- and infinities.
  local function nan_values(n, nan_share)
    local vals = {}
    for i = 1, n do
      local u = math.random()
      if u < nan_share then vals[i] = 0 / 0
      elseif u < nan_share + 0.05 then vals[i] = math.random(2) == 1 and math.huge or -math.huge
      else vals[i] = (math.random(-999, 999) + 0.5) / 8 end
    end
    return vals
  end

  local function same_number(want, got, what)
    if want ~= want then
      assert.is_true(got ~= got, what .. ": expected NaN, got " .. tostring(got))
    else
      assert.equal(want, got, what)
    end
  end

  it("min and max skip NaNs and give NaN when all are NaN; argmin and argmax agree (issue 27 item 9)", function()
    if not S.need_numpy(assert, pending) then return end
    local types = dev.fp64 and {"float", "double"} or {"float"}
    local shapes = {{1}, {3}, {4, 3}, {2, 5, 3}, {1, 3000}, {3000, 2}, {2, 700, 4}, {9, 1, 2}}
    for _, t in ipairs(types) do
      for case, shape in ipairs(shapes) do
        local n = S.numel(shape)
        -- small tensors: mostly NaN (rows of NaN only); large ones: a few
        local vals = nan_values(n, n <= 30 and 0.6 or (case % 2 == 0 and 1 or 0.3))
        if case == 5 then vals[n] = -2.5 end      -- one number after 2999 NaNs
        local x = dev:tensor(t, shape, vals)
        local code = {ARG, "out = ["}
        for d = 0, #shape do
          local axis = d == 0 and "None" or tostring(d - 1)
          code[#code + 1] = string.format("np.fmin.reduce(a, axis=%s), np.fmax.reduce(a, " ..
                                          "axis=%s), arg(a, %s, False), arg(a, %s, True),",
                                          d == 0 and "None" or axis, axis, axis, axis)
        end
        code[#code + 1] = "]"
        local ref = S.numpy(table.concat(code, "\n"), {a = {type = t, shape = shape, data = vals}})
        local what = t .. " " .. table.concat(shape, "x")
        same_number(ref[1].data[1], x:min(), what .. " min")
        same_number(ref[2].data[1], x:max(), what .. " max")
        assert.equal(ref[3].data[1], x:argmin(), what .. " argmin")
        assert.equal(ref[4].data[1], x:argmax(), what .. " argmax")
        for d = 1, #shape do
          local r = 4 * d
          S.check(assert, x:min(d), ref[r + 1])
          S.check(assert, x:max(d), ref[r + 2])
          S.check(assert, x:argmin(d), ref[r + 3])
          S.check(assert, x:argmax(d), ref[r + 4])
        end
        -- x[argmin] is min, x[argmax] is max
        local flat = x:reshape{n}
        same_number(x:min(), flat:slice(1, x:argmin(), x:argmin()):item(), what .. " x[argmin]")
        same_number(x:max(), flat:slice(1, x:argmax(), x:argmax()):item(), what .. " x[argmax]")
      end
    end
    -- the cases of the report
    assert.equal(2, dev:tensor("float", {2}, {0 / 0, math.huge}):argmin())
    assert.equal(2, dev:tensor("float", {2}, {0 / 0, 1}):argmin())
    assert.equal(1, dev:tensor("float", {2}, {0 / 0, 0 / 0}):argmin())
    assert.equal(2, dev:tensor("float", {2}, {0 / 0, -math.huge}):argmax())
    -- luagpu.reduce on buffers, and over a list of buffers
    local reduce = require "luagpu.reduce"
    for _, t in ipairs(types) do
      for _, n in ipairs{1, 7, 100, 5000} do
        for _, share in ipairs{1, 0.5} do
          local vals = nan_values(n, share)
          local b = dev:buffer(t, n)
          b:write(gpu.array(t, vals))
          local ref = S.numpy("out = [np.fmin.reduce(a), np.fmax.reduce(a)]",
                              {a = {type = t, shape = {n}, data = vals}})
          same_number(ref[1].data[1], reduce.min(b), t .. " reduce.min of " .. n)
          same_number(ref[2].data[1], reduce.max(b), t .. " reduce.max of " .. n)
        end
      end
      local nan, num = dev:buffer(t, 3), dev:buffer(t, 2)
      nan:fill(0 / 0)
      num:write(gpu.array(t, {4, -3}))
      assert.equal(-3, reduce.min({nan, num}))
      assert.equal(4, reduce.max({nan, num}))
      assert.equal(-3, reduce.min({num, nan}))
      local both = reduce.min({nan, nan})
      assert.is_true(both ~= both)
    end
  end)

  it("the whole mean of a float tensor is a float: its double mean rounded once", function()
    -- (it returned the double quotient: x:mean() ~= x:mean(1):item() for {0.1, 0.2, 0.4})
    local f32 = function(v) return (string.unpack("f", string.pack("f", v))) end
    for _, n in ipairs{1, 3, 1000, 40000} do
      local vals = S.random_values("float", n)
      local x = dev:tensor("float", {n}, vals)
      local stored, s = x:totable(), 0
      for i = 1, n do s = s + stored[i] end
      local got = x:mean()
      assert.equal(f32(got), got, "not a float")
      assert.is_true(math.abs(got - s / n) <= 1e-6 * math.max(1, math.abs(s / n)),
                     ("mean of %d: %.9g, want %.9g"):format(n, got, s / n))
    end
    local x = dev:tensor("float", {3}, {0.1, 0.2, 0.4})
    assert.equal(x:mean(1):item(), x:mean())
  end)

  it("the whole mean of every integer type accumulates in double, as NumPy's (issue 27 item 10)", function()
    if not S.need_numpy(assert, pending) then return end
    local mi, ma = math.mininteger, math.maxinteger
    assert.equal(6.148914691236517e18, dev:tensor("long", {3}, {ma, ma, 1}):mean())
    assert.equal(6.148914691236517e18,
                 dev:tensor("long", {3}, {-1, 2, 3}):astype("ulong"):mean())
    local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
                   ushort = {0, 65535}, int = {-(1 << 31), (1 << 31) - 1},
                   uint = {0, (1 << 32) - 1}, long = {mi, ma}, ulong = {mi, ma}}
    for _, t in ipairs(S.INTS) do
      for _, n in ipairs{1, 3, 1000, 40000} do
        local lo, hi = RANGE[t][1], RANGE[t][2]
        local span = (hi - lo >= 0 and hi - lo < 1000) and hi - lo or 1000
        local vals = {}
        for i = 1, n do
          -- mostly near the top of the range (where sums wrap), some anywhere
          vals[i] = math.random(3) == 1 and math.random(lo, hi) or hi - math.random(0, span)
        end
        -- ulong values past 2^63 are negative Lua integers: cast from long
        local x = t == "ulong" and dev:tensor("long", {n}, vals):astype("ulong")
                  or dev:tensor(t, {n}, vals)
        local ref = S.numpy("out = [np.mean(a, dtype=np.float64), np.abs(a.astype(np.float64)).max()]",
                            {a = {type = t, shape = {n}, data = vals}})
        local want, got = ref[1].data[1], x:mean()
        assert.is_true(math.abs(got - want) <= 1e-12 * math.max(1, ref[2].data[1]),
                       string.format("%s mean of %d: NumPy %.17g, got %.17g", t, n, want, got))
        -- the same along the dim
        local d = x:reshape{1, n}:mean(2):item()
        assert.is_true(math.abs(d - want) <= 1e-12 * math.max(1, ref[2].data[1]))
      end
    end
  end)

  it("dim-wise operations of empty tensors keep NumPy's shapes (issue 27 item 11)", function()
    if not S.need_numpy(assert, pending) then return end
    local shapes = {{0}, {0, 3}, {3, 0}, {2, 0, 4}, {0, 0}, {1, 0, 2}}
    local ops = {"cumsum", "sort", "argsort", "sum", "prod", "mean", "min", "max", "argmin",
                 "argmax", "any", "all"}
    local NP = {cumsum = "np.cumsum(a, axis=%d)", sort = "np.sort(a, axis=%d)",
                argsort = "np.argsort(a, axis=%d)", sum = "np.sum(a, axis=%d)",
                prod = "np.prod(a, axis=%d)", mean = "np.mean(a, axis=%d)",
                min = "np.min(a, axis=%d)", max = "np.max(a, axis=%d)",
                argmin = "np.argmin(a, axis=%d)", argmax = "np.argmax(a, axis=%d)",
                any = "np.any(a, axis=%d)", all = "np.all(a, axis=%d)"}
    local lines = {"def shape(f):", "    try: return list(f().shape)",
                   "    except Exception: return None", "out = []"}
    for _, shape in ipairs(shapes) do
      lines[#lines + 1] = string.format("a = np.zeros((%s), dtype=np.float32)",
                                        table.concat(shape, ",") .. (#shape == 1 and "," or ""))
      for d = 1, #shape do
        for _, op in ipairs(ops) do
          lines[#lines + 1] = "out.append(shape(lambda: " .. NP[op]:format(d - 1) .. "))"
        end
      end
    end
    lines[#lines + 1] = "out = [np.array(s) if s is not None else np.array([-1, -1, -1]) for s in out]"
    local ref = S.numpy(table.concat(lines, "\n"))
    local k = 0
    for _, shape in ipairs(shapes) do
      local x = dev:tensor("float", shape)
      for d = 1, #shape do
        for _, op in ipairs(ops) do
          k = k + 1
          local want = ref[k].data
          local ok, r = pcall(x[op], x, d)
          local what = op .. " of " .. table.concat(shape, "x") .. " along " .. d
          if #want == 3 and want[1] == -1 then
            assert.is_false(ok, what .. " should raise")
            assert.matches("is undefined", r, 1, true)
          else
            assert.is_true(ok, what .. ": " .. tostring(r))
            assert.same(want, r.shape, what)
          end
        end
      end
    end
  end)

  it("reduces several dims at once and takes an accumulator type, as NumPy (issue 32)", function()
    if not S.need_numpy(assert, pending) then return end
    for round = 1, 6 do
      local shape = S.random_shape(math.random(2, 4), 1, 4)
      local nd = #shape
      local t = ({"float", "int", "uchar", "double", "long"})[round % 5 + 1]
      local x = dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
      if round % 2 == 0 then x = x:transpose(1, nd) end
      local dims, axes = {}, {}
      for d = 1, nd do
        if math.random() < 0.5 then dims[#dims + 1] = d; axes[#axes + 1] = d - 1 end
      end
      if #dims < 2 then dims, axes = {1, nd}, {0, nd - 1} end
      local given = {}
      for i, d in ipairs(dims) do given[i] = math.random() < 0.3 and d - nd - 1 or d end
      local ax = "(" .. table.concat(axes, ",") .. ",)"
      local ref = S.numpy(([[
out = [x.sum(axis=%s, dtype=np.float64), x.max(axis=%s), x.min(axis=%s, keepdims=True),
       x.sum(axis=%s, dtype=np.float64, keepdims=True), x.astype(np.float64).mean(axis=%s),
       x.sum(axis=%s, dtype=np.uint8)]
]]):format(ax, ax, ax, ax, ax, ax), {x = {type = t, shape = x.shape, data = x:get():totable()}})
      S.check(assert, x:sum(given, {type = "double"}), ref[1])
      S.check(assert, x:max(given), ref[2])
      S.check(assert, x:min(given, {keepdim = true}), ref[3])
      S.check(assert, x:sum(given, {keepdim = true, type = "double"}), ref[4])
      S.check(assert, x:astype("double"):mean(given), ref[5])
      if t ~= "float" and t ~= "double" then
        S.check(assert, x:sum(given, {type = "uchar"}), ref[6])      -- wraps as NumPy's
      end
    end
    local y = dev:tensor("int", {2, 3}, {1, 2, 3, 4, 5, 6})
    assert.equal(21.0, y:sum(nil, {type = "double"}))
    assert.equal(21, y:sum({1, 2}):item())
    assert.same({1, 1}, y:sum({2, -2}, {keepdim = true}).shape)
  end)

  it("several dims raise where they cannot be taken, and bad options (issue 27 item 43)", function()
    local x = dev:tensor("float", {2, 3})
    has_error("luagpu: tensor:argmax: argument #1: argmax takes one dim (or none), got 2",
              x.argmax, x, {1, 2})
    has_error("luagpu: tensor:sum: argument #1: dim 1 appears twice", x.sum, x, {1, -2})
    -- no dims (NumPy's axis=()): each element alone, typed as along a dim
    local y6 = dev:tensor("int", {2, 3}, {1, 0, -3, 4, 5, 6})
    for op, want in pairs{sum = {"long", {{1, 0, -3}, {4, 5, 6}}},
                          max = {"int", {{1, 0, -3}, {4, 5, 6}}},
                          mean = {"double", {{1.0, 0.0, -3.0}, {4.0, 5.0, 6.0}}},
                          any = {"uchar", {{1, 0, 1}, {1, 1, 1}}}} do
      local r = y6[op](y6, {})
      assert.equals(want[1], r.type, op)
      assert.same(want[2], r:totable(), op)
    end
    assert.same({2, 3}, y6:prod({}, {keepdim = true}).shape)
    assert.same({}, dev:tensor("float", {}, 5):sum({}).shape)
    has_error("luagpu: tensor:argmax: argument #1: argmax takes one dim (or none), got 0",
              x.argmax, x, {})
    has_error("luagpu: tensor:sum: argument #1: entry 2: dim 3 is out of range (1 to 2, or -2 " ..
              "to -1)", x.sum, x, {1, 3})
    has_error("luagpu: tensor:max: argument #2: option type is for sum, prod and mean, not max",
              x.max, x, 1, {type = "double"})
    has_error("luagpu: tensor:sum: argument #2: unknown option 'kepdim' (expected keepdim, type)",
              x.sum, x, 1, {kepdim = true})
    has_error("luagpu: tensor:sum: argument #2: keepdim: expected a boolean, got 1",
              x.sum, x, 1, {keepdim = 1})
    has_error("luagpu: tensor:sum: argument #2: option type: expected an element type",
              x.sum, x, 1, {type = "half"})
    -- found by the audit: keepdim without a dim was dropped (a number came
    -- back where NumPy gives an array of shape {1, 1})
    local kd = "argument #2: keepdim needs a dim or a list of dims (without one the result " ..
               "is a Lua number)"
    for _, op in ipairs{"sum", "prod", "mean", "min", "max", "argmin", "argmax", "any", "all",
                        "var", "std"} do
      has_error("luagpu: tensor:" .. op .. ": " .. kd, x[op], x, nil, {keepdim = true})
    end
    has_error("luagpu: tensor:sum: " .. kd, x.sum, x, nil, true)
    has_error("luagpu: tensor:var: " .. kd, x.var, x, {keepdim = true})
    has_error("luagpu: tensor:logsumexp: " .. kd, x.logsumexp, x, nil, true)
    assert.equal(x:sum(), x:sum(nil, {keepdim = false, type = x.type}))
    has_error("luagpu: tensor:cumsum: argument #1: expected an integer dim, got a table " ..
              "(several dims at once are not supported yet)", x.cumsum, x, {1, 2})
    has_error("luagpu: tensor:sort: argument #1: expected an integer dim, got a table " ..
              "(several dims at once are not supported yet)", x.sort, x, {1, 2}, {})
    -- a list of dims alone is dims too, not an options table ("unknown option '1'")
    for _, f in ipairs{"sort", "argsort"} do
      has_error("luagpu: tensor:" .. f .. ": argument #1: expected an integer dim, got a table " ..
                "(several dims at once are not supported yet)", x[f], x, {1, 2})
    end
  end)
end)
