-- The examples that are not run by a subsystem's own spec: devices, pipeline
-- and the tour (`make demo`). Each runs through the luagpu program, as a
-- user would, and must exit 0 having checked its own results.
local build = os.getenv("LUAGPU_BUILD") or "build"

local function run(script, args)
  local p = io.popen(("%s/luagpu %s %s 2>&1"):format(build, script, args or ""))
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok and code == 0
end

describe("examples", function()
  it("devices.lua prints every device's summary", function()
    local out, ok = run("examples/devices.lua")
    assert.is_true(ok, out)
    assert.matches("platform 1: ", out, 1, true)
    assert.matches("compute_units", out, 1, true)
    assert.matches("default device: luagpu.Device: ", out, 1, true)
  end)

  it("pipeline.lua checks every chunk and draws a timeline of each command", function()
    local out, ok = run("examples/pipeline.lua", "3 4096")
    assert.is_true(ok, out)
    assert.matches("3 chunks of 4096 floats", out, 1, true)
    for c = 1, 3 do
      for _, step in ipairs { "write", "scale", "add_next", "read" } do
        assert.matches(("%d %s%%s+[%%d.]+%%s+[%%d.]+%%s+|[ #]+|"):format(c, step), out)
      end
    end
    assert.matches("every chunk checked", out, 1, true)
  end)

  it("tour.lua (make demo) runs a kernel, a reduction and a matmul, all checked", function()
    local out, ok = run("examples/tour.lua")
    assert.is_true(ok, out)
    assert.matches("saxpy matches Lua%s+ok", out)
    assert.matches("sum, min, max match Lua%s+ok", out)
    assert.matches("64 random entries match Lua %(worst rel. error [%d.e+-]+%)%s+ok", out)
    assert.is_nil(out:find("MISMATCH", 1, true))
    -- its device time spans every command of the matmul, not only the last
    local gpu = require "luagpu"
    local dev = gpu.device()
    local _, last, events = gpu.matmul(dev:buffer("float", {256, 192}),
                                       dev:buffer("float", {192, 320}))
    last:wait()
    assert.matches(("256x192x320 in [%%d.]+ ms wall, [%%d.]+ ms on the device in %d " ..
                    "command%%(s%%)"):format(#events), out)
  end)

  it("README.md's example runs under lua5.4 and under the luagpu program", function()
    local f = assert(io.open("README.md"))
    local code = assert(f:read("a"):match("```lua\n(.-)```"), "a Lua example in README.md")
    f:close()
    local path = os.tmpname()
    f = assert(io.open(path, "w"))
    f:write(code)
    f:close()
    local out, ok = run(path)
    local p = io.popen(("LUA_CPATH='%s/?.so' lua5.4 %s 2>&1"):format(build, path))
    local out2 = p:read("a")
    local ok2, _, code2 = p:close()
    os.remove(path)
    assert.is_true(ok, out)
    assert.matches("^2%.0\t[%d.]+ us\n$", out)
    assert.is_true(ok2 and code2 == 0, out2)
    assert.matches("^2%.0\t[%d.]+ us\n$", out2)
  end)
end)
