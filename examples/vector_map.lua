-- vector_map.lua: a map over float4 pixels, the classic first kernel.
-- Turns an RGBA image (one float4 a pixel) to grey with the usual luma
-- weights, keeping alpha, and checks every pixel against Lua.
--   build/luagpu examples/vector_map.lua [WIDTH HEIGHT]
local gpu = gpu or require "luagpu"

local width = tonumber(arg and arg[1]) or 640
local height = tonumber(arg and arg[2]) or 480
local n = width * height
local dev = gpu.device()
print("device: " .. dev.name)

local prog = dev:build[[
__kernel void grey(__global const float4 *in, __global float4 *out, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  float4 p = in[i];
  float y = dot(p.xyz, (float3)(0.299f, 0.587f, 0.114f));
  out[i] = (float4)(y, y, y, p.w);
}]]

-- a test picture: colour gradients, alpha falling off from the centre
local img = gpu.array("float4", n)
for y = 0, height - 1 do
  for x = 0, width - 1 do
    local i = 4 * (y * width + x)
    local dx, dy = x / width - 0.5, y / height - 0.5
    img[i + 1] = x / (width - 1)
    img[i + 2] = y / (height - 1)
    img[i + 3] = (x + y) % 256 / 255
    img[i + 4] = math.max(0, 1 - 2 * math.sqrt(dx * dx + dy * dy))
  end
end

local src = dev:buffer("float4", n, {access = "in"})
local dst = dev:buffer("float4", n, {access = "out"})
src:write(img)
-- round the global size up to a multiple of 64: the kernel skips the rest
local global = (n + 63) // 64 * 64
local ev = prog.grey(src, dst, n):run({global}, {64})
local out = dst:read():wait()
print(string.format("%d x %d pixels (%d float4) in %.3f ms on the device",
                    width, height, n, ev.duration * 1e-6))

-- check against Lua, in single precision's tolerance
local worst = 0
for i = 0, n - 1 do
  local r, g, b, a = img[4 * i + 1], img[4 * i + 2], img[4 * i + 3], img[4 * i + 4]
  local y = 0.299 * r + 0.587 * g + 0.114 * b
  for c = 1, 3 do worst = math.max(worst, math.abs(out[4 * i + c] - y)) end
  assert(out[4 * i + 4] == a, "alpha changed at pixel " .. i + 1)
end
assert(worst < 1e-5, "grey differs from Lua by " .. worst)
print(string.format("checked against Lua: largest difference %.2g", worst))
print("ok")
