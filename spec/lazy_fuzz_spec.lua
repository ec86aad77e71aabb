-- The differential fuzzer of lazy chains (spec/lazy_fuzz.lua) with a fixed
-- seed: 50 random programs (its quick mode: int tensors, few kernels to
-- compile on a fresh cache, under a minute on two cores) of lazy results,
-- writes into what they read (through views), views of lazy results, eval,
-- reads midway and release, each against the same program run eagerly
-- (require("luagpu.tensor").lazy = false), in a child process. With
-- X.flush_readers made a no-op this seed finds 16 mismatches.
local support = require "support"

describe("lazy chains under a differential fuzzer", function()
  it("agree with eager evaluation for 50 random programs", function()
    support.run_fuzzer("spec/lazy_fuzz.lua", 20261127, 50, {more = " %(errors in both: %d+%)"})
  end)
end)
