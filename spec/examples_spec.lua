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
  end)
end)
