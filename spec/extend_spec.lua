-- gpu.extend: Lua methods on luagpu's C types, added now or declared to be
-- loaded on first lookup (as luagpu.autoload declares dev:tensor).
local gpu = require "luagpu"
local support = require "support"
local errmsg, shell_quote = support.errmsg, support.shell_quote

local PROG = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"

-- Runs code in a fresh luagpu program; returns what it prints.
local function fresh(code)
  local p = io.popen(shell_quote(PROG) .. " -e " .. shell_quote(code) .. " 2>&1")
  local out = p:read("a")
  p:close()
  return out
end

describe("gpu.extend", function()
  it("adds methods that objects of the class then have", function()
    local dev = gpu.device()
    local b = dev:buffer("int", 3)
    gpu.extend("Buffer", {spec_extend_twice = function(buf) return 2 * buf.count end})
    assert.equals(6, b:spec_extend_twice())
    assert.equals(6, dev:buffer("int", 3):spec_extend_twice())
    -- a method gpu.extend added may be replaced; classes with fields of their own too
    gpu.extend("Buffer", {spec_extend_twice = function(buf) return 3 * buf.count end})
    assert.equals(9, b:spec_extend_twice())
    gpu.extend("LocalMem", {spec_extend_kb = function(m) return m.bytes / 1024 end})
    assert.equals(1, gpu.localmem("float", 256):spec_extend_kb())
    assert.equals("int", b.type)
    assert.is_nil(b.spec_extend_unknown)
  end)

  it("declares methods loaded on their first lookup", function()
    local loads = 0
    gpu.extend("Event", {"spec_extend_lazy", "spec_extend_other"}, function()
      loads = loads + 1
      gpu.extend("Event", {spec_extend_lazy = function() return "lazy" end,
                           spec_extend_other = function() return "other" end})
    end)
    local ev = gpu.user_event(gpu.device())
    assert.equals(0, loads)
    assert.equals("lazy", ev:spec_extend_lazy())
    assert.equals("other", ev:spec_extend_other())
    assert.equals("lazy", ev:spec_extend_lazy())
    assert.equals(1, loads)
    ev:complete()
  end)

  it("declares them again when the load raises, so the next lookup tries again", function()
    local tries = 0
    gpu.extend("Queue", {"spec_extend_flaky"}, function()
      tries = tries + 1
      if tries == 1 then error("luagpu: spec: not yet", 0) end
      gpu.extend("Queue", {spec_extend_flaky = function() return tries end})
    end)
    local q = gpu.device():queue()
    assert.equals("luagpu: spec: not yet", errmsg(function() return q.spec_extend_flaky end))
    assert.equals(2, q:spec_extend_flaky())
  end)

  it("refuses unknown classes, values that are no functions, and built-in methods", function()
    assert.equals("luagpu: gpu.extend: argument #1: expected a class name, got no value",
                  errmsg(gpu.extend))
    assert.matches("^luagpu: gpu%.extend: argument #1: no class named 'Devices' %(expected "
                   .. "Array, Buffer, Call, Context, Device, Event, [%w, ]*Queue, Sampler%)$",
                   errmsg(gpu.extend, "Devices", {}))
    assert.equals("luagpu: gpu.extend: argument #2: expected a table of methods, got string",
                  errmsg(gpu.extend, "Device", "tensor"))
    assert.equals("luagpu: gpu.extend: argument #2: method 'spec_x': expected a function, got number",
                  errmsg(gpu.extend, "Device", {spec_x = 1}))
    assert.equals("luagpu: gpu.extend: argument #2: expected method names as keys, got number",
                  errmsg(gpu.extend, "Device", {function() end}))
    assert.equals("luagpu: gpu.extend: argument #2: Device's method 'buffer' is built in: "
                  .. "gpu.extend does not replace it",
                  errmsg(gpu.extend, "Device", {buffer = function() end}))
    assert.equals("luagpu: gpu.extend: argument #2: name #2: expected a method name, got number",
                  errmsg(gpu.extend, "Device", {"spec_y", 7}, function() end))
    assert.equals("luagpu: gpu.extend: argument #2: Device already has a method 'build'",
                  errmsg(gpu.extend, "Device", {"build"}, function() end))
    assert.equals("luagpu: gpu.extend: argument #3: expected a function that adds the methods, "
                  .. "got boolean", errmsg(gpu.extend, "Device", {"spec_y"}, true))
    -- nothing of a refused call was added
    assert.is_nil(gpu.device().spec_x)
    assert.equals("function", type(gpu.device().buffer))
  end)

  it("refuses a method named as a field, which would hide it from every helper", function()
    local dev = gpu.device()
    -- every field API.md lists for devices, read from its text
    local api = support.read_file("docs/API.md")
    local list = assert(api:match("### Device fields %(read%-only%)%s*`([^`]+)`"))
    local names = {}
    for name in list:gmatch("[%w_]+") do names[#names + 1] = name end
    assert.is_true(#names >= 20, list)
    for _, name in ipairs(names) do
      assert.is_not_nil(dev[name], name)
      assert.equals("luagpu: gpu.extend: argument #2: Device has a field '" .. name ..
                    "': gpu.extend does not hide it behind a method",
                    errmsg(gpu.extend, "Device", {[name] = function() end}))
    end
    local b = dev:buffer("float", 4)
    local objects = {Buffer = {b, {"type", "shape", "bytes", "count", "device", "access",
                                   "parent", "root", "offset", "version"}},
                     Array = {gpu.array("float", 2), {"type", "count", "bytes", "shape"}},
                     Queue = {dev:queue(), {"device", "profiling", "out_of_order", "default"}},
                     Event = {b:fill(0), {"command", "status"}}}
    for cls, o in pairs(objects) do
      for _, name in ipairs(o[2]) do
        local before = o[1][name]
        assert.equals("luagpu: gpu.extend: argument #2: " .. cls .. " has a field '" .. name ..
                      "': gpu.extend does not hide it behind a method",
                      errmsg(gpu.extend, cls, {[name] = function() end}))
        assert.equals("luagpu: gpu.extend: argument #2: " .. cls .. " has a field '" .. name ..
                      "': gpu.extend does not hide it behind a method",
                      errmsg(gpu.extend, cls, {name}, function() end))
        assert.equals(type(before), type(o[1][name]), cls .. "." .. name)
        assert.is_true(type(before) ~= "function", cls .. "." .. name)
      end
    end
  end)

  it("finds a helper's method before its module is required, and loads it then", function()
    local out = fresh([[
      local dev = gpu.device()
      print(package.loaded["luagpu.tensor"] == nil, package.loaded["luagpu.reduce"] == nil)
      local f = dev.tensor
      print(type(f), package.loaded["luagpu.tensor"] ~= nil, f == dev.tensor)
      print(dev:arange("int", 1, 3):get()[3], type(gpu.where), type(gpu.reduce.sum))
    ]])
    assert.equals("true\ttrue\nfunction\ttrue\ttrue\n3\tfunction\tfunction\n", out)
  end)
end)
