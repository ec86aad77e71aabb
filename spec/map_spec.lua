-- Zero-copy mapping (ports of PyOpenCL's test_map_*): b:map returns a host
-- array aliasing the mapping, b:unmap's Event ends it, and any use of the
-- array afterwards raises; every bad-input message.
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

local function random_ints(n) return support.random_ints(n, -1000000, 1000000) end

describe("b:map", function()
  it("reads what the buffer holds, in its shape", function()
    local ref = random_ints(60)
    local b = dev:buffer("int", {6, 10})
    b:write(ref)
    local a = b:map("read")
    assert.equal("int", a.type)
    assert.same({6, 10}, a.shape)
    assert.same(ref, a:totable())
    assert.equal("unmap", b:unmap(a):wait() == nil and "unmap")
  end)

  it("writes through to the buffer, also for ranges and views", function()
    local ref = random_ints(100)
    local b = dev:buffer("double", 100)
    b:write(ref)
    local a = b:map("read_write", 11, -11)     -- elements 11..90
    assert.equal(80, #a)
    for i = 1, #a do
      assert.equal(ref[i + 10], a[i])
      a[i] = a[i] * 2
      ref[i + 10] = ref[i + 10] * 2
    end
    b:unmap(a)
    assert.same(ref, b:get():totable())
    local v = b:sub(51, 60)
    local w = v:map("discard")
    local vals = random_ints(10)
    for i = 1, 10 do w[i] = vals[i] end
    v:unmap(w):wait()
    for i = 1, 10 do ref[50 + i] = vals[i] end
    assert.same(ref, b:get():totable())
    local x = b:map("write", 100)              -- from 100 to the end
    assert.equal(1, #x)
    x[1] = 7
    b:unmap(x)
    ref[100] = 7
    assert.same(ref, b:get():totable())
  end)

  it("an array collected still mapped is unmapped, its writes kept", function()
    local b = dev:buffer("float", 8)
    local a = b:map("write")
    a:fill(2.5)
    a = nil
    collectgarbage()
    collectgarbage()
    assert.same({2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5}, b:get():totable())
  end)

  it("after unmap, the array and its views raise on any use", function()
    local b = dev:buffer("int", 16)
    local a = b:map("read_write")
    local s = a:sub(2, 5)
    b:unmap(a):wait()
    local msg = "luagpu: attempt to use a host array of b:map after b:unmap"
    has_error(msg, function() return a[1] end)
    has_error(msg, function() a[1] = 1 end)
    has_error(msg, function() return #a end)
    has_error(msg, function() return s[1] end)
    has_error(msg, function() return a:totable() end)
    has_error(msg, b.write, b, a)
    has_error(msg, tostring, a)
  end)

  it("maps the whole of an empty buffer to an empty array, blocking or not", function()
    for _, shape in ipairs {0, {0}} do
      local b = dev:buffer("float", shape)
      local a = b:map("read_write")
      assert.equal(0, #a)
      assert.same({0}, a.shape)
      assert.same({}, a:totable())
      assert.equal(nil, b:unmap(a):wait())
      has_error("luagpu: attempt to use a host array of b:map after b:unmap",
                function() return #a end)
      -- after a wait list, returning the array from the Event too
      local u = gpu.user_event(dev)
      local c, ev = b:map("read", {blocking = false, wait = {u}})
      assert.equal("Event", gpu.type(ev))
      assert.equal(0, #c)
      u:complete()
      assert.equal(c, ev:wait())
      assert.equal(0, #c)
      b:unmap(c, {wait = {ev}}):wait()
      local d = b:map("write")
      d = nil
      collectgarbage()            -- collected still mapped: nothing to unmap
      -- positions given on an empty buffer are out of range as on any other
      has_error("luagpu: buffer:map: expected 1 <= first <= last <= 0, got first = 1, last = 1",
                b.map, b, "read", 1, 1)
    end
  end)

  it("raises on bad input", function()
    local b = dev:buffer("int", 16)
    has_error('luagpu: buffer:map: argument #1: expected "read", "write", "read_write" or '
              .. '"discard", got "rw"', b.map, b, "rw")
    has_error('luagpu: buffer:map: argument #1: expected "read", "write", "read_write" or '
              .. '"discard", got no value', b.map, b)
    has_error("luagpu: buffer:map: expected 1 <= first <= last <= 16, got first = 5, "
              .. "last = 17", b.map, b, "read", 5, 17)
    has_error("luagpu: buffer:map: argument #2: unknown option 'wiat'", b.map, b, "read",
              {wiat = {}})
    local i = dev:buffer("int", 4, {access = "in"})
    has_error('luagpu: buffer:map: the buffer has access "in" (host to device only): it '
              .. 'cannot be mapped for "read"', i.map, i, "read")
    local o = dev:buffer("int", 4, {access = "out"})
    has_error('luagpu: buffer:map: the buffer has access "out" (device to host only): it '
              .. 'cannot be mapped for "write"', o.map, o, "write")
    local a = b:map("read")
    local c = dev:buffer("int", 16)
    has_error("luagpu: buffer:unmap: argument #1: the array maps another buffer",
              c.unmap, c, a)
    has_error("luagpu: buffer:unmap: argument #1: expected a host array of buffer:map, got "
              .. "another one", b.unmap, b, gpu.array("int", 4))
    has_error("luagpu: buffer:unmap: argument #1: expected a host array of buffer:map, got "
              .. "another one", b.unmap, b, a:sub(1, 2))
    has_error("luagpu: buffer:unmap: argument #1: expected a host array of buffer:map, got "
              .. "no value", b.unmap, b)
    b:unmap(a)
    has_error("luagpu: buffer:unmap: argument #1: the array was already unmapped",
              b.unmap, b, a)
    b:release()
    assert.matches("attempt to use a released buffer", errmsg(b.map, b, "read"), 1, true)
  end)
end)

describe("b:map with {blocking = false}", function()
  it("returns the array and the Event of the map, whose wait() gives the array", function()
    local ref = random_ints(48)
    local b = dev:buffer("int", {4, 12})
    b:write(ref)
    local a, ev = b:map("read", {blocking = false})
    assert.matches("^luagpu.Event: map %(", tostring(ev))
    assert.equal("map", ev.command)
    assert.equal(a, ev:wait())
    assert.same({4, 12}, a.shape)
    assert.same(ref, a:totable())
    b:unmap(a):wait()
    -- a range, written through, on a queue of its own
    local q = dev:queue()
    local w, wev = b:map("write", 13, 24, {blocking = false, queue = q})
    wev:wait()
    local vals = random_ints(12)
    for i = 1, 12 do w[i] = vals[i] end
    b:unmap(w, {queue = q}):wait()
    for i = 1, 12 do ref[12 + i] = vals[i] end
    assert.same(ref, b:get():totable())
    -- blocking = true (the default) returns the array alone
    assert.equal(1, select("#", b:map("read", {blocking = true})))
  end)

  it("waits for its wait list; dropped, what it uses stays alive until it is done", function()
    local ref = random_ints(64)
    local b = dev:buffer("int", 64)
    local u = gpu.user_event(dev)
    local q = dev:queue()
    local w = b:write(ref, {wait = u, queue = q})
    local a, ev = b:map("read_write", {blocking = false, wait = w, queue = q})
    assert.not_equal("complete", ev.status)
    w, ev = nil, nil
    collectgarbage()
    collectgarbage()
    u:complete()
    q:finish()
    assert.same(ref, a:totable())
    for i = 1, 64 do a[i] = a[i] + 1 end
    b:unmap(a):wait()
    for i = 1, 64 do ref[i] = ref[i] + 1 end
    assert.same(ref, b:get():totable())
  end)

  it("an unmap never overtakes its map, on an out-of-order queue too", function()
    local ref = random_ints(32)
    local b = dev:buffer("int", 32)
    b:write(ref):wait()
    local q = dev:queue{out_of_order = true}
    local u = gpu.user_event(dev)
    local a, mev = b:map("read_write", {blocking = false, wait = u, queue = q})
    local uev = b:unmap(a, {queue = q})       -- enqueued before the map can run
    q:flush()
    assert.not_equal("complete", uev.status)
    assert.not_equal("complete", mev.status)
    u:complete()
    uev:wait()
    assert.equal("complete", mev.status)
    assert.same(ref, b:get():totable())
    -- collected unwaited and still mapped: the finalizer's unmap waits for the map too
    local v = gpu.user_event(dev)
    local c = b:map("read", 1, 8, {blocking = false, wait = v, queue = q})
    assert.equal(8, #c)
    c = nil
    collectgarbage()
    collectgarbage()
    v:complete()
    q:finish()
    assert.same(ref, b:get():totable())
  end)

  it("raises on bad options", function()
    local b = dev:buffer("int", 16)
    has_error("luagpu: buffer:map: argument #2: blocking: expected a boolean, got string",
              b.map, b, "read", {blocking = "no"})
    has_error("luagpu: buffer:map: argument #4: blocking: expected a boolean, got number",
              b.map, b, "read", 2, 3, {blocking = 0})
    has_error("luagpu: buffer:map: argument #2: expected an options table {wait =, queue =, "
              .. "blocking =}, got string", b.map, b, "read", "x")
  end)
end)

describe("{host = array, use_host = true} buffers", function()
  it("work over the host array's memory, which they keep alive", function()
    local n = 1000
    local ref = random_ints(n)
    local h = gpu.array("int", ref)
    local b = dev:buffer("int", n, {host = h, use_host = true})
    assert.same(ref, b:get():totable())
    local k = dev:build("kernel void inc(global int *x) { x[get_global_id(0)] += 1; }").inc
    k(b):run({n}):wait()
    local a = b:map("read")
    for i = 1, n do assert.equal(ref[i] + 1, a[i]) end
    b:unmap(a):wait()
    h = nil
    collectgarbage()
    collectgarbage()
    local got = b:get()
    for i = 1, n do assert.equal(ref[i] + 1, got[i]) end
  end)

  it("raise without a host array", function()
    has_error("luagpu: dev:buffer: argument #3: use_host: expected host = a host array, got "
              .. "a table", dev.buffer, dev, "int", 2, {host = {1, 2}, use_host = true})
    has_error("luagpu: dev:buffer: argument #3: use_host: expected host = a host array, got "
              .. "nil", dev.buffer, dev, "int", 2, {use_host = true})
  end)
end)

describe("{pinned = true} buffers", function()
  it("map once into host memory that transfers of other buffers use", function()
    local n = 1000
    local ref = random_ints(n)
    local p = dev:buffer("int", n, {pinned = true, init = false})
    local a = p:map("read_write")
    local src = dev:buffer("int", n, {host = gpu.array("int", ref)})
    src:read(a):wait()                      -- into the mapped, pinned array
    for i = 1, n do assert.equal(ref[i], a[i]) end
    for i = 1, n do a[i] = a[i] * 2 end
    local dst = dev:buffer("int", n)
    dst:write(a):wait()
    local got = dst:get()
    for i = 1, n do assert.equal(ref[i] * 2, got[i]) end
    p:unmap(a):wait()
    local q = dev:buffer("int", 3, {pinned = true, host = {4, 5, 6}})
    assert.same({4, 5, 6}, q:get():totable())
  end)

  it("raise with use_host, or a pinned that is no boolean", function()
    has_error("luagpu: dev:buffer: argument #3: pinned and use_host: give one of them",
              dev.buffer, dev, "int", 2, {host = gpu.array("int", 2), use_host = true,
                                          pinned = true})
    has_error("luagpu: dev:buffer: argument #3: pinned: expected a boolean, got number",
              dev.buffer, dev, "int", 2, {pinned = 1})
  end)
end)
