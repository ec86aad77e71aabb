-- luagpu.matmul.params: every tuned number of luagpu.matmul, in one place.
--
--   T.fp32      the fp32 kernels' parameters (matmul.params, below)
--   T.mma       the mma.sync tiles per precision (matmul_mma.params)
--   T.wgmma     the wgmma tiles per precision (matmul_wgmma.params)
--   T.edge      the launch geometry of matmul_reg.cl's edge kernels
--   T.split     when reg splits K (see variant_reg.lua)
--   T.choice    when reg takes its small and smaller sets (plan.lua)
--   T.groups    work-group sizes of the helper kernels
--   T.blas      the BLAS kernels' tiles and gemv's slicing (blas.lua)
--
-- T.fp32 is matmul.params: a script may change it or add an entry for its
-- device; bench/gpu/tune_matmul.lua finds an entry by a sweep and prints it,
-- to be added below.
--
-- Per device class ("gpu", "cpu", "accelerator", "other") and per device:
-- a key that is not a class is matched against the device name (case-
-- insensitive substring; the longest match wins) and its fields replace the
-- class's, field by field within each variant. Within a variant, a `double`
-- table replaces fields for double precision. `auto` picks the variant when
-- opts.variant does not; `small` is the reg parameters used when the large
-- tiles would make fewer work-groups than there are compute units, and
-- `smaller` (where a device has one) when even the small tiles would make
-- fewer than half as many; products of at most `tiny` (M*N*K) go naive.
--
--   naive:  lx, ly             work-group size
--   tiled:  TS                 tile size (TS x TS work-items)
--   reg:    BM BN BK           work-group tile;  TM TN  work-item tile
--           VWM VWN            local-memory vector widths;  VLA VLB  global
--           PADA PADB          local padding;  DB  0, 1, 2 (see matmul_reg.cl)
--           groups_per_cu      work-groups resident per compute unit (enables
--                              splitting K, see split_k in variants/reg.lua);
--                              splitk  forces a number of slices
--           edge               thin edges: when M and N are at most `edge` past
--                              multiples of BM and BN, the tile-aligned core
--                              runs alone and the edges in matmul_rows and
--                              matmul_cols (see edge_split); 0 or nil: never
--   packed: TM TN VW           register tile and vector width; lx ly group
--   all:    unroll             steps of the K loop unrolled (reg: of BK)
--           fma                fma() rather than mad() (CPUs)
--           options            extra build options

local PARAMS = {
  cpu = {
    auto = "packed", tiny = 32 * 32 * 32,
    naive = {lx = 16, ly = 4},
    tiled = {TS = 16},
    reg = {BM = 16, BN = 16, BK = 8, TM = 4, TN = 4, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 0, PADB = 0, DB = 0, fma = true},
    packed = {TM = 8, TN = 32, VW = 16, lx = 2, ly = 2, fma = true,
              double = {TN = 16, VW = 8}},
  },
  gpu = {
    auto = "reg", tiny = 16 * 16 * 16,
    naive = {lx = 16, ly = 16},
    tiled = {TS = 16},
    reg = {BM = 128, BN = 128, BK = 16, TM = 8, TN = 8, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 4, PADB = 0, DB = 1, edge = 8,
           double = {BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, VWM = 2, VWN = 2,
                     VLA = 2, VLB = 2, PADA = 2, DB = 1}},
    small = {BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
             PADA = 4, PADB = 0, DB = 1,
             double = {VWM = 2, VWN = 2, VLA = 2, VLB = 2, PADA = 2}},
    packed = {TM = 4, TN = 8, VW = 4, lx = 16, ly = 8, unroll = 1},
  },
}

-- Device entries, found by bench/gpu/tune_matmul.lua on each device
-- (groups_per_cu from the build log's register count; see docs/PERFORMANCE.md).
-- The H100 and the H200 are one chip (GH100, 132 compute units): the
-- H200's sweep found this entry (50.1 TFLOP/s at 4096); on an H100 a sweep
-- from it kept it (the second session of 2026-11-28: 50.0-50.1 TFLOP/s at
-- 4096 and 51.0 at 8192, against 45.4 and 46.9 on the gpu class's tiles).
-- Each device gets its own copy: a script changing one changes only it.
local function gh100()
  return {
    reg = {BM = 128, BN = 256, BK = 16, TM = 8, TN = 16, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 4, PADB = 0, DB = 1, groups_per_cu = 1},
    small = {BM = 64, BN = 128, BK = 16, TM = 8, TN = 8, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
             PADA = 4, PADB = 0, DB = 1, groups_per_cu = 3},
    -- from a sweep at 256, 512 and 1024 on the H200: 256^3 in 10.2 us on
    -- the device (19.8 on small)
    smaller = {BM = 32, BN = 32, BK = 32, TM = 2, TN = 4, VWM = 2, VWN = 4, VLA = 4, VLB = 4,
               PADA = 4, PADB = 0, DB = 1, groups_per_cu = 4},
  }
end
PARAMS["NVIDIA H200"] = gh100()   -- NVIDIA CUDA, driver 580.159.04
PARAMS["NVIDIA H100"] = gh100()   -- "NVIDIA H100 80GB HBM3", the same driver

PARAMS.accelerator = PARAMS.gpu
PARAMS.other = PARAMS.gpu

local T = {fp32 = PARAMS}

-- The tile parameters of kernels/matmul_mma.cl, per precision: work-group
-- tile bm x bn, step bk along K, warp tile wm x wn, stages (local buffers, 2
-- to 4, filled by cp.async stages - 1 steps ahead), trunc (TF32 parts by
-- cutting bits instead of rounding to nearest), maxrreg (NVIDIA's register
-- cap per work-item, or false). Chosen by bench/gpu/mma.lua's sweep on an
-- H200; scripts that tune may change them, and every product checks them.
T.mma = {
  tf32 = {bm = 128, bn = 128, bk = 16, wm = 64, wn = 32, stages = 3, trunc = false,
          maxrreg = false},
  ["3xtf32"] = {bm = 128, bn = 128, bk = 8, wm = 64, wn = 64, stages = 3, trunc = false,
                maxrreg = false},
}

-- The tile parameters of kernels/matmul_wgmma.cl, per precision: bn
-- (columns of a work-group's tile, the wgmma's N: 8 to 256, a multiple of
-- 8), bk (step along K, a multiple of 8), wgs (warpgroups of 128 work-items,
-- each 64 rows: the tile is 64 wgs x bn), stages (local buffers, 2 to 8),
-- wait (0 or 1: the steps of wgmma a warpgroup leaves in flight; 1 needs 3
-- stages; for 3xtf32, 1 keeps two sets of D), bulk (true: work-item 0
-- copies each step's blocks by cp.async.bulk, with mbarriers; see
-- kernels/matmul_wgmma.cl), group (tiles taken in bands of that many row
-- blocks, so that the groups running at once share blocks of A and B in
-- the cache; 1: row block by row block; 8: tf32 at 8192 7% faster, 3xtf32
-- 11%, on an H200). Chosen by bench/gpu/mma.lua's sweep on an H100
-- (docs/PERFORMANCE.md, the session of 2026-11-27, morning); 3xtf32's
-- steps of 48 in two stages and group on an H200 (the session of
-- 2026-11-28, afternoon). NVIDIA's driver runs these programs with at most
-- 256 work-items a group (wgs 2).
T.wgmma = {
  tf32 = {bn = 256, bk = 32, wgs = 2, stages = 4, wait = 1, bulk = true, group = 8},
  ["3xtf32"] = {bn = 128, bk = 48, wgs = 2, stages = 2, wait = 0, bulk = true, group = 8},
}

-- The launch geometry of matmul_reg.cl's edge kernels: written into reg's
-- source as #defines, so that the kernels' reqd_work_group_size and the
-- launches planned cannot disagree.
T.edge = {
  ROWS_LX = 16,   -- matmul_rows: work-items along x, one column of C each
  ROWS_LY = 16,   -- matmul_rows: work-items along y, interleaved slices of K
  ROWS_R = 4,     -- matmul_rows: rows of C per work-group (ROWS_LY at least)
  COLS_LX = 64,   -- matmul_cols: work-items along x, interleaved slices of K
  COLS_LY = 4,    -- matmul_cols: work-items along y, one row of C each
  COLS_R = 4,     -- matmul_cols: columns of C per work-group (COLS_LX at least)
}

-- Split K (split_k in variants/reg.lua): the flops the product does per
-- byte the sum of the slices moves, to weigh the two; the fewest steps of
-- BK in a slice; the most slices; how much faster the model must say a
-- split is.
T.split = {flops_per_byte = 12.5, min_steps = 16, max_slices = 4, min_gain = 0.97}

-- reg's parameter sets (plan.lua): "smaller" when even the small tiles
-- would make fewer work-groups than smaller_share of the compute units (on
-- the H200, 256 and 512 run twice as fast on 32 x 32 tiles; 1024 is best on
-- the small set); a batch takes the first set whose work-groups fill their
-- waves to batch_fill (on the H200, 64 x 256^3 ran in 53 us on reg's 128 x
-- 256 tiles, 0.97 of one wave; 65 on small's, 0.65 of two; 123 on smaller's).
T.choice = {smaller_share = 0.5, batch_fill = 0.8}

-- Work-items per work-group: matmul_sum (reg's slices added); pack_a and
-- pack_b (packed) along K.
T.groups = {sum = 256, pack = 16}

-- kernels/matmul_blas.cl and matmul_gemv.cl: blas_transpose's tt x tt
-- tiles of tt x tr work-items; the other kernels' work-group size at most;
-- gemv_n's work-items per row: on a GPU a work-group or a few warps,
-- {at least this many vectors along K, work-items}, the first that fits; on
-- a CPU (PoCL runs a work-group's items in a loop, a barrier splits it)
-- gemv_cpu_lx, 3.9x faster than 256 at 2048 x 2048; gemv_t's rows of
-- work-items (gemv_ty), work-groups per compute unit it aims for, and the
-- fewest rows of A each work-item of a slice reads; gemv_t_rows' slices of
-- K per compute unit (CPUs).
T.blas = {tt = 32, tr = 8, group = 256,
          gemv_lx = {{2048, 256}, {256, 64}, {0, 16}}, gemv_cpu_lx = 4,
          gemv_ty = 4, gemv_groups = 8, gemv_min_rows = 16, gemv_cpu_slices = 2}

return T
