-- The differential fuzzer of sharded tensors (spec/shard_fuzz.lua) with a
-- fixed seed: 120 random programs (its quick mode: few kernels to compile
-- on a fresh cache, about a minute on two cores) on two PoCL devices
-- (POCL_DEVICES="pthread pthread"), each against the same program on the
-- whole tensor on one device, in a child process.
local support = require "support"

describe("sharded tensors under a differential fuzzer", function()
  it("agree with the whole tensor on one device for 120 random programs", function()
    support.run_fuzzer("spec/shard_fuzz.lua", 20261127, 120, {two_devices = true})
  end)
end)
