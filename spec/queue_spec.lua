-- Queues: the default queue, dev:queue, finish/flush/marker/barrier, the
-- {wait =, queue =} options every enqueueing call takes, and their errors.
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

local function random_ints(n) return support.random_ints(n, -1000000, 1000000) end

describe("dev:queue", function()
  it("makes in-order profiling queues by default", function()
    local q = dev:queue()
    assert.equal(dev, q.device)
    assert.is_true(q.profiling)
    assert.is_false(q.out_of_order)
    assert.is_false(q.default)
    assert.matches("^luagpu.Queue: in%-order, profiling on, on ", tostring(q))
  end)

  it("takes out_of_order and profiling", function()
    local q = dev:queue{out_of_order = true, profiling = false}
    assert.is_true(q.out_of_order)
    assert.is_false(q.profiling)
    assert.matches("out%-of%-order, profiling off", tostring(q))
  end)

  it("rejects unknown options and non-booleans", function()
    has_error("luagpu: dev:queue: argument #1: unknown option 'outoforder' (expected "
              .. "out_of_order, profiling)", dev.queue, dev, {outoforder = true})
    has_error("luagpu: dev:queue: argument #1: profiling: expected a boolean, got number",
              dev.queue, dev, {profiling = 1})
    has_error("luagpu: dev:queue: argument #1: expected an options table", dev.queue, dev, 5)
  end)
end)

describe("dev:set_profiling", function()
  it("swaps the default queue for one with profiling off, and back", function()
    local d = gpu.devices()[#gpu.devices()]      -- a device no other spec switches
    local b = d:buffer("int", 4)
    local before = d:default_queue()
    local ev = b:fill(1)
    d:set_profiling(false)
    assert.equal("complete", ev.status)            -- the old queue was finished first
    assert.is_false(d:default_queue().profiling)
    assert.is_false(rawequal(before, d:default_queue()))
    assert.is_false(before.default)
    local off = b:fill(2)
    has_error("luagpu: event.duration: the queue of this fill command has profiling off",
              function() return off.duration end)
    d:set_profiling(false)                          -- no change: the same queue
    d:set_profiling(true)
    assert.is_true(d:default_queue().profiling)
    assert.is_true(b:fill(3).duration >= 0)
    assert.same({3, 3, 3, 3}, b:get():totable())
    has_error("luagpu: dev:set_profiling: argument #1: expected a boolean, got number",
              d.set_profiling, d, 1)
  end)

  it("starts without profiling under LUAGPU_PROFILING=0", function()
    local build = os.getenv("LUAGPU_BUILD") or "build"
    local p = io.popen("LUAGPU_PROFILING=0 " .. build .. "/luagpu -e "
                       .. "'print(gpu.device():default_queue().profiling)' 2>&1")
    assert.equal("false\n", p:read("a"))
    p:close()
  end)
end)

describe("queue methods", function()
  it("finish, flush, marker and barrier", function()
    local q = dev:queue()
    local b = dev:buffer("int", 1000)
    local ref = random_ints(1000)
    local w = b:write(ref, {queue = q})
    q:flush()
    local m = q:marker()
    assert.matches("^luagpu.Event: marker", tostring(m))
    assert.is_nil(m:wait())
    assert.equal("complete", w.status)
    local r = b:read({queue = q})
    local bar = q:barrier{wait = {r}}
    assert.matches("^luagpu.Event: barrier", tostring(bar))
    bar:wait()
    assert.equal("complete", r.status)
    q:finish()
    dev:finish()
    dev:flush()
    assert.same(ref, r:wait():totable())
    assert.is_nil(q:marker(w):wait())
    has_error("luagpu: queue:marker: argument #1: wait[1]: expected a luagpu.Event, got number",
              q.marker, q, {wait = {1}})
    has_error("luagpu: queue:barrier: argument #1: expected an options table {wait = {...}}, "
              .. "got string", q.barrier, q, "x")
  end)
end)

describe("enqueue options", function()
  it("order commands across queues with wait lists mixing queues", function()
    local q1, q2 = dev:queue(), dev:queue{out_of_order = true}
    local n = 4096
    local ref = random_ints(n)
    local a, b, c = dev:buffer("int", n), dev:buffer("int", n), dev:buffer("int", n)
    local w1 = a:write(ref, {queue = q1})
    local w2 = c:fill(0, {queue = q2})
    local cp = a:copy_to(b, {queue = q2, wait = {w1, w2}})
    local r = b:read({queue = q1, wait = {cp}})
    assert.same(ref, r:wait():totable())
    -- a single Event works as a wait list too
    local r2 = a:read({wait = cp})
    assert.same(ref, r2:wait():totable())
    -- reads into a given array with options after it
    local dst = gpu.array("int", n)
    assert.equal(dst, b:read(dst, {queue = q2, wait = {}}):wait())
    assert.same(ref, dst:totable())
    assert.same(ref, b:get({queue = q2}):totable())
  end)

  it("checks the options and names what is wrong", function()
    local b = dev:buffer("float", 4)
    local ev = b:fill(1)
    has_error("luagpu: buffer:write: argument #2: expected an options table {wait = {...}, "
              .. "queue = q}, got number", b.write, b, {1, 2, 3, 4}, 5)
    has_error("luagpu: buffer:write: argument #2: queue: expected a luagpu.Queue, got "
              .. "luagpu.Device", b.write, b, {1, 2, 3, 4}, {queue = dev})
    has_error("luagpu: buffer:fill: argument #2: wait[2]: expected a luagpu.Event, got number",
              b.fill, b, 0, {wait = {ev, 7}})
    has_error("luagpu: buffer:copy_to: argument #2: wait: expected a luagpu.Event, got string",
              b.copy_to, b, dev:buffer("float", 4), {wait = "ev"})
    has_error("luagpu: buffer:read: argument #1: unknown option 'wiat' (expected wait, queue)",
              b.read, b, {wiat = {ev}})
    has_error("luagpu: buffer:fill: argument #2: unknown option 'que' (expected wait, queue, "
              .. "event)", b.fill, b, 0, {que = dev:queue()})
    local q = dev:queue()
    has_error("luagpu: queue:marker: argument #1: unknown option 'wiat' (expected wait)",
              q.marker, q, {wiat = {ev}})
    has_error("luagpu: queue:barrier: argument #1: unknown option 'queue' (expected wait)",
              q.barrier, q, {queue = q})
  end)

  it("reads wait lists raw: a __len or __index of the table is not asked", function()
    local b = dev:buffer("int", 4)
    local ev = b:fill(2)
    for _, n in ipairs{-2, -1, 0, 5, math.maxinteger} do
      local w = setmetatable({ev}, {__len = function() return n end,
                                    __index = function() error("must not be read") end})
      b:fill(3, {wait = w}):wait()
      assert.equal(1, select("#", gpu.wait(w)))
    end
    assert.same({3, 3, 3, 3}, b:get():totable())
    local many = {}
    for i = 1, 65537 do many[i] = ev end
    has_error("luagpu: buffer:fill: argument #2: wait: 65537 events are too many (at most 65536)",
              b.fill, b, 0, {wait = many})
    has_error("luagpu: gpu.wait: argument #1: 65537 events are too many (at most 65536)",
              gpu.wait, many)
  end)

  it("rejects events of another context", function()
    -- another platform's device, else a sub-device (dev:partition makes a
    -- context of its own), so that one platform (CI) checks it too
    local other
    for _, d in ipairs(gpu.devices()) do
      if d.platform ~= dev.platform then other = d end
    end
    if not other then
      local ok, subs = pcall(dev.partition, dev, {equally = 1})
      if not ok then
        assert.matches("cannot be partitioned", tostring(subs), 1, true)
        pending("one platform, and " .. dev.name .. " cannot be partitioned: no second context")
        return
      end
      other = subs[1]
    end
    local ev = other:buffer("int", 4):fill(1)
    has_error("luagpu: buffer:fill: argument #2: wait[1]: the event belongs to another "
              .. "context (another platform's device, or a sub-device of dev:partition)",
              function() dev:buffer("int", 4):fill(0, {wait = {ev}}) end)
    local q = other:queue()
    has_error("luagpu: queue:marker: argument #1: wait: the event belongs to another context",
              function() q:marker(dev:buffer("int", 4):fill(2)) end)
    ev:wait()
  end)
end)

describe("queue lifetime", function()
  it("release is harmless twice and use after release raises", function()
    local q = dev:queue()
    local b = dev:buffer("int", 8)
    b:fill(3, {queue = q}):wait()
    q:release()
    q:release()
    assert.equal("luagpu.Queue (released)", tostring(q))
    has_error("luagpu: queue:finish: attempt to use a released queue", q.finish, q)
    has_error("luagpu: queue:marker: attempt to use a released queue", q.marker, q)
    has_error("luagpu: buffer:fill: argument #2: queue: attempt to use a released queue",
              b.fill, b, 1, {queue = q})
    has_error("luagpu: queue.profiling: attempt to use a released queue",
              function() return q.profiling end)
    local filled
    do
      local q2 <close> = dev:queue()
      filled = b:fill(5, {queue = q2})
    end
    -- releasing q2 flushes it, but orders nothing against the default queue
    assert.same({5, 5, 5, 5, 5, 5, 5, 5}, b:get({wait = filled}):totable())
  end)

  it("the default queue outlives an explicit release", function()
    local q = dev:default_queue()
    assert.is_true(q.default)
    assert.is_true(q.profiling)
    assert.is_false(q.out_of_order)
    assert.equal(q, dev:default_queue())
    assert.matches("^luagpu.Queue: default, in%-order", tostring(q))
    q:release()
    local b = dev:buffer("int", 2)
    b:fill(4):wait()
    assert.same({4, 4}, b:get():totable())
    q:finish()
  end)
end)

describe("examples/async_copies.lua", function()
  it("runs its pipeline and checks the result", function()
    local build = os.getenv("LUAGPU_BUILD") or "build"
    local cmd = ("lua5.4 -e 'package.cpath = %q .. package.cpath' examples/async_copies.lua "
                 .. "%d 2>&1; echo \"exit $?\""):format(build .. "/?.so;", 1001)
    local p = io.popen(cmd)
    local out = p:read("a")
    p:close()
    assert.matches("ok: 1001 elements, c = a[1..500] .. b[501..1001]\nexit 0\n", out, 1, true)
  end)
end)
