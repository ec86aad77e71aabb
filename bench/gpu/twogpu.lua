-- bench/gpu/twogpu.lua: the experiment of bench/c/twogpu.c through luagpu:
-- a kernel summing 2^LOG2N floats per work-item on one GPU, then on two at
-- once (one context, as luagpu makes it), wall clock, medians of REPS; then
-- reduce.sum over the same buffers, to tell luagpu's launch path from the
-- reduction's.
--   build/luagpu bench/gpu/twogpu.lua [LOG2N [REPS]]
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"
local log2n = tonumber(arg and arg[1]) or 29
local reps = tonumber(arg and arg[2]) or 21
local n = 1 << log2n
local devs = gpu.devices("gpu")
if #devs < 2 then devs = gpu.devices() end
assert(#devs >= 2, "two devices needed")
local groups = 132 * 8 * 256
local src = [[
__kernel void sum(__global const float4 *x, __global float *out, uint n4) {
  size_t i = get_global_id(0), g = get_global_size(0);
  float4 s = (float4)(0.0f);
  for (; i < n4; i += g) s += x[i];
  out[get_global_id(0)] = s.x + s.y + s.z + s.w;
}]]
local sides = {}
for i = 1, 2 do
  local d = devs[i]
  local x = d:buffer("float", n)
  local x4 = d:buffer("float4", n // 4)
  x:fill(1):wait(); x4:fill(1):wait()
  local out = d:buffer("float", groups)
  sides[i] = {dev = d, x = x, call = d:build(src).sum(x4, out, n // 4)}
end
local function median(f)
  for _ = 1, 3 do f() end
  local t = {}
  for r = 1, reps do
    local t0 = gpu.now()
    f()
    t[r] = gpu.now() - t0
  end
  table.sort(t)
  return t[(reps + 1) // 2]
end
local function launch(s, event)
  if event then s.call:run({groups}, {256}) else s.call:run({groups}, {256}, {event = false}) end
  s.dev:flush()
end
local rows = {
  {"kernel, one GPU, no Event", function() launch(sides[1]); sides[1].dev:finish() end},
  {"kernel, two GPUs, no Event", function()
    launch(sides[1]); launch(sides[2]); sides[1].dev:finish(); sides[2].dev:finish() end},
  {"kernel, one GPU, Event", function() launch(sides[1], true); sides[1].dev:finish() end},
  {"kernel, two GPUs, Events", function()
    launch(sides[1], true); launch(sides[2], true); sides[1].dev:finish(); sides[2].dev:finish() end},
  {"reduce.sum, one GPU", function() return reduce.sum(sides[1].x) end},
  {"reduce.sum({b1, b2})", function() return reduce.sum({sides[1].x, sides[2].x}) end},
}
for _, r in ipairs(rows) do
  print(("%-32s %.3f ms"):format(r[1], median(r[2]) * 1e3))
end
