-- examples/monte_carlo.lua: pi by Monte Carlo, with tensors.
--
--   build/luagpu examples/monte_carlo.lua [N]
--
-- N random points in the unit square (dev:rand: Philox-4x32-10, the same
-- numbers for a seed on every device); the fraction inside the quarter
-- circle is pi/4. The test and the count are one fused kernel and one
-- reduction: x*x + y*y <= 1 gives a 0/1 mask, its sum the count.
local gpu = rawget(_G, "gpu") or require "luagpu"

local n = tonumber(arg and arg[1]) or (1 << 22)
local dev = gpu.device()
print(tostring(dev))

local t0 = gpu.now()
local x = dev:rand("float", {n}, 2024)
local y = dev:rand("float", {n}, 2025)
local inside = (x * x + y * y):le(1):sum()
local pi = 4 * inside / n
local t1 = gpu.now()

-- the error of the estimate is about 1.64 / sqrt(n) (its standard deviation)
local sigma = 4 * math.sqrt(math.pi / 4 * (1 - math.pi / 4) / n)
local ok = math.abs(pi - math.pi) < 5 * sigma
print(("%d points: pi ~ %.6f (error %.2e, %.1f sigma) in %.1f ms %s"):format(n, pi,
  pi - math.pi, math.abs(pi - math.pi) / sigma, (t1 - t0) * 1e3, ok and "ok" or "MISMATCH"))

-- the same by the mean of a 0/1 mask, along rows this time
local rows = (x * x + y * y):le(1):astype("float"):reshape{1024, -1}:mean(2)
local pi2 = 4 * rows:mean()
print(("by rows of %d: pi ~ %.6f %s"):format(n // 1024, pi2,
  math.abs(pi2 - pi) < 1e-4 and "ok" or "MISMATCH"))
if not ok or math.abs(pi2 - pi) >= 1e-4 then os.exit(1) end
