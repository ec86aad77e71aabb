-- bench/gpu/probe_ops.lua: the tensor ops that bench/gpu/timeline_probe.lua
-- and host_profile.lua time (issue 29's slow rows), on their inputs:
--   local ops = dofile(dir .. "probe_ops.lua")(gpu, dev [, big])
-- returns {name = function () -> result}; big: x24's element count
-- (default 2^24).
return function(gpu, dev, big)
  local x24 = dev:rand("float", {big or 1 << 24}, 1):eval()
  local u20 = (dev:rand("float", {1 << 20}, 25) * 1000):floor():astype("int"):eval()
  local M = dev:rand("float", {4096, 4096}, 3):eval()
  local X = dev:rand("float", {64, 256, 256}, 4):eval()
  local Y = dev:rand("float", {64, 256, 256}, 5):eval()
  return {
    cumsum = function() return x24:cumsum() end,
    unique = function() return (u20:unique()) end,
    cat = function() return gpu.cat({x24, x24, x24}) end,
    bmm = function() return X:mm(Y) end,
    argmax2 = function() return M:argmax(2) end,
    sort = function() return (x24:sort()) end,
    argsort = function() return (x24:argsort()) end,
  }
end
