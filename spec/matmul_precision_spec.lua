-- luagpu.matmul's precision option ("fp32", "tf32", "3xtf32") and
-- matmul.path. PoCL has no tensor cores, so here every precision runs the
-- fp32 kernels: the spec checks that path's results against a product
-- computed in Lua on random data, what matmul.path says, every bad input's
-- message, and that kernels/matmul_mma.cl builds (without its PTX) under
-- every combination of its defines, so that a slip in the tensor-core
-- kernel shows here and not only on an NVIDIA GPU (bench/gpu/mma.lua checks
-- its results there).
local gpu = require "luagpu"
local matmul = require "luagpu.matmul"
local mma = require "luagpu.matmul_mma"

local dev = gpu.device()

local function random_table(n)
  local t = {}
  for i = 1, n do t[i] = math.random() * 2 - 1 end
  return t
end

local expect_error = require("support").has_error

-- The largest |C - R| over sum |a||b| of each element (R in Lua, doubles).
local function worst_error(got, a, b, m, n, k)
  local worst = 0
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local s, sa = 0, 0
      for x = 0, k - 1 do
        local p = a[i * k + x + 1] * b[x * n + j + 1]
        s, sa = s + p, sa + math.abs(p)
      end
      worst = math.max(worst, math.abs(got[i * n + j + 1] - s) / math.max(sa, 1e-30))
    end
  end
  return worst
end

describe("matmul precision", function()
  it("runs every precision (the fp32 kernels here) against a product in Lua", function()
    for _, s in ipairs{{1, 1, 1}, {37, 29, 53}, {64, 64, 64}, {100, 3, 250}} do
      local m, n, k = s[1], s[2], s[3]
      local a, b = random_table(m * k), random_table(k * n)
      local A = dev:buffer("float", {m, k}, {host = a})
      local B = dev:buffer("float", {k, n}, {host = b})
      local results = {}
      for _, p in ipairs{"fp32", "tf32", "3xtf32"} do
        local C, ev = matmul(A, B, {precision = p})
        assert.equals("Event", gpu.type(ev))
        results[p] = C:get()
        local err = worst_error(results[p], a, b, m, n, k)
        assert.is_true(err < 1e-5, ("%s %dx%dx%d: error %g"):format(p, m, n, k, err))
      end
      -- no tensor cores here: the three ran the same kernels, bit for bit
      for i = 1, m * n do
        assert.equals(results.fp32[i], results.tf32[i])
        assert.equals(results.fp32[i], results["3xtf32"][i])
      end
    end
  end)

  it("writes a given C and honours wait lists with a precision", function()
    local a, b = random_table(12 * 7), random_table(7 * 5)
    local A = dev:buffer("float", {12, 7}, {host = a})
    local B = dev:buffer("float", {7, 5}, {host = b})
    local C = dev:buffer("float", {12, 5})
    local gate = gpu.user_event(dev)
    local out, ev = matmul(A, B, C, {precision = "3xtf32", wait = {gate}})
    assert.equals(C, out)
    gate:complete()
    ev:wait()
    assert.is_true(worst_error(C:get(), a, b, 12, 5, 7) < 1e-5)
  end)

  it("says which kernels each precision runs", function()
    assert.equals("fp32: matmul's float kernels", matmul.path(dev))
    assert.equals("fp32: matmul's float kernels", matmul.path(dev, "fp32"))
    assert.equals("fp64: matmul's double kernels", matmul.path(dev, "fp32", "double"))
    for _, p in ipairs{"tf32", "3xtf32"} do
      assert.equals("fp32: matmul's float kernels (no tensor-core path: not an NVIDIA GPU)",
                    matmul.path(dev, p))
    end
  end)

  it("raises on bad precisions, with the value", function()
    local A = dev:buffer("float", {4, 4})
    expect_error('luagpu: matmul: argument #3: option precision: expected "fp32", "tf32" or ' ..
                 '"3xtf32", got "fp16"', matmul, A, A, {precision = "fp16"})
    expect_error('luagpu: matmul: argument #4: option precision: expected "fp32", "tf32" or ' ..
                 '"3xtf32", got 32', matmul, A, A, dev:buffer("float", {4, 4}), {precision = 32})
    expect_error('luagpu: matmul.path: argument #2: expected "fp32", "tf32" or "3xtf32", got "tf16"',
                 matmul.path, dev, "tf16")
    expect_error('luagpu: matmul.path: argument #3: expected "float" or "double", got "int"',
                 matmul.path, dev, "fp32", "int")
    expect_error("luagpu: matmul.path: argument #1: expected a luagpu.Device, got nil", matmul.path)
    expect_error("luagpu: matmul.path: argument #2: precision tf32 is for float operands, not double",
                 matmul.path, dev, "tf32", "double")
    if dev.fp64 then
      local D = dev:buffer("double", {4, 4})
      expect_error("luagpu: matmul: option precision: 3xtf32 is for float operands, got double ones",
                   matmul, D, D, {precision = "3xtf32"})
      matmul(D, D, {precision = "fp32"}):get()   -- fp32 is every type's default: accepted
    end
  end)

  it("checks the tile parameters of each precision, with the numbers", function()
    local A = dev:buffer("float", {8, 8})
    local saved = mma.params.tf32
    local function with(p, msg)
      mma.params.tf32 = p
      local ok, err = pcall(matmul, A, A, {precision = "tf32"})
      mma.params.tf32 = saved
      assert.is_false(ok)
      assert.matches(msg, tostring(err), 1, true)
    end
    with(nil, 'luagpu: matmul: matmul_mma.params["tf32"]: expected a table, got nil')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 0},
         'luagpu: matmul: matmul_mma.params["tf32"].stages: expected an integer > 0, got 0')
    with({bm = 64, bn = 64, bk = 12, wm = 32, wn = 32, stages = 2},
         'luagpu: matmul: matmul_mma.params["tf32"]: bm 64, bn 64, bk 12, wm 32, wn 32, ' ..
         'stages 2 do not make a tiling')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 16, stages = 2},
         'luagpu: matmul: matmul_mma.params["tf32"]: bm 64, bn 64, bk 16, wm 32, wn 16')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 3},
         'luagpu: matmul: matmul_mma.params["tf32"]: bm 64, bn 64, bk 16, wm 32, wn 32, ' ..
         'stages 3 do not make a tiling (wm | bm, wn | bn, 16 | wm, 32 | wn, 16 | bk, stages ' ..
         '1 or 2 (2 to 4 with async)')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 5, async = true},
         'luagpu: matmul: matmul_mma.params["tf32"]: bm 64, bn 64, bk 16, wm 32, wn 32, ' ..
         'stages 5 do not make a tiling')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 1, async = true},
         'stages 1 do not make a tiling')
    with({bm = 512, bn = 512, bk = 512, wm = 16, wn = 32, stages = 1},
         'luagpu: matmul: matmul_mma.params["tf32"]: 16384 work-items per group, ' .. dev.name ..
         ' takes at most ' .. dev.max_work_group_size)
    assert.equals(saved, mma.params.tf32)
    matmul(A, A, {precision = "tf32"}):get()   -- the defaults again
  end)

  it("builds the tensor-core kernel's source under every define (its PTX left out)", function()
    local src = gpu.kernel_source("matmul_mma.cl")
    local built = 0
    for mask = 0, 63 do
      local defs = {LG_NO_PTX = 1, BM = 64, BN = 64, BK = 16, WM = 32, WN = 32,
                    STAGES = (mask & 32) ~= 0 and 1 or 2}
      if mask & 1 ~= 0 then defs.TRANS_A = 1 end
      if mask & 2 ~= 0 then defs.TRANS_B = 1 end
      if mask & 4 ~= 0 then defs.THREE = 1 end
      if mask & 8 ~= 0 then defs.BETA = 1 end
      if mask & 16 ~= 0 then defs.VEC_A, defs.VEC_B, defs.VEC_C = 1, 1, 1 end
      -- every other combination, to keep PoCL's compile time down
      if mask % 3 == 0 or mask == 63 then
        local prog = dev:build(src, {defines = defs})
        assert.equals("Kernel", gpu.type(prog.matmul_mma))
        built = built + 1
      end
    end
    assert.is_true(built >= 20)
    -- the cp.async path, 2 to 4 buffers
    for stages = 2, 4 do
      for _, three in ipairs{false, true} do
        local defs = {LG_NO_PTX = 1, BM = 64, BN = 64, BK = 16, WM = 32, WN = 32,
                      STAGES = stages, ASYNC = 1, ASYNC_WAIT = stages - 2, VEC_A = 1, VEC_B = 1,
                      THREE = three and 1 or nil, TRANS_B = stages == 3 and 1 or nil}
        assert.equals("Kernel", gpu.type(dev:build(src, {defines = defs}).matmul_mma))
      end
    end
    -- and the probe, and the peak kernel
    local prog = dev:build(src, {defines = {LG_NO_PTX = 1, PEAK = 4}})
    assert.equals("Kernel", gpu.type(prog.mma_probe))
    assert.equals("Kernel", gpu.type(prog.mma_peak))
  end)
end)
