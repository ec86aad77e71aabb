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
