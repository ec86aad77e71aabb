-- build/luagpu spec/differential/run.lua N SEED OUT [FAMILIES]: the programs
-- of `make fuzz-numpy` (spec/differential/gen.lua), written to OUT.
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local D = require "gen"
local n, seed, out, families = tonumber(arg[1]), tonumber(arg[2]), arg[3], tonumber(arg[4])
local t0 = os.time()
local count, errors = D.run{n = n, seed = seed, out = out, families = families, progress = true,
                              times = os.getenv("DIFFERENTIAL_TIMES") ~= nil}
io.stderr:write(string.format("differential: %d programs (seed %d, %d raised) in %d s\n",
                              count, seed, errors, os.time() - t0))
