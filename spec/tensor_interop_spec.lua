-- luagpu.tensor with the rest of luagpu: kernel arguments, reduce, matmul
-- (x:mm), .npy files, luagpu.algo (cumsum, sort, argsort), and the two
-- examples written with tensors.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"

local has_error = support.has_error
local build = os.getenv("LUAGPU_BUILD") or "build"

describe("tensor interop", function()
  local dev = gpu.device()
  math.randomseed(5)

  it("contiguous tensors are kernel arguments; others raise naming :contiguous()", function()
    local k = dev:build("kernel void twice(global float* a) { a[get_global_id(0)] *= 2; }").twice
    local x = dev:tensor("float", {2, 3}, {1, 2, 3, 4, 5, 6})
    k(x):run{6}
    assert.same({{2, 4, 6}, {8, 10, 12}}, x:totable())
    -- a view at an offset passes a Buffer view of its elements
    local row = x:select(1, 2)
    local b = getmetatable(row).__tobuffer(row)
    assert.equal(3, #b)
    assert.equal(3, b.offset)
    has_error("the tensor is not contiguous: call :contiguous()", function() k(x:t()) end)
    assert.equal(42, gpu.reduce.sum(x))
    assert.equal(30, gpu.reduce.sum(row))
  end)

  it("mm multiplies through luagpu.matmul, transposed views copied once", function()
    local a = dev:tensor("float", {3, 4}, S.random_values("float", 12))
    local b = dev:tensor("float", {5, 4}, S.random_values("float", 20))
    local ra, rb = S.of(a), S.of(b)
    local c = a:mm(b:t())
    S.check(assert, c, S.build({3, 5}, function(idx)
      local s = 0
      for k = 1, 4 do s = s + S.at(ra, {idx[1], k}) * S.at(rb, {idx[2], k}) end
      return s
    end), 1e-5)
    assert.same({{0, 0}}, dev:tensor("float", {1, 0}):mm(dev:tensor("float", {0, 2})):totable())
    has_error("luagpu: tensor:mm: shapes {3, 4} and {5, 4} do not multiply (dim 2 of the first: 4 vs dim 1 of the second: 5)",
              a.mm, a, b)
    has_error("luagpu: tensor:mm: expected two tensors of float (or two of double), got float and int",
              a.mm, a, dev:tensor("int", {4, 1}))
    has_error("luagpu: tensor:mm: argument #1: expected a tensor, got number", a.mm, a, 1)
  end)

  it("mm of two strided views copies each and holds both copies until the product runs",
     function()
    -- (x's copy, dropped before y's was made, gave its block to y's copy
    -- at the pool's next minor collection: x:mm(y) was y's copy times
    -- itself, 34 products in 100)
    local X = dev:tensor("float", {64, 32}, S.random_values("float", 64 * 32))
    local Y = dev:tensor("float", {64, 32}, S.random_values("float", 64 * 32))
    local x, y = X:slice(1, 1, -1, 2), Y:slice(1, 2, -1, 2)        -- {32, 32}, row step 2
    local rx, ry = S.of(x:contiguous()), S.of(y:contiguous())
    local want = S.build({32, 32}, function(idx)
      local s = 0
      for k = 1, 32 do s = s + S.at(rx, {idx[1], k}) * S.at(ry, {k, idx[2]}) end
      return s
    end)
    local keep = {}
    for it = 1, 40 do
      keep[#keep + 1] = dev:full("float", {32, 32}, it)      -- the copies' class, some kept
      if #keep > 3 then table.remove(keep, 1) end
      S.check(assert, x:mm(y), want, 1e-5)
    end
    -- batched: 3-D views stepping along their middle dim
    local A = dev:tensor("float", {3, 16, 8}, S.random_values("float", 3 * 16 * 8))
    local B = dev:tensor("float", {3, 16, 8}, S.random_values("float", 3 * 16 * 8))
    local a, b = A:slice(2, 1, -1, 2), B:slice(2, 1, 16, 2)            -- {3, 8, 8} each
    local ra, rb = S.of(a:contiguous()), S.of(b:contiguous())
    local wantb = S.build({3, 8, 8}, function(idx)
      local s = 0
      for k = 1, 8 do s = s + S.at(ra, {idx[1], idx[2], k}) * S.at(rb, {idx[1], k, idx[3]}) end
      return s
    end)
    for it = 1, 40 do
      keep[#keep + 1] = dev:full("float", {3, 8, 8}, it)
      if #keep > 6 then table.remove(keep, 1) end
      S.check(assert, a:bmm(b), wantb, 1e-5)
    end
  end)

  it("gpu.matmul takes 2-D and 3-D tensors with their shapes (their buffers are flat)", function()
    local a = dev:tensor("float", {3, 4}, S.random_values("float", 12))
    local b = dev:tensor("float", {4, 5}, S.random_values("float", 20))
    local c = gpu.matmul(a, b)
    assert.same({3, 5}, c.shape)
    local want = a:mm(b)
    assert.is_true((dev:tensor("float", {3, 5}, c) - want):abs():max() < 1e-5)
    local into = dev:tensor("float", {3, 5})
    gpu.matmul(a, b, into)
    assert.is_true((into - want):abs():max() < 1e-5)
    local x = dev:tensor("float", {2, 3, 4}, S.random_values("float", 24))
    local y = dev:tensor("float", {2, 4, 2}, S.random_values("float", 16))
    assert.same({2, 3, 2}, gpu.matmul(x, y).shape)
    has_error("luagpu: matmul: argument #2: B has 5 rows, but A has 4 columns",
              gpu.matmul, a, dev:tensor("float", {5, 4}))
    has_error("luagpu: matmul: argument #1: the tensor is not contiguous: call :contiguous()",
              gpu.matmul, a:t(), b)
  end)

  it("saves and loads .npy files", function()
    local path = os.tmpname()
    local x = dev:arange("int", 6):reshape{2, 3}:t()
    x:save(path)
    local y = gpu.load(path, dev)
    assert.equal("int", y.type)
    assert.same(x:totable(), y:totable())
    assert.equal("Array", gpu.type(gpu.load(path)))
    os.remove(path)
    has_error("luagpu: gpu.load: /nonexistent/x.npy: No such file or directory", gpu.load,
              "/nonexistent/x.npy", dev)
    has_error("luagpu: tensor:save: argument #1: expected a path, got nil", x.save, x)
  end)

  local algo_ok, algo = pcall(require, "luagpu.algo")
  local has = function(name) return algo_ok and type(algo[name]) == "function" end

  local it_scan = has("scan") and it or pending
  it_scan("cumsum runs luagpu.algo's scan along any dim", function()
    local x = dev:tensor("int", {2, 3}, {1, 2, 3, 4, 5, 6})
    assert.same({{1, 3, 6}, {4, 9, 15}}, x:cumsum():totable())
    assert.same({{1, 2, 3}, {5, 7, 9}}, x:cumsum(1):totable())
  end)

  local it_sort = has("sort") and has("argsort") and it or pending
  it_sort("sort and argsort run luagpu.algo's along any dim", function()
    local x = dev:tensor("float", {2, 3}, {3, 1, 2, 0, 5, 4})
    assert.same({{1, 2, 3}, {0, 4, 5}}, x:sort():totable())
    assert.same({{3, 2, 1}, {5, 4, 0}}, x:sort({descending = true}):totable())
    assert.same({{2, 3, 1}, {1, 3, 2}}, x:argsort():totable())
    assert.same({{0, 1, 2}, {3, 5, 4}}, x:sort(1):totable())
  end)

  if not has("sort") then
    it("sort says that it is not available without luagpu.algo's sort", function()
      local x = dev:tensor("float", {3})
      has_error("luagpu: tensor:sort: not available: it needs luagpu.algo's sort", x.sort, x)
    end)
  end

  it("examples/mandelbrot.lua and examples/monte_carlo.lua run and check themselves", function()
    for _, script in ipairs{"examples/mandelbrot.lua", "examples/monte_carlo.lua"} do
      local p = io.popen(("%s/luagpu %s 2>&1"):format(build, script))
      local out = p:read("a")
      local ok, _, code = p:close()
      assert.is_true(ok and code == 0, out)
      assert.matches("ok", out, 1, true)
    end
  end)
end)

describe("tensors sharing memory, against NumPy", function()
  local dev = gpu.device()
  math.randomseed(271)
  local algo_ok, algo = pcall(require, "luagpu.algo")
  local has_sort = algo_ok and type(algo.sort) == "function" and type(algo.scan) == "function"

  local function random_ints(n, lo, hi)
    local v = {}
    for i = 1, n do v[i] = math.random(lo, hi) end
    return v
  end

  -- tensor x as a NumPy input: its type, shape and values
  local function np_of(x)
    return {type = x.type, shape = x.shape, data = x:get():totable()}
  end

  local it_sort = has_sort and it or pending
  it_sort("sort, argsort and cumsum along any dim of any view leave their input as it was (issue 27 item 5)", function()
    if not S.need_numpy(assert, pending) then return end
    -- the cases of the report: moving the dim last gives a contiguous layout
    local b = dev:tensor("int", {2, 3}, {3, 1, 2, 9, 7, 8})
    assert.same({{3, 1, 2}, {9, 7, 8}}, b:t():sort(1):t():totable() and b:totable())
    local c = dev:tensor("int", {3, 1}, {3, 1, 2})
    assert.same({{1}, {2}, {3}}, c:sort(1):totable())
    assert.same({{3}, {1}, {2}}, c:totable())
    local perms = {{1, 2, 3}, {2, 1, 3}, {3, 2, 1}, {2, 3, 1}, {1, 3, 2}, {3, 1, 2}}
    for case = 1, 12 do
      local t = case % 2 == 0 and "float" or "int"
      local shape = {math.random(1, 4), math.random(1, 4), math.random(1, 5)}
      if case == 1 then shape = {1, 3, 1} end
      local n = S.numel(shape)
      local vals = random_ints(n, -6, 6)          -- ties: argsort must be stable
      local x = dev:tensor(t, shape, vals)
      local v = x:permute(perms[(case - 1) % #perms + 1])
      local lines = {"out = []"}
      for d = 1, 3 do
        lines[#lines + 1] = ("out += [np.sort(a, axis=%d), np.argsort(a, axis=%d, kind='stable') + 1, " ..
                             "np.cumsum(a, axis=%d, dtype=a.dtype)]"):format(d - 1, d - 1, d - 1)
      end
      local ref = S.numpy(table.concat(lines, "\n"), {a = np_of(v)})
      for d = 1, 3 do
        S.check(assert, v:sort(d), ref[3 * d - 2])
        assert.same(vals, x:get():totable(), "sort changed its input")
        S.check(assert, v:argsort(d), ref[3 * d - 1])
        S.check(assert, v:cumsum(d), ref[3 * d])
        assert.same(vals, x:get():totable(), "argsort or cumsum changed its input")
      end
    end
  end)

  it("a block whose Buffer the script holds never goes back to the pool (issue 27 item 7)", function()
    local k = dev:build("kernel void seven(global float* a) { a[get_global_id(0)] = 7; }").seven
    for _, how in ipairs{"buffer", "view", "call"} do
      local x = dev:tensor("float", {1000}, 1)
      if how == "view" then x = dev:tensor("float", {1500}, 1):slice(1, 1, 1000) end
      local b, call
      if how == "call" then call = k(x) else b = x.buffer end
      x = nil
      collectgarbage()
      collectgarbage()
      local ys = {}
      for i = 1, 4 do ys[i] = dev:tensor("float", {1000}, 2) end
      if call then call:run{1000} else b:fill(7) end
      dev:finish()
      for i = 1, 4 do assert.equal(2000, ys[i]:sum(), how) end
    end
    -- the block is released with its Buffer; the pool's count leaves it
    collectgarbage()
    local m0 = dev:memory()
    local x = dev:tensor("float", {1 << 14})
    local b = x.buffer
    assert.equal(m0.used, dev:memory().used)
    b, x = nil, nil
    collectgarbage()
    assert.equal(m0.used, dev:memory().used)
    assert.equal(m0.pooled, dev:memory().pooled)
  end)

  it("writing a tensor that shares its buffer with the one read copies through a temporary (issue 27 item 8)", function()
    if not S.need_numpy(assert, pending) then return end
    for _, n in ipairs{5, 64} do
      local vals = random_ints(n * n, -1000, 1000)
      -- a tensor over a tensor's own Buffer
      local x = dev:tensor("float", {n, n}, vals)
      local y = dev:tensor("float", {n, n}, x.buffer)
      local ref = S.numpy("out = [a.T, a.T * 2 + 1]", {a = np_of(x)})
      x:set(y:t())
      S.check(assert, x, ref[1])
      x:set(dev:tensor("float", {n, n}, vals))
      x:set(y:t() * 2 + 1)                        -- a lazy expression reading it
      S.check(assert, x, ref[2])
      -- two tensors over one user Buffer, one through a view of it
      local buf = dev:buffer("int", n * n)
      buf:write(gpu.array("int", vals))
      local u = dev:tensor("int", {n, n}, buf)
      local w = dev:tensor("int", {n, n}, buf:sub(1, n * n))
      u:set(w:t())
      S.check(assert, u, ref[1])
      -- overlapping ranges: a[1:n+1] = a[0:n], through Buffer views
      local z = dev:tensor("int", {2 * n}, random_ints(2 * n, -50, 50))
      local zr = S.numpy(("b = a.copy(); b[1:%d] = a[0:%d]; out = b"):format(n + 1, n),
                         {a = np_of(z)})
      local src = dev:tensor("int", {n}, z.buffer:sub(1, n))
      z:slice(1, 2, n + 1):set(src)
      S.check(assert, z, zr)
    end
    -- a cube permuted into itself
    local c = dev:arange("double", 27):reshape{3, 3, 3}:eval()
    local ref = S.numpy("out = np.transpose(a, (2, 1, 0))", {a = np_of(c)})
    c:set(dev:tensor("double", {3, 3, 3}, c.buffer):permute{3, 2, 1})
    S.check(assert, c, ref)
  end)

  it("0-d tensors save as shape () and load back 0-d; x[i] raises (issue 27 item 43)", function()
    if not S.need_numpy(assert, pending) then return end
    local tmp = os.tmpname()
    local path = tmp .. ".npy"                    -- np.save adds .npy to other names
    for _, shape in ipairs{{}, {1}, {2, 0, 3}, {3, 1}} do
      local n = S.numel(shape)
      local x = dev:tensor("double", shape, random_ints(n, -9, 9))
      x:save(path)
      local ref = S.numpy(("out = np.load(%q)"):format(path))
      S.check(assert, x, ref)
      local y = gpu.load(path, dev)
      assert.same(shape, y.shape)
      assert.same(x:totable(), y:totable())
    end
    S.numpy(("np.save(%q, np.float32(2.5)); out = 0"):format(path))
    local y = gpu.load(path, dev)
    assert.equal(0, y.ndim)
    assert.equal(2.5, y:item())
    local a, fshape = gpu.load(path)
    assert.same({1}, a.shape)
    assert.same({}, fshape)
    has_error("luagpu: array:save: argument #2: the shape does not hold the array's 2 elements",
              a.save, gpu.array("float", 2), path, {3})
    has_error("luagpu: array:save: argument #2: size 2: expected an integer >= 0",
              a.save, gpu.array("float", 2), path, {1, -2})
    has_error("luagpu: array:save: argument #2: expected a shape (a table of sizes), got number",
              a.save, gpu.array("float", 2), path, 2)
    has_error("luagpu: array:save: argument #2: 9 dimensions are too many (at most 8)",
              a.save, gpu.array("float", 1), path, {1, 1, 1, 1, 1, 1, 1, 1, 1})
    os.remove(path)
    os.remove(tmp)
    -- numbers index (spec/tensor_index_spec.lua); methods and fields still work
    local x = dev:tensor("float", {2, 2})
    assert.same({2}, x[1].shape)
    assert.is_nil(x[3])                -- #x + 1, as a host array's
    has_error("luagpu: tensor[i]: position 4 is out of range (1 to 2, or -2 to -1)",
              function() return x[4] end)
    has_error("luagpu: tensor: no field or method 'lenght'", function() return x.lenght end)
    assert.same({2, 2}, x.shape)
    assert.equal(0, x:sum())
  end)
end)
