-- bench/gpu/bandwidth.lua: device-to-device copy bandwidth on the default
-- device, two ways: an OpenCL copy kernel (float4 loads and stores) and
-- clEnqueueCopyBuffer (b:copy_to). Times from OpenCL profiling, median of
-- REPS runs after a warm-up; GB/s counts bytes read plus bytes written.
--   build/luagpu bench/gpu/bandwidth.lua [log2 floats = 28] [reps = 20]
-- Prints a small table, and `LUAGPU name value unit` lines for report.lua.
local gpu = rawget(_G, "gpu") or require "luagpu"
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")

local log2n = tonumber(arg and arg[1]) or 28
local reps = tonumber(arg and arg[2]) or 20
local dev = gpu.device()
local n = 1 << log2n
while n * 4 * 2 > dev.global_mem_size * 0.8 or n * 4 > dev.max_alloc_size do n = n // 2 end

local prog = dev:build [[
  kernel void copy4(global const float4 *restrict src, global float4 *restrict dst, uint n4) {
    for (uint i = get_global_id(0); i < n4; i += get_global_size(0)) dst[i] = src[i];
  }
]]

local a = dev:buffer("float4", n // 4)
local b = dev:buffer("float4", n // 4)
local init = dev:build [[
  kernel void iota4(global float4 *x) {
    uint j = 4 * get_global_id(0);
    x[get_global_id(0)] = (float4)(j % 1000, (j + 1) % 1000, (j + 2) % 1000, (j + 3) % 1000);
  }
]]
init.iota4(a):run({ n // 4 }):wait()

-- The median duration in ns of the Events of reps calls of f, after a warm-up.
local function duration_ns(f)
  f():wait()
  local t = {}
  for r = 1, reps do
    local ev = f()
    ev:wait()
    t[r] = ev.duration
  end
  return bench.median(t)
end

local group = 256
local groups = dev.compute_units * 8
local kernel_ns = duration_ns(function()
  return prog.copy4(a, b, n // 4):run({ groups * group }, { group })
end)
-- check the copy before quoting it
local got = b:sub(n // 4 - 1, n // 4):get()
for i = 1, 8 do
  assert(got[i] == (n - 8 + i - 1) % 1000, "copy kernel produced a wrong result")
end
local api_ns = duration_ns(function() return a:copy_to(b) end)

local bytes = 2.0 * n * 4
local kgbs, agbs = bytes / kernel_ns, bytes / api_ns
print(("device-to-device copy of %d MiB on %s, median of %d"):format(n * 4 >> 20, dev.name, reps))
print(("  copy kernel (float4, %d groups of %d)  %8.1f GB/s  %8.1f us"):format(groups, group, kgbs, kernel_ns / 1e3))
print(("  clEnqueueCopyBuffer (b:copy_to)         %8.1f GB/s  %8.1f us"):format(agbs, api_ns / 1e3))
print(("LUAGPU copy_kernel_gbs %.1f GB/s"):format(kgbs))
print(("LUAGPU copy_buffer_gbs %.1f GB/s"):format(agbs))
