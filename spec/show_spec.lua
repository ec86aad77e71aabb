-- gpu.show and the two C functions under it (host/png.c): the PNG files are
-- decoded by Python's zlib and a PNG unfilter written here, and compared
-- with the scaling computed in Lua; the SVG plots are parsed for their
-- shapes; writing never goes through a link or into a folder or FIFO.
local gpu = require "luagpu"
local support = require "support"
local shell_quote = support.shell_quote

-- Decodes a PNG (8-bit, any colour type, no interlace) with python3's
-- zlib: width, height, channels and the samples as a flat list.
local DECODE = [[
import sys, zlib, struct
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat = 8, b""
while pos < len(d):
    n, kind = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    assert zlib.crc32(kind + body) == struct.unpack(">I", d[pos + 8 + n:pos + 12 + n])[0]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
c = {0: 1, 4: 2, 2: 3, 6: 4}[ctype]
raw, out, prev, stride = zlib.decompress(idat), [], [0] * (w * c), w * c
for y in range(h):
    f, line = raw[y * (stride + 1)], list(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - c] if x >= c else 0
        b, cc = prev[x], prev[x - c] if x >= c else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - cc
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else cc)) & 255
    out += line
    prev = line
print(w, h, c, " ".join(map(str, out)))
]]

local tmpdir = support.tmpdir

local function decode(path)
  local script = os.tmpname()
  support.write_file(script, DECODE)
  local p = io.popen("env -u LD_PRELOAD /usr/bin/python3 " .. shell_quote(script) .. " "
                     .. shell_quote(path) .. " 2>&1")
  local out = p:read("a")
  p:close()
  os.remove(script)
  local w, h, c, rest = out:match("^(%d+) (%d+) (%d+) ?(.*)\n$")
  assert(w, out)
  local samples = {}
  for v in rest:gmatch("%d+") do samples[#samples + 1] = tonumber(v) end
  return tonumber(w), tonumber(h), tonumber(c), samples
end

describe("gpu.show", function()
  local dev = gpu.device()
  local dir

  before_each(function() dir = tmpdir() end)
  after_each(function() os.execute("rm -rf " .. shell_quote(dir)) end)

  it("writes a 2-D float tensor as a grey PNG scaled from its min to its max", function()
    local h, w = 7, 11
    local t = dev:randn("float", {h, w}, 5)
    local path = dir .. "/grey.png"
    assert.equals(path, gpu.show(t, path))
    local gw, gh, c, px = decode(path)
    assert.same({w, h, 1}, {gw, gh, c})
    local a = t:get()
    local lo, hi = math.huge, -math.huge
    for i = 1, #a do lo, hi = math.min(lo, a[i]), math.max(hi, a[i]) end
    for i = 1, #a do
      assert.equals(math.floor((a[i] - lo) * (255 / (hi - lo)) + 0.5), px[i])
    end
    assert.equals(0, math.min(table.unpack(px)))
    assert.equals(255, math.max(table.unpack(px)))
  end)

  it("writes {h, w, 3} uchar as RGB and {h, w, 4} float (0..1) as RGBA, a host array too", function()
    local vals = {}
    for i = 1, 5 * 3 * 3 do vals[i] = (i * 37) % 256 end
    local path = dir .. "/rgb.png"
    gpu.show(dev:tensor("uchar", {5, 3, 3}, vals), path)
    local w, h, c, px = decode(path)
    assert.same({3, 5, 3}, {w, h, c})
    assert.same(vals, px)
    local f = gpu.array("float", {shape = {2, 2, 4}})
    for i = 1, 16 do f[i] = (i - 4) / 8 end       -- below 0 and above 1: clamped
    gpu.show(f, path)                             -- over the old file
    w, h, c, px = decode(path)
    assert.same({2, 2, 4}, {w, h, c})
    for i = 1, 16 do
      local want = math.max(0, math.min(255, math.floor(f[i] * 255 + 0.5)))
      assert.equals(want, px[i])
    end
  end)

  it("draws a 1-D tensor as an SVG line plot, and a histogram with {kind = 'hist'}", function()
    local path = dir .. "/line.svg"
    gpu.show(dev:linspace("float", 0, 6, 50):sin(), path, {title = "a < b"})
    local svg = support.read_file(path)
    assert.matches("^<svg xmlns=\"http://www.w3.org/2000/svg\"", svg)
    local pts = svg:match('<polyline[^>]- points="([^"]*)"')
    local n = 0
    for _ in pts:gmatch("[%d.]+,[%d.]+") do n = n + 1 end
    assert.equals(50, n)
    assert.matches("a &lt; b", svg, 1, true)
    -- control characters XML refuses (NUL) are dropped from the title
    gpu.show({1, 2, 3}, path, {title = "x\0y\1z", width = 300.0, height = 200})
    svg = support.read_file(path)
    assert.is_nil(svg:find("[%z\1]"))
    assert.matches("xyz", svg, 1, true)
    assert.matches('width="300" height="200"', svg, 1, true)
    -- a histogram: bin counts add up to the count of values
    local values = {}
    for i = 1, 200 do values[i] = (i * 7919) % 101 end
    gpu.show(values, dir .. "/hist.svg", {kind = "hist", bins = 10})
    svg = support.read_file(dir .. "/hist.svg")
    local total, bars = 0, 0
    for count in svg:gmatch("<title>[^<]-: (%d+)</title>") do
      total, bars = total + tonumber(count), bars + 1
    end
    assert.equals(10, bars)
    assert.equals(200, total)
  end)

  it("without a path outside a notebook writes nothing and says so on stderr", function()
    local prog = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"
    local p = io.popen("cd " .. shell_quote(dir) .. " && " .. shell_quote(
      (prog:sub(1, 1) == "/" and "" or os.getenv("PWD") .. "/") .. prog) ..
      " -e 'gpu.show({1, 2, 3}); gpu.show(gpu.device():tensor(\"float\", {2, 2})); print(\"done\")' 2>&1; ls -A")
    local out = p:read("a")
    p:close()
    assert.equals("note: gpu.show had no path and no notebook to show in, so it wrote nothing "
                  .. "(gpu.show(x, \"out.svg\") writes a file)\ndone\n", out)
  end)

  it("never writes through a symbolic link, nor into a folder or a FIFO", function()
    local target = dir .. "/target.png"
    support.write_file(target, "keep")
    assert(os.execute("ln -s target.png " .. shell_quote(dir .. "/link.png")))
    assert(os.execute("mkfifo " .. shell_quote(dir .. "/fifo.png")))
    assert(os.execute("mkdir " .. shell_quote(dir .. "/folder.png")))
    local t = dev:tensor("float", {2, 2})
    for name, what in pairs{["link.png"] = "a symbolic link", ["fifo.png"] = "a FIFO",
                            ["folder.png"] = "a folder"} do
      local path = dir .. "/" .. name
      assert.equals(("luagpu: show: '%s' is %s; not written (give the path of a new " ..
                     "or regular file)"):format(path, what),
                    support.errmsg(gpu.show, t, path))
    end
    assert.equals("keep", support.read_file(target))
    local p = io.popen("ls -A " .. shell_quote(dir))
    assert.equals("fifo.png\nfolder.png\nlink.png\ntarget.png\n", p:read("a"))
    p:close()
  end)

  it("raises on what it cannot draw, naming it", function()
    local cases = {
      {"luagpu: show: a shape of 4 dimensions {1, 2, 3, 4}: expected 1-D (a plot), 2-D or " ..
       "{h, w, 3|4} (an image)", dev:tensor("float", {1, 2, 3, 4})},
      {"luagpu: show: a 3-D shape {2, 2, 5}: expected {h, w, 3} (RGB) or {h, w, 4} (RGBA)",
       dev:tensor("float", {2, 2, 5})},
      {"luagpu: show: an empty {0} has nothing to show", dev:tensor("float", {0})},
      {"luagpu: show: argument #1: expected a tensor, a host array or a list of numbers, got string",
       "x"},
      {"luagpu: show: argument #1: element 2 is string, expected a number", {1, "a"}},
      {"luagpu: show: 'p.svg': this picture is an image (PNG): give a path ending in .png",
       dev:tensor("float", {2, 2}), "p.svg"},
      {"luagpu: show: 'p.png': this picture is a plot (SVG): give a path ending in .svg",
       {1, 2}, "p.png"},
      {"luagpu: show: opts.kind: expected \"line\" or \"hist\", got bar", {1, 2}, {kind = "bar"}},
      -- (a NaN width raised Lua's own error; 2^40 by -5 wrote an SVG no viewer draws)
      {"luagpu: show: opts.width: expected an integer from 100 to 16384 (pixels), got nan",
       {1, 2}, {width = 0 / 0}},
      {"luagpu: show: opts.width: expected an integer from 100 to 16384 (pixels), got " ..
       tostring(2.0^40), {1, 2}, {width = 2^40}},
      {"luagpu: show: opts.height: expected an integer from 100 to 16384 (pixels), got -5",
       {1, 2}, {height = -5}},
      {"luagpu: show: argument #2: expected a path (string) or an options table, got number",
       {1, 2}, 5},
    }
    for _, c in ipairs(cases) do
      assert.equals(c[1], support.errmsg(gpu.show, c[2], c[3]))
    end
    assert.equals("luagpu: encode_png: argument #4: expected 12 bytes (2 x 2 x 3), got 3",
                  support.errmsg(gpu.encode_png, 2, 2, 3, "abc"))
    assert.equals("luagpu: encode_png: argument #3: channels 5: expected 1, 2, 3 or 4",
                  support.errmsg(gpu.encode_png, 2, 2, 5, "abc"))
    -- every argument's type, and no more of them, in luagpu's own words
    assert.equals("luagpu: encode_png: argument #1: expected an integer, got 1.5",
                  support.errmsg(gpu.encode_png, 1.5, 1, 1, "x"))
    assert.equals("luagpu: encode_png: argument #2: expected an integer, got string",
                  support.errmsg(gpu.encode_png, 1, "1", 1, "x"))
    assert.equals("luagpu: encode_png: argument #4: expected a string, got number",
                  support.errmsg(gpu.encode_png, 1, 1, 1, 7))
    assert.equals("luagpu: encode_png: argument #5: expected no more arguments, got boolean",
                  support.errmsg(gpu.encode_png, 1, 1, 1, "x", true))
    assert.equals("luagpu: write_file: argument #1: expected a string, got table",
                  support.errmsg(gpu.write_file, {}, "x"))
    assert.equals("luagpu: write_file: argument #2: expected a string, got number",
                  support.errmsg(gpu.write_file, "never-written.png", 5))
    assert.equals("luagpu: write_file: argument #3: expected no more arguments, got number",
                  support.errmsg(gpu.write_file, "never-written.png", "x", 1))
    assert.is_nil(io.open("never-written.png"))
  end)
end)
