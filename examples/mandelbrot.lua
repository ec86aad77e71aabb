-- examples/mandelbrot.lua: the Mandelbrot set with tensors, no kernel
-- written by hand.
--
--   build/luagpu examples/mandelbrot.lua [WIDTH HEIGHT ITERATIONS [OUT.png]]
--
-- The grid of points c = x + iy is two arange vectors broadcast against
-- each other (a row of x, a column of y): no Lua loop builds it. Each
-- iteration z = z^2 + c is two fused kernels (one per part of z), and the
-- escape count is one more: comparisons give 0/1 masks that add up.
-- Checked against the same iteration in plain Lua. The escape counts are
-- drawn as characters, and with gpu.show as a picture: written to OUT.png
-- when given (nothing is written without it; in a notebook it shows inline).
local gpu = rawget(_G, "gpu") or require "luagpu"

local W = tonumber(arg and arg[1]) or 72
local H = tonumber(arg and arg[2]) or 28
local N = tonumber(arg and arg[3]) or 40
local dev = gpu.device()
print(tostring(dev))

local x0, x1, y0, y1 = -2.2, 0.8, -1.2, 1.2
local cr = (dev:arange("float", 0, W - 1) * ((x1 - x0) / (W - 1)) + x0):reshape{1, W}
local ci = (dev:arange("float", 0, H - 1) * ((y1 - y0) / (H - 1)) + y0):reshape{H, 1}

local zr, zi = dev:tensor("float", {H, W}), dev:tensor("float", {H, W})
local count = dev:tensor("int", {H, W})
for _ = 1, N do
  -- both right-hand sides read the old zr and zi
  zr, zi = (zr * zr - zi * zi + cr):eval(), (zr * zi * 2 + ci):eval()
  count = (count + (zr * zr + zi * zi):le(4)):eval()
end

local counts = count:get()
if gpu.show(count, arg and arg[4]) then print("wrote " .. arg[4]) end
local chars = " .:-=+*#%@"
for r = 1, H do
  local line = {}
  for c = 1, W do
    local n = counts[(r - 1) * W + c]
    line[c] = n == N and "@" or chars:sub(n * 9 // N + 1, n * 9 // N + 1)
  end
  print(table.concat(line))
end

-- the same in plain Lua (doubles: points on the edge of escaping may differ)
local differ = 0
for r = 1, H do
  local y = y0 + (r - 1) * ((y1 - y0) / (H - 1))
  for c = 1, W do
    local x = x0 + (c - 1) * ((x1 - x0) / (W - 1))
    local a, b, n = 0, 0, 0
    for _ = 1, N do
      a, b = a * a - b * b + x, 2 * a * b + y
      if a * a + b * b <= 4 then n = n + 1 end
    end
    if n ~= counts[(r - 1) * W + c] then differ = differ + 1 end
  end
end
local ok = differ <= W * H // 100
print(("%d x %d points, %d iterations: %d differ from plain Lua (float rounding) %s"):format(
  W, H, N, differ, ok and "ok" or "MISMATCH"))
if not ok then os.exit(1) end
