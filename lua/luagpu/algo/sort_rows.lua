-- luagpu.algo.sort_rows: sorts of rows that fit a work-group's local
-- memory (kernels/sort_rows.cl), for luagpu.algo.sort's algo.sort and
-- algo.argsort: a bitonic sort of (key, position) pairs in local memory,
-- one group per row, several rows per group for short rows. Rows longer
-- than the device's local memory holds (read from dev.local_mem_size)
-- or than the class's sort_rows_max keep the radix sort. Not meant to be
-- required by scripts.
--
--   R.entry(fn, dev, kt, rowlen, nrows, what)   the kernel for nrows rows of
--                                        rowlen keys of type kt, or nil
--                                        (radix sort)
--   R.run(seq, e, args)                  enqueues it on the sequence

local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local B = require "luagpu.algo.base"

local min, max = math.min, math.max
local SIZES, FLOATS, SIGNED = TY.SIZES, TY.FLOATS, TY.SIGNED
local floor_pow2, ceil_div = ST.floor_pow2, ST.ceil_div

local R = {}

-- bytes of local memory left to the implementation (PoCL, drivers)
local RESERVE = 1024

local function ceil_pow2(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end

local cache = ST.device_cache()

-- The row sort for nrows rows of rowlen (>= 1) keys of type kt on dev,
-- writing
-- what = {keys = true (sort: the keys in place), vt = the values' type
-- (moved along), ot = the positions' type (argsort)}: {k, LS, rows (per
-- group)}; nil when the rows do not fit (then the radix sort runs).
function R.entry(fn, dev, kt, rowlen, nrows, what)
  local cls, sig = B.device_class(fn, dev)
  if rowlen > cls.sort_rows_max then return nil end
  local P = ceil_pow2(rowlen)
  -- slots of 8 bytes (keys of up to 4 bytes: with a spare one after every
  -- 16, SLOT_PAD) or 12
  local small = SIZES[kt] <= 4
  local room = small and (dev.local_mem_size - RESERVE) * 16 // (17 * 8)
               or (dev.local_mem_size - RESERVE) // 12
  if room < 2 or P > floor_pow2(room) then return nil end
  -- slots per group: sort_rows_group, fewer when there are fewer keys
  local N = max(P, min(cls.sort_rows_group, floor_pow2(room), ceil_pow2(nrows * P)), 2)
  local entries = ST.device_entries(cache, dev, sig)
  local key = ("rows %s %d %d %s %s %s"):format(kt, P, N, what.keys and "k" or "-",
                                                what.vt or "-", what.ot or "-")
  local e = entries[key]
  if e then return e end
  if what.vt then B.check_fp64(fn, dev, what.vt) end
  local LS = min(cls.sort_rows_local, N // 2, floor_pow2(dev.max_work_group_size))
  while true do
    local size = SIZES[kt]
    local defines = {
      {"K", kt}, {"U", size == 8 and "ulong" or "uint"},
      {"KIND", FLOATS[kt] and 2 or SIGNED[kt] and 1 or 0}, {"BITS", size * 8},
      {"P", P}, {"N", N}, {"LS", LS}, {"SLOT_PAD", small and 1 or 0},
    }
    if what.keys then defines[#defines + 1] = {"KEYS", 1} end
    if what.vt then
      defines[#defines + 1] = {"VALS", 1}
      defines[#defines + 1] = {"V", what.vt}
    end
    if what.ot then
      defines[#defines + 1] = {"POS_OUT", 1}
      defines[#defines + 1] = {"OT", what.ot}
    end
    local k = B.build(fn, dev, defines, {"sort_keys.cl", "sort_rows.cl"}).sort_rows
    if k.work_group_size >= LS then
      e = {k = k, LS = LS, rows = N // P}
      break
    end
    LS = floor_pow2(k.work_group_size)
  end
  entries[key] = e
  return e
end

local dummies = ST.device_cache()

local function dummy(dev, t)
  local d = dummies[dev]
  if not d then d = {}; dummies[dev] = d end
  if not d[t] then d[t] = dev:buffer(t, 1) end
  return d[t]
end

-- Enqueues e on seq: a = {dev, keys, koff, kout, kooff, vals, voff, pos,
-- poff, rowlen, nrows, descending, base} (kout: where the sorted keys go,
-- the keys themselves when nil; kout, vals, pos: roots, or nil where not
-- written).
function R.run(seq, e, a)
  local groups = ceil_div(a.nrows, e.rows)
  local kout = a.kout or a.keys
  return seq:run(e.k(a.keys, a.koff, kout, a.kout and a.kooff or a.koff,
                     a.vals or dummy(a.dev, "uchar"), a.voff or 0,
                     a.pos or dummy(a.dev, "uint"), a.poff or 0, a.rowlen, a.nrows,
                     a.descending and 1 or 0, a.base or 0), {groups * e.LS}, {e.LS})
end

return R
