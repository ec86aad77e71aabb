-- Device buffers and views: creation, fields, write/read/get/fill/copy_to,
-- b:sub, access modes and every bad-input message, on the real OpenCL runtime.
local gpu = require "luagpu"

local dev = gpu.device()

local SCALARS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                 "float", "double"}
local SIZE = {char = 1, uchar = 1, short = 2, ushort = 2, int = 4, uint = 4, long = 8,
              ulong = 8, float = 4, double = 8}
local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
               ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
               long = {-2^40, 2^40}, ulong = {0, 2^40}}

local function isfloat(s) return s == "float" or s == "double" end

-- A random value each type holds exactly (floats: multiples of 1/8).
local function random_value(s)
  if isfloat(s) then return math.random(-4000, 4000) / 8 end
  local r = RANGE[s]
  return math.random(math.tointeger(r[1]), math.tointeger(r[2]))
end

local function random_list(s, n)
  local t = {}
  for i = 1, n do t[i] = random_value(s) end
  return t
end

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

-- The flat list of scalars a buffer holds, read back with get.
local function contents(b) return b:get():totable() end

describe("dev:buffer", function()
  it("makes zero-filled buffers with the fields of the contract", function()
    local b = dev:buffer("float", 1000)
    assert.equal(1000, #b)
    assert.equal("float", b.type)
    assert.equal(4000, b.bytes)
    assert.same({1000}, b.shape)
    assert.equal("mixed", b.access)
    assert.equal(dev, b.device)
    assert.is_nil(b.parent)
    local a = b:get()
    assert.equal(1000, #a)
    for i = 1, #a do assert.equal(0, a[i]) end
    assert.matches("^luagpu.Buffer: float%[1000%] %(mixed, 4000 bytes", tostring(b))
  end)

  it("takes a shape, counts all its elements and reads back with it", function()
    local b = dev:buffer("int", {3, 5, 2}, {access = "in"})
    assert.equal(30, #b)
    assert.same({3, 5, 2}, b.shape)
    assert.equal(120, b.bytes)
    assert.equal("in", b.access)
    local m = dev:buffer("double", {4, 6})
    assert.same({4, 6}, m:get().shape)
  end)

  it("counts vectors for vector types, float3 taking the room of float4", function()
    local b = dev:buffer("float3", 10)
    assert.equal(10, #b)
    assert.equal(160, b.bytes)
    assert.equal("float3", b.type)
    local c = dev:buffer("uchar16", 4)
    assert.equal(64, c.bytes)
  end)

  it("starts from host data given as a table or a host array", function()
    for _, s in ipairs(SCALARS) do
      local n = math.random(1, 50)
      local ref = random_list(s, n)
      local b = dev:buffer(s, n, {host = ref})
      assert.same(ref, contents(b))
      local c = dev:buffer(s, n, {host = gpu.array(s, ref), access = "out"})
      assert.same(ref, contents(c))
    end
  end)

  it("rejects bad arguments with messages that say what was expected", function()
    has_error("luagpu: dev:buffer: argument #1: unknown element type 'flaot'",
              dev.buffer, dev, "flaot", 4)
    has_error("luagpu: dev:buffer: argument #2: expected an element count (integer >= 0), got -3",
              dev.buffer, dev, "float", -3)
    has_error("luagpu: dev:buffer: argument #2: expected an element count or a shape table, "
              .. "got string", dev.buffer, dev, "float", "10")
    has_error("luagpu: dev:buffer: argument #2: shape[2]: expected an integer >= 0, got -1",
              dev.buffer, dev, "float", {4, -1})
    has_error("luagpu: dev:buffer: argument #2: expected a shape of 1 to 8 sizes, got 0",
              dev.buffer, dev, "float", {})
    -- an option put in the shape was once lost: a plain buffer came back
    has_error("luagpu: dev:buffer: argument #2: a shape holds only sizes, got the key " ..
              "\"pinned\" (options go in argument #3)", dev.buffer, dev, "float",
              {4, pinned = true})
    has_error("luagpu: dev:buffer: argument #2: a shape holds only sizes, got the key 5 " ..
              "(options go in argument #3)", dev.buffer, dev, "float", {4, [5] = 1})
    has_error("luagpu: dev:buffer: argument #3: access: expected \"in\", \"out\" or \"mixed\", "
              .. "got \"inout\"", dev.buffer, dev, "float", 4, {access = "inout"})
    has_error("luagpu: dev:buffer: argument #3: unknown option 'acess' (expected access, host, use_host, pinned, init, collect)",
              dev.buffer, dev, "float", 4, {acess = "in"})
    has_error("luagpu: dev:buffer: argument #3: expected 12 values, got 11",
              dev.buffer, dev, "int", 12, {host = random_list("int", 11)})
    has_error("luagpu: dev:buffer: argument #3: host: expected 8 values, got 4",
              dev.buffer, dev, "float2", 4, {host = gpu.array("float2", 2)})
    has_error("luagpu: dev:buffer: argument #3: host: expected a host array of float, got one "
              .. "of double", dev.buffer, dev, "float", 4, {host = gpu.array("double", 4)})
    -- the element count must not wrap to 0 before host data is checked against it
    has_error("luagpu: dev:buffer: too many elements of float for one buffer",
              dev.buffer, dev, "float", {1 << 32, 1 << 32}, {host = {1, 2, 3}})
    has_error("luagpu: dev:buffer: too many elements of float for one buffer",
              dev.buffer, dev, "float", {1 << 31, 1 << 31}, {host = gpu.array("float", 3)})
    -- an empty size does not let the others pass the limit (as host arrays)
    has_error("luagpu: dev:buffer: too many elements of float for one buffer",
              dev.buffer, dev, "float", {0, 1 << 62, 1 << 62})
    assert.same({0, 1 << 20}, dev:buffer("float", {0, 1 << 20}).shape)
    local too_many = dev.max_alloc_size // 4 + 1
    has_error("exceed the device's max_alloc_size (" .. dev.max_alloc_size .. " bytes)",
              dev.buffer, dev, "float", too_many)
    -- 2^63 bytes and more are written unsigned
    has_error("luagpu: dev:buffer: 9223372036854775808 bytes (72057594037927936 elements of " ..
              "long16) exceed the device's max_alloc_size", dev.buffer, dev, "long16", 1 << 56)
  end)
end)

describe("b.version", function()
  it("changes with every command that may write the root's memory, and only those", function()
    local b = dev:buffer("int", 16, {host = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                           16}})
    local v = b:sub(5, 8)                        -- a view: the root's version
    local other = dev:buffer("int", 16)
    local function changes(what, f, expect)
      local b0, o0 = b.version, other.version
      assert.equal(b0, v.version)
      f()
      dev:finish()
      assert.equal(expect ~= false, b.version ~= b0, what)
      assert.equal(b.version, v.version, what)
      return o0
    end
    changes("get", function() b:get() end, false)
    changes("read", function() b:read():wait() end, false)
    changes("sub", function() b:sub(1, 2) end, false)
    changes("write", function() b:write({16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1})
                                 :wait() end)
    changes("fill of a view", function() v:fill(3):wait() end)
    changes("copy_to from it", function() b:copy_to(other):wait() end, false)
    changes("copy_to into it", function() other:copy_to(b):wait() end)
    changes("kernel argument", function()
      dev:build("__kernel void k(__global const int *p) { }").k(b:sub(1, 8)):run({1})
    end)
    changes("map for reading and unmap", function() b:unmap(b:map("read")):wait() end)
    changes("write_rect", function() b:write_rect({1}, {2}, {7, 7}):wait() end)
    changes("copy_rect_to into it", function() other:copy_rect_to(b, {1}, {3}, {2}):wait() end)
    changes("copy_rect_to from it", function() b:copy_rect_to(other, {1}, {3}, {2}):wait() end,
            false)
    assert.equal(math.type(b.version), "integer")
    has_error("cannot set field 'version'", function() b.version = 0 end)
  end)
end)

describe("dev:scalar", function()
  it("holds one value that read and get give back as a number", function()
    for _, s in ipairs(SCALARS) do
      local x = dev:scalar(s)
      assert.equal(1, #x)
      assert.equal(0, x:get())
      local v = random_value(s)
      x:write(v):wait()
      assert.equal(v, x:get())
      assert.equal(v, x:read():wait())
      assert.equal(isfloat(s) and "float" or "integer", math.type(x:get()))
    end
    assert.equal(-7, dev:scalar("int", -7):get())
  end)

  -- reads of a scalar come back through page-locked slots (host/pinned.c):
  -- 256 to a slab, 16 slabs a context, then ordinary memory
  it("keeps every read's number apart, however many are in flight", function()
    for _, s in ipairs{"int", "double", "char", "ulong"} do
      local x = dev:scalar(s)
      local n, want, evs = 700, {}, {}
      for i = 1, n do
        want[i] = random_value(s)
        x:write(want[i])
        evs[i] = x:read()
        if i % 97 == 0 then assert.equal(want[i], x:get()) end   -- blocking reads between
      end
      for i = n, 1, -1 do assert.equal(want[i], evs[i]:wait()) end
      for i = 1, n, 7 do assert.equal(want[i], evs[i]:wait()) end   -- the number is kept
      local many = {}
      for i = 1, 5000 do                  -- past every slab: the rest in ordinary memory
        x:write(i % 100)
        many[i] = x:read()
      end
      for i = 5000, 1, -1 do assert.equal(i % 100, many[i]:wait()) end
      -- Events dropped unwaited give their slots back when collected
      for _ = 1, 3 do
        for i = 1, 300 do
          x:write(i % 100)
          x:read()
        end
        collectgarbage()
      end
      x:write(want[1]):wait()
      assert.equal(want[1], x:read():wait())
      assert.equal(want[1], x:get())
    end
  end)

  -- a blocking get of at most 16 bytes into a new array also comes through
  -- a page-locked slot (then copied): every such read keeps its own values
  it("gets small buffers and views whole, between reads in flight", function()
    for _, case in ipairs{{"long", 2}, {"int", 3}, {"float", 4}, {"uchar", 16}, {"double", 1},
                          {"short", 5}} do
      local t, n = case[1], case[2]
      local b = dev:buffer(t, 40)
      local vals = {}
      for i = 1, 40 do vals[i] = random_value(t) end
      b:write(vals):wait()
      local scalar = dev:scalar("int")
      for first = 1, 40 - n + 1, 3 do
        scalar:write(first)
        local ev = scalar:read()                     -- a slot held by an Event meanwhile
        local got = b:sub(first, first + n - 1):get():totable()
        for i = 1, n do assert.equal(vals[first + i - 1], got[i]) end
        assert.equal(first, ev:wait())
      end
      local whole = dev:buffer(t, n, {host = {table.unpack(vals, 1, n)}})
      local a, c = whole:get(), whole:get()           -- two gets: two arrays of their own
      assert.are_not.equal(a, c)
      assert.same({table.unpack(vals, 1, n)}, a:totable())
      assert.same({table.unpack(vals, 1, n)}, c:totable())
    end
  end)

  it("refuses values that do not fit", function()
    has_error("luagpu: dev:scalar: argument #2: 300 does not fit uchar (0 to 255)",
              dev.scalar, dev, "uchar", 300)
    has_error("luagpu: buffer:write: argument #1: 2.5 is not an integer",
              function() dev:scalar("int"):write(2.5) end)
    -- a NaN shows as nan (whatever its sign bit: 0/0 has it set on x86)
    has_error("luagpu: dev:scalar: argument #2: nan is not an integer (int holds integers)",
              dev.scalar, dev, "int", 0 / 0)
    has_error("luagpu: dev:scalar: argument #2: nan is not an integer (int holds integers)",
              dev.scalar, dev, "int", -(0 / 0))
    has_error("luagpu: dev:buffer: argument #2: expected an element count (integer >= 0), " ..
              "got nan", dev.buffer, dev, "float", 0 / 0)
    has_error("luagpu: buffer:sub: argument #1: expected an integer, got nan",
              function() return dev:buffer("int", 4):sub(0 / 0) end)
    has_error("luagpu: dev:scalar: argument #2: expected 1 value, got 2",
              dev.scalar, dev, "int", {1, 2})
  end)
end)

describe("buffer:write and buffer:read", function()
  it("round-trip random data of every scalar type, from tables and host arrays", function()
    for _, s in ipairs(SCALARS) do
      local n = math.random(1, 300)
      local b = dev:buffer(s, n)
      local ref = random_list(s, n)
      local ev = b:write(ref)
      assert.matches("^luagpu.Event: write", tostring(ev))
      local got = b:read():wait()
      assert.equal(s, got.type)
      assert.same(ref, got:totable())
      local ref2 = random_list(s, n)
      b:write(gpu.array(s, ref2))
      assert.same(ref2, contents(b))
    end
  end)

  it("moves vector types as flat lists of scalars", function()
    for _, t in ipairs({"float2", "int3", "uchar4", "double8", "short16"}) do
      local s, w = t:match("^(%a+)(%d+)$")
      w = tonumber(w)
      local n = math.random(1, 20)
      local ref = random_list(s, n * w)
      local b = dev:buffer(t, n)
      b:write(ref)
      local a = b:get()
      assert.equal(n, a.count)
      assert.same(ref, a:totable())
    end
  end)

  it("reads into a given host array and returns that array", function()
    local b = dev:buffer("int", 64, {host = random_list("int", 64)})
    local dst = gpu.array("int", 64)
    local got = b:read(dst):wait()
    assert.equal(dst, got)
    assert.same(contents(b), dst:totable())
    local dst2 = gpu.array("int", 64)
    assert.equal(dst2, b:get(dst2))
  end)

  it("checks sizes and types exactly, with the numbers in the message", function()
    local b = dev:buffer("float", 1024)
    has_error("luagpu: buffer:write: argument #1: expected 1024 values, got 1000",
              b.write, b, random_list("float", 1000))
    has_error("luagpu: buffer:write: argument #1: expected 1024 values, got 1025",
              b.write, b, gpu.array("float", 1025))
    has_error("luagpu: buffer:write: argument #1: expected a host array of float, got one "
              .. "of int", b.write, b, gpu.array("int", 1024))
    has_error("luagpu: buffer:write: argument #1: expected a table, a host array or a "
              .. "number, got string", b.write, b, "data")
    has_error("luagpu: buffer:write: argument #1: expected a table or host array of 1024 "
              .. "values, got a number", b.write, b, 5)
    has_error("luagpu: buffer:read: argument #1: expected 1024 values, got 10",
              b.read, b, gpu.array("float", 10))
    has_error("luagpu: buffer:get: argument #1: expected a host array of float, got one of "
              .. "double", b.get, b, gpu.array("double", 1024))
    has_error("luagpu: buffer:read: argument #1: expected a host array or an options "
              .. "table, got number", b.read, b, 3)
    local t = random_list("int", 8)
    t[5] = "x"
    has_error("value #5: expected a number, got string", function()
      dev:buffer("int", 8):write(t)
    end)
  end)

  it("honours access: in buffers refuse read, out buffers refuse write", function()
    local inb = dev:buffer("int", 4, {access = "in"})
    local outb = dev:buffer("int", 4, {access = "out"})
    inb:write({1, 2, 3, 4}):wait()
    has_error("luagpu: buffer:read: the buffer has access \"in\"", inb.read, inb)
    has_error("luagpu: buffer:get: the buffer has access \"in\"", inb.get, inb)
    has_error("luagpu: buffer:write: the buffer has access \"out\"", outb.write, outb,
              {1, 2, 3, 4})
    inb:copy_to(outb)
    assert.same({1, 2, 3, 4}, contents(outb))
    outb:fill(3)
    assert.same({3, 3, 3, 3}, contents(outb))
    assert.equal("in", inb:sub(2, 3).access)
    has_error("luagpu: buffer:read: the buffer has access \"in\"", function()
      inb:sub(2, 3):read()
    end)
  end)
end)

describe("buffer:fill", function()
  it("sets every element, also in views", function()
    for _, s in ipairs(SCALARS) do
      local n = math.random(2, 100)
      local b = dev:buffer(s, n, {host = random_list(s, n)})
      local ref = b:get():totable()
      local v = random_value(s)
      local first, last = math.random(1, n), n
      last = math.random(first, n)
      b:sub(first, last):fill(v)
      for i = first, last do ref[i] = v end
      assert.same(ref, contents(b))
    end
  end)

  it("takes one number for every lane, or a table of one vector's lanes", function()
    local b = dev:buffer("int4", 3)
    b:fill(7)
    assert.same({7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, contents(b))
    b:fill({1, 2, 3, 4})
    assert.same({1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}, contents(b))
    local c = dev:buffer("float3", 2)
    c:fill({0.5, 1.5, 2.5})
    assert.same({0.5, 1.5, 2.5, 0.5, 1.5, 2.5}, contents(c))
    has_error("luagpu: buffer:fill: argument #1: expected a number or a table of 4 numbers "
              .. "(one int4), got a table of 3", b.fill, b, {1, 2, 3})
    has_error("luagpu: buffer:fill: argument #1: 1.5 is not an integer", b.fill, b, 1.5)
    has_error("luagpu: buffer:fill: argument #1: expected a number, got string",
              function() dev:buffer("int", 2):fill("1") end)
    has_error("luagpu: buffer:fill: argument #1[2]: -1 does not fit uint",
              function() dev:buffer("uint2", 2):fill({1, -1}) end)
  end)
end)

describe("buffer:fill and buffer:copy_to with event = false", function()
  it("enqueue without an Event, return nothing, and check the option", function()
    local n = math.random(2, 300)
    local ref = random_list("int", n)
    local a = dev:buffer("int", n, {host = ref})
    local b = dev:buffer("int", n)
    assert.equal(0, select("#", a:copy_to(b, {event = false})))
    local v = math.random(-100, 100)
    assert.equal(0, select("#", a:sub(2, n):fill(v, {event = false})))
    dev:finish()
    assert.same(ref, contents(b))
    for i = 2, n do ref[i] = v end
    assert.same(ref, contents(a))
    -- event = true is the default: an Event
    assert.equal("Event", gpu.type(a:fill(1, {event = true})))
    assert.equal(0, select("#", dev:buffer("int", 0):fill(1, {event = false})))
    has_error("luagpu: buffer:fill: argument #2: event: expected a boolean, got number",
              a.fill, a, 1, {event = 0})
    has_error("luagpu: buffer:copy_to: argument #2: event: expected a boolean, got string",
              a.copy_to, a, b, {event = "no"})
    has_error("luagpu: buffer:copy_to: argument #2: unknown option 'evnt' (expected wait, "
              .. "queue, event)", a.copy_to, a, b, {evnt = false})
    has_error("luagpu: buffer:write: argument #2: unknown option 'event' (expected wait, "
              .. "queue)", a.write, a, ref, {event = false})
  end)
end)

describe("buffer:copy_to", function()
  it("copies between buffers and views of the same type and count", function()
    local n = 200
    local ref = random_list("double", n)
    local a = dev:buffer("double", n, {host = ref})
    local b = dev:buffer("double", n)
    a:copy_to(b)
    assert.same(ref, contents(b))
    -- within one buffer, between regions that do not overlap
    a:sub(1, 50):copy_to(a:sub(-50, -1))
    for i = 1, 50 do ref[n - 50 + i] = ref[i] end
    assert.same(ref, contents(a))
    -- a view of a view
    local v = a:sub(11, 110):sub(5, 14)          -- elements 15..24 of a
    v:copy_to(b:sub(1, 10))
    local got = contents(b)
    for i = 1, 10 do assert.equal(ref[14 + i], got[i]) end
  end)

  it("refuses other types, counts, overlaps and non-buffers", function()
    local a = dev:buffer("float", 100)
    has_error("luagpu: buffer:copy_to: argument #1: expected a buffer of float, got one of int",
              a.copy_to, a, dev:buffer("int", 100))
    has_error("luagpu: buffer:copy_to: argument #1: expected a buffer of 100 elements, got 99",
              a.copy_to, a, dev:buffer("float", 99))
    has_error("luagpu: buffer:copy_to: argument #1: source and destination overlap "
              .. "(elements 1..10 and 5..14 of one buffer)", function()
      a:sub(1, 10):copy_to(a:sub(5, 14))
    end)
    has_error("luagpu: buffer:copy_to: argument #1: expected a luagpu.Buffer, got table",
              a.copy_to, a, {})
  end)
end)

describe("buffer:sub", function()
  it("makes views, 1-based and inclusive, negative from the end, of views too", function()
    local n = 100
    local ref = random_list("int", n)
    local b = dev:buffer("int", n, {host = ref})
    local v = b:sub(11, 30)
    assert.equal(20, #v)
    assert.same({20}, v.shape)
    assert.equal(80, v.bytes)
    assert.equal(b, v.parent)
    assert.equal(10, v.offset)
    local expect = {}
    for i = 11, 30 do expect[#expect + 1] = ref[i] end
    assert.same(expect, contents(v))
    local w = v:sub(-5, -1)                       -- elements 26..30 of b
    assert.same({ref[26], ref[27], ref[28], ref[29], ref[30]}, contents(w))
    assert.same({ref[n]}, contents(b:sub(-1, -1)))
    assert.equal(n - 9, #b:sub(10))
    -- writes through a view land in the root
    local new = random_list("int", 5)
    w:write(new):wait()
    for i = 1, 5 do ref[25 + i] = new[i] end
    assert.same(ref, contents(b))
    assert.matches("view of int%[5%] at elements 26..30", tostring(w))
  end)

  it("never clamps: out-of-range positions raise", function()
    local b = dev:buffer("float", 10)
    has_error("luagpu: buffer:sub: expected 1 <= first <= last <= 10, got first = 0, last = 5",
              b.sub, b, 0, 5)
    has_error("got first = 5, last = 11", b.sub, b, 5, 11)
    has_error("got first = 6, last = 5", b.sub, b, 6, 5)
    has_error("got first = 0, last = 10", b.sub, b, -11, 10)
    has_error("luagpu: buffer:sub: argument #1: expected an integer, got 1.5", b.sub, b, 1.5, 3)
    has_error("luagpu: buffer:sub: argument #2: expected an integer, got string", b.sub, b, 1,
              "3")
  end)

  it("keeps its parent alive", function()
    local ref = random_list("int", 64)
    local v = dev:buffer("int", 64, {host = ref}):sub(33, 64):sub(1, 16)
    collectgarbage()
    collectgarbage()
    local expect = {}
    for i = 33, 48 do expect[#expect + 1] = ref[i] end
    assert.same(expect, contents(v))
  end)
end)

describe("views as kernel arguments", function()
  it("become sub-buffers at aligned origins, and raise with the alignment otherwise", function()
    local prog = dev:build[[
      __kernel void add(__global int *x, int v, int n) {
        int i = get_global_id(0);
        if (i < n) x[i] += v;
      }]]
    local per = dev.mem_base_addr_align // 4        -- ints per aligned step
    local n = per * 8
    local ref = {}
    for i = 1, n do ref[i] = math.random(-1000, 1000) end
    local b = dev:buffer("int", n, {host = ref})
    local first = per * math.random(1, 6) + 1
    local last = math.random(first, n)
    local v = b:sub(first, last)
    prog.add(v, 5, #v):run({#v}):wait()
    local vv = math.min(per, #v)
    prog.add(v:sub(1, vv), 1, vv):run({vv}):wait()     -- a view of a view, same origin
    prog.add(b:sub(1, n), -2, n):run({n}):wait()          -- the whole buffer
    for i = first, last do ref[i] = ref[i] + 5 end
    for i = first, first + vv - 1 do ref[i] = ref[i] + 1 end
    for i = 1, n do ref[i] = ref[i] - 2 end
    assert.same(ref, contents(b))
    has_error(("luagpu: kernel argument: a view of elements 3..%d starts at byte 8 of its "
               .. "buffer, not a multiple of the device's mem_base_addr_align (%d bytes): views "
               .. "passed to kernels must start at element 1 + k*%d (int)"):format(n,
               dev.mem_base_addr_align, per), function() prog.add(b:sub(3), 1, n - 2) end)
  end)
end)

describe("fields", function()
  it("are read-only", function()
    local b = dev:buffer("float", 4)
    has_error("luagpu: buffer: cannot set field 'type'", function() b.type = "int" end)
  end)
end)

describe("empty buffers", function()
  local gpu = require "luagpu"
  local dev = gpu.device()
  it("have no elements and every transfer is an event that completes", function()
    local b = dev:buffer("float", 0)
    assert.equals(0, #b)
    assert.equals(0, b.bytes)
    local a = b:get()
    assert.equals(0, #a)
    assert.is_nil(b:write({}):wait())
    assert.is_nil(b:fill(3):wait())
    local c = dev:buffer("float", { 0, 4 })
    assert.equals(0, #c)
    assert.is_nil(b:copy_to(c):wait())
    local ok, err = pcall(b.write, b, { 1 })
    assert.is_false(ok)
    assert.matches("expected 0 values, got 1", err, 1, true)
    ok, err = pcall(dev.buffer, dev, "float", -1)
    assert.is_false(ok)
    assert.matches("luagpu: dev:buffer: argument #2: expected an element count (integer >= 0), got -1", err, 1, true)
  end)
end)

describe("names with a NUL byte", function()
  -- (compared by the C library up to the NUL, "int\0garbage" was int, a
  -- map mode "read\0x" read, an option "wait\0x" no option at all)
  it("raise instead of matching what comes before the NUL", function()
    local b = dev:buffer("float", 2)
    for _, c in ipairs{
        {"luagpu: gpu.array: argument #1: the element type name holds a NUL byte",
         function() return gpu.array("int\0garbage", 2) end},
        {"luagpu: dev:buffer: argument #1: the element type name holds a NUL byte",
         function() return dev:buffer("float\0x", 2) end},
        {"luagpu: buffer:map: argument #1: the mode holds a NUL byte",
         function() return b:map("read\0junk") end},
        {"luagpu: gpu.localmem: argument #1: the element type name holds a NUL byte",
         function() return gpu.localmem("float\0", 1) end},
        {"luagpu: dev:build: argument #1: the source holds a NUL byte",
         function() return dev:build("kernel void k(global int *x) {}\0garbage") end},
        {"luagpu: buffer:fill: argument #2: an option's name holds a NUL byte",
         function() return b:fill(1, {["wait\0x"] = {}}) end}} do
      has_error(c[1], c[2])
    end
    if dev.image_support then
      has_error("luagpu: dev:image: argument #1: order holds a NUL byte",
                function() return dev:image({order = "r\0zz", type = "float"}, {2, 2}) end)
    end
  end)
end)
