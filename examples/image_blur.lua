-- image_blur.lua: a Gaussian blur through an image and a sampler. The PGM
-- becomes an "r"/"unorm_int8" image (read_imagef gives 0..1), a sampler
-- with clamp_to_edge handles the borders (no index arithmetic in the
-- kernel), and the result, written to a float image, is checked against the
-- same blur in plain Lua.
--   build/luagpu examples/image_blur.lua [IN.pgm [OUT.pgm] [SIGMA]]
local gpu = gpu or require "luagpu"

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local input = arg and arg[1] or here .. "/data/small.pgm"
local output = arg and arg[2]
local sigma = tonumber(arg and arg[3]) or 1.0
local R = math.max(1, math.ceil(2 * sigma))

-- Reads a binary PGM (P5) of 8-bit samples: width, height, samples (a string).
local function read_pgm(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  local pos, fields = 1, {}
  while #fields < 4 do
    local s, e, tok = data:find("^%s*(%S+)", pos)
    assert(s, path .. ": not a PGM file")
    if tok:sub(1, 1) == "#" then e = data:find("\n", s) or #data
    else fields[#fields + 1] = tok end
    pos = e + 1
  end
  assert(fields[1] == "P5" and fields[4] == "255", path .. ": only 8-bit binary PGM (P5)")
  local w, h = tonumber(fields[2]), tonumber(fields[3])
  local samples = data:sub(pos + 1, pos + w * h)
  assert(#samples == w * h, path .. ": the file is cut short")
  return w, h, samples
end

local dev = gpu.device()
if not dev.image_support then
  print(dev.name .. " has no image support: nothing to do")
  return
end
local w, h, samples = read_pgm(input)
print(string.format("%s: %d x %d; Gaussian blur, sigma %g (a %d x %d stencil)", input, w, h,
                    sigma, 2 * R + 1, 2 * R + 1))

-- the weights, normalized, shared by the kernel (as defines) and Lua
local weights, total = {}, 0
for d = -R, R do
  weights[d] = math.exp(-d * d / (2 * sigma * sigma))
  total = total + weights[d]
end
for d = -R, R do weights[d] = weights[d] / total end
local wlist = {}
for d = -R, R do wlist[#wlist + 1] = string.format("%.9ef", weights[d]) end

local pixels = gpu.array("uchar", w * h)
for i = 1, w * h do pixels[i] = samples:byte(i) end
local src = dev:image({order = "r", type = "unorm_int8"}, {w, h}, {host = pixels, access = "in"})
local dst = dev:image({order = "r", type = "float"}, {w, h}, {access = "out"})
local sampler = dev:sampler{normalized = false, address = "clamp_to_edge", filter = "nearest"}

local prog = dev:build("#define R " .. R .. "\nconstant float W[] = {" .. table.concat(wlist, ", ")
                      .. "};\n" .. [[
kernel void gauss(read_only image2d_t src, write_only image2d_t dst, sampler_t s) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  float acc = 0.0f;
  for (int dy = -R; dy <= R; dy++)
    for (int dx = -R; dx <= R; dx++)
      acc += W[dx + R] * W[dy + R] * read_imagef(src, s, p + (int2)(dx, dy)).x;
  write_imagef(dst, p, (float4)(acc, 0.0f, 0.0f, 1.0f));
}]])

local t0 = gpu.now()
prog.gauss(src, dst, sampler):run({w, h})
local got = dst:read():wait()
print(string.format("blurred on %s in %.1f ms", dev.name, (gpu.now() - t0) * 1e3))

-- the same in plain Lua, edges clamped as the sampler does
local function at(x, y)
  x = x < 1 and 1 or x > w and w or x
  y = y < 1 and 1 or y > h and h or y
  return samples:byte((y - 1) * w + x) / 255
end
local worst = 0
for y = 1, h do
  for x = 1, w do
    local acc = 0
    for dy = -R, R do
      local wy = weights[dy]
      for dx = -R, R do acc = acc + weights[dx] * wy * at(x + dx, y + dy) end
    end
    local diff = math.abs(acc - got[(y - 1) * w + x])
    if diff > worst then worst = diff end
  end
end
print(string.format("matches the plain-Lua blur (worst difference %.2g)  %s", worst,
                    worst < 1e-4 and "ok" or "MISMATCH"))
if output then
  local bytes = {}
  for i = 1, w * h do bytes[i] = string.char(math.floor(got[i] * 255 + 0.5)) end
  local f = assert(io.open(output, "wb"))
  f:write(string.format("P5\n%d %d\n255\n", w, h), table.concat(bytes))
  f:close()
  print("wrote " .. output)
end
if worst >= 1e-4 then os.exit(1) end
