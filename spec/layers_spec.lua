-- The layering of host/: no two files call each other, directly or through a
-- loop (tools/layers.lua over the objects of the build under test).
describe("host/ layering", function()
  it("has no call circles between its files", function()
    local build = os.getenv("LUAGPU_BUILD") or "build"
    local p = io.popen("lua5.4 tools/layers.lua " .. build .. "/*.o 2>&1; echo \"exit $?\"")
    local out = p:read("a")
    p:close()
    assert.matches("exit 0\n$", out, 1, false)
    -- the bottom layer holds the files that call no other
    assert.matches("layers: 0  [^\n]*errors%.c", out)
    assert.matches("module%.c", out)
  end)
end)
