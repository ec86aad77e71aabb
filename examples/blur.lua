-- blur.lua: a 2-D stencil through local memory, the classic tiled blur.
-- Each work-group loads its TILE x TILE pixels and a border of RADIUS
-- around them into local memory (gpu.localmem) once, then every work-item
-- averages its (2 RADIUS + 1)^2 neighbours from there, edges clamped. The
-- picture is a binary PGM (grey) or PPM (colour: the third dimension of the
-- launch is the channel), read here in Lua.
--   build/luagpu examples/blur.lua [IN.pgm|IN.ppm [OUT.png|OUT.pgm|OUT.ppm] [RADIUS]]
-- The blurred picture goes to OUT when given: a .png through gpu.show,
-- else a PGM/PPM; without OUT nothing is written (gpu.show says how to
-- write it; in a notebook it shows inline).
local gpu = gpu or require "luagpu"

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local input = arg and arg[1] or here .. "/data/small.pgm"
local radius = tonumber(arg and arg[3]) or 2
local TILE = 16

-- Reads a binary PGM (P5) or PPM (P6) of 8-bit samples: width, height,
-- channels and the samples as a string.
local function read_pnm(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  local pos, fields = 1, {}
  while #fields < 4 do
    local s, e, tok = data:find("^%s*(%S+)", pos)
    assert(s, path .. ": not a PGM/PPM file")
    if tok:sub(1, 1) == "#" then               -- a comment runs to the end of its line
      e = data:find("\n", s) or #data
    else
      fields[#fields + 1] = tok
    end
    pos = e + 1
  end
  local magic, w, h, max = fields[1], tonumber(fields[2]), tonumber(fields[3]), tonumber(fields[4])
  assert(magic == "P5" or magic == "P6", path .. ": only binary PGM (P5) and PPM (P6) are read")
  assert(max == 255, path .. ": only 8-bit samples are read")
  local channels = magic == "P6" and 3 or 1
  local samples = data:sub(pos + 1, pos + w * h * channels)  -- one whitespace after maxval
  assert(#samples == w * h * channels, path .. ": the file is cut short")
  return w, h, channels, samples
end

local function write_pnm(path, w, h, channels, samples)
  local f = assert(io.open(path, "wb"))
  f:write(string.format("%s\n%d %d\n255\n", channels == 3 and "P6" or "P5", w, h), samples)
  f:close()
end

-- host array <-> string of bytes, a chunk at a time
local function to_array(s)
  local a = gpu.array("uchar", #s)
  for i = 1, #s, 4096 do
    local chunk = {s:byte(i, math.min(i + 4095, #s))}
    for j = 1, #chunk do a[i + j - 1] = chunk[j] end
  end
  return a
end

local function to_string(a)
  local parts, n = {}, #a
  for i = 1, n, 4096 do
    local chunk = {}
    for j = i, math.min(i + 4095, n) do chunk[#chunk + 1] = a[j] end
    parts[#parts + 1] = string.char(table.unpack(chunk))
  end
  return table.concat(parts)
end

local w, h, channels, samples = read_pnm(input)
local output = arg and arg[2]
local dev = gpu.device()
print("device: " .. dev.name)
print(string.format("%s: %d x %d, %d channel%s; box blur of radius %d", input, w, h, channels,
                    channels == 1 and "" or "s", radius))

local prog = dev:build([[
#define SPAN (TILE + 2 * RADIUS)          /* the tile and its border */
__kernel void box_blur(__global const uchar *in, __global uchar *out, int w, int h,
                       __local uchar *tile) {
  int lx = get_local_id(0), ly = get_local_id(1);
  int x0 = get_group_id(0) * TILE - RADIUS, y0 = get_group_id(1) * TILE - RADIUS;
  int c = get_global_id(2), channels = get_global_size(2);
  /* the group loads SPAN x SPAN samples together, clamped to the edges */
  for (int ty = ly; ty < SPAN; ty += TILE)
    for (int tx = lx; tx < SPAN; tx += TILE) {
      int sx = clamp(x0 + tx, 0, w - 1), sy = clamp(y0 + ty, 0, h - 1);
      tile[ty * SPAN + tx] = in[(sy * w + sx) * channels + c];
    }
  barrier(CLK_LOCAL_MEM_FENCE);
  int x = get_global_id(0), y = get_global_id(1);
  if (x >= w || y >= h) return;
  int sum = 0;
  for (int dy = 0; dy <= 2 * RADIUS; dy++)
    for (int dx = 0; dx <= 2 * RADIUS; dx++)
      sum += tile[(ly + dy) * SPAN + lx + dx];
  const int area = (2 * RADIUS + 1) * (2 * RADIUS + 1);
  out[(y * w + x) * channels + c] = (uchar)((sum + area / 2) / area);
}]], {defines = {TILE = TILE, RADIUS = radius}})

local n = w * h * channels
local src = dev:buffer("uchar", n, {access = "in"})
local dst = dev:buffer("uchar", n, {access = "out"})
src:write(to_array(samples))
local span = TILE + 2 * radius
local global = {(w + TILE - 1) // TILE * TILE, (h + TILE - 1) // TILE * TILE, channels}
local ev = prog.box_blur(src, dst, w, h, gpu.localmem("uchar", span * span))
  :run(global, {TILE, TILE, 1})
local blurred = dst:read():wait()
print(string.format("blurred in %.3f ms on the device", ev.duration * 1e-6))
if output and not output:lower():match("%.png$") then
  write_pnm(output, w, h, channels, to_string(blurred))
  print("wrote " .. output)
else                                     -- a PNG, or inline in a notebook
  local picture = dev:tensor("uchar", channels == 3 and {h, w, 3} or {h, w}, blurred)
  if gpu.show(picture, output) then print("wrote " .. output) end
end

-- check every sample against the same filter in Lua
local area = (2 * radius + 1) ^ 2 // 1
local function at(x, y, c)
  x = math.max(0, math.min(w - 1, x))
  y = math.max(0, math.min(h - 1, y))
  return samples:byte((y * w + x) * channels + c + 1)
end
for y = 0, h - 1 do
  for x = 0, w - 1 do
    for c = 0, channels - 1 do
      local sum = 0
      for dy = -radius, radius do
        for dx = -radius, radius do sum = sum + at(x + dx, y + dy, c) end
      end
      local want = (sum + area // 2) // area
      local got = blurred[(y * w + x) * channels + c + 1]
      assert(got == want, string.format("pixel (%d, %d) channel %d: got %d, want %d",
                                        x, y, c, got, want))
    end
  end
end
print("checked against Lua: every sample matches")
print("ok")
