-- tour.lua: what `make demo` runs. The default device (a GPU if there is one,
-- else the CPU through PoCL), a kernel, a reduction and a matrix multiply,
-- each timed and checked against the same computation in plain Lua.
--   build/luagpu examples/tour.lua
local gpu = gpu or require "luagpu"
local reduce = require "luagpu.reduce"
local matmul = require "luagpu.matmul"

-- The device time of a list of Events: from the earliest start to the latest end.
local function span(events)
  local first, last = math.huge, -math.huge
  for _, ev in ipairs(events) do
    local p = ev:profile()
    first, last = math.min(first, p.start), math.max(last, p["end"])
  end
  return last - first
end

local function section(title) print(("\n== %s "):format(title) .. ("="):rep(60 - #title)) end
local function check(ok, what) print(("   %-56s %s"):format(what, ok and "ok" or "MISMATCH")); assert(ok, what) end

section("devices")
for i, d in ipairs(gpu.devices()) do print(("%3d  %s"):format(i, tostring(d))) end
local dev = gpu.device()
print("using: " .. dev.name)

section("a kernel: y = a*x + y")
local n = 1 << 20
math.randomseed(7)
local hx, hy = gpu.array("float", n), gpu.array("float", n)
for i = 1, n do hx[i], hy[i] = math.random(), math.random() end
local prog = dev:build [[
  kernel void saxpy(float a, global const float *x, global float *y) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
  }]]
local x = dev:buffer("float", n, { host = hx })
local y = dev:buffer("float", n, { host = hy })
local ev = prog.saxpy(2.5, x, y):run({ n })
local got = y:read(nil, { wait = { ev } }):wait()
print(("   %d elements in %.1f us (kernel time from OpenCL profiling)"):format(n, ev.duration / 1e3))
local ok = true
for _, i in ipairs { 1, 2, 1000, n // 3, n } do
  local want = 2.5 * hx[i] + hy[i]
  ok = ok and math.abs(got[i] - want) <= 1e-6 * math.abs(want)
end
check(ok, "saxpy matches Lua")

section("a reduction: sum, min, max")
reduce.sum(x); reduce.min(x); reduce.max(x)   -- first calls build and cache the kernels
local t0 = gpu.now()
local s = reduce.sum(x)
local lo, hi = reduce.min(x), reduce.max(x)
local t1 = gpu.now()
local ls, llo, lhi = 0.0, math.huge, -math.huge
for i = 1, n do
  local v = hx[i]
  ls = ls + v
  if v < llo then llo = v end
  if v > lhi then lhi = v end
end
local t2 = gpu.now()
print(("   sum %.6f  min %.6g  max %.6g"):format(s, lo, hi))
print(("   luagpu %.2f ms for all three, plain Lua %.2f ms"):format((t1 - t0) * 1e3, (t2 - t1) * 1e3))
check(math.abs(s - ls) <= 1e-5 * math.abs(ls) and lo == llo and hi == lhi, "sum, min, max match Lua")

section("a matrix multiply: C = A * B")
local M, K, N = 256, 192, 320
local ha, hb = gpu.array("float", M * K), gpu.array("float", K * N)
for i = 1, M * K do ha[i] = math.random() - 0.5 end
for i = 1, K * N do hb[i] = math.random() - 0.5 end
local A = dev:buffer("float", { M, K }, { host = ha })
local B = dev:buffer("float", { K, N }, { host = hb })
matmul(A, B):get()                       -- first call builds and caches the kernels
t0 = gpu.now()
local C, _, mevents = matmul(A, B)      -- C, the last Event, every Event it enqueued
local hc = C:get()
t1 = gpu.now()
local flops, ns = 2.0 * M * N * K, span(mevents)
print(("   %dx%dx%d in %.2f ms wall, %.2f ms on the device in %d command(s) (%.1f GFLOP/s)")
  :format(M, K, N, (t1 - t0) * 1e3, ns / 1e6, #mevents, flops / ns))
local worst = 0
for _ = 1, 64 do
  local r, c = math.random(M), math.random(N)
  local acc = 0.0
  for k = 1, K do acc = acc + ha[(r - 1) * K + k] * hb[(k - 1) * N + c] end
  worst = math.max(worst, math.abs(hc[(r - 1) * N + c] - acc) / math.max(math.abs(acc), 1e-3))
end
check(worst <= 1e-4, ("64 random entries match Lua (worst rel. error %.1e)"):format(worst))

print("\nnext: docs/TUTORIAL.md, twenty short steps; docs/API.md for the reference; " ..
      "build/luagpu for a REPL")
