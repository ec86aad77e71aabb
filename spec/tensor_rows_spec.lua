-- luagpu.tensor: x:softmax, x:log_softmax, x:logsumexp (tensor/rows.lua,
-- kernels/rows.cl) against NumPy on random data: rows of many lengths
-- (around the length a row may have to stay in registers, read from the
-- device's group size), every dim, views, integers, -inf, +inf, NaN and
-- huge values, empty dims; and their error messages. x:sort and x:argsort
-- along every dim (rows sorted in local memory, algo/sort_rows.lua)
-- against numpy.sort and numpy.argsort(kind = "stable").
local gpu = require "luagpu"
local support = require "support"
local numpy = require "algo_numpy"
local RW = require "luagpu.tensor.rows"

local dev = gpu.device()
local TYPES = dev.fp64 and {"float", "double"} or {"float"}

-- The message of f(...)'s error from "luagpu: " on (the caller's
-- file:line cut off).
local function message(f, ...)
  local e = support.errmsg(f, ...)
  return (e:match("luagpu: .*$") or e)
end

-- NumPy references, as PyTorch and SciPy define them: softmax and
-- log_softmax with the max subtracted (np.max: NaN in a row gives NaN; an
-- +inf, or a row of -inf only, gives NaN throughout), logsumexp as
-- scipy.special.logsumexp (an infinite max taken as 0). Computed in
-- float64; a float result within 2e-5 relative plus 1e-6, a double one
-- within 1e-11 relative plus 1e-13; NaN and infinities exactly.
local CHECK = [[
import sys, numpy as np
d = sys.argv[1]
np.seterr(all='ignore')
bad = []
for line in open(d + "/cases"):
    name, mode, axis, keep = line.split()
    axis, keep = int(axis), keep == "1"
    x = np.load(f"{d}/{name}_in.npy")
    got = np.load(f"{d}/{name}_{mode}.npy")
    ft = np.float64 if (x.dtype == np.float64 or x.dtype.itemsize == 8) else np.float32
    if got.dtype != ft: bad.append(f"{name} {mode}: type {got.dtype}, expected {np.dtype(ft)}"); continue
    a = x.astype(np.float64)
    ax = None if axis < 0 else axis
    if mode == "logsumexp":
        if a.size == 0 and ax is None: want = np.array(-np.inf)
        else:
            m = np.max(a, axis=ax, keepdims=True) if a.shape[ax or 0] > 0 else np.zeros([1 if i == ax else n for i, n in enumerate(a.shape)])
            m = np.where(np.isfinite(m), m, 0)
            want = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
            if not keep: want = want.reshape([n for i, n in enumerate(a.shape) if i != ax]) if ax is not None else want.reshape(())
    else:
        m = np.max(a, axis=ax, keepdims=True)
        if mode == "softmax":
            e = np.exp(a - m)
            want = e / np.sum(e, axis=ax, keepdims=True)
        else:
            want = (a - m) - np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True))
    want = want.astype(ft).astype(np.float64)   # out of the type's range: infinite
    if got.shape != want.shape: bad.append(f"{name} {mode}: shape {got.shape}, expected {want.shape}"); continue
    g = got.astype(np.float64)
    rt, at = (2e-5, 1e-6) if ft == np.float32 else (1e-11, 1e-13)
    nanw, nang = np.isnan(want), np.isnan(g)
    infw = np.isinf(want)
    ok = (nanw == nang) & np.where(infw, g == want, True)
    fin = ~nanw & ~infw
    ok &= np.where(fin, np.abs(g - want) <= at + rt * np.abs(want), True)
    if not ok.all():
        i = np.argwhere(~ok)[0]
        bad.append(f"{name} {mode} axis {axis} shape {x.shape}: at {tuple(i)} got {g[tuple(i)]!r}, expected {want[tuple(i)]!r} ({(~ok).sum()} wrong)")
print("\n".join(bad) if bad else "ok")
]]

-- Runs the cases, each {name =, x = tensor, dim = d or nil, keepdim =,
-- modes = {...}}, and checks every result against NumPy.
local function against_numpy(cases)
  local dir = numpy.tmpdir(finally)
  local lines = {}
  for _, c in ipairs(cases) do
    c.x:save(("%s/%s_in.npy"):format(dir, c.name))
    for _, mode in ipairs(c.modes or {"softmax", "log_softmax", "logsumexp"}) do
      local r
      if mode == "logsumexp" then
        r = c.x:logsumexp(c.dim, c.keepdim)
        if type(r) == "number" then r = dev:tensor("double", {}, r) end
      else
        r = c.x[mode](c.x, c.dim)
      end
      local path = ("%s/%s_%s.npy"):format(dir, c.name, mode)
      if mode == "logsumexp" and not c.dim then
        -- a Lua number: saved in the floating type of x for the type check
        local ft = (c.x.type == "double" or c.x.type == "long" or c.x.type == "ulong") and
                   "double" or "float"
        r:astype(ft):save(path)
      else
        r:save(path)
      end
      local d = c.dim and (c.dim < 0 and c.dim + c.x.ndim + 1 or c.dim)
      lines[#lines + 1] = ("%s %s %d %d"):format(c.name, mode, d and d - 1 or -1,
                                                 c.keepdim and 1 or 0)
    end
  end
  support.write_file(dir .. "/cases", table.concat(lines, "\n") .. "\n")
  local out = numpy.run(CHECK, dir)
  assert.equal("ok\n", out)
end

-- Values for a row: normal ones scaled, with special values mixed in at
-- rate p (kinds: "ninf", "nan", "inf", "huge").
local function values(n, scale, p, kinds)
  local v = {}
  for i = 1, n do
    local x = (math.random() * 2 - 1) * scale
    if kinds and math.random() < p then
      local k = kinds[math.random(#kinds)]
      if k == "ninf" then x = -math.huge
      elseif k == "inf" then x = math.huge
      elseif k == "nan" then x = 0 / 0
      elseif k == "huge" then x = (math.random() < 0.5 and -1 or 1) * 3e38 end
    end
    v[i] = x
  end
  return v
end

-- The row length a group keeps in registers on dev, for 1-element and
-- 4-element chunks (see tensor/rows.lua).
local function register_limits()
  local sz = RW.sizes[dev.type == "cpu" and "cpu" or "gpu"]
  local ls = math.min(sz.LS, 1 << math.floor(math.log(dev.max_work_group_size, 2) + 1e-9))
  return ls * sz.ITEMS, ls * sz.ITEMS * 4
end

if not numpy.python() then
  describe("x:softmax, x:log_softmax, x:logsumexp against NumPy", function()
    it("needs python3 with NumPy", function()
      assert(not os.getenv("CI"), "python3 with numpy not found under CI")
      pending("python3 with numpy not found: not checked against NumPy")
    end)
  end)
else
describe("x:softmax, x:log_softmax, x:logsumexp against NumPy", function()
  it("rows of many lengths along the last dim: around the register limits, primes, " ..
     "powers of two, offsets that are not multiples of 4", function()
    local l1, l4 = register_limits()
    local lengths = {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 32, 64, 97, 128, 255, 256, 1000, 1024,
                     l1 - 1, l1, l1 + 1, l4 - 4, l4 - 1, l4, l4 + 1, l4 + 4, 2 * l4 + 8,
                     3 * l4 + 5}
    local cases = {}
    for _, t in ipairs(TYPES) do
      for i, L in ipairs(lengths) do
        local rows = math.max(1, math.min(33, 20000 // L))
        local x = dev:tensor(t, {rows, L}, values(rows * L, i % 3 == 0 and 40 or 4))
        cases[#cases + 1] = {name = ("%s_L%d"):format(t, L), x = x, dim = 2}
        cases[#cases + 1] = {name = ("%s_L%d_neg"):format(t, L), x = x, dim = -1, keepdim = true,
                             modes = {"logsumexp"}}
        -- the same rows one element into a buffer: no 4-wide loads
        local big = dev:tensor(t, {rows * L + 1}, values(rows * L + 1, 4))
        local off = big:slice(1, 2, rows * L + 1):reshape{rows, L}
        cases[#cases + 1] = {name = ("%s_L%d_off"):format(t, L), x = off, dim = 2}
      end
    end
    against_numpy(cases)
  end)

  it("every dim of 3-D and 4-D tensors, transposed and sliced views, lazy expressions, " ..
     "logsumexp without a dim and with keepdim", function()
    local cases = {}
    for _, t in ipairs(TYPES) do
      for s, shape in ipairs{{3, 5, 7}, {2, 1, 64}, {4, 300, 3}, {2, 3, 4, 5}, {1, 1, 1}} do
        local n = 1
        for _, k in ipairs(shape) do n = n * k end
        local x = dev:tensor(t, shape, values(n, 6))
        for d = 1, #shape do
          cases[#cases + 1] = {name = ("%s_s%d_d%d"):format(t, s, d), x = x, dim = d}
          cases[#cases + 1] = {name = ("%s_s%d_d%dk"):format(t, s, d), x = x, dim = d - #shape - 1,
                               keepdim = true, modes = {"logsumexp"}}
        end
        cases[#cases + 1] = {name = ("%s_s%d_all"):format(t, s), x = x, modes = {"logsumexp"}}
      end
      local m = dev:tensor(t, {40, 70}, values(2800, 5))
      cases[#cases + 1] = {name = t .. "_t1", x = m:t(), dim = 1}
      cases[#cases + 1] = {name = t .. "_t2", x = m:t(), dim = 2}
      cases[#cases + 1] = {name = t .. "_step", x = m:slice(2, 3, 70, 3), dim = 2}
      cases[#cases + 1] = {name = t .. "_lazy", x = (m * 3 - 1):exp():log(), dim = 2}
    end
    against_numpy(cases)
  end)

  it("-inf, +inf, NaN and huge values; rows of -inf only; rows with NaN only", function()
    local cases = {}
    for _, t in ipairs(TYPES) do
      for i, L in ipairs{1, 2, 3, 8, 61, 256, 4099} do
        local rows = 40
        local kinds = ({{"ninf"}, {"nan"}, {"inf"}, {"huge"}, {"ninf", "nan", "inf", "huge"}})
        for k, ks in ipairs(kinds) do
          local p = L <= 3 and 0.5 or (k == 1 and 0.9 or 3 / L)
          local v = values(rows * L, t == "float" and 50 or 700, p, ks)
          -- a row of -inf only, one of NaN only, one of huge values of one sign
          for j = 1, L do
            v[j] = -math.huge
            v[L + j] = 0 / 0
            v[2 * L + j] = 3e38 - j * 1e32
          end
          local x = dev:tensor(t, {rows, L}, v)
          cases[#cases + 1] = {name = ("%s_%d_%d_%d"):format(t, i, k, L), x = x, dim = 2}
          cases[#cases + 1] = {name = ("%s_%d_%d_%d_c"):format(t, i, k, L), x = x, dim = 1}
        end
      end
    end
    against_numpy(cases)
  end)

  it("rows held MIN_ITEMS chunks a work-item (fewer work-items a row), around that limit, " ..
     "with -inf, +inf and NaN", function()
    local cls = dev.type == "cpu" and "cpu" or "gpu"
    local saved = RW.sizes[cls]
    finally(function() RW.sizes[cls] = saved end)
    -- rows of at least 4 chunks take 4 chunks a work-item: several rows a
    -- warp (short rows), fewer work-items a row (long ones)
    RW.sizes[cls] = {LS = 64, ITEMS = 8, MIN_ITEMS = 4}
    local cases = {}
    for _, t in ipairs(TYPES) do
      for i, L in ipairs{3, 5, 15, 16, 17, 63, 64, 65, 255, 508, 511, 512, 513, 2049, 4096} do
        local rows = 9
        local v = values(rows * L, 30, 4 / L, {"ninf", "nan", "inf"})
        for j = 1, L do v[j] = -math.huge end            -- a row of -inf only
        local x = dev:tensor(t, {rows, L}, v)
        cases[#cases + 1] = {name = ("%s_m%d_%d"):format(t, i, L), x = x, dim = 2}
        local y = dev:tensor(t, {rows, L}, values(rows * L, 8))
        cases[#cases + 1] = {name = ("%s_m%d_%d_plain"):format(t, i, L), x = y, dim = 2}
      end
    end
    against_numpy(cases)
    -- a class table without MIN_ITEMS, or with ITEMS below it, as scripts made
    -- them before it existed: MIN_ITEMS is 1, or ITEMS at most
    local x = dev:tensor("float", {5, 300}, values(1500, 8))
    local want = x:softmax(2):totable()
    for _, sizes in ipairs{{LS = 64, ITEMS = 1}, {LS = 64, ITEMS = 2, MIN_ITEMS = 16}} do
      RW.sizes[cls] = sizes
      local got = x:softmax(2):totable()
      for r = 1, 5 do
        for c = 1, 300 do assert.near(want[r][c], got[r][c], 1e-6) end
      end
    end
  end)

  it("integer tensors compute in their floating type (float up to 4 bytes, double beyond)",
     function()
    local cases = {}
    for _, t in ipairs{"char", "uchar", "short", "int", "uint", dev.fp64 and "long" or nil} do
      local v = {}
      for i = 1, 6 * 37 do v[i] = math.random(0, 100) end
      local x = dev:tensor(t, {6, 37}, v)
      cases[#cases + 1] = {name = t, x = x, dim = 2}
      cases[#cases + 1] = {name = t .. "_1", x = x, dim = 1}
    end
    against_numpy(cases)
  end)

  it("x:sort and x:argsort along every dim, with ties and NaNs, both ways, as " ..
     "numpy.argsort(kind = 'stable')", function()
    local dir = numpy.tmpdir(finally)
    local lines = {}
    local k = 0
    for _, t in ipairs{"float", "int", "uchar", dev.fp64 and "double" or nil} do
      for _, shape in ipairs{{3, 5, 7}, {2, 1000, 3}, {40, 64}, {5, 1, 2, 129}} do
        local n = 1
        for _, m in ipairs(shape) do n = n * m end
        local v = {}
        for i = 1, n do
          v[i] = math.random(0, 20)          -- ties
          if (t == "float" or t == "double") and math.random() < 0.1 then
            v[i] = ({0 / 0, -0.0, math.huge, -math.huge})[math.random(4)]
          end
        end
        local x = dev:tensor(t, shape, v)
        k = k + 1
        x:save(("%s/s%d_in.npy"):format(dir, k))
        for d = 1, #shape do
          for _, desc in ipairs{false, true} do
            local tag = ("s%d_%d_%d"):format(k, d, desc and 1 or 0)
            x:sort(d, {descending = desc}):save(("%s/%s_sort.npy"):format(dir, tag))
            x:argsort(d, {descending = desc}):save(("%s/%s_arg.npy"):format(dir, tag))
            lines[#lines + 1] = ("s%d %d %d"):format(k, d - 1, desc and 1 or 0)
          end
        end
      end
    end
    support.write_file(dir .. "/cases", table.concat(lines, "\n") .. "\n")
    local out = numpy.run([[
import sys, numpy as np
d = sys.argv[1]
bad = []
for line in open(d + "/cases"):
    name, axis, desc = line.split(); axis, desc = int(axis), desc == "1"
    x = np.load(f"{d}/{name}_in.npy")
    tag = f"{name}_{axis + 1}_{int(desc)}"
    if desc:   # NaNs first, then the greatest; equal keys in their order
        y = np.moveaxis(x, axis, -1)
        r = y.reshape(-1, y.shape[-1])
        key = np.where(np.isnan(r), 0, r) if r.dtype.kind == 'f' else r
        w = np.array([np.lexsort((-key[i].astype(np.float64), ~np.isnan(r[i]) if r.dtype.kind == 'f' else np.zeros(len(r[i]), bool))) for i in range(len(r))])
        want = np.moveaxis(w.reshape(y.shape), -1, axis)
    else:
        want = np.argsort(x, axis=axis, kind="stable")
    got = np.load(f"{d}/{tag}_arg.npy") - 1
    if got.shape != want.shape or not (got == want).all(): bad.append(tag + " argsort")
    keys = np.load(f"{d}/{tag}_sort.npy")
    wk = np.take_along_axis(x, want, axis)
    same = (keys == wk) | (np.isnan(keys) & np.isnan(wk)) if x.dtype.kind == 'f' else keys == wk
    if not same.all(): bad.append(tag + " sort")
print("\n".join(bad) if bad else "ok")
]], dir)
    assert.equal("ok\n", out)
  end)
end)
end

describe("x:softmax, x:log_softmax, x:logsumexp", function()
  it("sum to 1 (softmax), exp to softmax (log_softmax), give log of the sum of exp " ..
     "(logsumexp) on a long random row", function()
    local x = dev:randn("float", {3, 50000}, 7) * 10
    local s = x:softmax(2)
    local sums = s:sum(2):get()
    for i = 1, 3 do assert.is_true(math.abs(sums[i] - 1) < 1e-4, tostring(sums[i])) end
    local ls = x:log_softmax(2):exp()
    assert.is_true(((ls - s):abs():max()) < 1e-6)
    local lse = x:logsumexp(2):get()
    local rows = x:get()
    for i = 1, 3 do
      local m = -math.huge
      for j = 1, 50000 do m = math.max(m, rows[(i - 1) * 50000 + j]) end
      local sum = 0
      for j = 1, 50000 do sum = sum + math.exp(rows[(i - 1) * 50000 + j] - m) end
      assert.is_true(math.abs(lse[i] - (m + math.log(sum))) < 1e-4 * math.abs(lse[i]))
    end
  end)

  it("results: a new contiguous tensor along the last dim, the permuted layout along " ..
     "others; x is unchanged", function()
    local x = dev:tensor("float", {2, 3}, {1, 2, 3, 4, 5, 6})
    local s = x:softmax(2)
    assert.is_true(s:is_contiguous())
    assert.same({2, 3}, s.shape)
    local c = x:softmax(1)
    assert.same({2, 3}, c.shape)
    assert.same({1, 2}, c.strides)
    assert.same({{1, 2, 3}, {4, 5, 6}}, x:totable())
    local e = math.exp(1)
    local want = {e / (1 + e + e * e), e * e / (1 + e + e * e)}
    local got = s:get()
    assert.is_true(math.abs(got[2] - want[1]) < 1e-6 and math.abs(got[3] - want[2]) < 1e-6)
    assert.same({2}, x:logsumexp(2).shape)
    assert.same({2, 1}, x:logsumexp(2, true).shape)
    assert.same({1, 3}, x:logsumexp(1, {keepdim = true}).shape)
    assert.equal("number", type(x:logsumexp()))
    -- the default dim of softmax and log_softmax is the last
    assert.same(x:softmax(2):totable(), x:softmax():totable())
    assert.same(x:log_softmax(-1):totable(), x:log_softmax():totable())
  end)

  it("empty dims: empty results, logsumexp -inf over an empty dim", function()
    local x = dev:tensor("float", {0, 5})
    assert.same({0, 5}, x:softmax(2).shape)
    assert.same({0, 5}, x:log_softmax(1).shape)
    assert.same({0}, x:logsumexp(2).shape)
    assert.same({-math.huge, -math.huge, -math.huge, -math.huge, -math.huge},
                x:logsumexp(1):totable())
    assert.equal(-math.huge, x:logsumexp())
    assert.same({{}, {}}, dev:tensor("float", {2, 0}):softmax(2):totable())
  end)

  it("raise on bad arguments, with the exact message", function()
    local x = dev:tensor("float", {2, 3})
    assert.equal("luagpu: tensor:softmax: argument #1: dim 3 is out of range (1 to 2, or -2 to -1)",
                 message(x.softmax, x, 3))
    assert.equal("luagpu: tensor:log_softmax: argument #1: dim -3 is out of range (1 to 2, or " ..
                 "-2 to -1)", message(x.log_softmax, x, -3))
    assert.equal("luagpu: tensor:logsumexp: argument #1: dim 0 is out of range (1 to 2, or -2 " ..
                 "to -1)", message(x.logsumexp, x, 0))
    assert.equal("luagpu: tensor:softmax: expected a tensor of at least 1 dim, got a 0-d one",
                 message(x.softmax, dev:tensor("float", {}, 1)))
    assert.equal("luagpu: tensor:softmax: argument #1: expected an integer dim, got a table " ..
                 "(several dims at once are not supported yet)", message(x.softmax, x, {1, 2}))
    assert.equal("luagpu: tensor:logsumexp: argument #1: expected an integer dim, got a table " ..
                 "(reducing several dims at once is not supported yet)",
                 message(x.logsumexp, x, {1, 2}))
    assert.equal("luagpu: tensor:logsumexp: argument #2: keepdim: expected a boolean, got 1",
                 message(x.logsumexp, x, 1, 1))
    assert.equal("luagpu: tensor:logsumexp: argument #2: option keepdim: expected a boolean, " ..
                 "got \"yes\"", message(x.logsumexp, x, 1, {keepdim = "yes"}))
    assert.matches("^luagpu: tensor:logsumexp: argument #2: unknown option 'keep'",
                   message(x.logsumexp, x, 1, {keep = true}))
    assert.equal("luagpu: tensor:softmax: self: expected a tensor, got number (call " ..
              "methods with a colon: x:softmax(...))",
                 message(x.softmax, 5))
    local r = dev:tensor("float", {4})
    r:release()
    assert.equal("luagpu: tensor:softmax: attempt to use a released tensor",
                 message(r.softmax, r))
    local cpu, gpu_ls = RW.sizes.cpu.LS, RW.sizes.gpu.LS
    RW.sizes.cpu.LS, RW.sizes.gpu.LS = 3, 3
    local ok, e = pcall(x.softmax, x, 2)
    RW.sizes.cpu.LS, RW.sizes.gpu.LS = cpu, gpu_ls
    assert.is_false(ok)
    assert.matches("luagpu: tensor:softmax: rows.sizes.%a+.LS: expected a power of two from 1 " ..
                   "to 1024, got 3$", tostring(e))
  end)
end)
