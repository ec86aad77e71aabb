-- luagpu.matmul.common: what matmul's fp32 variants (variant_*.lua) share:
-- the bounds of what a script gives them, the checks their parameters go
-- through, launches and scratch buffers.
--
--   B.MAX_SIZE, B.PARAM_NAMES, B.SIZES     (sizes, parameter names, types)
--   B.need(cond, variant, fmt, ...)        raises "VARIANT parameters: ..."
--   B.int(p, variant, name [, lo])         p[name] a bounded integer
--   B.width(p, variant, name)              p[name] a vector width
--   B.unrolled(variant, d)                 the register tile and its unrolling
--   B.launch(global, local_size)           a launch
--   B.scratch(pl, c)                       plan pl's scratch buffers for call c
--
-- Errors name "matmul" (H.fail raises at the script's line).

local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"

local pairs = pairs
local integer, show = H.integer, H.show

local B = {}

-- The element types of the fp32 kernels, by size in bytes.
B.SIZES = {float = TY.SIZES.float, double = TY.SIZES.double}

-- Sizes: the kernels take M, N, K as ints. Parameters: past these a
-- kernel's loops unroll without end (TM = 2^20 kept the compiler busy for
-- hours) or its sizes overflow; the device's work-group and local-memory
-- limits are checked apart.
B.MAX_SIZE = (1 << 31) - 1
local MAX_PARAM = {lx = 4096, ly = 4096, TS = 4096, BM = 1024, BN = 1024, BK = 1024,
                   TM = 64, TN = 64, PADA = 256, PADB = 256, unroll = 1024,
                   splitk = 64, groups_per_cu = 1024, edge = B.MAX_SIZE}
local MAX_ACCUMULATORS = 1024       -- TM x TN: the register tile of a work-item
local MAX_UNROLLED = 8192           -- K steps unrolled x TM x TN (PoCL builds it in 20 s)
local WIDTHS = {[1] = true, [2] = true, [4] = true, [8] = true, [16] = true}

-- Every parameter's name (see params.lua), to check opts.params against.
B.PARAM_NAMES = {"lx", "ly", "TS", "BM", "BN", "BK", "TM", "TN", "VWM", "VWN", "VLA",
                 "VLB", "PADA", "PADB", "DB", "groups_per_cu", "splitk", "edge", "VW",
                 "unroll", "fma", "options"}

function B.need(cond, variant, fmt, ...)
  if not cond then H.fail("matmul", "%s parameters: " .. fmt, variant, ...) end
end
local need = B.need

-- p[name] as an integer from lo (default 1) to its bound.
function B.int(p, variant, name, lo)
  local v = p[name]
  local i = integer(v)
  lo = lo or 1
  need(i and i >= lo, variant, "%s: expected %s, got %s", name,
       lo == 1 and "a positive integer" or "an integer >= 0", show(v))
  need(i <= MAX_PARAM[name], variant, "%s: %d is too large (at most %d)", name, i,
       MAX_PARAM[name])
  return i
end

function B.width(p, variant, name)
  local v = integer(p[name])
  need(WIDTHS[v], variant, "%s: expected a vector width (1, 2, 4, 8 or 16), got %s", name,
       show(p[name]))
  return v
end

-- Checks the register tile d.TM x d.TN of reg and packed, and the K loop
-- unrolled over it (steps: unroll, else reg's BK).
function B.unrolled(variant, d)
  local acc = d.TM * d.TN
  need(acc <= MAX_ACCUMULATORS, variant,
       "TM x TN = %d x %d = %d sums per work-item, at most %d", d.TM, d.TN, acc, MAX_ACCUMULATORS)
  local steps, what = d.UNROLLK, "unroll"
  if not steps then steps, what = variant == "reg" and d.BK or 1, "BK" end
  need(steps * acc <= MAX_UNROLLED, variant,
       "%s (%d) x TM (%d) x TN (%d) = %d multiply-adds unrolled, at most %d",
       what, steps, d.TM, d.TN, steps * acc, MAX_UNROLLED)
end

-- A launch: the kernel's global and local sizes.
function B.launch(global, lsz)
  return {global = global, local_size = lsz}
end

-- The scratch buffers of plan pl for call c, kept in c.entries (matmul's
-- per-device entries) by element type and name, as a steps list's scratch.
function B.scratch(pl, c)
  local entries = c.entries
  local buffers = {entries = entries}
  for name, count in pairs(pl.scratch) do
    local key = "scratch " .. c.t .. " " .. name
    buffers[key] = ST.scratch_buffer(entries, c.dev, key, c.t, count)
  end
  return buffers
end

return B
