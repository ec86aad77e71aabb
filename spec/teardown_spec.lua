-- Teardown with commands still waiting for a user event that no one set:
-- the program ends (lua_close fails unset user events before any queue
-- is finished), whatever the order the queue and the event were made in.
-- Each case runs in a child under `timeout`: a hang shows as exit 124.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local support = require "support"

-- Runs body as a script of the program; returns its output and exit code.
local function run(body, env)
  local script = os.tmpname()
  support.write_file(script, body)
  local p = io.popen((env or "") .. " timeout 20 " .. support.shell_quote(PROG) .. " "
                     .. support.shell_quote(script) .. " 2>&1; echo \"exit $?\"")
  local out = p:read("a")
  p:close()
  os.remove(script)
  return out
end

local KERNEL = 'dev:build("kernel void k(global float *x) { x[get_global_id(0)] += 1; }").k'

describe("a script that ends with commands gated on an unset user event", function()
  for _, order in ipairs {"queue first", "event first"} do
    it("ends without hanging, " .. order, function()
      local q, u = "local q = dev:queue()\n", "local u = gpu.user_event(dev)\n"
      local out = run("local dev = gpu.device()\n" .. (order == "queue first" and q .. u or u .. q)
        .. "local b = dev:buffer('float', 1024)\n"
        .. "local r = b:read(nil, {queue = q, wait = u})\n"              -- a pinned slab of q
        .. "b:write(gpu.array('float', 1024), {queue = q, wait = u})\n"  -- dropped
        .. KERNEL .. "(b):run({1024}, nil, {queue = q, event = false})\n"
        .. "print('end')\n")
      assert.equal("end\nexit 0\n", out)
      -- gated commands on two queues (not with a kernel behind one of them:
      -- PoCL 5 aborts in pocl_update_event_failed when such a user event fails)
      out = run("local dev = gpu.device()\n" .. (order == "queue first" and q .. u or u .. q)
        .. "local b = dev:buffer('float', 1024)\n"
        .. "local r = b:read(nil, {queue = q, wait = u})\n"
        .. "local q2 = dev:queue()\n"
        .. "b:fill(1, {queue = q2, wait = u})\n"
        .. "print('end')\n")
      assert.equal("end\nexit 0\n", out)
    end)
  end

  it("ends without hanging when the queue is collected before the end", function()
    local out = run([[
local dev = gpu.device()
local u = gpu.user_event(dev)
local b = dev:buffer('float', 64)
do
  local q = dev:queue()
  ]] .. KERNEL .. [[(b):run({64}, nil, {queue = q, wait = u, event = false})
end
collectgarbage()      -- the queue goes; its finish waits for lua_close
print('collected')
u:complete()
]])
    assert.equal("collected\nexit 0\n", out)
  end)

  it("makes user events inside a finalizer without waiting for them (it hung there)", function()
    -- (a command enqueued inside a finalizer completes there, but a user
    -- event is no command: waiting for the script to set it never ended)
    local out = run([[
local dev = gpu.device()
local b = dev:buffer("float", 4)
setmetatable({}, {__gc = function()
  local u = gpu.user_event(dev)
  print("made", u.status)
  u:complete()
  print("set", u.status)
  b:fill(2, {wait = u, queue = dev:queue()})
end})
collectgarbage()
print(b:get()[4])
-- and one made by lua_close's finalizers, left unset
G = setmetatable({}, {__gc = function()
  local u = gpu.user_event(dev)
  print("closing", u.status)
end})
]])
    assert.equal("made\tsubmitted\nset\tcomplete\n2.0\nclosing\tsubmitted\nexit 0\n", out)
  end)

  it("lets a finalizer a collection runs enqueue a command gated on a user event set " ..
     "afterwards (it waited for it for ever)", function()
    local out = run([[
local dev = gpu.device()
local b = dev:buffer("float", 4)
local u = gpu.user_event(dev)
local ev
setmetatable({}, {__gc = function() ev = b:fill(3, {wait = u, queue = dev:queue()}) end})
collectgarbage()
print(ev.status ~= "complete")
u:complete()
ev:wait()
print(b:get()[4])
]])
    assert.equal("true\n3.0\nexit 0\n", out)
  end)
end)
