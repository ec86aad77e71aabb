-- bench/gpu/mma.lua: matmul's precisions on the tensor cores (issue 15)
-- beside cuBLAS through PyTorch: speed at each size, accuracy against a
-- float64 reference, and a check of the kernels on odd shapes and options.
--
--   python3 bench/gpu/mma_torch.py 4096,8192 > torch.txt
--   build/luagpu bench/gpu/mma.lua torch.txt [RUNS [SIZES [ERR_N [SWEEP]]]]
--
-- SIZES is a comma list (default 4096,8192); ERR_N the size of the square
-- accuracy product (default 4096; K = ERR_N), 0 to skip. Times are the
-- device's (profiled Events), medians of RUNS after two warm-up calls; wall
-- is from the call to dev:finish(). Accuracy: the largest |C - R| / (|A||B|)
-- over the elements, R and |A||B| computed in double by matmul's fp64
-- kernels, inputs uniform in [-1, 1]. SWEEP (any value) also times the
-- tile shapes of SHAPES below at the first size. VERBOSE set prints the
-- compiler's register counts and wgmma warnings of each program built;
-- PTX_DIR=dir writes each wgmma program's patched PTX there (for the CUDA
-- toolkit's ptxas -v -arch=sm_90a, found on the GPU machines). WGMMA_GROUP=G
-- times the wgmma tiles with bands of G row blocks (params' group);
-- WGMMA_3X="bn bk wgs stages wait bulk" times those as 3xtf32's tiles.
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"
local mma = require "luagpu.matmul.mma"
local reduce = require "luagpu.reduce"
local wgmma = require "luagpu.matmul.wgmma"

local torch_file = arg and arg[1]
local runs = tonumber(arg and arg[2]) or 10
local sizes = {}
for s in ((arg and arg[3]) or "4096,8192"):gmatch("%d+") do sizes[#sizes + 1] = tonumber(s) end
local err_n = tonumber(arg and arg[4]) or 4096
local sweep = arg and arg[5]
local dev = gpu.device()
if os.getenv("TRUNC") then mma.params.tf32.trunc, mma.params["3xtf32"].trunc = true, true end
-- WGMMA_3X="bn bk wgs stages wait bulk": 3xtf32's wgmma tiles (bulk 1 or 0)
if os.getenv("WGMMA_3X") then
  local v = {}
  for x in os.getenv("WGMMA_3X"):gmatch("%d+") do v[#v + 1] = tonumber(x) end
  wgmma.params["3xtf32"] = {bn = v[1], bk = v[2], wgs = v[3], stages = v[4], wait = v[5],
                            bulk = v[6] == 1, group = wgmma.params["3xtf32"].group}
end
-- WGMMA_GROUP=G: the wgmma tiles' band of G row blocks (params.group)
if os.getenv("WGMMA_GROUP") then
  for _, p in ipairs{"tf32", "3xtf32"} do
    local t = {}
    for k, v in pairs(wgmma.params[p]) do t[k] = v end
    t.group = tonumber(os.getenv("WGMMA_GROUP"))
    wgmma.params[p] = t
  end
end
local median = bench.median

-- PTX_DIR set: each wgmma program's patched PTX is written there (wgmma_N.ptx,
-- N in build order), for ptxas -v and cuobjdump on the GPU machine
if os.getenv("PTX_DIR") then
  local patch, count = wgmma.patch, 0
  wgmma.patch = function(ptx, bn)
    local out, why = patch(ptx, bn)
    if out then
      count = count + 1
      local f = assert(io.open(("%s/wgmma_%d.ptx"):format(os.getenv("PTX_DIR"), count), "w"))
      f:write(out)
      f:close()
      print(("wrote wgmma_%d.ptx"):format(count))
    end
    return out, why
  end
end

local baseline = {}
if torch_file and torch_file ~= "-" and io.open(torch_file) then
  for line in io.lines(torch_file) do
    local key, value = line:match("^BASELINE (%S+) (%S+)")
    if key then baseline[key] = tonumber(value) or value end
  end
end

print(("device: %s"):format(dev.name))
for _, p in ipairs{"fp32", "tf32", "3xtf32"} do
  print(("path %-7s %s"):format(p, matmul.path(dev, p)))
end

local prog = dev:build[[
__kernel void uniform(__global float *a, uint seed) {
  uint h = (uint)get_global_id(0) * 2654435761u ^ seed;
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
  a[get_global_id(0)] = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}
__kernel void widen(__global const float *a, __global double *d, __global double *ad) {
  size_t i = get_global_id(0); d[i] = a[i]; ad[i] = fabs((double)a[i]);
}
__kernel void relerr(__global const float *c, __global const double *r,
                     __global const double *s, __global double *e) {
  size_t i = get_global_id(0);
  e[i] = fabs((double)c[i] - r[i]) / (s[i] > 0.0 ? s[i] : 1.0);
}]]

local function uniform(n, seed)
  local b = dev:buffer("float", n)
  prog.uniform(b, seed):run({n}):wait()
  return b
end

------------------------------------------------------------------ peak
-- The tensor cores' rate on registers alone (mma_probe.cl's mma_peak):
-- what mma.sync with TF32 can give at most on this device.
if mma.path(dev, "tf32"):find("tensor cores") then
  local rounds = 4096
  local kw = "asm"
  local peak = dev:build(gpu.kernel_source("mma_probe.cl"),
                         {defines = {LG_ASM = kw, PEAK = rounds}}).mma_peak
  for _, shape in ipairs{{128, 8}, {256, 8}, {128, 1}, {256, 1}, {128, 2}, {256, 2},
                         {128, 4}, {64, 4}} do
    local wg, per_cu = shape[1], shape[2]
    local groups = dev.compute_units * per_cu
    local out = dev:buffer("float", groups * wg)
    local call = peak(out, 7)
    local t = {}
    for r = -1, 5 do
      local ev = call:run({groups * wg}, {wg})
      ev:wait()
      if r >= 1 then t[#t + 1] = ev.duration end
    end
    local flops = groups * (wg // 32) * rounds * 8 * 2048
    print(("mma.sync tf32 peak: %.1f TFLOP/s (%d groups of %d, %d warps per compute unit)")
          :format(flops / (median(t) * 1e-9) / 1e12, groups, wg, per_cu * wg // 32))
  end
end

------------------------------------------------------------------ check
-- Odd shapes and every option against a plain-Lua product (small sizes).
local function lua_ref(a, b, m, n, k, ta, tb, alpha, beta, c0)
  local c = {}
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local s, sa = 0, 0
      for l = 0, k - 1 do
        local x = ta and a[l * m + i + 1] or a[i * k + l + 1]
        local y = tb and b[j * k + l + 1] or b[l * n + j + 1]
        s, sa = s + x * y, sa + math.abs(x * y)
      end
      c[i * n + j + 1] = {alpha * s + (beta ~= 0 and beta * c0[i * n + j + 1] or 0),
                          math.abs(alpha) * sa + math.abs(beta * (c0[i * n + j + 1] or 0))}
    end
  end
  return c
end

local failures, checks = 0, 0
local function check_case(m, n, k, ta, tb, alpha, beta, off, precision)
  local function rand(cnt)
    local t = {}
    for i = 1, cnt do t[i] = math.random() * 2 - 1 end
    return t
  end
  local a, b, c0 = rand(m * k), rand(k * n), rand(m * n)
  local A = dev:buffer("float", m * k + off, {host = (function()
    local t = {}
    for i = 1, off do t[i] = 0 end
    for i = 1, m * k do t[off + i] = a[i] end
    return t
  end)()}):sub(off + 1, off + m * k)
  local B = dev:buffer("float", k * n, {host = b})
  local C = dev:buffer("float", m * n, {host = c0})
  local opts = {precision = precision, m = m, n = n, k = k}
  if ta then opts.trans_a = true end
  if tb then opts.trans_b = true end
  if alpha ~= 1 then opts.alpha = alpha end
  if beta ~= 0 then opts.beta = beta end
  local ok, err = pcall(matmul, A, B, C, opts)
  checks = checks + 1
  local label = ("%s %dx%dx%d ta=%s tb=%s alpha=%g beta=%g off=%d"):format(precision, m, n, k,
    tostring(ta), tostring(tb), alpha, beta, off)
  if not ok then
    print("CHECK ERROR " .. label .. ": " .. tostring(err))
    failures = failures + 1
    return
  end
  local got = C:get()
  local ref = lua_ref(a, b, m, n, k, ta, tb, alpha, beta, c0)
  local tol = precision == "3xtf32" and 1e-5 or 2e-3
  local worst = 0
  for i = 1, m * n do
    local e = math.abs(got[i] - ref[i][1]) / math.max(ref[i][2], 1e-30)
    if not (e <= worst) then worst = e end
  end
  if not (worst <= tol) then
    failures = failures + 1
    print(("CHECK FAIL %s: largest error %.3e > %.1e"):format(label, worst, tol))
  end
end

math.randomseed(15)
for _, precision in ipairs{"tf32", "3xtf32"} do
  for _, s in ipairs{{1, 1, 1}, {17, 33, 9}, {128, 128, 16}, {129, 131, 67}, {200, 64, 300},
                      {64, 200, 7}, {256, 256, 256}} do
    for _, t in ipairs{{false, false}, {true, false}, {false, true}, {true, true}} do
      check_case(s[1], s[2], s[3], t[1], t[2], 1, 0, 0, precision)
    end
    check_case(s[1], s[2], s[3], false, false, 1, 0, 3, precision)
    check_case(s[1], s[2], s[3], false, false, 2, 0.5, 1, precision)
    check_case(s[1], s[2], s[3], true, true, -1.5, 2, 0, precision)
  end
end
print(("check: %d cases, %d failures"):format(checks, failures))

------------------------------------------------------------------ accuracy
local errors = {}
if err_n > 0 then
  local n = err_n
  local A, B = uniform(n * n, 1), uniform(n * n, 2)
  local Ad, Aa = dev:buffer("double", n * n), dev:buffer("double", n * n)
  local Bd, Ba = dev:buffer("double", n * n), dev:buffer("double", n * n)
  prog.widen(A, Ad, Aa):run({n * n})
  prog.widen(B, Bd, Ba):run({n * n})
  local R = matmul(Ad, Bd, nil, {m = n, n = n, k = n})
  local S = matmul(Aa, Ba, nil, {m = n, n = n, k = n})
  Ad:release(); Aa:release(); Bd:release(); Ba:release()
  local E = dev:buffer("double", n * n)
  local C = dev:buffer("float", n * n)
  for _, p in ipairs{"fp32", "tf32", "3xtf32"} do
    matmul(A, B, C, {precision = p, m = n, n = n, k = n})
    prog.relerr(C, R, S, E):run({n * n})
    errors[p] = reduce.max(E)
    print(("error %-7s %.3e (largest |C - R| / (|A||B|), %d^3)"):format(p, errors[p], n))
  end
  E:release(); R:release(); S:release()
end

------------------------------------------------------------------ speed
-- with VERBOSE set, the compiler's register counts of each program
local seen = {}
local function show_log()
  if not os.getenv("VERBOSE") then return end
  local progs = {}
  for key, prog in pairs(mma.programs_of(dev)) do progs[key] = prog end
  for key, prog in pairs(wgmma.programs_of(dev)) do progs[key] = prog end
  for key, prog in pairs(progs) do
    if seen[key] then goto next end
    seen[key] = true
    print("  " .. key:gsub("LG_ASM=%S+ ", ""))
    for line in tostring(prog.log):gmatch("[^\n]+") do
      if line:find("registers") or line:find("spill") or line:find("lmem")
         or line:find("wgmma") or line:find("erializ") then
        print("  ", line)
      end
    end
    ::next::
  end
end

local function time_product(n, precision)
  local A, B, C = uniform(n * n, 3), uniform(n * n, 4), dev:buffer("float", {n, n})
  local opts = {precision = precision, m = n, n = n, k = n}
  local dt, walls, each = {}, {}, {}
  for r = -1, runs do
    dev:finish()
    local t0 = gpu.now()
    local _, _, events = matmul(A, B, C, opts)
    dev:finish()
    if r >= 1 then
      walls[#walls + 1] = gpu.now() - t0
      dt[#dt + 1] = bench.span_ns(events) * 1e-9
      for i, ev in ipairs(events) do
        each[i] = each[i] or {}
        each[i][#each[i] + 1] = ev.duration * 1e-9
      end
    end
  end
  A:release(); B:release(); C:release()
  for i, t in ipairs(each) do each[i] = median(t) end
  return median(dt), median(walls), each
end

local kernels = {}
print()
print("| size | precision | device ms | TFLOP/s | wall ms | cuBLAS fp32 ms | ratio | cuBLAS tf32 ms | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for _, n in ipairs(sizes) do
  for _, p in ipairs{"fp32", "tf32", "3xtf32"} do
    local d, w, each = time_product(n, p)
    if #each > 1 and p ~= "fp32" then
      local parts = {}
      for i, t in ipairs(each) do parts[i] = ("%.3f"):format(t * 1e3) end
      kernels[#kernels + 1] = ("%s at %d: %s ms"):format(p, n, table.concat(parts, ", "))
    end
    local f32, t32 = baseline["fp32_" .. n .. "_ms"], baseline["tf32_" .. n .. "_ms"]
    local function ratio(b) return b and ("%.2fx"):format(b / (d * 1e3)) or "-" end
    print(("| %d | %s | %.3f | %.1f | %.3f | %s | %s | %s | %s |"):format(n, p, d * 1e3,
      2 * n ^ 3 / d / 1e12, w * 1e3, f32 and ("%.3f"):format(f32) or "-", ratio(f32),
      t32 and ("%.3f"):format(t32) or "-", ratio(t32)))
  end
end
if #kernels > 0 then
  print("each kernel's device time (medians; tensor cores: pack A, pack B, product):")
  for _, line in ipairs(kernels) do print("  " .. line) end
end
if baseline.fp32_err then
  print(("cuBLAS errors (same measure): fp32 %.3e, tf32 %.3e"):format(baseline.fp32_err,
        baseline.tf32_err))
end
if errors["3xtf32"] then
  print(("3xtf32 error / fp32 kernel's error: %.2f (bar: at most 2)"):format(
        errors["3xtf32"] / errors.fp32))
end

------------------------------------------------------------------ sweep
local SHAPES = {   -- bm bn bk wm wn stages trunc maxrreg
  {128, 128, 16, 64, 64, 3}, {128, 128, 16, 64, 32, 3}, {128, 128, 16, 32, 64, 3},
  {256, 128, 16, 64, 64, 2}, {256, 128, 8, 64, 64, 4}, {128, 256, 8, 64, 64, 4},
  {128, 128, 8, 64, 64, 4}, {128, 128, 8, 64, 32, 4}, {128, 64, 16, 64, 32, 4},
  {128, 128, 16, 64, 32, 3, true}, {128, 128, 16, 64, 32, 4},
}
-- the wgmma kernels' tiles (lua/luagpu/matmul/params.lua), swept instead
-- where they are the path
local WGMMA_SHAPES = {   -- bn bk wgs stages wait bulk
  {256, 32, 2, 4, 1, 1}, {256, 32, 2, 3, 0, 1}, {256, 32, 2, 4, 0, 1}, {192, 32, 2, 4, 1, 1},
  {128, 32, 2, 3, 0, 1}, {128, 24, 2, 4, 0, 1}, {128, 16, 2, 6, 0, 1}, {128, 32, 2, 3, 1, 1},
  {96, 32, 2, 4, 0, 1}, {160, 32, 2, 3, 0, 1}, {128, 48, 2, 2, 0, 1}, {192, 16, 2, 4, 1, 0},
}
-- Times each shape of shapes (made into params by make) as both
-- precisions' tiles in module's params, at the first size, and checks two
-- odd products with it; label names the columns, show(s) a row's shape.
local function sweep_tiles(module, shapes, make, label, show)
  local n = sizes[1]
  local saved = {tf32 = module.params.tf32, ["3xtf32"] = module.params["3xtf32"]}
  print()
  print(("sweep at %d: %s -> TFLOP/s (tf32, 3xtf32)"):format(n, label))
  for _, s in ipairs(shapes) do
    local shape = make(s)
    module.params.tf32, module.params["3xtf32"] = shape, shape
    local row = {}
    for _, p in ipairs{"tf32", "3xtf32"} do
      local ok, d = pcall(time_product, n, p)
      row[#row + 1] = ok and ("%.1f"):format(2 * n ^ 3 / d / 1e12) or ("error: " .. tostring(d))
    end
    local before = failures
    for _, p in ipairs{"tf32", "3xtf32"} do
      pcall(check_case, 129, 131, 67, false, false, 1, 0, 0, p)
      pcall(check_case, 256, 256, 256, true, false, 1, 0, 0, p)
      pcall(check_case, 200, 260, 96, false, false, 1, 0, 0, p)
      pcall(check_case, 130, 64, 260, false, true, 2, 0.5, 0, p)
    end
    row[#row + 1] = failures == before and "checked" or "WRONG RESULTS"
    show_log()
    print(show(s) .. " -> " .. table.concat(row, ", "))
  end
  module.params.tf32, module.params["3xtf32"] = saved.tf32, saved["3xtf32"]
end

if sweep and matmul.path(dev, "tf32"):find("wgmma", 1, true) then
  -- every swept tile in the bands of tf32's params (the default's, or WGMMA_GROUP's)
  local sweep_group = wgmma.params.tf32.group
  sweep_tiles(wgmma, WGMMA_SHAPES, function(s)
    return {bn = s[1], bk = s[2], wgs = s[3], stages = s[4], wait = s[5], bulk = s[6] == 1,
            group = sweep_group}
  end, "bn bk wgs stages wait bulk", function(s) return table.concat(s, " ") end)
elseif sweep then
  if os.getenv("VERBOSE") then mma.build_options = "-cl-nv-verbose" end
  sweep_tiles(mma, SHAPES, function(s)
    return {bm = s[1], bn = s[2], bk = s[3], wm = s[4], wn = s[5], stages = s[6],
            trunc = s[7], maxrreg = s[8]}
  end, "bm bn bk wm wn stages split maxrreg", function(s)
    return ("%d %d %d %d %d %d %s %s"):format(s[1], s[2], s[3], s[4], s[5], s[6],
                                              s[7] and "trunc" or "rna", s[8] or "-")
  end)
end
