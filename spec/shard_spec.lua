-- luagpu's sharded tensors (gpu.shard, gpu.replicate) over two devices of
-- one platform (two PoCL devices: POCL_DEVICES="pthread pthread"), in a
-- child process that runs spec/shard_check.lua: every form's results
-- against the same ops on one device, and every bad input's message.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local support = require "support"
local shell_quote = support.shell_quote

describe("sharded tensors over two devices", function()
  it("give one device's results, with the program and with a stock lua5.4", function()
    for _, host in ipairs{shell_quote(BUILD .. "/luagpu"),
                          ("env LUA_PATH=%s LUA_CPATH=%s lua5.4"):format(
                            shell_quote("lua/?.lua;lua/?/init.lua;;"),
                            shell_quote(BUILD .. "/?.so;;"))} do
      local p = io.popen("POCL_DEVICES='pthread pthread' " .. host .. " spec/shard_check.lua 2>&1")
      local out = p:read("a")
      local ok = p:close()
      assert(ok, out)
      assert.matches("^checked %d+\n$", out)
    end
  end)
end)
