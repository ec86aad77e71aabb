-- x:var, std, norm, median, topk, unique, bincount, cumprod, dot,
-- gpu.outer, gpu.searchsorted and gpu.einsum against NumPy on random
-- tensors, and their error messages.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"

local has_error = support.has_error

describe("statistics, order and products", function()
  local dev = gpu.device()
  math.randomseed(4242)

  local function np_of(x)
    return {type = x.type, shape = x.shape, data = x:get():totable()}
  end
  local function same(ref, x, tol) S.check(assert, x, ref, tol) end
  local function close(want, got, tol)
    local w = type(want) == "table" and want.data[1] or want
    assert.is_true(math.abs(w - got) <= (tol or 1e-9) * math.max(1, math.abs(w)),
                   ("want %s, got %s"):format(tostring(w), tostring(got)))
  end

  it("var, std and norm, whole and along dims, as NumPy", function()
    if not S.need_numpy(assert, pending) then return end
    for round = 1, 5 do
      local shape = S.random_shape(3, 2, 5)
      local t = ({"double", "int", "float"})[round % 3 + 1]
      local x = dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
      if round % 2 == 0 then x = x:transpose(1, 3) end
      local d = math.random(1, 3)
      local vars = {x = np_of(x)}
      local ref = S.numpy(([[
y = x.astype(np.float64)
out = [y.var(ddof=1), y.std(ddof=0), y.var(axis=%d, ddof=1), y.std(axis=(0, 2), ddof=0,
       keepdims=True), np.sqrt((y * y).sum()), np.abs(y).sum(axis=%d), np.abs(y).max(),
       (np.abs(y) ** 3).sum(axis=%d) ** (1 / 3), float(np.count_nonzero(y))]
]]):format(d - 1, d - 1, d - 1), vars)
      local tol = t == "float" and 1e-4 or 1e-9
      close(ref[1], x:var(), tol)
      close(ref[2], x:std({correction = 0}), tol)
      same(ref[3], x:var(d), tol)
      same(ref[4], x:std({1, 3}, {correction = 0, keepdim = true}), tol)
      close(ref[5], x:norm(), tol)
      same(ref[6], x:norm(1, d), tol)
      close(ref[7], x:norm(math.huge), tol)
      same(ref[8], x:norm(3, d), tol)
      close(ref[9], x:norm(0), tol)
    end
    assert.is_true(dev:tensor("float", {1}, {3}):var() ~= dev:tensor("float", {1}, {3}):var())
  end)

  it("var and std along the last dim (one kernel) as NumPy: rows in registers and longer, " ..
     "NaN, corrections, keepdim, views", function()
    if not S.need_numpy(assert, pending) then return end
    -- rows up to a group's registers and past them (the kernel reads those twice)
    local sz = require("luagpu.tensor.rows").sizes[dev.type == "cpu" and "cpu" or "gpu"]
    local sizes = {1, 3, 8, 61, 1000, 4 * sz.ITEMS * math.min(sz.LS, dev.max_work_group_size) + 3}
    for round, L in ipairs(sizes) do
      local t = ({"float", "double", "int"})[round % 3 + 1]
      local rows = math.random(1, 5)
      local vals = S.random_values(t, rows * L)
      if t ~= "int" and round % 2 == 0 then vals[math.random(1, #vals)] = 0 / 0 end
      local x = dev:tensor(t, {rows, L}, vals)
      local c = ({0, 1, 2.5})[round % 3 + 1]
      local keep = round % 2 == 1
      local vars = {x = np_of(x)}
      local ref = S.numpy(([[
y = x.astype(np.float64)
n = y.shape[1] - %s
with np.errstate(all="ignore"):
    v = ((y - y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1, keepdims=%s) / n
    if n <= 0: v = v * np.nan
    out = [v, np.sqrt(v), y.T.var(axis=0, ddof=1)]
]]):format(c, keep and "True" or "False"), vars)
      local tol = t == "float" and 1e-4 or 1e-9
      same(ref[1], x:var(2, {correction = c, keepdim = keep}), tol)
      same(ref[2], x:std(-1, {correction = c, keepdim = keep}), tol)
      -- a transposed view: its rows are read as a copy moved last
      if L > 1 then same(ref[3], x:t():var(1), tol) end
      assert.equal(t == "int" and "double" or t, x:var(2).type)
    end
  end)

  it("topk in the stable order: long rows, ties, NaN, -0.0, smallest, other dims", function()
    if not S.need_numpy(assert, pending) then return end
    local cases = {{"float", {3, 20000}, 16}, {"double", {20011}, 100}, {"int", {2, 5000}, 128},
                   {"char", {4, 300}, 1}, {"long", {9, 40}, 40}, {"float", {30, 6, 5}, 3, 1},
                   {"uchar", {7, 1}, 1}}
    for round, case in ipairs(cases) do
      local t, shape, k, d = case[1], case[2], case[3], case[4] or #case[2]
      local n = S.numel(shape)
      local vals = {}
      for i = 1, n do
        local r = math.random()
        if (t == "float" or t == "double") and r < 0.05 then vals[i] = 0 / 0
        elseif (t == "float" or t == "double") and r < 0.1 then vals[i] = -0.0
        elseif t == "uchar" then vals[i] = math.random(0, 9)
        else vals[i] = math.random(-40, 40) / ((t == "float" or t == "double") and 4 or 1) end
      end
      local x = dev:tensor(t, shape, vals)
      for _, largest in ipairs{true, false} do
        local ref = S.numpy(([=[
import math
a = np.moveaxis(x, %d, -1)
rows = a.reshape(-1, a.shape[-1])
def key(v, i):
    f = float(v)
    nan = math.isnan(f)
    return ((not nan, -f if not nan else 0, i) if %s else (nan, f if not nan else 0, i))
pos = np.array([sorted(range(len(r)), key=lambda i: key(r[i], i))[:%d] for r in rows])
pos = pos.reshape(a.shape[:-1] + (%d,))
vals = np.take_along_axis(a, pos, -1)
out = [np.moveaxis(vals, -1, %d), np.moveaxis(pos + 1, -1, %d)]
]=]):format(d - 1, largest and "True" or "False", k, k, d - 1, d - 1), {x = np_of(x)})
        local v, p = x:topk(k, d, {largest = largest})
        same(ref[1], v)
        same(ref[2], p)
      end
    end
  end)

  it("median, topk, unique, bincount and cumprod as NumPy", function()
    if not S.need_numpy(assert, pending) then return end
    for round = 1, 5 do
      local shape = S.random_shape(2, 1, 6)
      local t = ({"float", "int", "double", "short"})[round % 4 + 1]
      local vals = S.random_values(t, S.numel(shape))
      for i = 1, #vals do if math.random() < 0.3 then vals[i] = vals[1] end end   -- ties
      local x = dev:tensor(t, shape, vals)
      local d = math.random(1, 2)
      local k = math.random(0, shape[d])
      local bins = dev:tensor("int", {7}, {0, 3, 3, 1, 9, 0, 3})
      local vars = {x = np_of(x), b = np_of(bins)}
      local ref = S.numpy(([=[
s = np.sort(x, axis=%d, kind='stable')
n = x.shape[%d]
pos = np.argsort(x, axis=%d, kind='stable')
lo = np.take(pos, [(n - 1) // 2], axis=%d)
dpos = np.argsort(-x.astype(np.float64), axis=%d, kind='stable')
top = np.take(dpos, range(%d), axis=%d)
u, c = np.unique(x, return_counts=True)
flat = np.sort(x, axis=None)
out = [np.take_along_axis(x, lo, %d).squeeze(%d), lo.squeeze(%d) + 1,
       np.take_along_axis(x, top, %d), top + 1, u, c, np.bincount(b, minlength=12),
       np.cumprod(x, axis=%d, dtype=x.dtype), flat[(flat.size - 1) // 2]]
]=]):format(d - 1, d - 1, d - 1, d - 1, d - 1, k, d - 1, d - 1, d - 1, d - 1, d - 1, d - 1),
                          vars)
      local mv, mp = x:median(d)
      same(ref[1], mv)
      same(ref[2], mp)
      local tv, tp = x:topk(k, d)
      same(ref[3], tv)
      same(ref[4], tp)
      local u, c = x:unique()
      same(ref[5], u)
      same(ref[6], c)
      same(ref[7], bins:bincount(12))
      if t ~= "float" then same(ref[8], x:cumprod(d)) end
      assert.equal(ref[9].data[1], x:median())
    end
    -- a NaN makes the median NaN, as NumPy's (along a dim: the row's first
    -- NaN and its position, as PyTorch's); it gave the lower median of a
    -- row sorted with NaN last (2 of {1, nan, 2})
    local nan = 0 / 0
    local m = dev:tensor("float", {3}, {1, nan, 2}):median()
    assert.is_true(m ~= m, tostring(m))
    local M = dev:tensor("double", {4, 4}, {5, nan, 1, 0,  4, 3, 2, 1,  nan, nan, 7, 1,
                                             2, 9, nan, 8})
    local ref = S.numpy("out = np.median(x, axis=1)", {x = np_of(M)})
    local mv, mp = M:median(2)
    local got, at = mv:totable(), mp:totable()
    for i = 1, 4 do
      local w = ref.data[i]
      assert.is_true(got[i] == w or (got[i] ~= got[i] and w ~= w) or i == 2,
                     ("row %d: %s against NumPy's %s"):format(i, got[i], w))
    end
    assert.same({2, 3, 1, 3}, at)                     -- the first NaN; row 2: lower median 2
    assert.equal(2, got[2])
    local small, pos = dev:tensor("float", {5}, {3, 1, 2, 1, 5}):topk(2, {largest = false})
    assert.same({1, 1}, small:totable())
    assert.same({2, 4}, pos:totable())
    local u, c = dev:tensor("float", {5}, {0 / 0, 1, 0 / 0, 1, -2}):unique()
    assert.same({-2, 1}, {u[1], u[2]})
    assert.is_true(u[3] ~= u[3])
    assert.same({1, 2, 2}, c:totable())
    -- long runs across work-groups, NaNs among them, as NumPy: with the
    -- count read before the selection, and after it (the results then the
    -- first elements of blocks made for all of z)
    local C = require "luagpu.algo.compact"
    local late = C.RUNS_READ_LATE
    finally(function() C.RUNS_READ_LATE = late end)
    for _, read_late in ipairs({0, late}) do
      C.RUNS_READ_LATE = read_late
      for _, t in ipairs({"int", "float", "double"}) do
        local vals = {}
        for i = 1, 3001 do vals[i] = math.random(-20, 20) end
        if t ~= "int" then vals[5], vals[3000] = 0 / 0, 0 / 0 end
        local z = dev:tensor(t, {3001}, vals)
        local ref = S.numpy("u, c = np.unique(z, return_counts=True)\nout = [u, c]",
                            {z = np_of(z)})
        local zu, zc = z:unique()
        same(ref[1], zu)
        same(ref[2], zc)
        assert.equal(#ref[2].data, #zc.buffer)
        -- the results are tensors as others: written, read whole, summed,
        -- and released at once (their blocks back to the pool)
        assert.equal(3001, zc:sum())
        zc:set(zc * 2)
        assert.equal(6002, zc:sum())
        local used = dev:memory().used
        zu:release(); zc:release()
        assert.is_true(dev:memory().used < used, "released unique results keep their blocks")
      end
    end
  end)

  it("dot, outer, searchsorted and einsum as NumPy", function()
    if not S.need_numpy(assert, pending) then return end
    local a = dev:tensor("double", {4}, S.random_values("double", 4))
    local b = dev:tensor("double", {4}, S.random_values("double", 4))
    local sorted = dev:tensor("float", {7}, {-3, -1, 0, 0, 2, 5, 0 / 0})
    local v = dev:tensor("float", {2, 4}, {-5, 0, 0.5, 5, 9, 0 / 0, -1, 2})
    local A = dev:tensor("float", {3, 4}, S.random_values("float", 12))
    local B = dev:tensor("float", {4, 5}, S.random_values("float", 20))
    local X = dev:tensor("double", {2, 3, 4}, S.random_values("double", 24))
    local I = dev:tensor("int", {3, 3}, S.random_values("int", 9))
    local ref = S.numpy([[
out = [float(np.dot(a, b)), np.outer(a, b), np.searchsorted(s, v) + 1,
       np.searchsorted(s, v, side='right') + 1, np.einsum('ij,jk->ik', MA, MB),
       np.einsum('bij,jk->bik', X, MB.astype(np.float64)), np.einsum('ii->i', I),
       np.einsum('ij,ij->j', I, I), np.einsum('bij->jb', X), np.einsum('ij,kj', MA, MA)]
]], {a = np_of(a), b = np_of(b), s = np_of(sorted), v = np_of(v), MA = np_of(A), MB = np_of(B),
     X = np_of(X), I = np_of(I)})
    close(ref[1], a:dot(b))
    -- integers multiply in long, as they sum: no product wraps (uchar 200 * 2
    -- was 144, and the dot 344)
    local u1, u2 = dev:tensor("uchar", {2}, {200, 200}), dev:tensor("uchar", {2}, {2, 1})
    assert.equal(600, u1:dot(u2))
    local i1 = dev:tensor("int", {2}, {2^31 - 1, 3})
    assert.equal((2147483647 * 2147483647) + 9, i1:dot(i1))
    same(ref[2], gpu.outer(a, b))
    same(ref[3], gpu.searchsorted(sorted, v))
    same(ref[4], gpu.searchsorted(sorted, v, {right = true}))
    same(ref[5], gpu.einsum("ij,jk->ik", A, B), 1e-5)
    same(ref[6], gpu.einsum("bij,jk->bik", X, B:astype("double")), 1e-9)
    same(ref[7], gpu.einsum("ii->i", I))
    same(ref[8], gpu.einsum("ij,ij->j", I, I))
    same(ref[9], gpu.einsum("b i j -> j b", X))
    same(ref[10], gpu.einsum("ij,kj", A, A), 1e-5)
    -- integers keep their promoted type (NumPy's einsum), their sums wrapping there
    assert.equal("int", gpu.einsum("ij,ij->j", I, I).type)
    local big = dev:tensor("int", {2}, {2147483647, 1})
    assert.equal("int", gpu.einsum("i->", big).type)
    assert.equal(-2147483648, gpu.einsum("i->", big):item())
    local u8 = dev:tensor("uchar", {3, 3}, 200)
    assert.equal(88, gpu.einsum("ii->", u8):item())             -- 600 mod 256
    local s16 = dev:tensor("short", {2, 3}, {1, 2, 3, 4, 5, 6})
    local c8 = dev:tensor("char", {3}, {100, 100, 100})
    local r = gpu.einsum("ij,j->i", s16, c8)
    assert.equal("short", r.type)
    assert.same({600, 1500}, r:totable())
  end)

  it("raises for bad arguments", function()
    local x = dev:tensor("float", {2, 3})
    has_error("luagpu: tensor:var: argument #2: option correction: expected a number >= 0, " ..
              "got -1", x.var, x, 1, {correction = -1})
    has_error("luagpu: tensor:norm: argument #1: expected a number p (or math.huge), got \"fro\"",
              x.norm, x, "fro")
    has_error("luagpu: tensor:topk: argument #1: expected k from 0 to 3 (the size of dim 2), " ..
              "got 4", x.topk, x, 4)
    -- of no elements: NaN for floats (NumPy's and PyTorch's), integers hold none
    local m0 = dev:tensor("float", {0, 3}):median()
    assert.is_true(m0 ~= m0, tostring(m0))
    has_error("luagpu: tensor:median: the median of an empty int tensor is undefined (it " ..
              "holds no NaN)", function() return dev:tensor("int", {0}):median() end)
    has_error("luagpu: tensor:bincount: expected values >= 0, got -1",
              function() return dev:tensor("int", {2}, {1, -1}):bincount() end)
    has_error("luagpu: tensor:bincount: expected a 1-D tensor of integers, got {2, 3} of float",
              x.bincount, x)
    -- a ulong past 2^63 (a negative Lua integer from max) gave an empty result
    has_error("luagpu: tensor:bincount: the values reach 9223372036854775808: too many bins",
              function() return dev:tensor("ulong", {2}, {1, 2 ^ 63}):bincount() end)
    -- (it was algo.histogram's message, naming option bins)
    has_error("luagpu: tensor:bincount: argument #1: 2147483648 bins are too many (at most " ..
              "2147483647)", function() return dev:tensor("int", {2}, {1, 2}):bincount(2 ^ 31) end)
    has_error("luagpu: tensor:dot: expected two 1-D tensors of one length, got shapes {2, 3} " ..
              "and {2, 3}", x.dot, x, x)
    has_error("luagpu: gpu.outer: argument #2: expected a 1-D tensor, got shape {2, 3}",
              gpu.outer, dev:tensor("float", {2}), x)
    -- (a nil operand indexed nil inside stats.lua)
    has_error("luagpu: gpu.outer: argument #1: expected a tensor, got nil", gpu.outer, nil,
              dev:tensor("float", {2}))
    has_error("luagpu: gpu.outer: argument #2: expected a tensor, got nil", gpu.outer,
              dev:tensor("float", {2}))
    has_error("luagpu: gpu.searchsorted: argument #1: expected a 1-D tensor, got shape {2, 3}",
              gpu.searchsorted, x, 1)
    has_error("luagpu: gpu.searchsorted: argument #3: option right: expected a boolean, got 1",
              gpu.searchsorted, dev:tensor("float", {2}), 1, {right = 1})
    has_error("luagpu: gpu.einsum: argument #1: \"ij,jk->ik\" names 2 operands, 1 given",
              gpu.einsum, "ij,jk->ik", x)
    has_error("luagpu: gpu.einsum: argument #2: the subscripts name 1 dims, the tensor has 2 " ..
              "(shape {2, 3})", gpu.einsum, "i->i", x)
    has_error("luagpu: gpu.einsum: argument #1: operand 1: expected letters, got \".\" (no " ..
              "ellipsis '...')", gpu.einsum, "...i->i", x)
    has_error("luagpu: gpu.einsum: argument #1: the output names i twice",
              gpu.einsum, "ij->ii", x)
  end)
  -- found by the differential test (issue 32): values of another type were
  -- converted to sorted's first (short -2 became ushort 65534, 1.5 became 1)
  it("searchsorted compares values of another type in the promoted type", function()
    local dev = gpu.devices()[1]
    local s = dev:tensor("ushort", {5}, {0, 1, 1, 3, 55438})
    local v = dev:tensor("short", {4}, {-2, 1, 2, 32767})
    assert.same({1, 2, 4, 5}, gpu.searchsorted(s, v):totable())
    assert.same({1, 4, 4, 5}, gpu.searchsorted(s, v, {right = true}):totable())
    local i = dev:tensor("int", {3}, {1, 2, 3})
    assert.same({2, 3}, gpu.searchsorted(i, dev:tensor("float", {2}, {1.5, 2.5})):totable())
    assert.same({}, gpu.searchsorted(i, 1.5).shape)
    assert.equal(2, gpu.searchsorted(i, 1.5):item())
    assert.equal(1, gpu.searchsorted(dev:tensor("uchar", {2}, {1, 2}), -1.0):item())
    assert.equal(3, gpu.searchsorted(dev:tensor("float", {2}, {0.5, 1}), dev:tensor("long", {1}, 1),
                                     {right = true}):item())
    has_error("luagpu: gpu.searchsorted: argument #2: -1 does not fit uchar (0 to 255)",
              gpu.searchsorted, dev:tensor("uchar", {2}, {1, 2}), -1)
  end)
  -- found by the differential test (issue 32): these raised naming the
  -- reduction inside (tensor:sum, tensor:mean, tensor:var, tensor:max)
  it("var, std and norm name themselves in their errors", function()
    local dev = gpu.devices()[1]
    local x = dev:tensor("float", {2, 3})
    local z = dev:tensor("float", {})
    has_error("luagpu: tensor:std: argument #1: a 0-d tensor has no dims, got 1", z.std, z, 1)
    has_error("luagpu: tensor:std: argument #1: entry 1: a 0-d tensor has no dims, got -1",
              z.std, z, {-1})
    has_error("luagpu: tensor:var: argument #1: dim 2 appears twice", x.var, x, {2, -1})
    has_error("luagpu: tensor:std: argument #1: dim 1 appears twice", x.std, x, {1, 1})
    has_error("luagpu: tensor:norm: argument #2: dim 2 appears twice", x.norm, x, 2, {2, 2})
    has_error("luagpu: tensor:norm: argument #2: a 0-d tensor has no dims, got 1",
              z.norm, z, 1, 1)
    -- no dims (NumPy's axis=()): each element alone, its variance 0 (NaN with
    -- the sample's correction); {} alone is no dims, not the options
    local w = dev:tensor("float", {2, 3}, {1, -2, 3, 4, 5, 0 / 0})
    local v0, v1 = w:var({}, {correction = 0}):totable(), w:std({}):totable()
    for r = 1, 2 do
      for c = 1, 3 do
        local nan = r == 2 and c == 3
        assert.is_true(nan and v0[r][c] ~= v0[r][c] or v0[r][c] == 0, tostring(v0[r][c]))
        assert.is_true(v1[r][c] ~= v1[r][c])
      end
    end
    assert.same({2, 3}, w:var({}).shape)
    -- a further argument did nothing, silently (keepdim is no option of norm)
    has_error("luagpu: tensor:norm: argument #3: expected no more arguments, got table",
              x.norm, x, 2, {1}, {keepdim = true})
    local v = dev:tensor("float", {3}, 1)
    has_error("luagpu: tensor:dot: argument #2: expected no more arguments, got number",
              v.dot, v, v, 1)
    has_error("luagpu: gpu.outer: argument #3: expected no more arguments, got table",
              gpu.outer, v, v, {type = "double"})
    has_error("luagpu: tensor:norm: the norm of order inf of an empty tensor is undefined " ..
              "(the max of no elements)", function() return dev:tensor("float", {0}):norm(math.huge) end)
    has_error("luagpu: tensor:norm: the norm of order -inf of an empty dim is undefined " ..
              "(the min of no elements)",
              function() return dev:tensor("float", {0, 2}):norm(-math.huge, 1) end)
  end)
  -- x:dot(y) and gpu.outer(a, b) named the product inside (tensor:mul)
  it("dot and outer name themselves for tensors on two devices", function()
    local out, code = support.two_devices([[
      local gpu = require "luagpu"
      local d1, d2 = table.unpack(gpu.devices())
      local a, b = d1:tensor("float", {3}, 1), d2:tensor("float", {3}, 1)
      for _, f in ipairs{function() return a:dot(b) end, function() return gpu.outer(a, b) end} do
        print(select(2, pcall(f)))
      end]])
    assert.equal(0, code, out)
    local dot, outer = out:match("^(.-)\n(.-)\n$")
    assert.matches("^luagpu: tensor:dot: argument #1: the tensors are on different devices %(", dot)
    assert.matches("^luagpu: gpu.outer: argument #2: the tensors are on different devices %(", outer)
  end)
end)
