-- luagpu.matmul.variant_tiled: matmul's "tiled" variant (kernels/
-- matmul_tiled.cl): the textbook TS x TS tiles in local memory, one work-
-- item per element of C. The contract of variant_naive.lua.

local B = require "luagpu.matmul.common"
local naive = require "luagpu.matmul.variant_naive"

local V = {name = "tiled", files = {"matmul_tiled.cl"},
           shape = naive.shape, launchers = {tiled = naive.launchers.naive}}

function V.check(p, d, size)
  local ts = B.int(p, "tiled", "TS")
  d.TS = ts
  return {ts, ts}, (2 * ts * ts + ts) * size
end

return V
