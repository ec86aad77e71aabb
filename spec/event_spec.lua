-- Events: wait and its results, status, profiling, gpu.wait, tostring and
-- release, with every bad-input message.
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

local function random_floats(n) return support.random_floats(n, 100000, 16) end

local STATES = {queued = true, submitted = true, running = true, complete = true}

describe("ev:wait", function()
  it("returns the command's result: nothing, a host array, or a number", function()
    local n = 500
    local ref = random_floats(n)
    local b = dev:buffer("double", n)
    local w = b:write(ref)
    assert.is_true(STATES[w.status])
    assert.is_nil(w:wait())
    assert.equal("complete", w.status)
    assert.is_nil(w:wait())                   -- waiting twice is fine
    local a = b:read():wait()
    assert.equal("double", a.type)
    assert.same(ref, a:totable())
    local s = dev:scalar("long", 123456789012)
    assert.equal(123456789012, s:read():wait())
    assert.equal("write", w.command)
  end)

  it("names the command and its state in tostring", function()
    local b = dev:buffer("int", 16)
    local f = b:fill(2)
    f:wait()
    assert.equal("luagpu.Event: fill (complete)", tostring(f))
    local c = b:copy_to(dev:buffer("int", 16))
    assert.matches("^luagpu.Event: copy %((%a+)%)$", tostring(c))
    c:wait()
    assert.equal("luagpu.Event: read (complete)", tostring((function()
      local r = b:read()
      r:wait()
      return r
    end)()))
  end)
end)

describe("profiling", function()
  it("gives the four times in nanoseconds and the duration", function()
    local b = dev:buffer("float", 1 << 16)
    local ev = b:write(random_floats(1 << 16))
    local p = ev:profile()
    for _, k in ipairs({"queued", "submit", "start", "end", "duration"}) do
      assert.equal("integer", math.type(p[k]), k)
    end
    assert.is_true(p.queued <= p.submit)
    assert.is_true(p.submit <= p.start)
    assert.is_true(p.start <= p["end"])
    assert.equal(p["end"] - p.start, p.duration)
    assert.equal(p.duration, ev.duration)
    local r = b:read()
    assert.is_true(r.duration >= 0)          -- waits first
    assert.equal("complete", r.status)
  end)

  it("raises a clear error when the queue has profiling off", function()
    local q = dev:queue{profiling = false}
    local ev = dev:buffer("int", 8):fill(1, {queue = q})
    has_error("luagpu: event:profile: the queue of this fill command has profiling off "
              .. "(dev:set_profiling(true) turns it on for a device's default queue, "
              .. "dev:queue{profiling = true} makes a queue with it)", ev.profile, ev)
    has_error("luagpu: event.duration: the queue of this fill command has profiling off",
              function() return ev.duration end)
    ev:wait()
  end)
end)

describe("gpu.wait", function()
  it("waits for several events and returns their results in order", function()
    local n = 100
    local r1, r2 = random_floats(n), random_floats(n)
    local a, b = dev:buffer("float", n), dev:buffer("float", n)
    local q = dev:queue()
    local w1, w2 = a:write(r1), b:write(r2, {queue = q})
    local x, y = gpu.wait(w1, w2)
    assert.is_nil(x)
    assert.is_nil(y)
    local ra, rb = gpu.wait(a:read(), b:read({queue = q}))
    assert.same(r1, ra:totable())
    assert.same(r2, rb:totable())
    local s = dev:scalar("int", 9)
    local list = {a:read(), s:read(), b:fill(0)}
    local u, v, w = gpu.wait(list)
    assert.same(r1, u:totable())
    assert.equal(9, v)
    assert.is_nil(w)
    assert.equal(0, select("#", gpu.wait()))
  end)

  it("checks every argument before waiting", function()
    local ev = dev:buffer("int", 4):fill(1)
    has_error("luagpu: gpu.wait: argument #2: expected a luagpu.Event, got number",
              gpu.wait, ev, 3)
    has_error("luagpu: gpu.wait: argument #1[2]: expected a luagpu.Event, got luagpu.Buffer",
              gpu.wait, {ev, dev:buffer("int", 1)})
    local dead = dev:buffer("int", 4):fill(1)
    dead:release()
    has_error("luagpu: gpu.wait: argument #1: attempt to use a released event", gpu.wait, dead)
  end)
end)

describe("event lifetime", function()
  it("release waits, is harmless twice, and use after it raises", function()
    local b = dev:buffer("float", 1 << 14)
    local ev = b:write(random_floats(1 << 14))
    ev:release()
    ev:release()
    assert.equal("luagpu.Event: write (released)", tostring(ev))
    has_error("luagpu: event:wait: attempt to use a released event", ev.wait, ev)
    has_error("luagpu: event:profile: attempt to use a released event", ev.profile, ev)
    has_error("luagpu: event.status: attempt to use a released event",
              function() return ev.status end)
    has_error("luagpu: buffer:fill: argument #2: wait[1]: attempt to use a released event",
              b.fill, b, 0, {wait = {ev}})
    do
      local e2 <close> = b:fill(1)
    end
    assert.equal(1, b:get()[1])
  end)
end)

describe("results and on_complete callbacks that release the Event", function()
  it("ev:wait, gpu.wait and ev:profile keep what they got before the callbacks ran", function()
    local n = 100
    local ref = random_floats(n)
    local b = dev:buffer("float", n)
    b:write(gpu.array("float", ref)):wait()
    local ev = b:read()
    local ran = 0
    ev:on_complete(function(e, status)
      assert.equal("complete", status)
      ran = ran + 1
      e:release()
    end)
    local got = ev:wait()
    assert.equal(1, ran)
    assert.is_not_nil(got)
    assert.same(ref, got:totable())
    assert.equal("luagpu.Event: read (released)", tostring(ev))
    local e1, e2 = b:read(), b:read()
    e2:on_complete(function(e) e:release() end)
    local g1, g2 = gpu.wait(e1, e2)
    assert.same(ref, g1:totable())
    assert.same(ref, g2:totable())
    local e3 = b:fill(1)
    e3:on_complete(function(e) e:release() end)
    local t = e3:profile()
    assert.is_true(t["end"] >= t.start)
    local e4 = b:fill(2)
    e4:on_complete(function(e) e:release() end)
    assert.is_true(e4.duration >= 0)
  end)
end)
