-- bench/gpu/mpi_allreduce.lua: luagpu.mpi's allreduce (sum) of float
-- buffers on each rank's own device, whole (staged through host memory at
-- once) and pipelined (pieces of mpi.chunk_bytes through pinned memory),
-- and the parts it is made of: the read to the host (pageable and pinned),
-- MPI's allreduce of host arrays alone, the write back. Times are the
-- median over REPS of the slowest rank's wall time; algbw = bytes / time,
-- busbw = algbw * 2 (n - 1) / n (as nccl-tests reports), for the allreduce
-- rows. Baseline: bench/gpu/nccl_allreduce.py (torch.distributed, NCCL) at
-- the same sizes; bench/gpu/mpi_run.sh runs both and joins the tables.
--
--   mpirun -np 2 build/luagpu bench/gpu/mpi_allreduce.lua [LOG2_SIZES [REPS [CHUNKS_KIB]]]
--     LOG2_SIZES  float counts as powers of two, "20,22,24,26,28" by default
--     REPS        timed repetitions per row (after one warm-up), 5 by default
--     CHUNKS_KIB  pipelined piece sizes in KiB, "1024,4096,16384" by default
--
-- Rank r uses gpu.devices("gpu")[r + 1] (its own GPU), else the CPU
-- devices in turn. Rank 0 prints the table and writes it to
-- $OUT/mpi_allreduce.txt when OUT is set.
local gpu = require "luagpu"
local mpi = require "luagpu.mpi"
local core = require "luagpu_mpi"

local function list(s, default)
  local t = {}
  for v in (s or default):gmatch("[^,]+") do t[#t + 1] = assert(math.tointeger(tonumber(v)), v) end
  return t
end
local logs = list(arg and arg[1], "20,22,24,26,28")
local reps = tonumber(arg and arg[2]) or 5
local chunks = list(arg and arg[3], "1024,4096,16384")

local gpus = gpu.devices("gpu")
local dev
if #gpus >= mpi.size then
  dev = gpus[mpi.rank + 1]
else
  local all = gpu.devices()
  dev = all[mpi.rank % #all + 1]
end
local names            -- every rank's device name, 64 bytes each
do
  local mine = gpu.array("uchar", 64):fill(32)
  local s = dev.name:sub(1, 64)
  for i = 1, #s do mine[i] = s:byte(i) end
  names = mpi.allgather(mine)
end

local n_ranks = mpi.size
local lines = {}
local function out(s)
  if mpi.rank == 0 then
    print(s)
    lines[#lines + 1] = s
  end
end
for r = 0, n_ranks - 1 do
  local b = {}
  for i = 1, 64 do b[i] = string.char(names[r * 64 + i]) end
  out(("# rank %d: %s"):format(r, (table.concat(b):gsub("%s+$", ""))))
end
out(("# mpirun -np %d, float sum, median of %d; busbw = algbw * 2(n-1)/n"):format(n_ranks, reps))
out(("%-16s %10s %8s %10s %10s %10s"):format("method", "floats", "MiB", "time_ms", "algbw_GB/s",
                                             "busbw_GB/s"))

-- The median over reps of the slowest rank's time of f() (after a warm-up),
-- each between barriers, with the device finished.
local function timed(f)
  f()
  dev:finish()
  local t = {}
  for r = 1, reps do
    collectgarbage()
    mpi.barrier()
    local t0 = mpi.wtime()
    f()
    dev:finish()
    t[r] = mpi.allreduce(mpi.wtime() - t0, "max")
  end
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function row(method, n, s, collective)
  local bytes = n * 4
  local algbw = bytes / s / 1e9
  local busbw = collective and ("%10.2f"):format(algbw * 2 * (n_ranks - 1) / n_ranks) or
                ("%10s"):format("-")
  out(("%-16s %10d %8.1f %10.3f %10.2f %s"):format(method, n, bytes / 2^20, s * 1e3, algbw,
                                                   busbw))
end

local want = n_ranks * (n_ranks + 1) / 2
local function check(b, n, what)
  local first = b:sub(1, 1):get()[1]
  local last = b:sub(n, n):get()[1]
  if first ~= want or last ~= want then
    error(("rank %d: %s of %d floats: got %s .. %s, want %s"):format(mpi.rank, what, n, first,
                                                                     last, want))
  end
end

for _, lg in ipairs(logs) do
  local n = 1 << lg
  local x = dev:buffer("float", n)
  x:fill(mpi.rank + 1):wait()
  local h = gpu.array("float", n)
  -- the parts: read to pageable memory, to pinned memory, MPI alone, writes
  row("d2h pageable", n, timed(function() x:read(h):wait() end))
  local p = dev:buffer("float", n, {pinned = true, init = false})
  local ph = p:map("read_write")
  row("d2h pinned", n, timed(function() x:read(ph):wait() end))
  row("mpi host", n, timed(function() core.allreduce_part(h, "sum", nil, 0, n) end), true)
  row("h2d pageable", n, timed(function() x:write(h):wait() end))
  row("h2d pinned", n, timed(function() x:write(ph):wait() end))
  p:unmap(ph):wait()
  p:release()
  h = nil
  x:fill(mpi.rank + 1):wait()
  -- the whole allreduce, staged at once and pipelined
  mpi.chunk_bytes = 0
  local y
  row("staged", n, timed(function() y = mpi.allreduce(x, "sum") end), true)
  check(y, n, "staged")
  y:release()
  for _, kib in ipairs(chunks) do
    if n * 4 <= kib * 1024 then goto next end    -- one piece: the staged path
    mpi.chunk_bytes = kib * 1024
    row(("pipelined %dK"):format(kib), n,
        timed(function() y = mpi.allreduce(x, "sum") end), true)
    check(y, n, "pipelined")
    y:release()
    ::next::
  end
  x:release()
  collectgarbage()
end

local dir = os.getenv("OUT")
if mpi.rank == 0 and dir and dir ~= "" then
  local f = assert(io.open(dir .. "/mpi_allreduce.txt", "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
end
