-- luagpu.matmul.wgmma: "tf32" and "3xtf32" on Hopper's wgmma. PoCL has no
-- tensor cores, so the spec checks the kernels (kernels/matmul_wgmma.cl:
-- the packing into core matrices, the stages, the warpgroups' tiles, the
-- 3xTF32 sums, transposes, alpha and beta) with each wgmma emulated from
-- local memory (matmul_wgmma.emulated), against Lua on random data; the
-- PTX rewrite on PTX text; the probe's answer here; and every parameter's
-- message. bench/gpu/mma.lua checks the real instructions on an H200.
local gpu = require "luagpu"
local matmul = require "luagpu.matmul"
local mma = require "luagpu.matmul.mma"
local wgmma = require "luagpu.matmul.wgmma"

local dev = gpu.device()

local function random_table(n)
  local t = {}
  for i = 1, n do t[i] = math.random() * 2 - 1 end
  return t
end

local reference = require("support").matmul_reference

-- Runs f with wgmma.emulated on and params p (restored after, also on error).
local function emulated(p, f)
  local saved = {wgmma.params.tf32, wgmma.params["3xtf32"]}
  wgmma.emulated = true
  if p then wgmma.params.tf32, wgmma.params["3xtf32"] = p.tf32, p["3xtf32"] end
  local ok, err = pcall(f)
  wgmma.emulated = false
  wgmma.params.tf32, wgmma.params["3xtf32"] = saved[1], saved[2]
  assert(ok, err)
end

-- Multiplies the case {m, n, k, ta, tb, alpha, beta [, offset]} at each
-- precision and checks it against Lua: TF32 keeps 10 bits of each operand
-- (2^-11 relative), 3xTF32 about float's 2^-24. A is a view at offset
-- elements (3 unless given: the pack reads A's rows element by element; 0
-- or 4 with K a multiple of 4, 16 bytes at once).
local function check_case(cs)
  local m, n, k, ta, tb, alpha, beta, off = table.unpack(cs)
  off = off or 3
  local a, b, c0 = random_table(m * k), random_table(k * n), random_table(m * n)
  local host = {}
  for i = 1, off do host[i] = 0 end
  for i = 1, m * k do host[off + i] = a[i] end
  local whole = dev:buffer("float", m * k + off, {host = host})
  local A = whole:sub(off + 1, m * k + off)
  local B = dev:buffer("float", tb and {n, k} or {k, n}, {host = b})
  local want, scale = reference(a, b, c0, m, n, k, ta, tb, alpha, beta)
  for _, p in ipairs{"tf32", "3xtf32"} do
    local C = dev:buffer("float", {m, n}, {host = c0})
    local out, ev, events = matmul(A, B, C, {precision = p, trans_a = ta, trans_b = tb,
                                             alpha = alpha, beta = beta, m = m, n = n, k = k})
    assert.equals(C, out)
    assert.equals(3, #events)          -- pack A, pack B, the product
    assert.equals(events[3], ev)
    local got, worst = C:get(), 0
    for e = 1, m * n do
      worst = math.max(worst, math.abs(got[e] - want[e]) / math.max(scale[e], 1e-30))
    end
    local bound = p == "tf32" and 2e-3 or 2e-6
    assert.is_true(worst < bound, ("%s %dx%dx%d ta %s tb %s: error %g"):format(p, m, n, k,
                   tostring(ta), tostring(tb), worst))
  end
end

describe("matmul on wgmma", function()
  it("runs its kernels (each wgmma emulated) right: shapes, transposes, alpha, beta", function()
    -- small tiles, so that the products span several; tf32 with a step of
    -- wgmma left in flight, 3xtf32 with two warpgroups and two k-chunks a step;
    -- tiles taken in bands of 2 and 3 row blocks (the last band shorter)
    emulated({tf32 = {bn = 16, bk = 8, wgs = 1, stages = 3, wait = 1, group = 2},
              ["3xtf32"] = {bn = 24, bk = 16, wgs = 2, stages = 2, wait = 0, group = 3}},
             function()
      assert.equals("tf32: the wgmma kernels, each wgmma emulated (matmul_wgmma.emulated)",
                    matmul.path(dev, "tf32"))
      assert.equals("3xtf32: the wgmma kernels, each wgmma emulated (matmul_wgmma.emulated)",
                    matmul.path(dev, "3xtf32"))
      -- sizes 2 and across tiles, K below a step and not a multiple of 4;
      -- A's rows read 16 bytes at once (offsets 0 and 4, K a multiple of 4)
      for _, cs in ipairs{{2, 2, 1, false, false, 1, 0}, {70, 9, 45, true, false, 1.5, 0.5},
                          {7, 50, 33, false, true, -2, 1}, {130, 33, 5, true, true, 1, 0},
                          {70, 9, 44, false, false, 1, 0, 0}, {33, 20, 48, false, true, 1, 0.5, 4},
                          {9, 30, 13, false, false, 1, 0, 0}} do
        check_case(cs)
      end
    end)
  end)

  it("runs 3xtf32 with two sets of D (wait 1), and tiles that ask for bulk copies", function()
    -- wait 1: step s's products go into one set while step s - 1's are
    -- added (odd and even step counts); bulk is a GPU path: emulated, the
    -- kernel copies as without it (PoCL's work-items cannot wait on one another)
    emulated({tf32 = {bn = 16, bk = 8, wgs = 2, stages = 3, wait = 1, bulk = true},
              ["3xtf32"] = {bn = 16, bk = 8, wgs = 1, stages = 3, wait = 1, bulk = true}},
             function()
      for _, cs in ipairs{{70, 9, 45, false, false, 1, 0}, {65, 17, 16, true, true, 1, 0.5},
                          {5, 30, 8, false, true, -1, 0}} do
        check_case(cs)
      end
    end)
  end)

  it("runs the default tiles", function()
    emulated(nil, function()
      check_case({70, 200, 40, false, false, 1, 0})
    end)
  end)

  it("leaves matrix-vector products to the fp32 GEMV kernels", function()
    emulated(nil, function()
      local A, x = dev:buffer("float", {9, 7}), dev:buffer("float", {7, 1})
      local _, _, events = matmul(A, x, nil, {precision = "3xtf32"})
      assert.is_true(#events < 3)
    end)
  end)

  it("checks its tile parameters, with the numbers", function()
    local A = dev:buffer("float", {8, 8})
    local function with(p, msg)
      emulated({tf32 = p, ["3xtf32"] = p}, function()
        local ok, err = pcall(matmul, A, A, {precision = "tf32"})
        assert.is_false(ok)
        assert.matches(msg, tostring(err), 1, true)
      end)
    end
    local prefix = 'luagpu: matmul: matmul_wgmma.params["tf32"]'
    with("big", prefix .. ': expected a table, got string')
    with({bn = 0, bk = 8, wgs = 1, stages = 2},
         prefix .. '.bn: expected an integer from 1 to 256, got 0')
    with({bn = 264, bk = 8, wgs = 1, stages = 2},
         prefix .. '.bn: expected an integer from 1 to 256, got 264')
    with({bn = 16, bk = 0 / 0, wgs = 1, stages = 2},
         prefix .. '.bk: expected an integer from 1 to 256, got')
    with({bn = 16, bk = 8, wgs = 5, stages = 2},
         prefix .. '.wgs: expected an integer from 1 to 4, got 5')
    with({bn = 16, bk = 8, wgs = 1, stages = 2 ^ 62},
         prefix .. '.stages: expected an integer from 1 to 8, got')
    with({bn = 16, bk = 8, wgs = 1, stages = 2, wait = 2},
         prefix .. '.wait: expected 0 or 1, got 2')
    with({bn = 16, bk = 8, wgs = 1, stages = 2, wait = "1"},
         prefix .. '.wait: expected 0 or 1, got "1"')
    with({bn = 16, bk = 8, wgs = 1, stages = 2, wait = false},
         prefix .. '.wait: expected 0 or 1, got false')
    with({bn = 16, bk = 8, wgs = 1, stages = 2, bulk = 1},
         prefix .. '.bulk: expected a boolean or nil, got 1')
    with({bn = 16, bk = 8, wgs = 1, stages = 2, group = 0},
         prefix .. '.group: expected an integer from 1 to 1024 or nil, got 0')
    with({bn = 16, bk = 8, wgs = 1, stages = 2, group = 0 / 0},
         prefix .. '.group: expected an integer from 1 to 1024 or nil, got nan')
    with({bn = 12, bk = 8, wgs = 1, stages = 2},
         prefix .. ': bn 12, bk 8, stages 2, wait 0 do not make a tiling (8 | bn, 8 | bk, ' ..
         'stages at least 2 + wait)')
    with({bn = 16, bk = 12, wgs = 1, stages = 2}, 'bn 16, bk 12, stages 2, wait 0 do not')
    with({bn = 16, bk = 8, wgs = 1, stages = 2, wait = 1},
         'bn 16, bk 8, stages 2, wait 1 do not make a tiling')
    with({bn = 16, bk = 8, wgs = 1, stages = 1}, 'stages 1, wait 0 do not make a tiling')
  end)

  -- The largest tiles the limits allow (as many warp groups as the device
  -- takes) need stages * 4 bytes * (64 * wgs + bn) * bk: more than this
  -- device's local memory, or the check cannot be made here.
  it("refuses tiles larger than the device's local memory", function()
    local wgs = math.min(4, dev.max_work_group_size // 128)
    local bytes = 8 * 4 * (64 * wgs + 256) * 256
    if wgs < 1 or bytes <= dev.local_mem_size then
      return pending("local_mem_size " .. dev.local_mem_size .. ": no wgmma tiling is larger")
    end
    local A = dev:buffer("float", {8, 8})
    local p = {bn = 256, bk = 256, wgs = wgs, stages = 8}
    emulated({tf32 = p, ["3xtf32"] = p}, function()
      local ok, err = pcall(matmul, A, A, {precision = "tf32"})
      assert.is_false(ok)
      assert.matches('luagpu: matmul: matmul_wgmma.params["tf32"]: the tiles need ' .. bytes
                     .. ' bytes of local memory, ' .. dev.name .. ' has ' .. dev.local_mem_size,
                     tostring(err), 1, true)
    end)
  end)

  it("says the defaults fit the local memory they are made for", function()
    -- the wgmma tiles in sm_90's 227 KB; the mma.sync ones in the 48 KB
    -- NVIDIA's OpenCL reports (3xtf32's once wanted 64 KB, and every
    -- product raised on the GPU)
    assert.is_true(wgmma.local_bytes_of(wgmma.params.tf32, false) <= wgmma.local_limit)
    assert.is_true(wgmma.local_bytes_of(wgmma.params["3xtf32"], true) <= wgmma.local_limit)
    assert.is_true(mma.local_bytes_of(mma.params.tf32, false) <= 49152)
    assert.is_true(mma.local_bytes_of(mma.params["3xtf32"], true) <= 49152)
  end)

  it("rewrites the PTX's comments into wgmma for sm_90a", function()
    local ptx = table.concat({
      ".version 8.5", ".target sm_90, texmode_independent", ".address_size 64",
      "\t// begin inline asm", "\t//LGWG_FENCE {%f1, %f2, %f3, %f4}", "\t// end inline asm",
      "\t//LGWG_MMA0 {%f1, %f2, %f3, %f4}, %rd5, %rd6;",
      "\t//LGWG_MMA1 {%f1, %f2, %f3, %f4}, %rd7, %rd8;",
      "\t//LGWG_COMMIT", "\t//LGWG_WAIT1 {%f1, %f2, %f3, %f4}", "\t//LGWG_WAIT0 {%f1, %f2}",
      "\tret;"}, "\n")
    local out = assert(wgmma.patch(ptx, 16))
    assert.matches(".target sm_90a, texmode_independent\n", out, 1, true)
    assert.matches("setp.ne.b32 lgp, 0, 0;\nwgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 " ..
                   "{%f1, %f2, %f3, %f4}, %rd5, %rd6, lgp, 1, 1;", out, 1, true)
    assert.matches("setp.ne.b32 lgp, 1, 0;\nwgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 " ..
                   "{%f1, %f2, %f3, %f4}, %rd7, %rd8, lgp, 1, 1;", out, 1, true)
    assert.matches("\twgmma.fence.sync.aligned;\n", out, 1, true)
    assert.matches("\twgmma.commit_group.sync.aligned;\n", out, 1, true)
    assert.matches("\twgmma.wait_group.sync.aligned 1;\n\twgmma.wait_group.sync.aligned 0;\n",
                   out, 1, true)
    assert.is_nil(out:find("LGWG", 1, true))
    assert.matches("\tret;$", out)
    -- what it will not patch
    local none, why = wgmma.patch(ptx:gsub("sm_90,", "sm_80,"), 16)
    assert.is_nil(none)
    assert.equals("the driver's PTX is not for sm_90 (sm_80)", why)
    none, why = wgmma.patch(".target sm_90\n\tret;", 16)
    assert.is_nil(none)
    assert.equals("no wgmma in the PTX", why)
    local ok, err = pcall(wgmma.patch, nil, 16)
    assert.is_false(ok)
    assert.equals("luagpu: matmul_wgmma.patch: argument #1: expected the PTX text, got nil", err)
    ok, err = pcall(wgmma.patch, ptx, 12)
    assert.is_false(ok)
    assert.matches("argument #2: expected N of the wgmma (8 to 256, a multiple of 8), got 12",
                   err, 1, true)
    none, why = wgmma.patch(ptx .. "\n\t//LGWG_SPLIT {%f1}", 16)
    assert.is_nil(none)
    assert.equals("a wgmma comment the patch does not know", why)
  end)

  it("compares a probe's product element by element", function()
    local T = require "luagpu.matmul.tc"
    local a, b, want = T.probe_data(3, 2, 4)
    assert.same({17, -7, -11, 1, -6, -2}, want)
    assert.equals(12, #a)
    assert.equals(8, #b)
    assert.is_nil(T.probe_mismatch({17, -7, -11, 1, -6, -2}, want))
    assert.equals("the probe's product is wrong (element 5: 0.0, expected -6)",
                  T.probe_mismatch({17, -7, -11, 1, 0.0, -2}, want))
  end)

  it("finds no wgmma path on a device other than an NVIDIA GPU", function()
    assert.same({ok = false, why = "not an NVIDIA GPU"}, wgmma.probe(dev))
    assert.is_nil(matmul.path(dev, "tf32"):find("wgmma", 1, true))
  end)
end)
