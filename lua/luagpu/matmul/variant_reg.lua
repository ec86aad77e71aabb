-- luagpu.matmul.variant_reg: matmul's "reg" variant (kernels/
-- matmul_common.cl, matmul_reg.cl): work-group tiles BM x BN in local
-- memory and a TM x TN register tile per work-item (GPUs). A product runs
-- as one kernel; as a tile-aligned core and thin edges (matmul_rows,
-- matmul_cols); with K split in slices summed after (matmul_sum); or as
-- one launch over a batch. The contract of variant_naive.lua, and:
--
--   V.prefix         the edge kernels' geometry as #defines, before the source
--   V.fits(prog)     whether a program's edge kernels take their work-groups

local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local B = require "luagpu.matmul.common"
local T = require "luagpu.matmul.params"

local ipairs, pairs = ipairs, pairs
local sort, concat, format, max = table.sort, table.concat, string.format, math.max
local launch, int, need = B.launch, B.int, B.need
local integer, show = H.integer, H.show

local V = {name = "reg", files = {"matmul_common.cl", "matmul_reg.cl"}, launchers = {}}

local EDGE, SPLIT, SUM_GROUP = T.edge, T.split, T.groups.sum
local ROWS_GROUP, COLS_GROUP = EDGE.ROWS_LX * EDGE.ROWS_LY, EDGE.COLS_LX * EDGE.COLS_LY
-- The work-group size a device must allow for the edge kernels.
local EDGE_GROUP = max(ROWS_GROUP, COLS_GROUP)
local MAX_LOADS = 256               -- vector loads per work-item per tile

do
  local names, lines = {}, {}
  for k in pairs(EDGE) do names[#names + 1] = k end
  sort(names)
  for i, k in ipairs(names) do lines[i] = format("#define %s %d\n", k, EDGE[k]) end
  V.prefix = concat(lines)
end

local round_up, ceil_div = ST.round_up, ST.ceil_div

------------------------------------------------------------------ parameters

-- reg's defines from p into d, each bounded; its knobs that are not
-- defines made integers in p: groups_per_cu and splitk (nil or positive),
-- edge (nil, false or >= 0).
local function values(p, d)
  for _, k in ipairs{"BM", "BN", "BK", "TM", "TN"} do d[k] = int(p, "reg", k) end
  for _, k in ipairs{"VWM", "VWN", "VLA", "VLB"} do d[k] = B.width(p, "reg", k) end
  for _, k in ipairs{"PADA", "PADB"} do
    if p[k] == nil then p[k] = 0 end
    d[k] = int(p, "reg", k, 0)
  end
  d.DB = integer(p.DB or 0)
  need(d.DB == 0 or d.DB == 1 or d.DB == 2, "reg", "DB: expected 0, 1 or 2, got %s", show(p.DB))
  for _, k in ipairs{"groups_per_cu", "splitk"} do
    if p[k] ~= nil then p[k] = int(p, "reg", k) end
  end
  if p.edge then p.edge = int(p, "reg", "edge", 0) end
end

function V.check(p, d, size)
  values(p, d)
  need(d.BM % d.TM == 0 and d.BN % d.TN == 0, "reg",
       "BM (%d) and BN (%d) must be multiples of TM (%d) and TN (%d)", d.BM, d.BN, d.TM, d.TN)
  need(d.TM % d.VWM == 0 and d.TN % d.VWN == 0, "reg",
       "TM (%d) and TN (%d) must be multiples of VWM (%d) and VWN (%d)",
       d.TM, d.TN, d.VWM, d.VWN)
  need((d.PADA % d.VWM == 0) and (d.PADB % d.VWN == 0), "reg",
       "PADA (%d) and PADB (%d) must be multiples of VWM (%d) and VWN (%d)",
       d.PADA, d.PADB, d.VWM, d.VWN)
  B.unrolled("reg", d)
  local nt = (d.BM // d.TM) * (d.BN // d.TN)
  need(d.BK % d.VLA == 0 and (d.BM * d.BK) % (d.VLA * nt) == 0, "reg",
       "the A tile (BM*BK = %d) must split into VLA-vectors (%d) over the %d work-items",
       d.BM * d.BK, d.VLA, nt)
  need(d.BN % d.VLB == 0 and (d.BK * d.BN) % (d.VLB * nt) == 0, "reg",
       "the B tile (BK*BN = %d) must split into VLB-vectors (%d) over the %d work-items",
       d.BK * d.BN, d.VLB, nt)
  local na, nb = d.BM * d.BK // (d.VLA * nt), d.BK * d.BN // (d.VLB * nt)
  need(na <= MAX_LOADS and nb <= MAX_LOADS, "reg",
       "the A and B tiles take %d and %d vector loads per work-item, at most %d",
       na, nb, MAX_LOADS)
  local buffers = d.DB == 2 and 2 or 1
  return {d.BN // d.TN, d.BM // d.TM}, buffers * d.BK * (d.BM + d.PADA + d.BN + d.PADB) * size
end

------------------------------------------------------------------ shapes

-- How many slices of K the reg kernel splits an m x n x k product into,
-- and the length of each (a multiple of BK). The tiles are handed out to
-- the compute units in waves of groups_per_cu x compute units; when the
-- last wave would be mostly idle (M or N just past a multiple of the tile:
-- 4097 takes 5 waves where 4096 takes 4), cutting K into S slices makes
-- S times as many groups, S times shorter, so the waves fit better; the
-- slices are then added (matmul_sum), which costs a pass over S+1 copies of
-- C, weighed against the product at T.split.flops_per_byte. Needs
-- groups_per_cu in the parameters (found by the tuning sweep); `splitk`
-- forces a count.
local function split_k(p, d, dev, m, n, k, size)
  local s = p.splitk
  if k == 0 then return 1, 0 end
  if s == nil then
    local occ = p.groups_per_cu
    -- only past a multiple of the tile: at 2048 on the H200 (small set, 3
    -- groups per compute unit) splitting was slower although the model
    -- favoured it; at 2047 and 4097 it was faster
    if not occ or (m % d.BM == 0 and n % d.BN == 0) then return 1, k end
    local slots = dev.compute_units * occ
    local w = ceil_div(m, d.BM) * ceil_div(n, d.BN)
    if w < slots then return 1, k end   -- less than a wave: the small set's job
    local best_cost = ceil_div(w, slots)
    s = 1
    for try = 2, SPLIT.max_slices do
      local ks = round_up(ceil_div(k, try), d.BK)
      local sl = ceil_div(k, ks)
      if ks >= SPLIT.min_steps * d.BK and sl > 1 then
        local waves = ceil_div(sl * w, slots) / sl
        local sum = w / slots * (sl + 1) * size * SPLIT.flops_per_byte / (2 * k)
        if waves + sum < best_cost * SPLIT.min_gain then s, best_cost = sl, waves + sum end
      end
    end
  end
  local ks = round_up(ceil_div(k, s), d.BK)
  return ceil_div(k, ks), ks
end

-- Whether an m x n product with tiles d splits into a tile-aligned core and
-- thin edges (see matmul_rows in matmul_reg.cl): M and N at most p.edge
-- past multiples of BM and BN, the core at least a wave of work-groups, the
-- edge kernels' work-groups allowed, and no forced split of K. Returns the
-- core's rows and columns.
local function edge_split(p, d, dev, m, n, split_edges)
  local edge = p.edge
  if not split_edges or not edge or edge == 0 or p.splitk then return nil end
  local em, en = m % d.BM, n % d.BN
  local m0, n0 = m - em, n - en
  if (em == 0 and en == 0) or em > edge or en > edge or m0 == 0 or n0 == 0
     or (m0 // d.BM) * (n0 // d.BN) < dev.compute_units
     or dev.max_work_group_size < EDGE_GROUP then
    return nil
  end
  return m0, n0
end

-- The defines of the plan's sizes: SPLITK, where loads may be whole vectors
-- (ALIGNA, ALIGNB, VSC), and which checks the edges of the tiles need
-- (EVEN, KTAIL).
local function size_defines(pl, d, m, n, k, off)
  local mc, nc = pl.edges and pl.edges.m0 or m, pl.edges and pl.edges.n0 or n
  if pl.slices > 1 then d.SPLITK = 1 end
  if k % d.VLA == 0 and off[1] % d.VLA == 0 then d.ALIGNA = 1 end
  if n % d.VLB == 0 and off[2] % d.VLB == 0 then d.ALIGNB = 1 end
  d.VSC = (n % d.VWN == 0 and off[3] % d.VWN == 0) and 1 or 0
  if mc % d.BM == 0 and nc % d.BN == 0 and k % d.BK == 0 then d.EVEN = 1 end
  if k % d.BK ~= 0 then d.KTAIL = 1 end
end

-- The launches of the edge kernels beside a core of m0 x n0 (none for an
-- edge that is empty).
local function edge_launches(launches, m, n, m0, n0)
  local E = EDGE
  if m > m0 then
    launches.rows = launch({round_up(n, E.ROWS_LX), ceil_div(m - m0, E.ROWS_R) * E.ROWS_LY},
                           {E.ROWS_LX, E.ROWS_LY})
  end
  if n > n0 then
    launches.cols = launch({ceil_div(n - n0, E.COLS_R) * E.COLS_LX, round_up(m0, E.COLS_LY)},
                           {E.COLS_LX, E.COLS_LY})
  end
end

function V.shape(pl, m, n, k, off, dev, split_edges, batch)
  local p, d, lsz = pl.params, pl.defines, pl.local_size
  local m0, n0
  if not batch then m0, n0 = edge_split(p, d, dev, m, n, split_edges) end
  if batch then
    d.BATCH = 1
  elseif m0 then
    pl.edges = {m0 = m0, n0 = n0}
  else
    pl.slices, pl.slice_k = split_k(p, d, dev, m, n, k, B.SIZES[d.REAL])
  end
  size_defines(pl, d, m, n, k, off)
  local groups = {ceil_div(n0 or n, d.BN), ceil_div(m0 or m, d.BM)}
  local main = launch({groups[1] * lsz[1], groups[2] * lsz[2]}, lsz)
  pl.launches = {main = main}
  if batch then
    pl.launcher = "reg_batch"
    main.global[3], main.local_size = batch, {lsz[1], lsz[2], 1}
  elseif m0 then
    pl.launcher = "reg_edges"
    edge_launches(pl.launches, m, n, m0, n0)
  elseif pl.slices > 1 then
    pl.launcher = "reg_split"
    main.global[3], main.local_size = pl.slices, {lsz[1], lsz[2], 1}
    pl.launches.sum = launch({round_up(m * n, SUM_GROUP)}, {SUM_GROUP})
    pl.scratch = {slices = pl.slices * m * n}
  end
end

-- Whether the edge kernels of a reg program take their work-groups (a
-- device may allow fewer for a kernel than for the device).
function V.fits(prog)
  return prog.matmul_rows.work_group_size >= ROWS_GROUP
     and prog.matmul_cols.work_group_size >= COLS_GROUP
end

------------------------------------------------------------------ launchers

-- One kernel over whole tiles (the tile guards handle the edges).
function V.launchers.reg(pl, prog, c)
  return {{prog.matmul_reg(c.m, c.n, c.k, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC),
           pl.launches.main}}
end

-- The edges apart: the tile-aligned core (rows 0..m0-1, columns 0..n0-1 of
-- C, guard-free), then the bottom rows (full width) and the right columns
-- of the core's rows, each by an edge kernel.
function V.launchers.reg_edges(pl, prog, c)
  local L, m0, n0 = pl.launches, pl.edges.m0, pl.edges.n0
  local m, n, k = c.m, c.n, c.k
  local steps = {{prog.matmul_reg(m0, n, k, k, c.A, c.offA, c.B, c.offB, c.C, c.offC), L.main}}
  if L.rows then
    steps[#steps + 1] = {prog.matmul_rows(m - m0, n, k, c.A, c.offA + m0 * k, k,
                                          c.B, c.offB, n, c.C, c.offC + m0 * n, n),
                         L.rows, {#steps}}
  end
  if L.cols then
    steps[#steps + 1] = {prog.matmul_cols(m0, n - n0, k, c.A, c.offA, k,
                                          c.B, c.offB + n0, n, c.C, c.offC + n0, n),
                         L.cols, {#steps}}
  end
  return steps
end

-- K split in slices: partial products into scratch, then summed.
function V.launchers.reg_split(pl, prog, c)
  local sc = B.scratch(pl, c)
  local S = sc["scratch " .. c.t .. " slices"]
  return {{prog.matmul_reg(c.m, c.n, c.k, pl.slice_k, c.A, c.offA, c.B, c.offB, S, 0),
           pl.launches.main},
          {prog.matmul_sum(pl.slices, c.m * c.n, S, c.C, c.offC), pl.launches.sum, {1}},
          scratch = sc}
end

-- A batch: strides per operand (0: one matrix shared by the batch).
function V.launchers.reg_batch(pl, prog, c)
  return {{prog.matmul_reg(c.m, c.n, c.k, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC,
                           c.sA, c.sB, c.sC), pl.launches.main}}
end

return V
