-- luagpu.matmul.params: the parameters of luagpu.matmul's kernels, per
-- device class and per device. This table is matmul.params: a script may
-- change it or add an entry for its device; bench/gpu/tune_matmul.lua finds
-- an entry by a sweep and prints it, to be added below.
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
--                              splitting K, see split_k in matmul_plan.lua);
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
PARAMS["NVIDIA H200"] = {   -- NVIDIA CUDA, driver 580.159.04: 50.1 TFLOP/s at 4096
  reg = {BM = 128, BN = 256, BK = 16, TM = 8, TN = 16, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
         PADA = 4, PADB = 0, DB = 1, groups_per_cu = 1},
  small = {BM = 64, BN = 128, BK = 16, TM = 8, TN = 8, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 4, PADB = 0, DB = 1, groups_per_cu = 3},
  -- from a sweep at 256, 512 and 1024: 256^3 in 10.2 us on the device (19.8 on small)
  smaller = {BM = 32, BN = 32, BK = 32, TM = 2, TN = 4, VWM = 2, VWN = 4, VLA = 4, VLB = 4,
             PADA = 4, PADB = 0, DB = 1, groups_per_cu = 4},
}

PARAMS.accelerator = PARAMS.gpu
PARAMS.other = PARAMS.gpu

return PARAMS
