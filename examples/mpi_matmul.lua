-- examples/mpi_matmul.lua: a distributed matrix product, checked against
-- one process.
--
--   mpirun -np 4 luagpu examples/mpi_matmul.lua [N]
--   (as root, or with fewer than 4 cores: mpirun --allow-run-as-root --oversubscribe -np 4 ...)
--
-- C = A x B for N x N floats. Every rank makes the same A and B (from the
-- same formula), multiplies its block of rows of A by B on its own device
-- with luagpu.matmul, and mpi.allgather puts the blocks of C together on
-- every rank, in rank order. Blocks must be of one size for allgather: the
-- last rank's block is padded with zero rows, cut off afterwards. Rank 0
-- then multiplies A by B alone and compares.
local gpu = rawget(_G, "gpu") or require "luagpu"
local mpi = require "luagpu.mpi"
local matmul = require "luagpu.matmul"

local n = math.tointeger(tonumber(arg and arg[1])) or 256
local devices = gpu.devices()
local dev = devices[mpi.rank % #devices + 1]

-- A and B, the same on every rank: small integers, so every product is exact
local function entry(i, j, seed) return ((i * 31 + j * 17 + seed) % 13) - 6 end
local function matrix(rows, first_row, seed)
  local m = gpu.array("float", {shape = {rows, n}})
  for r = 1, rows do
    local i = first_row + r - 1
    for j = 1, n do m[(r - 1) * n + j] = i <= n and entry(i, j, seed) or 0 end
  end
  return m
end

local rows = -(-n // mpi.size)                 -- rows per rank, rounded up
local first = mpi.rank * rows + 1
local A_block = dev:buffer("float", {rows, n}, {host = matrix(rows, first, 1)})
local B = dev:buffer("float", {n, n}, {host = matrix(n, 1, 2)})

local C_block, ev = matmul(A_block, B)
ev:wait()
local C = mpi.allgather(C_block):get()         -- {rows * size, n}: the padded C

if mpi.rank == 0 then
  local A = dev:buffer("float", {n, n}, {host = matrix(n, 1, 1)})
  local one = matmul(A, B):get()
  local worst = 0
  for i = 1, n * n do worst = math.max(worst, math.abs(C[i] - one[i])) end
  print(("%dx%d product over %d ranks (%d rows each); largest difference from one " ..
         "process: %g"):format(n, n, mpi.size, rows, worst))
  assert(worst == 0, "the distributed product differs from one process's")
  print("ok: equal")
end
