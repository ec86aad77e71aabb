-- luagpu.show: gpu.show(x [, path] [, opts]) draws a tensor, host array or
-- Lua list. A 2-D one is a grey-scale image scaled from its min (black) to
-- its max (white), except uchar, shown as is; a {h, w, 3} or {h, w, 4} one is RGB(A) (integer types
-- 0..255, floating ones 0..1, both clamped); both are written as PNG
-- (host/png.c, through libpng). A 1-D one is a line plot, or a histogram
-- with {kind = "hist"}, written as SVG. With a path the file is written
-- (gpu.write_file: never through a link or into something not a regular
-- file); without one, in a notebook (luagpu.notebook) the picture shows
-- inline, and elsewhere nothing is written and a notice on stderr says to
-- give a path. render(x [, opts]) returns the bytes and their MIME type.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local floor, huge, ceil = math.floor, math.huge, math.ceil
local concat, schar, unpack = table.concat, string.char, table.unpack
local fmt = string.format

local M = {}

local INTEGER = {char = true, uchar = true, short = true, ushort = true, int = true,
                 uint = true, long = true, ulong = true}

local function fail(msg, ...)
  H.fail("show", msg, ...)
end

-- The values of x as {n = count, get = function(i), shape = {...}, type =}.
local function values_of(x)
  local kind = gpu.type(x)
  if kind == "Tensor" then
    local a = x:get()
    return a, a.shape, a.type
  elseif kind == "Array" then
    if #x.type > 0 and x.type:match("%d$") then
      fail("a host array of %s: expected a scalar element type", x.type)
    end
    return x, x.shape, x.type
  elseif type(x) == "table" then
    for i = 1, #x do
      if type(x[i]) ~= "number" then fail("argument #1: element %d is %s, expected a number", i, type(x[i])) end
    end
    return x, {#x}, "double"
  end
  fail("argument #1: expected a tensor, a host array or a list of numbers, got %s",
       kind or type(x))
end

local function shape_text(shape)
  local t = {}
  for i, s in ipairs(shape) do t[i] = tostring(s) end
  return "{" .. concat(t, ", ") .. "}"
end

-- Bytes from a list of integers 0..255, in pieces that unpack takes.
local function bytes(list)
  local parts, n = {}, #list
  for i = 1, n, 4096 do
    parts[#parts + 1] = schar(unpack(list, i, math.min(i + 4095, n)))
  end
  return concat(parts)
end

local function minmax(a, n)
  local lo, hi = huge, -huge
  for i = 1, n do
    local v = a[i]
    if v == v and v ~= huge and v ~= -huge then
      if v < lo then lo = v end
      if v > hi then hi = v end
    end
  end
  return lo, hi
end

-- A PNG of a {h, w} (grey, min..max) or {h, w, c} (c: 1, 3, 4) array.
local function image(a, shape, t)
  local h, w, c = shape[1], shape[2], shape[3] or 1
  if c ~= 1 and c ~= 3 and c ~= 4 then
    fail("a 3-D shape %s: expected {h, w, 3} (RGB) or {h, w, 4} (RGBA)", shape_text(shape))
  end
  local n, px = h * w * c, {}
  if c == 1 and t == "uchar" then
    for i = 1, n do px[i] = a[i] end
  elseif c == 1 then
    local lo, hi = minmax(a, n)
    local scale = hi > lo and 255 / (hi - lo) or 0
    for i = 1, n do
      local v = a[i]
      px[i] = (v == v and v > -huge and v < huge) and floor((v - lo) * scale + 0.5) or 0
      if px[i] > 255 then px[i] = 255 elseif px[i] < 0 then px[i] = 0 end
    end
  else
    local mul = INTEGER[t] and 1 or 255
    for i = 1, n do
      local v = a[i]
      v = v == v and floor(v * mul + 0.5) or 0
      px[i] = v < 0 and 0 or v > 255 and 255 or v
    end
  end
  return gpu.encode_png(w, h, c, bytes(px)), "image/png"
end

-- s for XML text: & < > " escaped, and the control characters XML refuses
-- (NUL among them) dropped
local function esc(s)
  return (tostring(s):gsub("[%z\1-\8\11\12\14-\31]", "")
          :gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end

local function num(v)
  return fmt("%.4g", v)
end

-- An SVG line plot or histogram of n values.
local function size_opt(opts, key, default)
  local v = opts[key]
  if v == nil then return default end
  if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) or
     v < 100 or v > 16384 then
    fail("opts.%s: expected an integer from 100 to 16384 (pixels), got %s", key,
         v ~= v and "nan" or tostring(v))
  end
  return math.tointeger(v)
end

local function plot(a, n, opts)
  local W, H = size_opt(opts, "width", 640), size_opt(opts, "height", 320)
  local L, R, T, B = 60, 16, opts.title and 28 or 12, 28
  local pw, ph = W - L - R, H - T - B
  local out = {fmt('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                   .. 'viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">', W, H, W, H),
               fmt('<rect width="%d" height="%d" fill="white"/>', W, H)}
  if opts.title then
    out[#out + 1] = fmt('<text x="%d" y="18" text-anchor="middle" font-size="13">%s</text>',
                        W // 2, esc(opts.title))
  end
  local lo, hi = minmax(a, n)
  if lo > hi then lo, hi = 0, 1 end
  local xlo, xhi, ylo, yhi
  local kind = opts.kind or "line"
  if kind == "hist" then
    local bins = opts.bins or math.max(1, math.min(64, ceil(math.sqrt(n))))
    if math.type(bins) ~= "integer" or bins < 1 or bins > 10000 then
      fail("opts.bins: expected an integer 1..10000, got %s", tostring(opts.bins))
    end
    local width = hi > lo and (hi - lo) / bins or 1
    local counts, top = {}, 0
    for b = 1, bins do counts[b] = 0 end
    for i = 1, n do
      local v = a[i]
      if v == v and v > -huge and v < huge then
        local b = math.min(bins, floor((v - lo) / width) + 1)
        counts[b] = counts[b] + 1
        if counts[b] > top then top = counts[b] end
      end
    end
    xlo, xhi, ylo, yhi = lo, lo + width * bins, 0, math.max(top, 1)
    for b = 1, bins do
      local bh = counts[b] / yhi * ph
      out[#out + 1] = fmt('<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#4878a8" '
                          .. 'stroke="white" stroke-width="0.5"><title>%s..%s: %d</title></rect>',
                          L + (b - 1) / bins * pw, T + ph - bh, pw / bins, bh,
                          num(lo + (b - 1) * width), num(lo + b * width), counts[b])
    end
  elseif kind == "line" then
    xlo, xhi, ylo, yhi = 1, math.max(n, 2), lo, hi > lo and hi or lo + 1
    local pts = {}
    for i = 1, n do
      local v = a[i]
      if v == v and v > -huge and v < huge then
        pts[#pts + 1] = fmt("%.2f,%.2f", L + (i - xlo) / (xhi - xlo) * pw,
                            T + ph - (v - ylo) / (yhi - ylo) * ph)
      end
    end
    out[#out + 1] = fmt('<polyline fill="none" stroke="#4878a8" stroke-width="1.5" points="%s"/>',
                        concat(pts, " "))
  else
    fail("opts.kind: expected \"line\" or \"hist\", got %s", tostring(kind))
  end
  out[#out + 1] = fmt('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>',
                      L, T, pw, ph)
  out[#out + 1] = fmt('<text x="%d" y="%d" text-anchor="end">%s</text>', L - 4, T + 4, num(yhi))
  out[#out + 1] = fmt('<text x="%d" y="%d" text-anchor="end">%s</text>', L - 4, T + ph, num(ylo))
  out[#out + 1] = fmt('<text x="%d" y="%d">%s</text>', L, H - 10, num(xlo))
  out[#out + 1] = fmt('<text x="%d" y="%d" text-anchor="end">%s</text>', L + pw, H - 10, num(xhi))
  out[#out + 1] = "</svg>\n"
  return concat(out, "\n"), "image/svg+xml"
end

-- The picture of x: its bytes and MIME type ("image/png" or "image/svg+xml").
function M.render(x, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("argument #2: expected an options table, got %s", type(opts)) end
  local a, shape, t = values_of(x)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  if n == 0 then fail("an empty %s has nothing to show", shape_text(shape)) end
  if #shape == 1 then
    return plot(a, n, opts)
  elseif #shape == 2 or #shape == 3 then
    if opts.kind == "line" or opts.kind == "hist" then
      return plot(a, n, opts)
    end
    return image(a, shape, t)
  end
  fail("a shape of %d dimensions %s: expected 1-D (a plot), 2-D or {h, w, 3|4} (an image)",
       #shape, shape_text(shape))
end

local display       -- set by a notebook: function(bytes, mime)
local noticed = false

-- Where a picture goes when gpu.show has no path: fn(bytes, mime), or nil.
function M.set_display(fn)
  display = fn
end

local EXT = {["image/png"] = "png", ["image/svg+xml"] = "svg"}

-- gpu.show(x [, path] [, opts]): the path written, or nothing.
function M.show(x, path, opts)
  if type(path) == "table" and opts == nil then path, opts = nil, path end
  if path ~= nil and type(path) ~= "string" then
    fail("argument #2: expected a path (string) or an options table, got %s", type(path))
  end
  local data, mime = M.render(x, opts)
  if path then
    local ext = path:match("%.(%w+)$")
    if ext == nil or ext:lower() ~= EXT[mime] then
      fail("'%s': this picture is %s: give a path ending in .%s", path,
           mime == "image/png" and "an image (PNG)" or "a plot (SVG)", EXT[mime])
    end
    local ok, err = pcall(gpu.write_file, path, data)
    if not ok then fail("%s", (tostring(err):gsub("^.-luagpu: write_file: ", ""))) end
    return path
  end
  if display then
    display(data, mime)
  elseif not noticed then
    noticed = true
    io.stderr:write("note: gpu.show had no path and no notebook to show in, so it wrote "
                    .. "nothing (gpu.show(x, \"out." .. EXT[mime] .. "\") writes a file)\n")
  end
end

return M
