-- bench/gpu/flag_probe.lua: ways to get a kernel's 16-byte flag into the
-- host's hands after the kernel (issue 32: the gathers read one per call).
-- Each row: a tiny kernel that may write the flag, then the way to see it;
-- medians of REPS, microseconds. The "mapped once" rows check that every
-- value the kernel wrote is the one the host read (a row whose count of
-- wrong reads is not 0 cannot be used on that platform).
--   build/luagpu bench/gpu/flag_probe.lua [REPS]
local gpu = rawget(_G, "gpu") or require "luagpu"
local reps = tonumber(arg and arg[1]) or 201
local dev = gpu.device()
local now = gpu.now
local function median(t) table.sort(t); return t[(#t + 1) // 2] end

print(("device: %s; svm_capabilities %s, host_unified_memory %s"):format(dev.name,
      tostring(dev:info("svm_capabilities")), tostring(dev:info("host_unified_memory"))))

local function timed(name, f)
  for i = 1, 5 do f(i) end
  dev:finish()
  local t, wrong = {}, 0
  for r = 1, reps do
    local t0 = now()
    local ok = f(r + 100)
    t[r] = now() - t0
    if ok == false then wrong = wrong + 1 end
  end
  print(("%-44s %8.1f us   wrong reads %d of %d"):format(name, median(t) * 1e6, wrong, reps))
end

local k = dev:build([[__kernel void tiny(__global long *b, long v) {
  if (get_global_id(0) == 0) b[1] = v; }]]).tiny
local flag = dev:buffer("long", 2)
local pinned = dev:buffer("long", 2, {pinned = true})
local NO = gpu.NO_EVENT or false

timed("kernel (no event), finish", function(v) k(flag, v):run({64}, {64}); dev:finish() end)
timed("kernel, event wait", function(v) k(flag, v):run({64}, {64}):wait() end)
timed("kernel, 16-byte get", function(v)
  k(flag, v):run({64}, {64}); return flag:get()[2] == v end)
timed("kernel, read():wait()", function(v)
  k(flag, v):run({64}, {64}); return flag:read():wait()[2] == v end)
timed("kernel on pinned, 16-byte get", function(v)
  k(pinned, v):run({64}, {64}); return pinned:get()[2] == v end)
timed("kernel on pinned, map read + unmap", function(v)
  k(pinned, v):run({64}, {64})
  local a = pinned:map("read")
  local ok = a[2] == v
  pinned:unmap(a)
  return ok
end)
-- outside OpenCL's rules (a kernel writes a mapped buffer): only if the
-- platform keeps one copy of the pinned memory would this read right
local held = pinned:map("read_write")
timed("kernel on pinned mapped once, finish, read", function(v)
  k(pinned, v):run({64}, {64}); dev:finish(); return held[2] == v end)
pinned:unmap(held):wait()
