-- luagpu.matmul.plan: how luagpu.matmul runs a product. From the sizes, the
-- element type, the device (its class's and its own parameters, in
-- luagpu.matmul.params) and the variant, plan() works out the kernels'
-- source, build defines and options, split of K or core-and-edges split,
-- and every launch's global and local size. luagpu.matmul checks the
-- arguments, builds the program and hands the plan to its launcher.
--
--   P.plan(dev, m, n, k, t, offsets, variant, override, split_edges [, batch])
--   P.source(variant)           the OpenCL C source of a variant
--   P.param_set(dev, name, t)   the parameters of one set for dev
--   P.edge_groups_fit(prog)     whether a reg program's edge kernels launch
--
-- Errors name "matmul" (H.fail raises at the script's line).

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local PARAMS = require "luagpu.matmul.params"

local type, pairs, next, ipairs, rawget = type, pairs, next, ipairs, rawget
local getmetatable, setmetatable, rawset = getmetatable, setmetatable, rawset
local format, concat, sort, unpack = string.format, table.concat, table.sort, table.unpack
local load, assert = load, assert
local max = math.max
local integer, show, typename = H.integer, H.show, H.typename

local FN = "matmul"
local function fail(fmt, ...) H.fail(FN, fmt, ...) end

local SIZES = {float = 4, double = 8}
local CLASSES = {gpu = true, cpu = true, accelerator = true, other = true}
local VARIANTS = {naive = true, tiled = true, reg = true, packed = true}
local VARIANT_WORDS = '"naive", "tiled", "reg" or "packed"'

-- The kernel files of each variant, in the order they are put together.
-- matmul_common.cl is prepended here rather than #included, so that the
-- kernels build where only the sources embedded in the build exist.
local SOURCES = {naive = {"matmul_naive.cl"}, tiled = {"matmul_tiled.cl"},
                 reg = {"matmul_common.cl", "matmul_reg.cl"},
                 packed = {"matmul_common.cl", "matmul_packed.cl"}}

-- The launch geometry of matmul_reg.cl's edge kernels, in one place: it is
-- written into reg's source as #defines (see source), so the kernels'
-- reqd_work_group_size and the launches planned here cannot disagree.
local EDGE = {
  ROWS_LX = 16,   -- matmul_rows: work-items along x, one column of C each
  ROWS_LY = 16,   -- matmul_rows: work-items along y, interleaved slices of K
  ROWS_R = 4,     -- matmul_rows: rows of C per work-group (ROWS_LY at least)
  COLS_LX = 64,   -- matmul_cols: work-items along x, interleaved slices of K
  COLS_LY = 4,    -- matmul_cols: work-items along y, one row of C each
  COLS_R = 4,     -- matmul_cols: columns of C per work-group (COLS_LX at least)
}
local ROWS_GROUP, COLS_GROUP = EDGE.ROWS_LX * EDGE.ROWS_LY, EDGE.COLS_LX * EDGE.COLS_LY
-- The work-group size a device must allow for the edge kernels.
local EDGE_GROUP = max(ROWS_GROUP, COLS_GROUP)

local SUM_GROUP = 256     -- matmul_sum: work-items per work-group
local PACK_GROUP = 16     -- pack_a, pack_b: work-items along K per work-group

-- Split K (see split_k): the flops the product does per byte the sum of
-- the slices moves, to weigh the two; the fewest steps of BK in a slice;
-- the most slices; and how much faster the model must say a split is.
local SPLIT_FLOPS_PER_BYTE = 12.5
local SPLIT_MIN_STEPS = 16
local SPLIT_MAX_SLICES = 4
local SPLIT_MIN_GAIN = 0.97

-- The bounds of what a script gives. Sizes: the kernels take M, N, K as
-- ints. Parameters: past these a kernel's loops unroll without end (TM =
-- 2^20 kept the compiler busy for hours) or its sizes overflow; the
-- device's work-group and local-memory limits are checked apart.
local MAX_SIZE = (1 << 31) - 1
local MAX_PARAM = {lx = 4096, ly = 4096, TS = 4096, BM = 1024, BN = 1024, BK = 1024,
                   TM = 64, TN = 64, PADA = 256, PADB = 256, unroll = 1024,
                   splitk = 64, groups_per_cu = 1024, edge = MAX_SIZE}
local MAX_ACCUMULATORS = 1024       -- TM x TN: the register tile of a work-item
local MAX_UNROLLED = 8192           -- K steps unrolled x TM x TN (PoCL builds it in 20 s)
local MAX_LOADS = 256               -- reg: vector loads per work-item per tile
local WIDTHS = {[1] = true, [2] = true, [4] = true, [8] = true, [16] = true}

-- Every parameter's name (see matmul_params.lua), to check opts.params against.
local PARAM_NAMES = {"lx", "ly", "TS", "BM", "BN", "BK", "TM", "TN", "VWM", "VWN", "VLA",
                     "VLB", "PADA", "PADB", "DB", "groups_per_cu", "splitk", "edge", "VW",
                     "unroll", "fma", "options"}

local function round_up(x, m)
  return (x + m - 1) // m * m
end

local function ceil_div(x, m)
  return (x + m - 1) // m
end

------------------------------------------------------------------ parameters

-- The table t[key] of the parameters (where: its name in messages), or an
-- empty one.
local function subtable(t, key, where)
  local v = t[key]
  if v == nil then return {} end
  if type(v) ~= "table" then fail("%s: expected a table, got %s", where, typename(v)) end
  return v
end

-- A new table: the fields of base, then those of over.
local function overlay(base, over)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(over) do t[k] = v end
  return t
end

-- The keys of PARAMS that are device entries matching dev's name, shortest
-- first (so that the longest is laid over last and wins).
local function device_keys(dev)
  local name, hits = dev.name:lower(), {}
  for key in pairs(PARAMS) do
    if not CLASSES[key] and type(key) == "string" and name:find(key:lower(), 1, true) then
      hits[#hits + 1] = key
    end
  end
  sort(hits, function(a, b) return #a < #b end)
  return hits
end

-- The variant tables of dev's class with those of the device entries that
-- match its name laid over them, field by field (their double tables too).
local function device_params(dev)
  local cname = PARAMS[dev.type] ~= nil and dev.type or "gpu"
  local cls = subtable(PARAMS, cname, "matmul.params." .. cname)
  local hits = device_keys(dev)
  if #hits == 0 then return cls end
  local merged = overlay(cls, {})
  for _, key in ipairs(hits) do
    for k, v in pairs(subtable(PARAMS, key, format("matmul.params[%q]", key))) do
      local base = merged[k]
      if type(v) == "table" and type(base) == "table" then
        local double = type(base.double) == "table" and type(v.double) == "table"
                       and overlay(base.double, v.double)
        v = overlay(base, v)
        if double then v.double = double end
      end
      merged[k] = v
    end
  end
  return merged
end

-- The parameters of one set for element type t: the table's, the `double`
-- overrides, then override (opts.params, checked), in a new table.
local function variant_params(set, name, t, override)
  local p = {}
  local vt = subtable(set, name, name .. " parameters")
  for k, v in pairs(vt) do
    if k ~= "double" then p[k] = v end
  end
  if t == "double" and vt.double ~= nil then
    local dt = subtable(vt, "double", name .. " parameters: double")
    -- the occupancy found for float does not hold for other tiles
    if dt.groups_per_cu == nil then p.groups_per_cu = nil end
    for k, v in pairs(dt) do p[k] = v end
  end
  for k, v in next, override or {} do p[k] = v end
  return p
end

------------------------------------------------------------------ checks

local function need(cond, variant, fmt, ...)
  if not cond then fail("%s parameters: " .. fmt, variant, ...) end
end

-- p[name] as an integer from lo (default 1) to MAX_PARAM[name].
local function int_param(p, variant, name, lo)
  local v = p[name]
  local i = integer(v)
  lo = lo or 1
  need(i and i >= lo, variant, "%s: expected %s, got %s", name,
       lo == 1 and "a positive integer" or "an integer >= 0", show(v))
  need(i <= MAX_PARAM[name], variant, "%s: %d is too large (at most %d)", name, i,
       MAX_PARAM[name])
  return i
end

local function width_param(p, variant, name)
  local v = integer(p[name])
  need(WIDTHS[v], variant, "%s: expected a vector width (1, 2, 4, 8 or 16), got %s", name,
       show(p[name]))
  return v
end

-- Checks the register tile d.TM x d.TN of reg and packed, and the K loop
-- unrolled over it (steps: unroll, else reg's BK).
local function check_unrolled(variant, d)
  local acc = d.TM * d.TN
  need(acc <= MAX_ACCUMULATORS, variant,
       "TM x TN = %d x %d = %d sums per work-item, at most %d", d.TM, d.TN, acc, MAX_ACCUMULATORS)
  local steps, what = d.UNROLLK, "unroll"
  if not steps then steps, what = variant == "reg" and d.BK or 1, "BK" end
  need(steps * acc <= MAX_UNROLLED, variant,
       "%s (%d) x TM (%d) x TN (%d) = %d multiply-adds unrolled, at most %d",
       what, steps, d.TM, d.TN, steps * acc, MAX_UNROLLED)
end

-- reg's defines from p into d, each bounded; its knobs that are not
-- defines made integers in p: groups_per_cu and splitk (nil or positive),
-- edge (nil, false or >= 0).
local function reg_values(p, d)
  for _, k in ipairs{"BM", "BN", "BK", "TM", "TN"} do d[k] = int_param(p, "reg", k) end
  for _, k in ipairs{"VWM", "VWN", "VLA", "VLB"} do d[k] = width_param(p, "reg", k) end
  for _, k in ipairs{"PADA", "PADB"} do
    if p[k] == nil then p[k] = 0 end
    d[k] = int_param(p, "reg", k, 0)
  end
  d.DB = integer(p.DB or 0)
  need(d.DB == 0 or d.DB == 1 or d.DB == 2, "reg", "DB: expected 0, 1 or 2, got %s", show(p.DB))
  for _, k in ipairs{"groups_per_cu", "splitk"} do
    if p[k] ~= nil then p[k] = int_param(p, "reg", k) end
  end
  if p.edge then p.edge = int_param(p, "reg", "edge", 0) end
end

-- Per variant: checks its parameters p against each other, with the
-- defines they give in d; returns the work-group size and the local
-- memory the tiles use (elements of `size` bytes).
local CHECK = {}

function CHECK.naive(p)
  return {int_param(p, "naive", "lx"), int_param(p, "naive", "ly")}, 0
end

function CHECK.tiled(p, d, size)
  local ts = int_param(p, "tiled", "TS")
  d.TS = ts
  return {ts, ts}, (2 * ts * ts + ts) * size
end

function CHECK.reg(p, d, size)
  reg_values(p, d)
  need(d.BM % d.TM == 0 and d.BN % d.TN == 0, "reg",
       "BM (%d) and BN (%d) must be multiples of TM (%d) and TN (%d)", d.BM, d.BN, d.TM, d.TN)
  need(d.TM % d.VWM == 0 and d.TN % d.VWN == 0, "reg",
       "TM (%d) and TN (%d) must be multiples of VWM (%d) and VWN (%d)",
       d.TM, d.TN, d.VWM, d.VWN)
  need((d.PADA % d.VWM == 0) and (d.PADB % d.VWN == 0), "reg",
       "PADA (%d) and PADB (%d) must be multiples of VWM (%d) and VWN (%d)",
       d.PADA, d.PADB, d.VWM, d.VWN)
  check_unrolled("reg", d)
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

function CHECK.packed(p, d)
  for _, k in ipairs{"TM", "TN"} do d[k] = int_param(p, "packed", k) end
  d.VW = width_param(p, "packed", "VW")
  need(d.TN % d.VW == 0, "packed", "TN (%d) must be a multiple of VW (%d)", d.TN, d.VW)
  check_unrolled("packed", d)
  return {int_param(p, "packed", "lx"), int_param(p, "packed", "ly")}, 0
end

-- Checks the parameters of a variant against each other and the device;
-- returns the build defines and the work-group size. Every integer is
-- bounded first, so that no product below overflows.
local function check_params(variant, p, dev, size)
  local d = {}
  if p.unroll ~= nil then d.UNROLLK = int_param(p, variant, "unroll") end
  need(p.fma == nil or type(p.fma) == "boolean", variant, "fma: expected true or false, got %s",
       show(p.fma))
  if p.fma then d.FMA = 1 end
  need(p.options == nil or type(p.options) == "string", variant,
       "options: expected a string of build options, got %s", show(p.options))
  local lsz, lmem = CHECK[variant](p, d, size)
  local wg, most = lsz[1] * lsz[2], dev.max_work_item_sizes
  need(wg <= dev.max_work_group_size, variant,
       "work-groups of %d x %d = %d work-items, the device allows %d",
       lsz[1], lsz[2], wg, dev.max_work_group_size)
  need(lsz[1] <= most[1] and lsz[2] <= most[2], variant,
       "work-groups of %d x %d, the device allows at most %d x %d", lsz[1], lsz[2],
       most[1], most[2])
  need(lmem <= dev.local_mem_size, variant,
       "the tiles need %d bytes of local memory, the device has %d", lmem, dev.local_mem_size)
  return d, lsz
end

------------------------------------------------------------------ choices

-- The variant to run when opts.variant does not say: naive for tiny
-- products, else the class's choice.
local function pick_variant(set, m, n, k)
  local tiny, auto = set.tiny or 0, set.auto or "reg"
  local most = integer(tiny)
  if not (most and most >= 0) then
    fail("parameter tiny: expected an integer >= 0, got %s", show(tiny))
  end
  if not VARIANTS[auto] then
    fail("parameter auto: expected %s, got %s", VARIANT_WORDS, show(auto))
  end
  -- m * n * k <= tiny, without the product (which could overflow)
  if k == 0 or m * n <= most // k then return "naive" end
  return auto
end

-- The number of m x n tiles of the set name of set (nil when its BM or BN
-- is not a positive integer).
local function tiles(set, name, t, m, n)
  local p = variant_params(set, name, t)
  local bm, bn = integer(p.BM), integer(p.BN)
  if bm and bn and bm > 0 and bn > 0 then return ceil_div(m, bm) * ceil_div(n, bn) end
end

-- The parameter set the variant runs with, unless the variant was forced:
-- reg's "small" one when the large tiles would make fewer work-groups than
-- the device has compute units, and "smaller" when even the small ones would
-- make fewer than SMALLER_SHARE of them (on the H200, 256 and 512 run twice
-- as fast on 32 x 32 tiles; 1024 is best on the small set).
local SMALLER_SHARE = 0.5

-- A batch of products: the first of reg, small and smaller (those the
-- device has) whose work-groups, over the whole batch, fill the waves they
-- take to at least BATCH_FILL (groups over waves x slots, slots = compute
-- units x the set's groups_per_cu, default 1), else the one that fills them
-- best. On the H200, 64 x 256^3 ran in 53 us on reg's 128 x 256 tiles (128
-- groups: 0.97 of one wave), 65 on small's (512: 0.65 of two), 123 on
-- smaller's.
local BATCH_FILL = 0.8
local function batch_set(set, dev, m, n, t, batch)
  local best, best_fill
  for _, name in ipairs{"reg", "small", "smaller"} do
    local groups = set[name] and tiles(set, name, t, m, n)
    if groups then
      groups = groups * batch
      local occ = integer(variant_params(set, name, t).groups_per_cu) or 1
      local slots = dev.compute_units * math.max(occ, 1)
      local fill = groups / (ceil_div(groups, slots) * slots)
      if fill >= BATCH_FILL then return name end
      if not best or fill > best_fill then best, best_fill = name, fill end
    end
  end
  return best or "reg"
end

local function set_name(set, variant, forced, dev, m, n, t, batch)
  if variant ~= "reg" or forced or not set.small then return variant end
  if batch then return batch_set(set, dev, m, n, t, batch) end
  local large = tiles(set, "reg", t, m, n)
  if not (large and large < dev.compute_units) then return variant end
  local small = tiles(set, "small", t, m, n)
  if set.smaller and small and small < dev.compute_units * SMALLER_SHARE then
    return "smaller"
  end
  return "small"
end

-- How many slices of K the reg kernel splits an m x n x k product into,
-- and the length of each (a multiple of BK). The tiles are handed out to
-- the compute units in waves of groups_per_cu x compute units; when the
-- last wave would be mostly idle (M or N just past a multiple of the tile:
-- 4097 takes 5 waves where 4096 takes 4), cutting K into S slices makes
-- S times as many groups, S times shorter, so the waves fit better; the
-- slices are then added (matmul_sum), which costs a pass over S+1 copies of
-- C, weighed against the product at SPLIT_FLOPS_PER_BYTE. Needs
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
    for try = 2, SPLIT_MAX_SLICES do
      local ks = round_up(ceil_div(k, try), d.BK)
      local sl = ceil_div(k, ks)
      if ks >= SPLIT_MIN_STEPS * d.BK and sl > 1 then
        local waves = ceil_div(sl * w, slots) / sl
        local sum = w / slots * (sl + 1) * size * SPLIT_FLOPS_PER_BYTE / (2 * k)
        if waves + sum < best_cost * SPLIT_MIN_GAIN then s, best_cost = sl, waves + sum end
      end
    end
  end
  local ks = round_up(ceil_div(k, s), d.BK)
  return ceil_div(k, ks), ks
end

-- Whether an m x n product with reg's tiles d splits into a tile-aligned
-- core and thin edges (see matmul_rows in matmul_reg.cl): M and N at most
-- p.edge past multiples of BM and BN, the core at least a wave of work-
-- groups, the edge kernels' work-groups allowed, and no forced split of K.
-- Returns the core's rows and columns.
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

------------------------------------------------------------------ plans

-- A launch: the kernel's global and local sizes.
local function launch(global, lsz)
  return {global = global, local_size = lsz}
end

-- Per variant: completes the plan pl of an m x n x k product with operands
-- at element offsets off = {A, B, C}: the defines that depend on the sizes,
-- the launcher (a key of matmul's launchers), the launches and the sizes
-- of the scratch buffers.
local SHAPE = {}

function SHAPE.naive(pl, m, n, _, _, _, _, batch)
  local lsz = pl.local_size
  pl.launches = {main = launch({round_up(n, lsz[1]), round_up(m, lsz[2])}, lsz)}
  if batch then
    local main = pl.launches.main
    main.global[3], main.local_size = batch, {lsz[1], lsz[2], 1}
    pl.defines.BATCH, pl.launcher = 1, "naive_batch"
  end
end
SHAPE.tiled = SHAPE.naive

-- reg's defines: SPLITK, where loads may be whole vectors (ALIGNA,
-- ALIGNB, VSC), and which checks the edges of the tiles need (EVEN, KTAIL).
local function reg_defines(pl, d, m, n, k, off)
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

function SHAPE.reg(pl, m, n, k, off, dev, split_edges, batch)
  local p, d, lsz = pl.params, pl.defines, pl.local_size
  local m0, n0
  if not batch then m0, n0 = edge_split(p, d, dev, m, n, split_edges) end
  if batch then
    d.BATCH = 1
  elseif m0 then
    pl.edges = {m0 = m0, n0 = n0}
  else
    pl.slices, pl.slice_k = split_k(p, d, dev, m, n, k, SIZES[d.REAL])
  end
  reg_defines(pl, d, m, n, k, off)
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

function SHAPE.packed(pl, m, n, k, off)
  local d, lsz = pl.defines, pl.local_size
  d.VSC = (n % d.VW == 0 and off[3] % d.VW == 0) and 1 or 0
  local pm, pn = ceil_div(m, d.TM), ceil_div(n, d.TN)
  pl.launches = {
    pack_a = launch({round_up(k, PACK_GROUP), pm}, {PACK_GROUP, 1}),
    pack_b = launch({pn, round_up(k, PACK_GROUP)}, {1, PACK_GROUP}),
    main = launch({round_up(pn, lsz[1]), round_up(pm, lsz[2])}, lsz),
  }
  pl.scratch = {a_panels = pm * d.TM * k, b_panels = pn * d.TN * k}
end

-- How an m x k by k x n product of t on dev runs, operands at element
-- offsets off = {A, B, C}: {variant, set (the name of the parameter set
-- used), params, defines, local_size, options, slices, slice_k, edges
-- ({m0, n0}: the core's rows and columns, where a core and edges run
-- apart), launcher, launches (kernel role -> {global, local_size}),
-- scratch (name -> the elements of each scratch buffer it needs)}.
-- variant and override: opts.variant and opts.params (checked);
-- split_edges: matmul.split_edges. batch: the number of products of a
-- batched call (one launch, the grid's third dimension; "naive" or "reg"
-- only, the device's "packed" choice runs "reg"; neither split K nor edges;
-- launcher "naive_batch" or "reg_batch"), nil for one product.
local function plan(dev, m, n, k, t, off, variant, override, split_edges, batch)
  local set = device_params(dev)
  local forced = variant
  variant = variant or pick_variant(set, m, n, k)
  if batch and variant ~= "naive" then variant = "reg" end
  local name = set_name(set, variant, forced, dev, m, n, t, batch)
  local p = variant_params(set, name, t, override)
  local d, lsz = check_params(variant, p, dev, SIZES[t])
  d.REAL = t
  local pl = {variant = variant, set = name, params = p, defines = d, local_size = lsz,
              options = "-cl-mad-enable" .. (p.options and " " .. p.options or ""),
              slices = 1, slice_k = k, launcher = variant}
  SHAPE[variant](pl, m, n, k, off, dev, split_edges, batch)
  return pl
end

-- The OpenCL C source of variant: its kernel files one after another
-- (each from its own line 1), reg's behind the defines of EDGE.
local function source(variant)
  local parts = {}
  if variant == "reg" then
    local names = {}
    for k in pairs(EDGE) do names[#names + 1] = k end
    sort(names)
    for _, k in ipairs(names) do parts[#parts + 1] = format("#define %s %d", k, EDGE[k]) end
  end
  for _, file in ipairs(SOURCES[variant]) do
    parts[#parts + 1] = "#line 1"
    parts[#parts + 1] = gpu.kernel_source(file)
  end
  return concat(parts, "\n")
end

-- Whether the edge kernels of a reg program take their work-groups (a
-- device may allow fewer for a kernel than for the device).
local function edge_groups_fit(prog)
  return prog.matmul_rows.work_group_size >= ROWS_GROUP
     and prog.matmul_cols.work_group_size >= COLS_GROUP
end

------------------------------------------------------------------ snapshots

-- Keys added to the tables of matmul.params are counted: a snapshot gives
-- each table it reads (one without a metatable of its own) this metatable,
-- whose __newindex runs only for a key the table does not hold. A changed
-- or removed value is seen by reading the known keys, so a call whose
-- tables gained no key compares values only, without walking the tables
-- (a walk calls next per entry: about 3 us a call on the H200's host).
local added = 0
local WATCH = {__newindex = function(t, k, v)
  added = added + 1
  rawset(t, k, v)
end}

local LITERAL = {number = true, string = true, boolean = true}

-- A function telling whether tabs[i][keys[i]] == vals[i] for every i: one
-- expression with the keys and values written in as constants (about 3
-- instructions a value where a loop over the lists takes 8). Tables and
-- other values that no literal writes (NaN too) are upvalues; nil when
-- there would be too many of them for one function.
local function compare_function(tabs, keys, vals)
  local names, up = {}, {}
  local function slot(v)
    local name = names[v]
    if not name then
      up[#up + 1] = v
      name = "u" .. #up
      names[v] = name
    end
    return name
  end
  local function literal(v)
    if LITERAL[type(v)] and v == v then return format("%q", v) end
    return slot(v)
  end
  local terms = {"true"}
  for i = 1, #tabs do
    terms[i + 1] = format("%s[%s] == %s", slot(tabs[i]), literal(keys[i]), literal(vals[i]))
  end
  if #up > 180 then return nil end
  local head = {}
  for i = 1, #up do head[i] = "u" .. i end
  local src = (#up > 0 and "local " .. concat(head, ", ") .. " = ...\n" or "") ..
              "return function() return " ..
              concat(terms, "\n  and ") .. " end"
  return assert(load(src, "=(matmul.params snapshot)", "t"))(unpack(up, 1, #up))
end

-- What of matmul.params the plan pl for dev, of element type t, read, as
-- it is now, for telling later whether a script changed it (the plan then
-- no longer holds): the top-level entries; in the tables of dev's class and
-- of the device entries matching its name, their entries and the whole of
-- the parameter sets a plan reads (auto's variant, reg and small, the set
-- used; their double tables for t "double"). A table {tables = list of
-- {table, count of keys, copy of its entries}, read raw; tabs, keys, vals:
-- every entry flat, for unchanged's loop; same: their compare_function;
-- added: the count of added keys
-- then; walk: whether a table is not watched (it has a metatable of its
-- own), so that every call walks them all}.
local function snapshot(dev, pl, t)
  local list, seen, walk = {}, {}, false
  local tabs, keys, vals = {}, {}, {}
  local function take(tab, deep)
    if seen[tab] then return end
    seen[tab] = true
    local mt = getmetatable(tab)
    if mt == nil then setmetatable(tab, WATCH) elseif mt ~= WATCH then walk = true end
    local n, copy = 0, {}
    for k, v in next, tab do
      n = n + 1
      copy[k] = v
      tabs[#tabs + 1], keys[#keys + 1], vals[#vals + 1] = tab, k, v
      if deep and k == "double" and type(v) == "table" then take(v, false) end
    end
    list[#list + 1] = {tab, n, copy}
  end
  take(PARAMS, false)
  local cname = PARAMS[dev.type] ~= nil and dev.type or "gpu"
  local roots = device_keys(dev)
  roots[#roots + 1] = cname
  local sets = {pl.variant, pl.set, "reg", "small", "smaller"}
  for _, key in ipairs(roots) do
    local root = PARAMS[key]
    if type(root) == "table" then
      take(root, false)
      for _, name in ipairs(sets) do
        local set = root[name]
        if type(set) == "table" then take(set, t == "double") end
      end
    end
  end
  return {tables = list, tabs = tabs, keys = keys, vals = vals, added = added, walk = walk,
          same = compare_function(tabs, keys, vals)}
end

-- Whether the tables of snapshot s hold the same entries as then, walked
-- (their counts too).
local function same_tables(s)
  local list = s.tables
  for i = 1, #list do
    local e = list[i]
    local copy, n = e[3], 0
    for k, v in next, e[1] do
      if copy[k] ~= v then return false end
      n = n + 1
    end
    if n ~= e[2] then return false end
  end
  return true
end

-- Whether matmul.params still holds what snapshot s saw: the known keys'
-- values; the tables walked only when keys were added since (anywhere in
-- matmul.params) or a table is not watched.
local function unchanged(s)
  local same = s.same
  if same then
    if not same() then return false end
  else
    local tabs, keys, vals = s.tabs, s.keys, s.vals
    for i = 1, #tabs do
      if tabs[i][keys[i]] ~= vals[i] then return false end   -- no __index on watched tables
    end
  end
  if s.added ~= added or s.walk then
    if not same_tables(s) then return false end
    s.added = added
  end
  return true
end

return {
  plan = plan,
  snapshot = snapshot,
  unchanged = unchanged,
  source = source,
  edge_groups_fit = edge_groups_fit,
  param_set = function(dev, name, t) return variant_params(device_params(dev), name, t) end,
  params = PARAMS,
  variants = VARIANTS,
  variant_words = VARIANT_WORDS,
  param_names = PARAM_NAMES,
  sizes = SIZES,
  max_size = MAX_SIZE,
}
