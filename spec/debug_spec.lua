-- The debug mode: buffers made while it is on carry a guard zone, and a
-- kernel that writes into it is named with the argument and the element;
-- off, the same launch passes unnoticed. LUAGPU_DEBUG=1 turns it on for a
-- whole program.
local gpu = require "luagpu"

local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"
local support = require "support"

local SOURCE = [[
kernel void shifted(global const float *x, global float *y, int by) {
  size_t i = get_global_id(0);
  y[i + by] = x[i];
}
]]

describe("debug mode", function()
  local dev, prog
  setup(function()
    dev = gpu.device()
    prog = dev:build(SOURCE)
  end)
  after_each(function() gpu.debug(false) end)

  it("names a kernel that wrote past the end of a buffer argument, and the element", function()
    assert.is_false(gpu.debug(true))
    local n, by = math.random(50, 500), math.random(1, 20)
    local x = dev:buffer("float", n, {host = gpu.array("float", n):fill(1)})
    local y = dev:buffer("float", n)
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() prog.shifted(x, y, by):run({n}) end)
    assert.is_false(ok)
    assert.equals(string.format("spec/debug_spec.lua:%d: luagpu: debug: kernel shifted wrote "
      .. "past the end of argument #2 (y) at element %d (it has %d elements of float; "
      .. "launched at spec/debug_spec.lua:%d)", line, n + 1, n, line), err)
    -- the canary is put back: a launch within bounds passes afterwards
    prog.shifted(x, y, by):run({n - by}):wait()
    local got = y:get()
    assert.equals(1, got[n])
    assert.equals(0, got[by])
  end)

  it("counts the element from a view's own start", function()
    gpu.debug(true)
    local align = dev.mem_base_addr_align // 4          -- floats per alignment step
    local n = 4 * align
    local x = dev:buffer("float", n)
    local y = dev:buffer("float", n)
    local v = y:sub(align + 1, n)                       -- ends where y ends
    local ok, err = pcall(function() prog.shifted(x, v, 2):run({#v}) end)
    assert.is_false(ok)
    assert.matches("wrote past the end of argument #2 (y) at element " .. #v + 1 .. " (it has "
                   .. #v .. " elements of float;", err, 1, true)
  end)

  it("lets the same launch pass unnoticed when off", function()
    local n = 64
    local x = dev:buffer("float", n)
    local y = dev:buffer("float", n + 8)
    assert.is_false(gpu.debug())
    prog.shifted(x, y, 8):run({n}):wait()              -- within y: fine either way
    gpu.debug(true)
    local z = dev:buffer("float", n + 8)
    prog.shifted(x, z, 8):run({n}):wait()
    prog.shifted(x, y, 9):run({n}):wait()              -- y has no guard: not checked
    assert.is_true(gpu.debug())
  end)

  it("rejects a non-boolean switch", function()
    assert.has_error(function() gpu.debug("yes") end,
      "luagpu: gpu.debug: argument #1: expected a boolean, got string")
  end)

  it("is on for a whole program with LUAGPU_DEBUG=1", function()
    local path = os.tmpname()
    support.write_file(path, "local dev = gpu.device()\n"
      .. "local p = dev:build[[" .. SOURCE .. "]]\n"
      .. "local x, y = dev:buffer('int', 10), dev:buffer('float', 10)\n"
      .. "print(gpu.debug())\n"
      .. "p.shifted(dev:buffer('float', 10), y, 1):run({10})\n")
    local p = io.popen("LUAGPU_DEBUG=1 " .. support.shell_quote(PROG) .. " "
                       .. support.shell_quote(path) .. " 2>&1")
    local out = p:read("a")
    local _, _, code = p:close()
    os.remove(path)
    assert.equals(1, code)
    assert.matches("^true\n", out)
    -- the program's prefix once, before the location
    assert.matches("\nluagpu: " .. path .. ":9: debug: kernel shifted wrote past the end of "
                   .. "argument #2 (y) "
                   .. "at element 11 (it has 10 elements of float; launched at ", out, 1, true)
  end)

  it("does not hang a transfer or kernel gated on a user event completed later", function()
    local path = os.tmpname()
    support.write_file(path, [[
local dev = gpu.device()
local q = dev:queue()
local u = gpu.user_event(dev)
local b = dev:buffer("float", 4)
local w = b:write(gpu.array("float", {1, 2, 3, 4}), {queue = q, wait = u})
local p = dev:build("kernel void twice(global float *x) { x[get_global_id(0)] *= 2; }")
local k = p.twice(b):run({4}, nil, {queue = q, wait = w})
local r = b:read(nil, {queue = q, wait = k})
print(gpu.debug(), r.status ~= "complete")
u:complete()
print(table.concat(r:wait():totable(), " "))
-- with the gate open again, launches are checked at once as before
local y = dev:buffer("float", 10)
local ok, e = pcall(function()
  dev:build("kernel void past(global float *y) { y[get_global_id(0) + 1] = 1; }").past(y):run({10})
end)
print(ok, e:match("wrote past the end of argument #1 %(y%) at element 11") ~= nil)
-- a gated launch is checked when its Event is waited for
local u2 = gpu.user_event(dev)
local past = dev:build("kernel void past2(global float *y) { y[get_global_id(0) + 2] = 1; }")
local k2 = past.past2(y):run({10}, nil, {queue = q, wait = u2})
u2:complete()
print(pcall(k2.wait, k2))
]])
    local function run(cmd)
      local p = io.popen("LUAGPU_DEBUG=1 timeout 20 " .. cmd .. " 2>&1; echo \"exit $?\"")
      local out = p:read("a")
      p:close()
      return out
    end
    local out = run(support.shell_quote(PROG) .. " " .. support.shell_quote(path))
    os.remove(path)
    assert.equals("true\ttrue\n2.0 4.0 6.0 8.0\nfalse\ttrue\nfalse\tluagpu: debug: kernel "
                  .. "past2 wrote past the end of argument #1 (y) at element 11 (it has 10 "
                  .. "elements of float; launched at " .. path .. ":21)\nexit 0\n", out)
    out = run(support.shell_quote(PROG) .. " examples/gated_pipeline.lua 4 1000")
    assert.matches("every chunk checked\nexit 0\n$", out)
  end)
end)
