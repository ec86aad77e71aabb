-- make_small_pgm.lua: writes small.pgm, the test picture of blur.lua: a
-- 256 x 192 8-bit grey image (binary PGM, P5) of discs, stripes and a
-- checkerboard over a gradient, with a little deterministic noise.
--   lua5.4 examples/data/make_small_pgm.lua [PATH]
local path = arg and arg[1] or (arg and arg[0] or ""):gsub("[^/]*$", "") .. "small.pgm"
local w, h = 256, 192

local seed = 12345
local function noise()            -- a small LCG: the same picture every time
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % 17 - 8
end

local bytes = {}
for y = 0, h - 1 do
  for x = 0, w - 1 do
    local v = 40 + x * 120 // w + y * 60 // h                  -- gradient
    local function disc(cx, cy, r) return (x - cx) ^ 2 + (y - cy) ^ 2 <= r * r end
    if disc(64, 64, 40) then v = 230 end
    if disc(180, 120, 50) then v = 20 end
    if disc(180, 120, 25) then v = 200 end
    if x >= 16 and x < 112 and y >= 128 and y < 176 then       -- checkerboard
      v = ((x // 8 + y // 8) % 2 == 0) and 250 or 10
    end
    if y >= 8 and y < 24 and x >= 128 then v = (x // 4) % 2 == 0 and 255 or 0 end  -- stripes
    v = math.max(0, math.min(255, v + noise()))
    bytes[#bytes + 1] = string.char(v)
  end
end

local f = assert(io.open(path, "wb"))
f:write(string.format("P5\n# luagpu test picture\n%d %d\n255\n", w, h), table.concat(bytes))
f:close()
print("wrote " .. path)
