-- bench/gpu/bind_probe.lua: what binding a kernel's arguments costs on this
-- host, beside the launch (a call kept and run again binds nothing).
-- A kernel of the gathers' signature (16 arguments, three of them vectors
-- of 8 given as Lua tables); medians of REPS, microseconds.
--   build/luagpu bench/gpu/bind_probe.lua [REPS]
local gpu = rawget(_G, "gpu") or require "luagpu"
local reps = tonumber(arg and arg[1]) or 2001
local dev = gpu.device()
local now = gpu.now
local NO_EVENT = {event = false}
local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function timed(name, f)
  for i = 1, 20 do f() end
  dev:finish()
  local t = {}
  for r = 1, reps do
    local t0 = now()
    f()
    t[r] = now() - t0
  end
  dev:finish()
  print(("%-52s %8.2f us"):format(name, median(t) * 1e6))
end
local k = dev:build([[
__kernel void g(__global float *out, ulong ooff, ulong8 lead, __global const long *idx,
                ulong ioff, long8 ist, long istep, __global const float *dat, ulong doff,
                long8 dst, long dstep, long len, ulong m, volatile __global long *bad,
                __local float *row, int rowvec) {
  if (get_global_id(0) == 0 && rowvec == 7) out[0] = 1; }
__kernel void two(__global float *out, ulong n) { if (get_global_id(0) == n) out[0] = 1; }
]])
local g, two = k.g, k.two
local out, idx, dat, bad = dev:buffer("float", 1024), dev:buffer("long", 1024),
  dev:buffer("float", 1024), dev:buffer("long", 2)
local lm = gpu.localmem("float", 1024)
local function args()
  return out, 0, {4096, 0, 0, 0, 0, 0, 0, 0}, idx, 0, {4096, 0, 0, 0, 0, 0, 0, 0}, 1, dat, 0,
    {4096, 0, 0, 0, 0, 0, 0, 0}, 1, 4096, 4096, bad, lm, 1
end
timed("bind 16 arguments (3 vectors from tables)", function() return g(args()) end)
local call = g(args())
timed("run a kept call, no event", function() call:run({256}, {256}, NO_EVENT) end)
timed("bind + run, no event", function() g(args()):run({256}, {256}, NO_EVENT) end)
timed("bind + run + finish", function() g(args()):run({256}, {256}, NO_EVENT); dev:finish() end)
timed("kept call run + finish", function() call:run({256}, {256}, NO_EVENT); dev:finish() end)
timed("bind 2 arguments", function() return two(out, 5) end)
timed("bind 2 + run, no event", function() two(out, 5):run({256}, {256}, NO_EVENT) end)
timed("dev:finish() idle", function() dev:finish() end)
