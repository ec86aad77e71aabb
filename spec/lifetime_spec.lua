-- Lifetime and memory: what a command uses stays alive until it completes,
-- release/__gc/__close on every object, use after release, closing the Lua
-- state with commands pending, and the collector kept informed of device bytes.
local gpu = require "luagpu"

local dev = gpu.device()
local BUILD = os.getenv("LUAGPU_BUILD") or "build"

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

local function random_ints(n) return support.random_ints(n, -2^31, 2^31 - 1) end

describe("commands keep what they use alive", function()
  it("a write from a dropped host array lands intact after a full collection", function()
    local n = 1 << 18
    local b = dev:buffer("int", n)
    local ref = random_ints(n)
    for round = 1, 3 do
      b:write(gpu.array("int", ref))         -- array and Event dropped at once
      collectgarbage()
      collectgarbage()
      -- garbage that reuses the freed memory, had the array gone early
      for _ = 1, 4 do gpu.array("int", n):fill(-round) end
      collectgarbage()
    end
    local got = b:get()
    for i = 1, n, 997 do assert.equal(ref[i], got[i]) end
    assert.same(ref, got:totable())
  end)

  it("a read into a dropped Event's array, a dropped buffer, a dropped view", function()
    local n = 1 << 16
    local ref = random_ints(n)
    local dst = gpu.array("int", n)
    do
      local b = dev:buffer("int", n, {host = ref})
      b:sub(1, n // 2):read(gpu.array("int", n // 2))   -- dropped at once
      b:read(dst)
    end
    collectgarbage()
    collectgarbage()
    dev:finish()
    assert.same(ref, dst:totable())
    -- a copy whose source and destination are both dropped
    local c = dev:buffer("int", n)
    do
      dev:buffer("int", n, {host = ref}):sub(1, n):copy_to(c)
    end
    collectgarbage()
    assert.same(ref, c:get():totable())
  end)

  it("releasing a buffer under a pending command is safe", function()
    local n = 1 << 18
    local ref = random_ints(n)
    local a = dev:buffer("int", n, {host = ref})
    local b = dev:buffer("int", n)
    local ev = a:copy_to(b)
    a:release()
    ev:wait()
    assert.same(ref, b:get():totable())
  end)
end)

describe("release", function()
  it("is harmless twice on buffers and views; any use after raises", function()
    local b = dev:buffer("float", 64)
    local v = b:sub(1, 32)
    local vv = v:sub(9, 16)
    v:release()
    v:release()
    assert.equal("luagpu.Buffer (released)", tostring(v))
    has_error("luagpu: buffer:get: attempt to use a released buffer", v.get, v)
    has_error("luagpu: buffer:sub: attempt to use a released buffer", v.sub, v, 1, 2)
    has_error("luagpu: buffer.type: attempt to use a released buffer",
              function() return v.type end)
    has_error("luagpu: buffer:__len: attempt to use a released buffer", function() return #v end)
    -- the root and the view of the released view still work
    assert.equal(8, #vv:get())
    b:fill(1)
    b:release()
    b:release()
    for _, x in ipairs({b, vv}) do
      has_error("luagpu: buffer:write: attempt to use a released buffer", x.write, x,
                gpu.array("float", 8))
      has_error("luagpu: buffer:read: attempt to use a released buffer", x.read, x)
      has_error("luagpu: buffer:fill: attempt to use a released buffer", x.fill, x, 0)
      has_error("luagpu: buffer:copy_to: attempt to use a released buffer", x.copy_to, x,
                dev:buffer("float", 8))
    end
    local c = dev:buffer("float", 8)
    has_error("luagpu: buffer:copy_to: argument #1: attempt to use a released buffer",
              c.copy_to, c, vv)
    assert.equal("luagpu.Buffer (released)", tostring(vv))
  end)

  it("__close releases buffers, views, events and queues at the end of a block", function()
    local b2, v2, e2, q2
    do
      local b <close> = dev:buffer("int", 16)
      local v <close> = b:sub(2, 5)
      local q <close> = dev:queue()
      local e <close> = v:fill(7, {queue = q})
      b2, v2, e2, q2 = b, v, e, q
    end
    has_error("attempt to use a released buffer", b2.get, b2)
    has_error("attempt to use a released buffer", v2.get, v2)
    has_error("attempt to use a released event", e2.wait, e2)
    has_error("attempt to use a released queue", q2.finish, q2)
  end)
end)

describe("one vocabulary for released objects and read-only fields", function()
  it("gpu.type says 'released X' once an object is released, as io.type says 'closed file'",
     function()
    local b = dev:buffer("int", 8)
    local v = b:sub(2, 5):sub(1, 2)
    local q = dev:queue()
    local e = b:fill(1)
    e:wait()
    assert.same({"Buffer", "Buffer", "Queue", "Event", "Device"},
                {gpu.type(b), gpu.type(v), gpu.type(q), gpu.type(e), gpu.type(dev)})
    assert.same({false, false, false, false, false},
                {gpu.released(b), gpu.released(v), gpu.released(q), gpu.released(e),
                 gpu.released(dev)})
    assert.is_true(rawequal(b, v.root) and rawequal(b, b.root) and rawequal(b, v.parent.root))
    b:release()
    q:release()
    e:release()
    assert.same({"released Buffer", "released Buffer", "released Queue", "released Event"},
                {gpu.type(b), gpu.type(v), gpu.type(q), gpu.type(e)})
    assert.same({true, true, true, true}, {gpu.released(b), gpu.released(v), gpu.released(q),
                                           gpu.released(e)})
    assert.is_nil(gpu.type(setmetatable({}, {__name = "luagpu.Buffer"})))
    -- gpu.released answers nil for anything that is not luagpu's
    assert.is_nil(gpu.released(setmetatable({}, {__name = "luagpu.Buffer"})))
    assert.is_nil(gpu.released(io.stdout))
    assert.is_nil(gpu.released(3))
  end)

  it("every class refuses field writes with a luagpu message", function()
    local b = dev:buffer("int", 4)
    local e = b:fill(0)
    local q = dev:queue()
    has_error("luagpu: event: field 'x' is read-only", function() e.x = 1 end)
    has_error("luagpu: queue: field 'profiling' is read-only", function() q.profiling = false end)
    has_error("luagpu: device: field 'name' is read-only", function() dev.name = "x" end)
    has_error("luagpu: localmem: field 'count' is read-only",
              function() gpu.localmem("int", 4).count = 8 end)
    has_error("luagpu: buffer: cannot set field 'x'", function() b.x = 1 end)
    local prog = dev:build("kernel void f(global int *x) { x[0] = 1; }")
    local k = prog.f
    has_error("luagpu: program: field 'log' is read-only", function() prog.log = "" end)
    has_error("luagpu: kernel: field 'name' is read-only", function() k.name = "g" end)
    prog:release()
    assert.same({"released Program", "released Kernel"}, {gpu.type(prog), gpu.type(k)})
  end)
end)

describe("closing the Lua state", function()
  it("with commands pending tears down without crashing or hanging", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      package.cpath = ]] .. string.format("%q", BUILD .. "/?.so;") .. [[ .. package.cpath
      local gpu = require "luagpu"
      local dev = gpu.device()
      local n = 1 << 20
      local q = dev:queue{out_of_order = true}
      local keep = {}
      for i = 1, 8 do
        local a = dev:buffer("float", n)
        local b = dev:buffer("float", n)
        local w = a:write(gpu.array("float", n))
        keep[#keep + 1] = a:copy_to(b, {wait = {w}, queue = q})
        keep[#keep + 1] = b:read()
        b:sub(2, 100):fill(i)
        if i % 2 == 0 then a:release() end
      end
      q:release()
      print("enqueued")
    ]])
    f:close()
    local p = io.popen("timeout 120 lua5.4 " .. script .. " 2>&1; echo \"exit $?\"")
    local out = p:read("a")
    p:close()
    os.remove(script)
    assert.matches("enqueued\nexit 0\n", out, 1, true)
  end)
end)

describe("device memory", function()
  it("the collector hears of device bytes, so dropped buffers do not pile up", function()
    -- with the automatic collector stopped, only device allocations can
    -- start a full collection: a dropped sentinel shows that one ran
    local chunk = 64 << 20
    local total = math.min(dev.global_mem_size // 4, 1 << 30) * 3 // 2
    collectgarbage("stop")
    local collected = false
    setmetatable({}, {__gc = function() collected = true end})
    for _ = 1, total // chunk + 1 do
      dev:buffer("uchar", chunk)
    end
    collectgarbage("restart")
    assert.is_true(collected)
  end)
end)
