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

-- One run of the C host (a warm-up round and one measured round): its
-- enqueue-only and enqueue-then-wait microseconds per launch.
local cmd = string.format("%s %d 1 %d '%s'", baseline, launches, global,
                          (dev.name:gsub("'", "'\\''")))
local function c_host()
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  local c_dev = out:match("device ([^\n]*)")
  local enq = tonumber(out:match("enqueue_us ([%d.]+)"))
  local wait = tonumber(out:match("wait_us ([%d.]+)"))
  assert(enq and wait, "bench_launch printed:\n" .. out)
  assert(c_dev == dev.name, "the C host ran on " .. tostring(c_dev) .. ", not " .. dev.name)
  return enq, wait
end

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
-- One round of each loop: microseconds per launch, enqueue-only and
-- enqueue-then-wait, running calls a and b in turn.
local function round(a, b)
  collectgarbage()
  local t0 = now()
  for _ = 1, launches // 2 do
    a:run(g)
    b:run(g)
  end
  local enq = (now() - t0) / launches
  dev:finish()
  t0 = now()
  for _ = 1, launches // 2 do
    a:run(g):wait()
    b:run(g):wait()
  end
  return enq * 1e6, (now() - t0) / launches * 1e6
end

-- The C host and luagpu take turns, round after round, so that the load of
-- the machine weighs on both alike; each figure is the best round.
local best = {}
local function keep(name, enq, wait)
  local b = best[name] or {enq = math.huge, wait = math.huge}
  b.enq, b.wait = math.min(b.enq, enq), math.min(b.wait, wait)
  best[name] = b
end
round(c1, c2)                                  -- warm-up
for _ = 1, reps do
  keep("c", c_host())
  keep("same", round(c1, c1))
  keep("two", round(c1, c2))
end

print(string.format("launch overhead on %s (%s), %d launches of %d work-items, best of %d",
                    dev.name, dev.platform, launches, global, reps))
print(string.format("%-34s %10s %10s %8s", "", "C host", "luagpu", "ratio"))
local function row(name, c, l)
  print(string.format("%-34s %8.2f us %7.2f us %8.2f", name, c, l, l / c))
end
row("enqueue only (same call)", best.c.enq, best.same.enq)
row("enqueue only (two calls)", best.c.enq, best.two.enq)
row("enqueue + wait (same call)", best.c.wait, best.same.wait)
row("enqueue + wait (two calls)", best.c.wait, best.two.wait)
