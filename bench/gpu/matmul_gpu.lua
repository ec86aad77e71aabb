-- bench/gpu/matmul_gpu.lua: luagpu.matmul in float on the GPU at the sizes
-- bench/gpu/torch_baseline.py times cuBLAS at, with CLBlast's SGEMM through
-- the same OpenCL driver, for bench/gpu/run.sh to set side by side.
--
--   build/luagpu bench/gpu/matmul_gpu.lua [REPS] [DEVICE] [M,N,K ...]
--
-- Each size: 3 warm-up calls, then REPS (default 20) timed ones; the time of
-- a call is OpenCL's profile from the start of its first kernel to the end
-- of its last (as torch_baseline.py times cuBLAS with CUDA events). Prints
--   LUAGPU sgemm_4096x4096x4096_tflops 50.08 TFLOP/s
--   CLBLAST sgemm_4096x4096x4096_tflops 31.45 TFLOP/s
-- (the keys of torch_baseline.py's BASELINE lines; CLBlast's figure is
-- bench/c/clblast_sgemm.c's, a median of wall-clock calls to clFinish),
-- then a table with the variant, parameters and split of K matmul chose,
-- the wall-clock time per blocking call, and the error of 16 sampled
-- entries against a dot product in Lua. "+edges" in the variant: the tile-
-- aligned core and the thin edges ran apart (LUAGPU_MATMUL_EDGES=0 turns
-- that off, for comparison).
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
if os.getenv("LUAGPU_MATMUL_EDGES") == "0" then matmul.split_edges = false end

local reps, devspec, sizes = 20, nil, {}
for i, a in ipairs(arg or {}) do
  if i == 1 and a:match("^%d+$") then reps = math.max(10, tonumber(a))
  elseif a:match("^%d+,%d+,%d+$") then sizes[#sizes + 1] = a
  else devspec = a end
end
if #sizes == 0 then
  sizes = {"1024,1024,1024", "2048,2048,2048", "4096,4096,4096", "8192,8192,8192",
           "4095,4095,4095", "4097,4097,4097", "8193,8193,8193", "3000,5000,1000"}
end
-- CLBlast's SGEMM on the same device, through bench/c/clblast_sgemm.c, run
-- first: before this process makes an OpenCL context on the GPU (a GPU in
-- exclusive-process mode takes one process at a time).
local clblast_lines = {}
do
  local exe = (gpu.root or ".") .. "/build/bench_clblast_sgemm"
  if io.open(exe) then
    local list = {}
    for i, s in ipairs(sizes) do list[i] = s:gsub(",", "x") end
    local cmd = ("'%s' --device '%s' --reps %d %s 2>&1"):format(exe,
      (devspec or "gpu"):gsub("'", ""), reps, table.concat(list, " "))
    local p = io.popen(cmd)
    for line in p:lines() do
      local m, n, k, _, _, gflops = line:match("^clblast (%d+) (%d+) (%d+) (%S+) (%S+) (%S+)")
      if m then
        clblast_lines[#clblast_lines + 1] = ("CLBLAST sgemm_%sx%sx%s_tflops %.2f TFLOP/s")
          :format(m, n, k, tonumber(gflops) / 1e3)
      else
        clblast_lines[#clblast_lines + 1] = "clblast: " .. line
      end
    end
    p:close()
  else
    clblast_lines[1] = "no " .. exe .. ": CLBlast not measured (make build/bench_clblast_sgemm)"
  end
end

local dev = gpu.device(devspec or (#gpu.devices("gpu") > 0 and "gpu" or nil))
print(("luagpu.matmul (float) on %s (%s, %d compute units), median of %d after warm-up")
      :format(dev.name, dev.platform, dev.compute_units, reps))

local fill = bench.filler(dev, "float", -1)

local rows = {}
for _, s in ipairs(sizes) do
  local m, n, k = bench.dims(s)
  local A, B = dev:buffer("float", {m, k}), dev:buffer("float", {k, n})
  local C = dev:buffer("float", {m, n})
  fill(A, 11, m * k)
  fill(B, 12, k * n)
  for _ = 1, 3 do
    local _, ev = matmul(A, B, C)
    ev:wait()
  end
  -- 16 sampled entries against Lua
  local b, c = B:get(), C:get()
  local worst = 0
  math.randomseed(m + n + k)
  for _ = 1, 16 do
    local i, j = math.random(0, m - 1), math.random(0, n - 1)
    local arow = A:sub(i * k + 1, i * k + k):get()
    local want, scale = 0, 0
    for x = 0, k - 1 do
      local p = arow[x + 1] * b[x * n + j + 1]
      want, scale = want + p, scale + math.abs(p)
    end
    worst = math.max(worst, math.abs(c[i * n + j + 1] - want) / scale)
  end
  assert(worst < 1e-4, ("matmul %s: relative error %g"):format(s, worst))
  b, c = nil, nil
  local times = {}
  for i = 1, reps do
    local _, _, events = matmul(A, B, C)
    times[i] = bench.span_ns(events) * 1e-9
  end
  local walls = bench.walls(reps, function()
    local _, ev = matmul(A, B, C)
    ev:wait()
  end)
  local t = bench.median(times)
  local tf = 2.0 * m * n * k / t * 1e-12
  print(("LUAGPU sgemm_%dx%dx%d_tflops %.2f TFLOP/s"):format(m, n, k, tf))
  local plan = matmul.plan(dev, m, n, k)
  rows[#rows + 1] = {s, plan.variant .. (plan.set ~= plan.variant and " (" .. plan.set .. ")" or "")
                        .. (plan.edges and "+edges" or ""),
                     plan.slices or 1, t * 1e3, tf, bench.median(walls) * 1e3, worst}
  A:release(); B:release(); C:release()
  collectgarbage()
end

for _, line in ipairs(clblast_lines) do print(line) end
bench.print_table("%-16s %-14s %6s %10s %8s %12s %10s",
                  {"M,N,K", "variant", "slices", "ms", "TFLOP/s", "wall ms/call", "rel err"},
                  "%-16s %-14s %6d %10.3f %8.2f %12.3f %10.1e", rows)
