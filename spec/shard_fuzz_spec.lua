-- The differential fuzzer of sharded tensors (spec/shard_fuzz.lua) with a
-- fixed seed: 120 random programs (its quick mode: few kernels to compile
-- on a fresh cache, about a minute on two cores) on two PoCL devices
-- (POCL_DEVICES="pthread pthread"), each against the same program on the
-- whole tensor on one device, in a child process.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local support = require "support"
local shell_quote = support.shell_quote

describe("sharded tensors under a differential fuzzer", function()
  it("agree with the whole tensor on one device for 120 random programs", function()
    local p = io.popen("POCL_DEVICES='pthread pthread' " .. shell_quote(BUILD .. "/luagpu") ..
                       " spec/shard_fuzz.lua 20261127 120 quick 2>&1")
    local out = p:read("a")
    local ok = p:close()
    assert(ok, out)
    assert.matches("programs 120 mismatches 0\n$", out)
  end)
end)
