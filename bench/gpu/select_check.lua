-- bench/gpu/select_check.lua: the tiled selections' results on a GPU (where
-- no busted runs) against Lua: x:masked_select(m), m:nonzero() and
-- x:unique() for lengths around the tiles' edges and large ones, masks of
-- several densities and types, values of several types. Prints
-- "select_check: N cases, all equal" or the first difference, and exits 1
-- on one.   build/luagpu bench/gpu/select_check.lua
local gpu = require "luagpu"
local compact = require "luagpu.algo.compact"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local cases = 0
local function fail(fmt, ...)
  io.stderr:write(("select_check: " .. fmt .. "\n"):format(...))
  os.exit(1)
end
math.randomseed(2911)
local TYPES = {"float", "int", "uchar", "long"}
if dev.fp64 then TYPES[#TYPES + 1] = "double" end
for _, t in ipairs(TYPES) do
  local tile = compact.tile_size(dev, t)
  for _, n in ipairs {1, 7, tile - 1, tile, tile + 1, 5 * tile + 3, 100003, 1000003} do
    for _, density in ipairs {0, 1, 0.01, 0.5} do
      local hx, hm = {}, {}
      for i = 1, n do
        hx[i] = t == "uchar" and math.random(0, 255) or math.random(-100000, 100000)
        hm[i] = math.random() < density and math.random(1, 9) or 0
      end
      local x = dev:tensor(t, {n}, hx)
      local m = dev:tensor("int", {n}, hm)
      local got, pos = x:masked_select(m):totable(), m:nonzero():totable()
      local j = 0
      for i = 1, n do
        if hm[i] ~= 0 then
          j = j + 1
          if got[j] ~= hx[i] then fail("masked_select %s n=%d: [%d] = %s, want %s", t, n, j, tostring(got[j]), hx[i]) end
          if pos[j][1] ~= i then fail("nonzero n=%d: [%d] = %s, want %d", n, j, tostring(pos[j][1]), i) end
        end
      end
      if #got ~= j or #pos ~= j then fail("%s n=%d: %d and %d kept, want %d", t, n, #got, #pos, j) end
      cases = cases + 1
    end
    -- unique: runs across the tiles
    local hv = {}
    for i = 1, n do hv[i] = math.random(0, math.min(255, math.max(1, n // 37))) end
    local v, c = dev:tensor(t, {n}, hv):unique()
    local count = {}
    for i = 1, n do count[hv[i]] = (count[hv[i]] or 0) + 1 end
    local keys = {}
    for k in pairs(count) do keys[#keys + 1] = k end
    table.sort(keys)
    local gv, gc = v:totable(), c:totable()
    if #gv ~= #keys then fail("unique %s n=%d: %d values, want %d", t, n, #gv, #keys) end
    for i, k in ipairs(keys) do
      if gv[i] ~= k or gc[i] ~= count[k] then
        fail("unique %s n=%d: [%d] = %s x %s, want %s x %d", t, n, i, tostring(gv[i]), tostring(gc[i]), k, count[k])
      end
    end
    cases = cases + 1
  end
end
print(("select_check: %d cases, all equal"):format(cases))
