-- User events, on_complete callbacks, gpu.poll, gpu.await and gpu.run_loop
-- (ports of PyOpenCL's test_user_event and test_event_set_callback), with
-- every bad-input message, and what happens to unset user events when the
-- collector or lua_close meets them.
local gpu = require "luagpu"

local dev = gpu.device()
local BUILD = os.getenv("LUAGPU_BUILD") or "build"

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

local function random_floats(n) return support.random_floats(n, 100000, 16) end

-- Runs a script in a fresh lua5.4 and returns what it printed and its exit.
local function run_script(body)
  local script = os.tmpname()
  support.write_file(script, "package.cpath = " .. string.format("%q", BUILD .. "/?.so;")
                     .. " .. package.cpath\nlocal gpu = require 'luagpu'\n"
                     .. "local dev = gpu.device()\n" .. body)
  local p = io.popen("timeout 60 lua5.4 " .. script .. " 2>&1; echo \"exit $?\"")
  local out = p:read("a")
  p:close()
  os.remove(script)
  return out
end

describe("gpu.user_event", function()
  it("holds back the commands that wait for it until :complete()", function()
    local n = 1000
    local ref = random_floats(n)
    local u = gpu.user_event(dev)
    assert.equal("user event", u.command)
    assert.equal("submitted", u.status)
    local b = dev:buffer("float", n)
    local c = dev:buffer("float", n)
    local w = b:write(gpu.array("float", ref), {wait = u})
    local cp = b:copy_to(c, {wait = {w}})
    local m = dev:default_queue():marker(u)
    assert.are_not.equal("complete", w.status)
    assert.are_not.equal("complete", m.status)
    u:complete()
    assert.equal("complete", u.status)
    gpu.wait(cp, m)
    assert.same(ref, c:get():totable())
    assert.is_nil(u:wait())
  end)

  it("works in every wait list: kernels, dev:run, reads, fills, gpu.wait", function()
    local n = 256
    local ref = random_floats(n)
    local u1, u2 = gpu.user_event(dev), gpu.user_event(dev)
    local b = dev:buffer("float", n)
    local f = b:fill(0, {wait = {u1}})
    local w = b:write(ref, {wait = {f}})
    local k = dev:build("kernel void twice(global float *x) { x[get_global_id(0)] *= 2; }").twice
    local run = dev:run(k(b), {n}, nil, w, u2)
    local r = b:read(nil, {wait = run})
    u2:complete()
    u1:complete()
    local a = gpu.wait(r, u1, u2)
    for i = 1, n do assert.equal(ref[i] * 2, a[i]) end
  end)

  it("dropped commands waiting on it keep what they use, and run once it completes", function()
    local n = 4096
    local ref = random_floats(n)
    local u = gpu.user_event(dev)
    local b = dev:buffer("float", n)
    b:write(gpu.array("float", ref), {wait = u})   -- Event and array dropped
    collectgarbage()
    collectgarbage()
    u:complete()
    assert.same(ref, b:get():totable())
    assert.equal(0, (gpu.poll()))
  end)

  it(":fail(msg) ends it in error; waits on it raise with the message", function()
    local u = gpu.user_event(dev)
    local b = dev:buffer("int", 8)
    local r = b:read(nil, {wait = u})
    u:fail("the host gave up")
    assert.equal("error", u.status)
    has_error("luagpu: event:wait: user event failed: the host gave up", u.wait, u)
    has_error("luagpu: gpu.wait: user event failed: the host gave up", gpu.wait, u)
    local e = errmsg(r.wait, r)
    assert.matches("luagpu: event:wait: read command: CL_", e, 1, true)
    assert.matches("): it ended in error; a command does so too when an event in its wait list " ..
                   "failed (a user event's ev:fail, or a command that failed)", e, 1, true)
    has_error("luagpu: buffer:write: argument #2: wait[1]: the user event it waits for failed: "
              .. "the host gave up", b.write, b, {1, 2, 3, 4, 5, 6, 7, 8}, {wait = {u}})
    local v = gpu.user_event(dev)
    v:fail()
    has_error("luagpu: event:wait: user event failed: failed by ev:fail()", v.wait, v)
    -- a message with a NUL comes back whole
    local w = gpu.user_event(dev)
    w:fail("bad\0hidden")
    assert.equals("luagpu: event:wait: user event failed: bad\0hidden", errmsg(w.wait, w))
    assert.equals("luagpu: buffer:write: argument #2: wait[1]: the user event it waits for "
                  .. "failed: bad\0hidden", errmsg(b.write, b, {1, 2, 3, 4, 5, 6, 7, 8}, {wait = {w}}))
  end)

  it("raises on bad input", function()
    has_error("luagpu: gpu.user_event: argument #1: expected a luagpu.Device, got no value",
              gpu.user_event)
    has_error("luagpu: gpu.user_event: argument #1: expected a luagpu.Device, got luagpu.Buffer",
              gpu.user_event, dev:buffer("int", 1))
    local u = gpu.user_event(dev)
    u:complete()
    has_error("luagpu: event:complete: the user event was already completed", u.complete, u)
    has_error("luagpu: event:fail: the user event was already completed", u.fail, u, "x")
    local v = gpu.user_event(dev)
    has_error("luagpu: event:fail: argument #1: expected a message string, got table",
              v.fail, v, {})
    v:fail("no")
    has_error("luagpu: event:complete: the user event was already failed", v.complete, v)
    local w = dev:buffer("int", 4):fill(1)
    has_error("luagpu: event:complete: only an event of gpu.user_event can be set "
              .. "(this is a fill command)", w.complete, w)
    has_error("luagpu: event:fail: only an event of gpu.user_event can be set "
              .. "(this is a fill command)", w.fail, w)
    -- OpenCL keeps no times for a user event: raised at once, set or not
    -- (it waited for ever on one never set)
    local unset = gpu.user_event(dev)
    for _, e in ipairs{unset, u} do
      has_error("luagpu: event:profile: a user event has no profile: OpenCL times the " ..
                "commands of a queue (profile the commands that wait for it)", e.profile, e)
      has_error("luagpu: event.duration: a user event has no profile", function()
        return e.duration
      end)
    end
    unset:complete()
    u:release()
    has_error("luagpu: event:complete: attempt to use a released event", u.complete, u)
  end)
end)

describe("ev:on_complete", function()
  it("runs on the Lua thread at gpu.poll or a wait, never before, in order", function()
    local log = {}
    local u = gpu.user_event(dev)
    local b = dev:buffer("float", 16)
    local w = b:write(random_floats(16), {wait = u})
    assert.equal(w, w:on_complete(function(ev, st) log[#log + 1] = {ev, "w", st} end))
    u:on_complete(function(ev, st) log[#log + 1] = {ev, "u1", st} end)
    u:on_complete(function(ev, st) log[#log + 1] = {ev, "u2", st} end)
    assert.equal(0, gpu.poll())
    u:complete()
    w:wait()                                  -- a wait runs the callbacks of done commands
    assert.equal(3, #log)
    assert.same({w, "w", "complete"}, log[1])
    assert.same({u, "u1", "complete"}, log[2])
    assert.same({u, "u2", "complete"}, log[3])
    local done = dev:buffer("int", 4):fill(7)
    done:wait()
    done:on_complete(function(ev, st) log[#log + 1] = {ev, "late", st} end)
    assert.equal(3, #log)                     -- not run at registration
    assert.equal(1, gpu.poll())
    assert.same({done, "late", "complete"}, log[4])
    assert.equal(0, gpu.poll())               -- each runs once
  end)

  it("tells a failed or released event's callback so", function()
    local got = {}
    local u = gpu.user_event(dev)
    u:on_complete(function(_, st) got[#got + 1] = st end)
    u:fail("stop")
    local v = gpu.user_event(dev)
    v:on_complete(function(_, st) got[#got + 1] = st end)
    v:complete()
    v:release()
    assert.equal(2, gpu.poll())
    assert.same({"error", "released"}, got)
  end)

  it("reports a callback's error once, with its traceback; the others still run", function()
    local ran = {}
    local u = gpu.user_event(dev)
    u:on_complete(function() ran[#ran + 1] = 1 end)
    u:on_complete(function() error("callback trouble") end)
    u:on_complete(function() ran[#ran + 1] = 3 end)
    u:complete()
    local e = errmsg(gpu.poll)
    assert.matches("luagpu: on_complete: callback 1 of 1 failed: ", e, 1, true)
    assert.matches("callback trouble", e, 1, true)
    assert.matches("stack traceback:", e, 1, true)
    assert.same({1, 3}, ran)
    assert.equal(0, gpu.poll())
  end)

  it("runs during every blocking wait luagpu does, on the Lua thread", function()
    local b = dev:buffer("float", 256)
    local q = dev:queue()
    -- each wait, given the Event of a write on queue (nil: the default one)
    local waits = {
      {"ev:wait", function(ev) ev:wait() end},
      {"gpu.wait", function(ev) gpu.wait(ev) end},
      {"q:finish", function() q:finish() end, q},
      {"dev:finish", function() dev:finish() end},
      {"b:get", function() b:get() end},
      {"b:map", function() b:unmap(b:map("read")):wait() end},
      {"ev:profile", function(ev) ev:profile() end},
      {"ev.duration", function(ev) return ev.duration end},
    }
    for _, w in ipairs(waits) do
      local name, wait, queue = w[1], w[2], w[3]
      local ref = random_floats(256)
      local u = gpu.user_event(dev)
      local seen = {}
      local ev = b:write(ref, {queue = queue or dev:default_queue(), wait = u})
      ev:on_complete(function(e, st)
        seen[#seen + 1] = {e, st, select(2, coroutine.running())}
      end)
      u:complete()
      assert.equal(0, #seen, name)            -- not before a wait
      wait(ev)
      assert.same({{ev, "complete", true}}, seen, name)   -- once, on the main thread
      assert.same(ref, b:get():totable(), name)
      assert.equal(0, gpu.poll(), name)
    end
  end)

  it("a callback's error a helper's wait runs is raised at the script's line", function()
    -- (the C side's position skipped no frames: it named reduce/init.lua's
    -- line of the read inside x:sum(), or compact.lua's inside x:unique())
    local x = dev:tensor("int", {64}, 5)
    local info = debug.getinfo(1, "S")
    for _, op in ipairs{"sum", "unique"} do
      local ev = dev:buffer("int", 4):fill(1)
      ev:on_complete(function() error("trouble in a callback") end)
      local ok, e = pcall(function()
        local r = x[op](x); return r
      end)
      local line = debug.getinfo(1, "l").currentline - 2
      assert.is_false(ok)
      local want = ("%s:%d: luagpu: on_complete: callback 1 of 1 failed: "):format(
                   info.short_src, line)
      assert.equal(want, e:sub(1, #want), op)
    end
    dev:finish()
    assert.equal(0, gpu.poll())
  end)

  it("a callback's error raises once, from the blocking call that ran it", function()
    for _, wait in ipairs({function() dev:finish() end, function(b) return b:get() end}) do
      local b = dev:buffer("int", 8)
      local ran = 0
      local ev = b:fill(3)
      ev:on_complete(function() error("trouble in a callback") end)
      ev:on_complete(function() ran = ran + 1 end)
      local e = errmsg(wait, b)
      assert.matches("luagpu: on_complete: callback 1 of 1 failed: ", e, 1, true)
      assert.matches("trouble in a callback", e, 1, true)
      assert.matches("stack traceback:", e, 1, true)
      assert.equal(1, ran)
      assert.same({3, 3, 3, 3, 3, 3, 3, 3}, b:get():totable())   -- not raised again
      dev:finish()
      assert.equal(0, gpu.poll())
    end
  end)

  it("raises on bad input", function()
    local u = gpu.user_event(dev)
    has_error("luagpu: event:on_complete: argument #1: expected a function, got no value",
              u.on_complete, u)
    has_error("luagpu: event:on_complete: argument #1: expected a function, got number",
              u.on_complete, u, 3)
    u:complete()
  end)
end)

describe("gpu.await and gpu.run_loop", function()
  it("outside a loop, await is a wait", function()
    local ref = random_floats(64)
    local b = dev:buffer("double", 64)
    b:write(ref)
    assert.same(ref, gpu.await(b:read()):totable())
    local co = coroutine.wrap(function() return gpu.await(b:read()) end)
    assert.same(ref, co():totable())          -- a coroutine of no loop: blocks too
    -- a released event: named as gpu.wait names it
    local e = b:fill(1)
    e:release()
    has_error("luagpu: gpu.await: argument #1: attempt to use a released event", gpu.await, e)
  end)

  it("inside a loop, await yields until the event is done", function()
    local n = 512
    local ref = random_floats(n)
    local order = {}
    local b = dev:buffer("float", n)
    local go = gpu.user_event(dev)
    local result
    gpu.run_loop(function(x, y)
      order[#order + 1] = "main " .. x .. y
      gpu.spawn(function(z)
        order[#order + 1] = "writer " .. z
        gpu.await(b:write(ref))
        order[#order + 1] = "written"
        go:complete()
      end, "z")
      gpu.await(go)
      order[#order + 1] = "go"
      result = gpu.await(b:read())
    end, "x", "y")
    assert.same({"main xy", "writer z", "written", "go"}, order)
    assert.same(ref, result:totable())
  end)

  it("a failed event raises inside the task; a task's error ends the loop", function()
    local caught
    gpu.run_loop(function()
      local u = gpu.user_event(dev)
      gpu.spawn(function() u:fail("bad input") end)
      caught = select(2, pcall(gpu.await, u))
    end)
    assert.equal("luagpu: event:wait: user event failed: bad input", caught)
    local e = errmsg(gpu.run_loop, function()
      gpu.spawn(function() error("task trouble") end)
    end)
    assert.matches("luagpu: gpu.run_loop: a task failed: ", e, 1, true)
    assert.matches("task trouble", e, 1, true)
    assert.matches("stack traceback:", e, 1, true)
  end)

  it("await gives the result when the event's own on_complete releases it", function()
    local n = 256
    local ref = random_floats(n)
    local b = dev:buffer("float", n, {host = ref})
    -- gated: the loop sees it done only later, and drains its callback first
    local u = gpu.user_event(dev)
    local r1 = b:read(nil, {wait = u})
    local r2 = b:read()
    local r3 = b:read(nil, {wait = u})
    local released = {}
    local function release(e, status)
      released[#released + 1] = status
      e:release()
    end
    r1:on_complete(release)
    r2:on_complete(release)
    r3:on_complete(release)
    local got = {}
    gpu.run_loop(function()
      gpu.spawn(function() got[2] = gpu.await(r2) end)
      gpu.spawn(function() got[3] = gpu.await(r3) end)
      gpu.spawn(function() u:complete() end)
      got[1] = gpu.await(r1)
    end)
    for i = 1, 3 do
      assert.equal("luagpu.Array<float>[256]", tostring(got[i]):match("^[^:]+"), i)
      assert.same(ref, got[i]:totable())
    end
    assert.same({"complete", "complete", "complete"}, released)
    for _, r in ipairs {r1, r2, r3} do assert.equal("luagpu.Event: read (released)", tostring(r)) end
    -- not gated: the callback may run before the task first starts
    local r4 = b:read()
    r4:on_complete(function(e) e:release() end)
    gpu.run_loop(function() got[4] = gpu.await(r4) end)
    assert.same(ref, got[4]:totable())
    assert.equal("luagpu.Event: read (released)", tostring(r4))
  end)

  it("passes hundreds of arguments to run_loop's and spawn's tasks (issue 27 item 18)",
     function()
    -- in a child: before the fix the task's stack overflowed
    local out = run_script([[
      local args = {}
      for i = 1, 5000 do args[i] = math.random(1, 1000) end
      local want = 0
      for i = 1, #args do want = want + args[i] * i end
      local function weigh(...)
        local s = 0
        for i = 1, select("#", ...) do s = s + select(i, ...) * i end
        return s
      end
      for _, n in ipairs({250, 1000, #args}) do
        local got = {}
        gpu.run_loop(function(...)
          got[1] = select("#", ...) .. " " .. weigh(...)
          gpu.spawn(function(...)
            got[2] = select("#", ...) .. " " .. weigh(...)
          end, table.unpack(args, 1, n))
        end, table.unpack(args, 1, n))
        local w = 0
        for i = 1, n do w = w + args[i] * i end
        print(n, got[1] == n .. " " .. w, got[2] == n .. " " .. w)
      end
    ]])
    assert.equal("250\ttrue\ttrue\n1000\ttrue\ttrue\n5000\ttrue\ttrue\nexit 0\n", out)
  end)

  it("raises on bad input and when no task can go on", function()
    has_error("luagpu: gpu.run_loop: every task awaits a user event that no one can complete "
              .. "(2 tasks)", gpu.run_loop, function()
      gpu.spawn(function() gpu.await(gpu.user_event(dev)) end)
      gpu.await(gpu.user_event(dev))
    end)
    has_error("luagpu: gpu.run_loop: argument #1: expected a function, got no value", gpu.run_loop)
    has_error("luagpu: gpu.spawn: no gpu.run_loop is running", gpu.spawn, print)
    has_error("luagpu: gpu.await: argument #1: expected a luagpu.Event, got number",
              gpu.await, 1)
    local e
    gpu.run_loop(function()
      e = errmsg(gpu.run_loop, print)
      assert.matches("luagpu: gpu.spawn: argument #1: expected a function, got string",
                     errmsg(gpu.spawn, "f"), 1, true)
    end)
    assert.equal("luagpu: gpu.run_loop: a loop is already running (add tasks with gpu.spawn)", e)
  end)
end)

describe("unset user events", function()
  it("neither block lua_close nor a collection, and run no callback after it", function()
    local out = run_script([[
      local b = dev:buffer("float", 1 << 16)
      local u = gpu.user_event(dev)
      b:write(gpu.array("float", 1 << 16), {wait = u})      -- dropped
      local kept = b:read(nil, {wait = u})                  -- kept to the end
      u:on_complete(function() print("never") end)
      collectgarbage()
      local lost = gpu.user_event(dev)
      local r = b:read(nil, {wait = lost})
      lost = nil
      collectgarbage()                       -- nothing can complete it now: it fails
      print(r.status, select(2, pcall(r.wait, r)):match("read command") ~= nil)
      print("end")
    ]])
    assert.equal("error\ttrue\nend\nexit 0\n", out)
  end)
end)

describe("examples/gated_pipeline.lua", function()
  it("holds a pipeline behind a user event, draws progress, checks every chunk", function()
    local p = io.popen(BUILD .. "/luagpu examples/gated_pipeline.lua 5 3000 2>&1; echo \"exit $?\"")
    local out = p:read("a")
    p:close()
    assert.matches("5 chunks of 3000 floats", out, 1, true)
    assert.matches("enqueued, waiting for the gate: ", out, 1, true)
    assert.matches("[##############################] 5/5 chunks (complete)", out, 1, true)
    assert.matches("every chunk checked\nexit 0\n", out, 1, true)
  end)
end)
