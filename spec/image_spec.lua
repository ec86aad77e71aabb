-- Images and samplers (ports of PyOpenCL's test_image_2d/3d): dev:image,
-- dev:image_formats, dev:sampler, reads/writes/fills/copies with regions,
-- image<->buffer copies, images and samplers as kernel arguments with their
-- access checked; results against plain-Lua references on random data, and
-- every bad-input message. Skipped (but for its message) without images.
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local has_error = support.has_error

local R32F = {order = "r", type = "float"}
local BUILD = os.getenv("LUAGPU_BUILD") or "build"

local function random_floats(n) return support.random_floats(n, 1000, 8) end

if not dev.image_support then
  describe("images", function()
    it("raise on a device without image support", function()
      has_error("has no image support (dev.image_support is false)", dev.image, dev, R32F, {2})
    end)
  end)
  return
end

describe("dev:image", function()
  it("lists formats; a format the device lacks raises", function()
    local fm = dev:image_formats()
    assert.is_true(#fm > 0)
    local seen = false
    for _, f in ipairs(fm) do
      assert.is_string(f.order)
      assert.is_string(f.type)
      if f.order == "r" and f.type == "float" then seen = true end
    end
    assert.is_true(seen)
    has_error('luagpu: dev:image: argument #1: type: expected a channel type ("unorm_int8", '
              .. '"float", ...: see dev:image_formats()), got "foo"', dev.image, dev,
              {order = "r", type = "foo"}, {2, 2})
    has_error('luagpu: dev:image: argument #1: order: expected a channel order ("r", "rg", '
              .. '"rgba", ...), got nil', dev.image, dev, {type = "float"}, {2, 2})
    local listed = {}
    for _, f in ipairs(fm) do listed[f.order .. "/" .. f.type] = true end
    for _, o in ipairs({"luminance", "intensity", "ra", "rg"}) do
      if not listed[o .. "/int32"] then
        has_error("luagpu: dev:image: format " .. o .. "/int32 is not supported by "
                  .. dev.name .. " for 2-D images (dev:image_formats() lists those that are)",
                  dev.image, dev, {order = o, type = "int32"}, {2, 2})
        break
      end
    end
  end)

  it("writes and reads 1-, 2- and 3-D images and arrays, whole and by region", function()
    for _, case in ipairs({{{7}}, {{6, 5}}, {{4, 3, 5}}, {{6, 3}, true}, {{3, 4, 2}, true}}) do
      local size, array = case[1], case[2]
      local n = 1
      for _, s in ipairs(size) do n = n * s end
      local ref = random_floats(n)
      local im = dev:image(R32F, size, {array = array, host = ref})
      assert.same(ref, im:read():wait():totable())
      -- a random region, read and then rewritten
      local origin, region, count = {}, {}, 1
      for d = 1, #size do
        origin[d] = math.random(1, size[d])
        region[d] = math.random(1, size[d] - origin[d] + 1)
        count = count * region[d]
      end
      local want = {}
      local function each(f)
        local z1, z2 = origin[3] or 1, (origin[3] or 1) + (region[3] or 1) - 1
        local y1, y2 = origin[2] or 1, (origin[2] or 1) + (region[2] or 1) - 1
        for z = z1, z2 do
          for y = y1, y2 do
            for x = origin[1], origin[1] + region[1] - 1 do
              f(((z - 1) * (size[2] or 1) + (y - 1)) * size[1] + x)
            end
          end
        end
      end
      each(function(i) want[#want + 1] = ref[i] end)
      local got = im:read(origin, region):wait()
      assert.same(want, got:totable())
      local vals = random_floats(count)
      local k = 0
      im:write(vals, origin, region)
      each(function(i) k = k + 1; ref[i] = vals[k] end)
      assert.same(ref, im:read():wait():totable())
    end
  end)

  it("fills, and copies to images and buffers and back", function()
    local im = dev:image({order = "rgba", type = "uint8"}, {4, 3})
    im:fill({1, 2, 3, 250})
    local a = im:read():wait()
    assert.same({3, 4, 4}, a.shape)
    for i = 1, #a, 4 do assert.same({1, 2, 3, 250}, {a[i], a[i + 1], a[i + 2], a[i + 3]}) end
    local ref = support.random_ints(48, 0, 255)
    local b = dev:buffer("uchar", 48)
    b:write(ref)
    im:copy_from(b)
    local other = dev:image({order = "rgba", type = "uint8"}, {4, 3})
    im:copy_to(other)
    local c = dev:buffer("uchar", 48)
    other:copy_to(c)
    assert.same(ref, c:get():totable())
  end)

  -- Pixels as a flat Lua list (channels innermost, x, then y, then z), and
  -- helpers that walk a box of one in plain Lua: the references below.
  local function index(size, ch, x, y, z)
    return ((((z or 1) - 1) * (size[2] or 1) + ((y or 1) - 1)) * size[1] + (x - 1)) * ch
  end
  local function each_pixel(size, origin, region, f)   -- f(k, x, y, z): k counts from 0
    local k = 0
    for z = origin[3] or 1, (origin[3] or 1) + (region[3] or 1) - 1 do
      for y = origin[2] or 1, (origin[2] or 1) + (region[2] or 1) - 1 do
        for x = origin[1], origin[1] + region[1] - 1 do
          f(k, x, y, z)
          k = k + 1
        end
      end
    end
  end
  local function random_box(size)
    local origin, region, n = {}, {}, 1
    for d = 1, #size do
      origin[d] = math.random(1, size[d])
      region[d] = math.random(1, size[d] - origin[d] + 1)
      n = n * region[d]
    end
    return origin, region, n
  end
  local RGBA32F = {order = "rgba", type = "float"}

  it("reads and writes blocking, straight from and into the host arrays given", function()
    local size = {9, 7}
    local ref = random_floats(4 * 63)
    local im = dev:image(RGBA32F, size)
    local src = gpu.array("float", ref)
    assert.equal(0, select("#", im:write(src, {blocking = true})))
    local dst = gpu.array("float", 4 * 63)
    assert.equal(dst, im:read(dst, {blocking = true}))     -- the very array, filled
    assert.same(ref, dst:totable())
    local origin, region, n = random_box(size)
    local vals = random_floats(4 * n)
    im:write(vals, origin, region, {blocking = true, wait = {}})
    each_pixel(size, origin, region, function(k, x, y)
      for c = 1, 4 do ref[index(size, 4, x, y) + c] = vals[4 * k + c] end
    end)
    local part = im:read(origin, region, {blocking = true})
    assert.same({region[2], region[1], 4}, part.shape)
    assert.same(vals, part:totable())
    assert.same(ref, im:read({blocking = true}):totable())
    -- the blocking forms are waits: callbacks of commands done by then run
    local ran = 0
    im:fill({1, 2, 3, 4}):on_complete(function() ran = ran + 1 end)
    im:read(dst, {blocking = true})
    assert.equal(1, ran)
    for i = 1, #dst, 4 do assert.same({1, 2, 3, 4}, {dst[i], dst[i + 1], dst[i + 2], dst[i + 3]}) end
    has_error("luagpu: image:read: argument #2: blocking: expected a boolean, got string",
              im.read, im, dst, {blocking = "yes"})
    has_error("luagpu: image:write: argument #4: blocking: expected a boolean, got number",
              im.write, im, vals, origin, region, {blocking = 1})
  end)

  it("fills a region, leaving the rest as it was", function()
    for _, size in ipairs({{9}, {7, 6}, {5, 4, 3}}) do
      local n = 1
      for _, s in ipairs(size) do n = n * s end
      local ref = random_floats(4 * n)
      local im = dev:image(RGBA32F, size, {host = ref})
      local origin, region = random_box(size)
      local color = random_floats(4)
      local ev = im:fill(color, origin, region, {wait = {}})
      assert.equal("image fill", ev.command)
      each_pixel(size, origin, region, function(_, x, y, z)
        local at = index(size, 4, x, y, z)
        for c = 1, 4 do ref[at + c] = color[c] end
      end)
      assert.same(ref, im:read():wait():totable())
    end
    local u = dev:image({order = "r", type = "int32"}, {6, 5})
    u:fill({-3, 0, 0, 0})
    u:fill({41, 0, 0, 0}, {6, 5}, {1, 1})
    local got = u:read():wait()
    assert.equal(41, got[30])
    assert.equal(-3, got[29])
    -- a nil where the host array goes reads the region into a new array;
    -- a region after a nil origin, or a number after the options, was
    -- ignored (the whole image filled): now refused, nothing done
    assert.same({41}, u:read(nil, {6, 5}, {1, 1}):wait():totable())
    assert.same({41}, u:read(nil, {6, 5}, {1, 1}, {blocking = true}):totable())
    assert.equal(30, #u:read(nil, {}):wait())
    has_error("luagpu: image:fill: argument #3: expected nothing here, got table (an origin and a "
              .. "region go together, before the options)", u.fill, u, {7, 0, 0, 0}, nil, {1, 1})
    has_error("luagpu: image:copy_to: argument #4: expected nothing here, got number (an origin "
              .. "and a region go together, before the options)",
              u.copy_to, u, dev:buffer("int", 30), nil, nil, 2)
    has_error("luagpu: image:read: argument #5: expected no more arguments, got number",
              u.read, u, nil, nil, nil, {}, 5)
    assert.equal(-3, u:read():wait()[29])
  end)

  it("copies regions between images, as plain Lua does", function()
    for _, case in ipairs({{{11}, {8}}, {{7, 6}, {5, 9}}, {{5, 4, 3}, {3, 5, 4}}}) do
      local ss, ds = case[1], case[2]
      local sn, dn = 1, 1
      for d = 1, #ss do sn, dn = sn * ss[d], dn * ds[d] end
      local sref, dref = random_floats(4 * sn), random_floats(4 * dn)
      local src = dev:image(RGBA32F, ss, {host = sref})
      local dst = dev:image(RGBA32F, ds, {host = dref})
      -- a region that fits both, at random places in each
      local so, dor, region = {}, {}, {}
      for d = 1, #ss do
        region[d] = math.random(1, math.min(ss[d], ds[d]))
        so[d] = math.random(1, ss[d] - region[d] + 1)
        dor[d] = math.random(1, ds[d] - region[d] + 1)
      end
      local moved = {}
      each_pixel(ss, so, region, function(k, x, y, z)
        for c = 1, 4 do moved[4 * k + c] = sref[index(ss, 4, x, y, z) + c] end
      end)
      each_pixel(ds, dor, region, function(k, x, y, z)
        for c = 1, 4 do dref[index(ds, 4, x, y, z) + c] = moved[4 * k + c] end
      end)
      assert.equal("image copy", src:copy_to(dst, so, dor, region).command)
      assert.same(dref, dst:read():wait():totable())
    end
  end)

  it("copies regions to and from buffers at an element offset", function()
    for _, size in ipairs({{13}, {9, 7}, {6, 5, 4}}) do
      local n = 1
      for _, s in ipairs(size) do n = n * s end
      local iref = support.random_ints(4 * n, -32768, 32767)
      local im = dev:image({order = "rgba", type = "int16"}, size, {host = iref})
      local origin, region, count = random_box(size)
      local len = 4 * count + math.random(0, 20)
      local off = math.random(1, len - 4 * count + 1)
      local bref = support.random_ints(len, -32768, 32767)
      local b = dev:buffer("short", len)
      b:write(bref)
      -- image -> buffer: the region's pixels land at off, the rest stays
      im:copy_to(b, origin, region, off)
      local want = {}
      for i = 1, len do want[i] = bref[i] end
      each_pixel(size, origin, region, function(k, x, y, z)
        for c = 1, 4 do want[off + 4 * k + c - 1] = iref[index(size, 4, x, y, z) + c] end
      end)
      assert.same(want, b:get():totable())
      -- buffer -> image: fresh values from off into the region
      local vals = support.random_ints(len, -32768, 32767)
      b:write(vals)
      im:copy_from(b, origin, region, off)
      each_pixel(size, origin, region, function(k, x, y, z)
        for c = 1, 4 do iref[index(size, 4, x, y, z) + c] = vals[off + 4 * k + c - 1] end
      end)
      assert.same(iref, im:read():wait():totable())
    end
    -- an offset alone: the whole image, into a larger buffer; a view's offset counts
    local ref = support.random_ints(24, 0, 255)
    local im = dev:image({order = "rgba", type = "uint8"}, {3, 2}, {host = ref})
    local b = dev:buffer("uchar", 40)
    local v = b:sub(5, 40)
    im:copy_to(v, 3):wait()
    local got = b:get()
    for i = 1, 24 do assert.equal(ref[i], got[6 + i]) end
    assert.equal(0, got[6])
    assert.equal(0, got[31])
    local back = dev:image({order = "rgba", type = "uint8"}, {3, 2})
    back:copy_from(v, 3, {wait = {}}):wait()
    assert.same(ref, back:read():wait():totable())
  end)

  it("raise for a queue the options' own metamethods release (issue 27 item 37)", function()
    local im = dev:image(R32F, {5, 4})
    local other = dev:image(R32F, {3, 3})
    local b = dev:buffer("float", 20)
    local function releasing()
      local q = dev:queue()
      return setmetatable({queue = q}, {__index = function(_, k)
        if k == "wait" then q:release() end
      end})
    end
    has_error("luagpu: image:fill: attempt to use a released queue", im.fill, im,
              {1, 0, 0, 0}, releasing())
    has_error("luagpu: image:fill: attempt to use a released queue", im.fill, im,
              {1, 0, 0, 0}, {1, 1}, {2, 2}, releasing())
    has_error("luagpu: image:copy_to: attempt to use a released queue", im.copy_to, im,
              other, {1, 1}, {1, 1}, {2, 2}, releasing())
    has_error("luagpu: image:copy_to: attempt to use a released queue", im.copy_to, im, b,
              releasing())
    has_error("luagpu: image:copy_from: attempt to use a released queue", im.copy_from, im, b,
              releasing())
    has_error("luagpu: image:read: attempt to use a released queue", im.read, im, releasing())
  end)

  it("raise on bad regions, buffers and offsets, with the numbers", function()
    local im = dev:image(R32F, {5, 4})
    local other = dev:image(R32F, {3, 3})
    local b = dev:buffer("float", 20)
    has_error("luagpu: image:fill: region out of range: dimension 1: pixels 4..6 of 5",
              im.fill, im, {1, 0, 0, 0}, {4, 1}, {3, 1})
    has_error("luagpu: image:fill: argument #3: region: expected a table of 2 integers",
              im.fill, im, {1, 0, 0, 0}, {1, 1})
    has_error("luagpu: image:fill: argument #2: origin[2]: expected an integer >= 1, got 0",
              im.fill, im, {1, 0, 0, 0}, {1, 0}, {1, 1})
    has_error("luagpu: image:copy_to: source region out of range: dimension 2: pixels 3..6 of 4",
              im.copy_to, im, other, {1, 3}, {1, 1}, {2, 4})
    has_error("luagpu: image:copy_to: destination region out of range: dimension 1: pixels "
              .. "2..4 of 3", im.copy_to, im, other, {1, 1}, {2, 1}, {3, 2})
    has_error("luagpu: image:copy_to: argument #3: destination origin: expected a table of 2 "
              .. "integers", im.copy_to, im, other, {1, 1}, {2}, {3, 2})
    has_error("luagpu: image:copy_to: argument #4: region[1]: expected an integer >= 1, got 0",
              im.copy_to, im, other, {1, 1}, {1, 1}, {0, 2})
    has_error("luagpu: image:copy_to: argument #1: expected an image of the same format and kind",
              im.copy_to, im, dev:image({order = "r", type = "int32"}, {3, 3}), {1, 1}, {1, 1},
              {1, 1})
    has_error("luagpu: image:copy_to: argument #1: expected an image of the same format and kind",
              im.copy_to, im, dev:image(R32F, {3, 3, 3}), {1, 1}, {1, 1}, {1, 1})
    has_error("luagpu: image:copy_to: buffer out of range: elements 16..21 of 20",
              im.copy_to, im, b, {1, 1}, {3, 2}, 16)
    has_error("luagpu: image:copy_from: buffer out of range: elements 2..21 of 20",
              im.copy_from, im, b, 2)
    has_error("luagpu: image:copy_to: argument #4: offset: expected an integer >= 1, got 0",
              im.copy_to, im, b, {1, 1}, {3, 2}, 0)
    has_error("luagpu: image:copy_from: argument #1: expected a buffer of float (the pixels' "
              .. "scalar type), got one of int", im.copy_from, im, dev:buffer("int", 40), 1)
    has_error("luagpu: image:copy_from: argument #1: expected a buffer of float (the pixels' "
              .. "scalar type), got one of float4", im.copy_from, im, dev:buffer("float4", 40),
              {1, 1}, {1, 1})
    has_error("luagpu: image:copy_to: argument #2: expected an options table, got string",
              im.copy_to, im, b, "x")
    has_error("luagpu: image:copy_to: argument #5: unknown option 'wiat'", im.copy_to, im,
              other, {1, 1}, {1, 1}, {1, 1}, {wiat = {}})
    has_error("luagpu: image:fill: argument #4: unknown option 'queu'", im.fill, im,
              {1, 0, 0, 0}, {1, 1}, {1, 1}, {queu = 1})
    -- an origin and a region whose sum would wrap
    has_error("luagpu: image:fill: region out of range: dimension 1: pixels "
              .. "9223372036854775807..18446744073709551613 of 5", im.fill, im, {1, 0, 0, 0},
              {math.maxinteger, 1}, {math.maxinteger, 1})
    local gone = dev:buffer("float", 20)
    gone:release()
    has_error("luagpu: image:copy_from: argument #1: attempt to use a released buffer",
              im.copy_from, im, gone, {1, 1}, {1, 1})
  end)
end)

describe("images and samplers as kernel arguments", function()
  it("blur an image through a sampler as plain Lua does", function()
    local W, H = 23, 17
    local ref = random_floats(W * H)
    local src = dev:image(R32F, {W, H}, {host = ref, access = "in"})
    local dst = dev:image(R32F, {W, H}, {access = "out"})
    local s = dev:sampler{normalized = false, address = "clamp_to_edge", filter = "nearest"}
    local k = dev:build([[
      kernel void blur(read_only image2d_t a, write_only image2d_t b, sampler_t s) {
        int2 p = (int2)(get_global_id(0), get_global_id(1));
        float acc = 0;
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++)
            acc += read_imagef(a, s, p + (int2)(dx, dy)).x * (float)((2 - abs(dx)) * (2 - abs(dy)));
        write_imagef(b, p, (float4)(acc / 16, 0, 0, 0));
      }]]).blur
    k(src, dst, s):run({W, H}):wait()
    local got = dst:read():wait()
    local function at(x, y)
      x = math.min(math.max(x, 1), W)
      y = math.min(math.max(y, 1), H)
      return ref[(y - 1) * W + x]
    end
    for y = 1, H do
      for x = 1, W do
        local acc = 0
        for dy = -1, 1 do
          for dx = -1, 1 do
            acc = acc + at(x + dx, y + dy) * (2 - math.abs(dx)) * (2 - math.abs(dy))
          end
        end
        assert.near(acc / 16, got[(y - 1) * W + x], 1e-3)
      end
    end
  end)

  it("check the image's access and kind against the parameter's", function()
    local k = dev:build([[
      kernel void cp(read_only image2d_t a, write_only image2d_t b, sampler_t s) {
        int2 p = (int2)(get_global_id(0), get_global_id(1));
        write_imagef(b, p, read_imagef(a, s, p));
      }]]).cp
    local s = dev:sampler()
    local i2 = dev:image(R32F, {4, 4}, {access = "in"})
    local o2 = dev:image(R32F, {4, 4}, {access = "out"})
    local m3 = dev:image(R32F, {4, 4, 4})
    has_error("luagpu: kernel cp: argument #1: parameter 'a' is read_only, the image has "
              .. "access \"out\"", k, o2, o2, s)
    has_error("luagpu: kernel cp: argument #2: parameter 'b' is write_only, the image has "
              .. "access \"in\"", k, i2, i2, s)
    has_error("luagpu: kernel cp: argument #1: parameter 'image2d_t a' takes a 2-D image, got "
              .. "a 3-D one", k, m3, o2, s)
    has_error("luagpu: kernel cp: argument #1: expected an luagpu.Image for parameter "
              .. "'image2d_t a', got luagpu.Buffer", k, dev:buffer("float", 16), o2, s)
    has_error("luagpu: kernel cp: argument #3: expected a luagpu.Sampler for parameter 's', "
              .. "got number", k, i2, o2, 1)
  end)

  it("refuse a sampler of another context (issue 27 item 39)", function()
    -- a sub-device's context is another one: the only other context PoCL gives
    local ok, subs = pcall(dev.partition, dev, {equally = 1})
    if not ok then return pending("no other context here: " .. tostring(subs)) end
    local k = dev:build([[
      kernel void cp(read_only image2d_t a, write_only image2d_t b, sampler_t s) {
        int2 p = (int2)(get_global_id(0), get_global_id(1));
        write_imagef(b, p, read_imagef(a, s, p));
      }]]).cp
    local foreign = subs[1]:sampler()
    local i2 = dev:image(R32F, {4, 4}, {access = "in"})
    local o2 = dev:image(R32F, {4, 4}, {access = "out"})
    has_error("luagpu: kernel cp: argument #3: (s): the sampler is on " .. subs[1].name
              .. ", of another context", k, i2, o2, foreign)
    has_error("luagpu: kernel cp: argument #1: (a): the image is on " .. subs[1].name
              .. ", of another context", k, subs[1]:image(R32F, {4, 4}, {access = "in"}), o2,
              dev:sampler())
    -- a kernel of the sub-device's own context takes it (bound, not run: PoCL aborts
    -- on images of sub-devices)
    local si = subs[1]:image(R32F, {4, 4}, {access = "in"})
    local so = subs[1]:image(R32F, {4, 4}, {access = "out"})
    local call = subs[1]:build([[
      kernel void cp(read_only image2d_t a, write_only image2d_t b, sampler_t s) {
        int2 p = (int2)(get_global_id(0), get_global_id(1));
        write_imagef(b, p, read_imagef(a, s, p));
      }]]).cp(si, so, foreign)
    assert.equal("Call", gpu.type(call))
  end)
end)

describe("images", function()
  it("raise on bad input, with the numbers", function()
    local im = dev:image(R32F, {5, 4})
    has_error("luagpu: image:read: region out of range: dimension 2: pixels 3..5 of 4",
              im.read, im, {1, 3}, {2, 3})
    has_error("luagpu: image:read: argument #2: region: expected a table of 2 integers",
              im.read, im, {1, 1})
    has_error("luagpu: image:write: argument #1: expected 20 values, got 3", im.write, im,
              {1, 2, 3})
    has_error("luagpu: dev:image: argument #2: size[2]: expected an integer >= 1, got 0",
              dev.image, dev, R32F, {3, 0})
    has_error("luagpu: dev:image: argument #2: an image array needs a size {width, layers} "
              .. "or {width, height, layers}", dev.image, dev, R32F, {3}, {array = true})
    has_error("luagpu: dev:image: argument #3: unknown option 'acess'", dev.image, dev, R32F,
              {3}, {acess = "in"})
    local i = dev:image(R32F, {2}, {access = "in"})
    has_error('luagpu: image:read: the image has access "in": it cannot be read back to the '
              .. "host", i.read, i)
    local o = dev:image(R32F, {2}, {access = "out"})
    has_error('luagpu: image:write: the image has access "out": it cannot be written from '
              .. "the host", o.write, o, {1, 2})
    has_error("luagpu: image:copy_to: argument #1: expected a buffer of 20 float, got 19 float",
              im.copy_to, im, dev:buffer("float", 19))
    has_error("luagpu: image:copy_to: argument #1: expected an image of the same format, kind "
              .. "and size", im.copy_to, im, dev:image(R32F, {5, 5}))
    has_error('luagpu: dev:sampler: argument #1: filter: expected "nearest" or "linear", got '
              .. "cubic", dev.sampler, dev, {filter = "cubic"})
    has_error('luagpu: dev:sampler: argument #1: address: expected "none", "clamp_to_edge", '
              .. '"clamp", "repeat" or "mirrored_repeat", got wrap', dev.sampler, dev,
              {address = "wrap"})
    has_error("luagpu: dev:image_formats: argument #1: expected 1, 2 or 3 dimensions, got 4",
              dev.image_formats, dev, 4)
  end)

  it("raise for sizes past the device's limits, naming the limit (issue 27 item 36)", function()
    local w2, h2 = dev:info("image2d_max_width"), dev:info("image2d_max_height")
    local w3, h3 = dev:info("image3d_max_width"), dev:info("image3d_max_height")
    local d3, layers = dev:info("image3d_max_depth"), dev:info("image_max_array_size")
    local function past(pos, word, value, kind, query, limit, size, opts)
      has_error("luagpu: dev:image: argument #2: size[" .. pos .. "]: " .. word .. " " .. value
                .. " is more than " .. dev.name .. " allows for a " .. kind .. " image ("
                .. query .. ": " .. limit .. ")", dev.image, dev, R32F, size, opts)
    end
    past(1, "width", w2 + 1, "1-D", "image2d_max_width", w2, {w2 + 1})
    past(1, "width", w2 + 1, "2-D", "image2d_max_width", w2, {w2 + 1, 1})
    past(2, "height", h2 + 1, "2-D", "image2d_max_height", h2, {1, h2 + 1})
    past(1, "width", w3 + 1, "3-D", "image3d_max_width", w3, {w3 + 1, 1, 1})
    past(2, "height", h3 + 1, "3-D", "image3d_max_height", h3, {1, h3 + 1, 1})
    past(3, "depth", d3 + 1, "3-D", "image3d_max_depth", d3, {1, 1, d3 + 1})
    past(2, "layers", layers + 1, "1-D array", "image_max_array_size", layers, {1, layers + 1},
         {array = true})
    past(3, "layers", layers + 1, "2-D array", "image_max_array_size", layers,
         {1, 1, layers + 1}, {array = true})
    -- sizes no int holds: named as given, not as 0
    past(1, "width", 1 << 40, "2-D", "image2d_max_width", w2, {1 << 40, 1 << 40})
    past(2, "height", math.maxinteger, "2-D", "image2d_max_height", h2, {1, math.maxinteger})
    -- at the limits themselves (a narrow image: little memory) it is made
    local edge = dev:image(R32F, {w2, 1})
    assert.equal(w2, edge.width)
    local tall = dev:image(R32F, {1, h2})
    assert.equal(h2, tall.height)
  end)
end)

describe("examples/image_blur.lua", function()
  it("blurs the shipped PGM through a sampler as plain Lua does", function()
    local path = os.tmpname()
    local p = io.popen(BUILD .. "/luagpu examples/image_blur.lua examples/data/small.pgm "
                       .. path .. " 1.2 2>&1; echo \"exit $?\"")
    local out = p:read("a")
    p:close()
    assert.matches("256 x 192; Gaussian blur, sigma 1.2 (a 7 x 7 stencil)", out, 1, true)
    assert.matches("matches the plain%-Lua blur %(worst difference [%d.e+-]+%)%s+ok", out)
    assert.matches("exit 0\n", out, 1, true)
    local f = assert(io.open(path, "rb"))
    assert.equal("P5\n256 192\n255\n", f:read(15))
    f:close()
    os.remove(path)
  end)
end)
