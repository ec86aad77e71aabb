-- bench/launch.lua: per-launch cost of call:run against a plain C OpenCL
-- host (bench/c/launch.c, built as build/bench_launch) doing the same
-- setarg + enqueue (+ wait) calls, on the same device, in the same run.
--
--   build/luagpu bench/launch.lua [LAUNCHES] [REPEATS] [GLOBAL]
--
-- Figures are microseconds per launch of a small saxpy kernel (GLOBAL
-- work-items) over loops of LAUNCHES launches: "enqueue only" times the
-- enqueue loop without the finish after it, "enqueue + wait" waits on each
-- launch's event before the next. luagpu's rows: the same call run again (its
-- arguments stay set on the kernel), and two calls alternating (every launch
-- sets the four arguments again, as the C host always does).
--
-- The C host and luagpu run as separate processes taking turns, REPEATS
-- times each, so the load of the machine weighs on both alike and neither
-- holds the device while the other runs (GPUs in exclusive-process mode
-- admit one process at a time); each figure is the median of its REPEATS.
local build = os.getenv("LUAGPU_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath

-- The C host's other figures (bench/c/launch.c says what each is).
local C_VARIANTS = {"prof_event", "prof_noevent", "noprof_event", "noprof_noevent", "read4",
                    "prof_marker", "noprof_marker", "prof_event_kept", "read4_async",
                    "read4_pinned_async", "kernel_read4", "kernel_read4_prof"}

local launches = tonumber(arg and arg[1]) or 20000
local reps = tonumber(arg and arg[2]) or 5
local global = tonumber(arg and arg[3]) or 64

if arg and arg[4] == "--worker" then
  -- one luagpu round: a warm-up and a measured loop of each kind
  local gpu = rawget(_G, "gpu") or require "luagpu"
  local dev = gpu.device()
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
  round(c1, c2)                                -- warm-up
  print("device " .. dev.name)
  print("platform " .. dev.platform)
  print(string.format("same %.3f %.3f", round(c1, c1)))
  print(string.format("two %.3f %.3f", round(c1, c2)))
  os.exit(0)
end

local script = arg and arg[0] or "bench/launch.lua"
local bench = dofile(script:match("^(.-)[^/]*$") .. "common.lua")
local sh_quote = bench.sh_quote
local baseline = bench.baseline(build .. "/bench_launch")
local interpreter = bench.interpreter(build)

local variants = {}   -- the C host's enqueue variants: name -> samples (us)
local samples, dev_name, platform = {}, nil, nil
local function keep(name, enq, wait)
  local s = samples[name] or {enq = {}, wait = {}}
  s.enq[#s.enq + 1], s.wait[#s.wait + 1] = tonumber(enq), tonumber(wait)
  samples[name] = s
end

for _ = 1, reps do
  local out = bench.capture(string.format("LUAGPU_BUILD=%s %s %s %d 1 %d --worker 2>&1",
                                          sh_quote(build), interpreter, sh_quote(script),
                                          launches, global))
  local name = out:match("device ([^\n]*)")
  assert(name and out:match("same ") and out:match("two "), "the luagpu worker printed:\n" .. out)
  dev_name, platform = name, out:match("platform ([^\n]*)")
  keep("same", out:match("same (%S+) (%S+)"))
  keep("two", out:match("two (%S+) (%S+)"))
  out = bench.capture(string.format("%s %d 1 %d %s 2>&1", baseline, launches, global,
                                    sh_quote(dev_name)))
  assert(out:match("enqueue_us") and out:match("wait_us"), "bench_launch printed:\n" .. out)
  assert(out:match("device ([^\n]*)") == dev_name,
         "the C host ran on " .. tostring(out:match("device ([^\n]*)")) .. ", not " .. dev_name)
  keep("c", out:match("enqueue_us (%S+)"), out:match("wait_us (%S+)"))
  for _, v in ipairs(C_VARIANTS) do
    local us = tonumber(out:match("\n" .. v .. "_us (%S+)"))
    if us then
      variants[v] = variants[v] or {}
      table.insert(variants[v], us)
    end
  end
end

local best = {}     -- the medians of the REPEATS rounds
for name, s in pairs(samples) do
  best[name] = {enq = bench.median(s.enq), wait = bench.median(s.wait)}
end

print(string.format("launch overhead on %s (%s), %d launches of %d work-items, median of %d",
                    dev_name, platform, launches, global, reps))
local rows = {   -- what, C host, luagpu
  {"enqueue only (same call)", best.c.enq, best.same.enq},
  {"enqueue only (two calls)", best.c.enq, best.two.enq},
  {"enqueue + wait (same call)", best.c.wait, best.same.wait},
  {"enqueue + wait (two calls)", best.c.wait, best.two.wait},
}
for _, r in ipairs(rows) do r[4] = r[3] / r[2] end
bench.print_table("%-34s %10s %10s %8s", {"", "C host", "luagpu", "ratio"},
                  "%-34s %8.2f us %7.2f us %8.2f", rows)
-- for bench/gpu/report.lua
print(string.format("LUAGPU launch_enqueue_us %.2f us", best.two.enq))
print(string.format("CHOST launch_enqueue_us %.2f us", best.c.enq))
print(string.format("LUAGPU launch_wait_us %.2f us", best.two.wait))
print(string.format("CHOST launch_wait_us %.2f us", best.c.wait))
-- the driver's own enqueue variants (the C host, arguments set once)
for _, v in ipairs(C_VARIANTS) do
  if variants[v] then print(string.format("CHOST %s_us %.2f us", v, bench.median(variants[v]))) end
end
