-- bench/gpu/gather_check.lua: gathers along the last dim on the device
-- against the host (the local-memory row kernels' every form: scalar rows,
-- four positions a work-item with rows read one or four at a time, int
-- and long positions). A check for the GPU machines, where a misaligned
-- vector access faults (PoCL's CPU device forgives it): prints each case
-- and the count of wrong elements among those sampled.
--   build/luagpu bench/gpu/gather_check.lua
local gpu = rawget(_G, "gpu") or require "luagpu"
local dev = gpu.device()
local n = 4096
local S = dev:rand("float", {n, n}, 1):eval()
local D = dev:rand("double", {64, 3000}, 4):eval()
local function pos(shape, hi, seed)
  return ((dev:rand("float", shape, seed) * hi):floor():astype("long") + 1):eval()
end
local cases = {
  {"rows of 256, 4 x 256", function() return dev:rand("float", {4, 256}, 3):eval(), pos({4, 256}, 256, 2) end},
  {"scalar rows (m = 4095)", function() return S, pos({n, 4095}, n, 2) end},
  {"4 a work-item, reversed rows", function() return S:flip(2), pos({n, n}, n, 2) end},
  {"4 a work-item, rows by 4", function() return S, pos({n, n}, n, 2) end},
  {"int positions", function() return S, pos({n, n}, n, 2):astype("int"):eval() end},
  {"double rows of 3000, 3 dims", function()
     return D:reshape{8, 8, 3000}, pos({8, 8, 1000}, 3000, 5) end},
}
local failed = 0
for _, c in ipairs(cases) do
  local ok, why = pcall(function()
    local x, g = c[2]()
    local r = x:gather(#x.shape, g)
    local hx, hg, hr = x:contiguous():get(), g:get(), r:get()
    local cols, m = x.shape[#x.shape], g.shape[#g.shape]
    local rows, wrong = #hr // m, 0
    for i = 0, rows - 1, 13 do
      for j = 0, m - 1, 7 do
        if hr[i * m + j + 1] ~= hx[i * cols + hg[i * m + j + 1]] then wrong = wrong + 1 end
      end
    end
    return wrong
  end)
  if not ok or why ~= 0 then failed = failed + 1 end
  print(("%-32s %s"):format(c[1], ok and ("wrong " .. why) or ("FAILED " .. tostring(why))))
end
print(failed == 0 and "all equal" or (failed .. " cases failed"))
