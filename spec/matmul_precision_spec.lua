-- luagpu.matmul's precision option ("fp32", "tf32", "3xtf32") and
-- matmul.path. PoCL has no tensor cores, so here every precision runs the
-- fp32 kernels: the spec checks that path's results against a product
-- computed in Lua on random data, what matmul.path says, every bad input's
-- message, and the tensor-core kernels themselves (kernels/matmul_mma.cl:
-- the packing, the tiles, transposes, alpha and beta) with each mma
-- emulated from local memory (matmul_mma.emulated), against Lua, so that a
-- slip in them shows here and not only on an NVIDIA GPU (bench/gpu/mma.lua
-- checks their results there).
local gpu = require "luagpu"
local matmul = require "luagpu.matmul"
local mma = require "luagpu.matmul.mma"

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
         'luagpu: matmul: matmul_mma.params["tf32"].stages: expected an integer from 1 to ' ..
         '4096, got 0')
    with({bm = 2 ^ 62, bn = 64, bk = 16, wm = 32, wn = 32, stages = 2},
         'luagpu: matmul: matmul_mma.params["tf32"].bm: expected an integer from 1 to 4096, got')
    with({bm = 64, bn = 64, bk = 0 / 0, wm = 32, wn = 32, stages = 2},
         'luagpu: matmul: matmul_mma.params["tf32"].bk: expected an integer from 1 to 4096, got')
    with({bm = 64, bn = 64, bk = 12, wm = 32, wn = 32, stages = 2},
         'luagpu: matmul: matmul_mma.params["tf32"]: bm 64, bn 64, bk 12, wm 32, wn 32, ' ..
         'stages 2 do not make a tiling (wm | bm, wn | bn, 16 | wm, 16 | wn, 8 | bk, stages 2 to 4)')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 24, stages = 2},
         'luagpu: matmul: matmul_mma.params["tf32"]: bm 64, bn 64, bk 16, wm 32, wn 24')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 5},
         'stages 5 do not make a tiling')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 1},
         'stages 1 do not make a tiling')
    with({bm = 64, bn = 64, bk = 8, wm = 16, wn = 16, stages = 2},
         'luagpu: matmul: matmul_mma.params["tf32"]: the 512 work-items of a group must copy ' ..
         'whole float4s of a step (bm * bk / 4 = 128 and bn * bk / 4 = 128)')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 2, maxrreg = 2 ^ 40},
         'luagpu: matmul: matmul_mma.params["tf32"].maxrreg: expected false or an integer from ' ..
         '16 to 255, got 1099511627776.0')
    with({bm = 64, bn = 64, bk = 16, wm = 32, wn = 32, stages = 2, maxrreg = "96"},
         'matmul_mma.params["tf32"].maxrreg: expected false or an integer from 16 to 255, got "96"')
    assert.equals(saved, mma.params.tf32)
    matmul(A, A, {precision = "tf32"}):get()   -- the defaults again
  end)

  -- Sizes past the device's limits come from its own fields: a tiling of
  -- more work-items than max_work_group_size, and one (of one warp per
  -- group) whose tiles need more than local_mem_size.
  local function refused(p, msg)
    local saved = mma.params.tf32
    mma.params.tf32 = p
    local ok, err = pcall(matmul, dev:buffer("float", {8, 8}), dev:buffer("float", {8, 8}),
                          {precision = "tf32"})
    mma.params.tf32 = saved
    assert.is_false(ok)
    assert.matches(msg, tostring(err), 1, true)
  end

  it("refuses a tiling of more work-items than the device takes", function()
    local side = 16                  -- wm = wn = 16: 32 * (side / 16)^2 work-items
    while 32 * (side // 16) ^ 2 <= dev.max_work_group_size and side < 4096 do side = side * 2 end
    local nt = 32 * (side // 16) * (side // 16)
    if nt <= dev.max_work_group_size then
      return pending("max_work_group_size " .. dev.max_work_group_size .. ": no tiling is larger")
    end
    refused({bm = side, bn = side, bk = 512, wm = 16, wn = 16, stages = 2},
            'luagpu: matmul: matmul_mma.params["tf32"]: ' .. nt .. ' work-items per group, '
            .. dev.name .. ' takes at most ' .. dev.max_work_group_size)
  end)

  it("refuses tiles larger than the device's local memory", function()
    -- bm = bn = 4096, 4 stages: 4 * 4 bytes * (bm + bn) * bk, bk the least multiple of 8
    -- past local_mem_size
    local bk = (dev.local_mem_size // (4 * 4 * 8192) // 8 + 1) * 8
    if bk > 4096 or dev.max_work_group_size < 32 then
      return pending("local_mem_size " .. dev.local_mem_size .. ": no tf32 tiling is larger")
    end
    local bytes = 4 * 4 * 8192 * bk
    assert.is_true(bytes > dev.local_mem_size)
    refused({bm = 4096, bn = 4096, bk = bk, wm = 4096, wn = 4096, stages = 4},
            'luagpu: matmul: matmul_mma.params["tf32"]: the tiles need ' .. bytes .. ' bytes of '
            .. 'local memory, ' .. dev.name .. ' has ' .. dev.local_mem_size)
  end)

  local reference = require("support").matmul_reference

  it("runs the tensor-core kernels (mma emulated) right: shapes, transposes, alpha, beta",
     function()
    local saved = {mma.params.tf32, mma.params["3xtf32"]}
    mma.emulated = true
    -- small tiles, so that the products below span several of them
    mma.params.tf32 = {bm = 32, bn = 32, bk = 16, wm = 16, wn = 16, stages = 2}
    mma.params["3xtf32"] = {bm = 32, bn = 64, bk = 16, wm = 32, wn = 32, stages = 3}
    local ok, err = pcall(function()
      assert.matches("^tf32: the tensor%-core kernels, each mma emulated", matmul.path(dev, "tf32"))
      -- every transpose, alpha and beta; sizes 2 and across tiles, K below a step
      local cases = {{2, 2, 1, false, false, 1, 0}, {40, 9, 70, true, false, 1.5, 0.5},
                     {7, 70, 33, false, true, -2, 1}, {65, 33, 5, true, true, 1, 0}}
      for _, cs in ipairs(cases) do
        local m, n, k, ta, tb, alpha, beta = table.unpack(cs)
        local a, b, c0 = random_table(m * k), random_table(k * n), random_table(m * n)
        -- A at an offset of 3 elements: a view of a larger buffer
        local whole = dev:buffer("float", m * k + 3, {host = {0, 0, 0, table.unpack(a)}})
        local A = whole:sub(4, m * k + 3)
        local B = dev:buffer("float", tb and {n, k} or {k, n}, {host = b})
        local want, scale = reference(a, b, c0, m, n, k, ta, tb, alpha, beta)
        for _, p in ipairs{"tf32", "3xtf32"} do
          local C = dev:buffer("float", {m, n}, {host = c0})
          matmul(A, B, C, {precision = p, trans_a = ta, trans_b = tb, alpha = alpha,
                           beta = beta, m = m, n = n, k = k})
          local got, worst = C:get(), 0
          for e = 1, m * n do
            worst = math.max(worst, math.abs(got[e] - want[e]) / math.max(scale[e], 1e-30))
          end
          -- TF32 keeps 10 bits of each operand (2^-11 relative); 3xTF32 about float's 2^-24
          local bound = p == "tf32" and 2e-3 or 2e-6
          assert.is_true(worst < bound, ("%s %dx%dx%d ta %s tb %s: error %g"):format(p, m, n, k,
                         tostring(ta), tostring(tb), worst))
        end
      end
    end)
    mma.emulated = false
    mma.params.tf32, mma.params["3xtf32"] = saved[1], saved[2]
    assert(ok, err)
  end)

  it("builds the tensor-core kernels' source under the other defines (PTX left out)", function()
    local src = gpu.kernel_source("matmul_mma.cl")
    -- the other defines (the test above runs both precisions, each transpose
    -- and BETA): TRUNC, 4 stages, one warp per group
    for _, defs in ipairs{{TRUNC = 1, STAGES = 4, THREE = 1}, {TRUNC = 1, STAGES = 2}} do
      defs.LG_NO_PTX, defs.MAIN, defs.BM, defs.BN, defs.BK, defs.WM, defs.WN = 1, 1, 16, 16, 8,
                                                                                16, 16
      local prog = dev:build(src, {defines = defs})
      for _, name in ipairs{"pack_a", "pack_b", "matmul_mma"} do
        assert.equals("Kernel", gpu.type(prog[name]))
      end
    end
    -- and the probe, and the peak kernel
    local prog = dev:build(gpu.kernel_source("mma_probe.cl"), {defines = {LG_NO_PTX = 1, PEAK = 4}})
    assert.equals("Kernel", gpu.type(prog.mma_probe))
    assert.equals("Kernel", gpu.type(prog.mma_peak))
  end)
end)
