-- build/luagpu spec/differential/run.lua N SEED OUT [FAMILIES]: the programs
-- of `make fuzz-numpy` (spec/differential/gen.lua), written to OUT; with
-- DIFFERENTIAL_EXTRA set (not empty, not 0), the ops of issue 32 too, their
-- indexing, joining and statistics ops in every other family
-- (DIFFERENTIAL_OPS=0: in none; =only: in every family; =paths: the ways of
-- topk, the one-sweep sort and softmax in every family).
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local D = require "gen"
local n, seed, out, families = tonumber(arg[1]), tonumber(arg[2]), arg[3], tonumber(arg[4])
local t0 = os.time()
local count, errors = D.run{n = n, seed = seed, out = out, families = families, progress = true,
                              times = os.getenv("DIFFERENTIAL_TIMES") ~= nil,
                              extra = (os.getenv("DIFFERENTIAL_EXTRA") or "0"):match("^0?$") == nil,
                              ops = ({["0"] = false, only = "only", paths = "paths"})[os.getenv("DIFFERENTIAL_OPS")]}
io.stderr:write(string.format("differential: %d programs (seed %d, %d raised) in %d s\n",
                              count, seed, errors, os.time() - t0))
