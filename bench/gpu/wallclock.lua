-- bench/gpu/wallclock.lua: what users wait for, on the wall clock: from the
-- call until the result is in the caller's hands, and the cost of enqueueing
-- alone. Medians of REPS. Prints `LUAGPU key value unit` lines for
-- bench/gpu/report.lua, which sets them beside PyTorch's (torch_baseline.py:
-- `x.sum().item()`, `A @ B; torch.cuda.synchronize()`) and the C host's
-- enqueue variants (bench/c/launch.c), all measured in the same run.
--
--   build/luagpu bench/gpu/wallclock.lua [REPS [DEVICE [SIZES]]]
--
-- SIZES: the square matmul sizes, comma-separated (default 256,1024,4096).
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"
local matmul = require "luagpu.matmul"

local reps = math.max(5, tonumber(arg and arg[1]) or 50)
local dev = gpu.device(arg and arg[2] ~= "" and arg[2] or nil)
local sizes = {}
for s in ((arg and arg[3]) or "256,1024,4096"):gmatch("%d+") do sizes[#sizes + 1] = tonumber(s) end
local now, median = gpu.now, bench.median
local fill = bench.filler(dev, "float", 0)

local function report(key, seconds)
  print(string.format("LUAGPU %s %.2f us", key, seconds * 1e6))
end

local function enqueue_times(enqueue, settle) return bench.enqueue_times(reps, enqueue, settle) end

print("LUAGPU device " .. dev.name:gsub(" ", "_") .. " name")

-- The helpers, on the default queue with profiling on (keys as given) and,
-- after dev:set_profiling(false), off (keys ending "_noprof").
local function helpers(suffix)
  local function key(fmt, v) return fmt:format(v) .. suffix end
  for _, e in ipairs {20, 28} do
    local b = dev:buffer("float", 1 << e)
    fill(b, 7):wait()
    reduce.sum(b)                                          -- builds, caches
    report(key("wall_sum_2^%d", e) .. "_us", median(bench.walls(reps, function()
      return reduce.sum(b)
    end)))
    report(key("enqueue_sum_2^%d", e) .. "_us", median(enqueue_times(function()
      return reduce.sum(b, {async = true})
    end, function(ev) ev:wait() end)))
    b:release()
  end
  for _, n in ipairs(sizes) do
    local A, B, C = dev:buffer("float", {n, n}), dev:buffer("float", {n, n}), dev:buffer("float", {n, n})
    fill(A, 1):wait()
    fill(B, 2):wait()
    matmul(A, B, C)
    dev:finish()
    report(key("wall_mm_%d", n) .. "_us", median(bench.walls(reps, function()
      matmul(A, B, C)
      dev:finish()
    end)))
    report(key("enqueue_mm_%d", n) .. "_us", median(enqueue_times(function()
      matmul(A, B, C)
    end, function() dev:finish() end)))
    A:release(); B:release(); C:release()
  end
end
helpers("")
dev:set_profiling(false)
helpers("_noprof")
dev:set_profiling(true)

-- A plain launch: k(...):run on the default queue (profiling on, an Event
-- returned) and on a queue with profiling off; enqueue only, per launch.
local k = dev:build[[
__kernel void saxpy(float a, __global const float *x, __global float *y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] += a * x[i];
}]].saxpy
local x, y = dev:buffer("float", 1024), dev:buffer("float", 1024)
local call = k(2.0, x, y, 1024)
local noprof = dev:queue{profiling = false}
local launches = 20000
for _, v in ipairs {{"launch_prof_us", nil}, {"launch_noprof_us", {queue = noprof}}} do
  local per = {}
  for r = 1, 6 do
    local t0 = now()
    for _ = 1, launches do call:run({64}, nil, v[2]) end
    local t = (now() - t0) / launches
    dev:finish()
    noprof:finish()
    if r > 1 then per[#per + 1] = t end                  -- round 1 warms up
  end
  report(v[1], median(per))
end
