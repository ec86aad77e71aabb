-- examples/mpi_sum.lua: a distributed sum, checked against one process.
--
--   mpirun -np 4 luagpu examples/mpi_sum.lua [N]
--   (as root, or with fewer than 4 cores: mpirun --allow-run-as-root --oversubscribe -np 4 ...)
--
-- Every rank makes its share of N values (the same values a single process
-- would make for those positions), sums them on its own device with
-- luagpu.reduce, and mpi.allreduce adds the ranks' sums. Rank 0 then sums
-- all N values alone, on its device, and compares: the values are integers
-- held in longs, so the two sums must be equal to the last digit.
local gpu = rawget(_G, "gpu") or require "luagpu"
local mpi = require "luagpu.mpi"
local reduce = require "luagpu.reduce"

local n = math.tointeger(tonumber(arg and arg[1])) or 1000003
-- ranks on one machine share its devices: rank r takes device r (mod count)
local devices = gpu.devices()
local dev = devices[mpi.rank % #devices + 1]

-- value i of the whole data, the same on every rank
local function value(i) return (i * 7919) % 2001 - 1000 end

-- this rank's share: positions first..last (a share may be empty)
local first = mpi.rank * n // mpi.size + 1
local last = (mpi.rank + 1) * n // mpi.size
local part = gpu.array("long", last - first + 1)
for i = first, last do part[i - first + 1] = value(i) end
local b = dev:buffer("long", #part)
b:write(part):wait()

reduce.sum(b)                        -- builds the reduction, outside the time
mpi.barrier()
local t0 = mpi.wtime()
local total = mpi.allreduce(reduce.sum(b), "sum")
local elapsed = mpi.wtime() - t0

if mpi.rank == 0 then
  local all = gpu.array("long", n)
  for i = 1, n do all[i] = value(i) end
  local one = reduce.sum(dev:buffer("long", n, {host = all}))
  print(("sum of %d values over %d ranks: %d (%.3f ms); one process: %d"):format(
    n, mpi.size, total, elapsed * 1e3, one))
  assert(total == one, "the distributed sum differs from one process's")
  print("ok: equal")
end
