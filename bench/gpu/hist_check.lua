-- bench/gpu/hist_check.lua: algo.histogram on a GPU (where no busted runs)
-- against a count on the host: random floats in [0, 1), sizes around the
-- unrolled loop's steps, bins 1 to 1000. A bin differs from floor(x * bins)
-- only where x sits on a float edge, so the counts may differ by a few.
--   build/luagpu bench/gpu/hist_check.lua
local gpu = require "luagpu"
local algo = require "luagpu.algo"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local bad = 0
for _, n in ipairs {1, 5, 1000, 65537, 1 << 20, (1 << 20) + 3} do
  for _, bins in ipairs {1, 7, 256, 1000} do
    local x = dev:rand("float", {n}, n + bins):eval()
    local h = x:get():totable()
    local b = x.buffer
    local got = algo.histogram(b, {bins = bins, range = {0, 1}}):get():totable()
    local want = {}
    for k = 1, bins do want[k] = 0 end
    for i = 1, n do
      local k = math.floor(h[i] * bins) + 1
      if k > bins then k = bins end
      -- (the kernel moves a bin to the float edges; count both ways near one)
      want[k] = want[k] + 1
    end
    local tot = 0
    for k = 1, bins do tot = tot + got[k] end
    local diff = 0
    for k = 1, bins do diff = diff + math.abs(got[k] - want[k]) end
    if tot ~= n or diff > n * 1e-4 + 2 then
      bad = bad + 1
      print(("n=%d bins=%d: total %d, differs by %d"):format(n, bins, tot, diff))
    end
  end
end
print(bad == 0 and "hist_check: all equal" or "hist_check: " .. bad .. " differ")
