-- bench/launch.lua: per-launch cost of call:run against a plain C OpenCL
-- host (bench/c/launch.c, built as build/bench_launch) doing the same
-- setarg + enqueue (+ wait) calls, on the same device, in the same run.
--
--   build/luagpu bench/launch.lua [LAUNCHES] [REPEATS] [GLOBAL]
--
-- Each figure is the best of REPEATS loops of LAUNCHES launches of a small
-- saxpy kernel (GLOBAL work-items), in microseconds per launch. The enqueue
-- loop is timed without the finish after it; "wait" waits on each launch's
-- event before the next. luagpu's rows: the same call run again (its
-- arguments stay set on the kernel), and two calls alternating (every
-- launch sets the four arguments again, as the C host always does).
local build = os.getenv("LUAGPU_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
local gpu = rawget(_G, "gpu") or require "luagpu"

local launches = tonumber(arg and arg[1]) or 20000
local reps = tonumber(arg and arg[2]) or 5
local global = tonumber(arg and arg[3]) or 64

local dev = gpu.device()
local baseline = build .. "/bench_launch"
if not io.open(baseline) then
  assert(os.execute("make -s " .. baseline), "could not build " .. baseline)
end

-- the C host first, on the device gpu.device() picked
local cmd = string.format("%s %d %d %d '%s'", baseline, launches, reps, global,
                          dev.name:gsub("'", "'\\''"))
local p = assert(io.popen(cmd))
local out = p:read("a")
p:close()
local c_dev = out:match("device ([^\n]*)")
local c_enq = tonumber(out:match("enqueue_us ([%d.]+)"))
local c_wait = tonumber(out:match("wait_us ([%d.]+)"))
assert(c_enq and c_wait, "bench_launch printed:\n" .. out)
assert(c_dev == dev.name, "the C host ran on " .. tostring(c_dev) .. ", not " .. dev.name)

local prog = dev:build[[
__kernel void saxpy(float a, __global const float *x, __global float *y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] += a * x[i];
}]]
local x, y = dev:buffer("float", 1024), dev:buffer("float", 1024)
local c1 = prog.saxpy(2, x, y, 1024)
local c2 = prog.saxpy(3, x, y, 1024)
local g = {global}

local now = gpu.now
-- best of reps rounds (after a warm-up round) of enqueue-only and enqueue-then-wait
local function measure(a, b)
  local best_enq, best_wait = math.huge, math.huge
  for r = 0, reps do
    collectgarbage()
    local t0 = now()
    for _ = 1, launches / 2 do
      a:run(g)
      b:run(g)
    end
    local t = (now() - t0) / launches
    dev:finish()
    if r > 0 and t < best_enq then best_enq = t end
    t0 = now()
    for _ = 1, launches / 2 do
      a:run(g):wait()
      b:run(g):wait()
    end
    t = (now() - t0) / launches
    if r > 0 and t < best_wait then best_wait = t end
  end
  return best_enq * 1e6, best_wait * 1e6
end

local same_enq, same_wait = measure(c1, c1)
local alt_enq, alt_wait = measure(c1, c2)

print(string.format("launch overhead on %s (%s), %d launches of %d work-items, best of %d",
                    dev.name, dev.platform, launches, global, reps))
print(string.format("%-34s %10s %10s %8s", "", "C host", "luagpu", "ratio"))
local function row(name, c, l)
  print(string.format("%-34s %8.2f us %7.2f us %8.2f", name, c, l, l / c))
end
row("enqueue only (same call)", c_enq, same_enq)
row("enqueue only (two calls)", c_enq, alt_enq)
row("enqueue + wait (same call)", c_wait, same_wait)
row("enqueue + wait (two calls)", c_wait, alt_wait)
