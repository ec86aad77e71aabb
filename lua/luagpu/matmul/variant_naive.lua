-- luagpu.matmul.variant_naive: matmul's "naive" variant (kernels/
-- matmul_naive.cl): one work-item per element of C; also the one launch of
-- a batch of products (the grid's third dimension, BATCH).
--
--   V.name, V.files                        the variant and its kernel files
--   V.check(p, d, size)                    the work-group size, local memory
--   V.shape(pl, m, n, k, off, dev, split_edges, batch)   launches, launcher
--   V.launchers                            launcher name -> function(pl, prog, c)
--
-- (the contract of every variant_*.lua; plan.lua lists them)

local ST = require "luagpu.core.steps"
local B = require "luagpu.matmul.common"

local launch, int = B.launch, B.int

local V = {name = "naive", files = {"matmul_naive.cl"}, launchers = {}}

function V.check(p)
  return {int(p, "naive", "lx"), int(p, "naive", "ly")}, 0
end

local round_up = ST.round_up

-- One kernel over C, grown by the batch when there is one; naive's shape,
-- and tiled's (the same launch).
function V.shape(pl, m, n, _, _, _, _, batch)
  local lsz = pl.local_size
  pl.launches = {main = launch({round_up(n, lsz[1]), round_up(m, lsz[2])}, lsz)}
  if batch then
    local main = pl.launches.main
    main.global[3], main.local_size = batch, {lsz[1], lsz[2], 1}
    pl.defines.BATCH, pl.launcher = 1, "naive_batch"
  end
end

-- naive (and tiled): one kernel, one work-item per element of C.
function V.launchers.naive(pl, prog, c)
  local kernel = prog["matmul_" .. pl.variant]
  return {{kernel(c.m, c.n, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC), pl.launches.main}}
end

-- A batch: strides per operand (0: one matrix shared by the batch).
function V.launchers.naive_batch(pl, prog, c)
  return {{prog.matmul_naive(c.m, c.n, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC,
                             c.sA, c.sB, c.sC), pl.launches.main}}
end

return V
