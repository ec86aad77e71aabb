-- luagpu.algo.histogram: algo.histogram with kernels/histogram.cl. Part of
-- luagpu.algo; not meant to be required by scripts.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local B = require "luagpu.algo.base"

local type, ipairs, min, max = type, ipairs, math.min, math.max
local pack, unpack = string.pack, string.unpack
local fail, show, typename = H.fail, H.show, H.typename
local SIGNED, INTEGERS, floor_pow2 = TY.SIGNED, TY.INTEGERS, ST.floor_pow2

local M = {}

-- Most bins counted in local memory (4 bytes each); more go to global atomics.
local MAX_LOCAL_BINS = 8192
local MAX_BINS = (1 << 31) - 1

local cache = ST.device_cache()

-- The histogram kernels for type t on dev, by range (its arithmetic in
-- ft) or by integer keys.
local function entry_for(fn, dev, t, ranged, ft)
  local cls, sig = B.device_class(fn, dev)
  local entries = ST.device_entries(cache, dev, sig)
  local by_type = entries[t]
  if not by_type then by_type = {}; entries[t] = by_type end
  local key = ranged and ft or "keys"
  local e = by_type[key]
  if e then return e end
  B.check_fp64(fn, dev, t)
  local prog = B.build(fn, dev, {{"T", t}, {"FT", ft}, {"RANGE", ranged and 1 or 0},
                                 {"SIGNED", SIGNED[t] and 1 or 0}}, "histogram.cl")
  local L = floor_pow2(min(cls.hist_local, dev.max_work_group_size,
                           prog.hist_local.work_group_size, prog.hist_global.work_group_size))
  e = {hist_local = prog.hist_local, hist_global = prog.hist_global, L = L,
       groups = max(1, dev.compute_units * cls.hist_groups_per_cu),
       local_bins = min(MAX_LOCAL_BINS, dev.local_mem_size // 8)}
  by_type[key] = e
  return e
end

-- Checks the range option {lo, hi}: finite numbers, lo < hi.
local function check_range(fn, r)
  if type(r) ~= "table" then
    fail(fn, "argument #2: option range: expected a table {lo, hi}, got %s", typename(r))
  end
  local lo, hi = r[1], r[2]
  for i = 1, 2 do
    local v = i == 1 and lo or hi
    if type(v) ~= "number" or v ~= v or v == 1 / 0 or v == -1 / 0 then
      if v == nil and (i == 1 or lo ~= nil) then break end
      fail(fn, "argument #2: option range: expected finite numbers {lo, hi}, got %s at %d",
           show(v), i)
    end
  end
  if lo == nil or hi == nil then
    fail(fn, "argument #2: option range: expected finite numbers {lo, hi}")
  end
  if r[3] ~= nil then         -- ({0, 1, 2}: which two were meant?)
    fail(fn, "argument #2: option range: expected two numbers {lo, hi}, got a third: %s",
         show(r[3]))
  end
  if not (lo < hi) then
    fail(fn, "argument #2: option range: expected lo < hi, got {%s, %s}", show(lo), show(hi))
  end
  return lo, hi
end

------------------------------------------------------------------ range arithmetic

-- The largest finite float and double.
local BIG = {float = 0x1.fffffep127, double = 0x1.fffffffffffffp1023}
local PACK = {float = "<f", double = "<d"}
-- The least scale p of a range (a normal number: devices may flush
-- subnormal floats to zero); 1 / p is then an ft too.
local MIN_P = {float = 2.0 ^ -126, double = 2.0 ^ -1022}

-- x (a Lua number within ft's finite range) rounded to the nearest ft.
local function nearest(ft, x)
  return (unpack(PACK[ft], pack(PACK[ft], x + 0.0)))
end

-- The type of the range arithmetic for elements of type t on dev: double
-- for double and for integers (where dev has fp64), and for float elements
-- in a range past float's numbers (where dev has fp64); else float.
local function arithmetic(t, dev, lo, hi)
  if t == "double" then return "double" end
  if not dev.fp64 then return "float" end
  if t ~= "float" then return "double" end
  return (lo < -BIG.float or hi > BIG.float) and "double" or "float"
end

-- The range arithmetic of {lo, hi} in ft (histogram.cl): the range rounded
-- to ft (the elements counted are those in it, as NumPy compares; ends
-- beyond ft's finite numbers are its largest, so infinities never count),
-- the power of two p (and 1 / p) that keeps hi * p - lo * p finite in ft,
-- and lo * p and hi * p rounded (the bins: those of the range as given).
-- Returns nil when no finite ft lies in the range.
local function compute_range_args(fn, dev, ft, lo, hi)
  local big = BIG[ft]
  if lo > big or hi < -big then return nil end
  local clo, chi = nearest(ft, max(lo, -big)), nearest(ft, min(hi, big))
  local p, plo, phi = 1.0
  while true do
    local a, b = lo * p, hi * p
    if a >= -big and b <= big then
      plo, phi = nearest(ft, a), nearest(ft, b)
      if phi - plo <= big then break end
    end
    p = p / 2
  end
  if p < MIN_P[ft] then     -- 1 / p would not be a (finite) ft
    fail(fn, "argument #2: option range: {%s, %s} is too wide for %s arithmetic (%s has no " ..
         "fp64)", show(lo), show(hi), ft, dev.name)
  end
  if not (plo < phi) then
    fail(fn, "argument #2: option range: {%s, %s} is too narrow for %s arithmetic (both " ..
         "ends round to %s)", show(lo), show(hi), ft, show(clo))
  end
  return {clo, chi, p, 1 / p, plo, phi}
end

-- The same, the last result per arithmetic kept (a script counts over one
-- range again and again; the rounding loop costs more than the launch).
local last_range = ST.device_cache()
local function range_args(fn, dev, ft, lo, hi)
  local d = last_range[dev]
  if not d then d = {}; last_range[dev] = d end
  local m = d[ft]
  if m and m.lo == lo and m.hi == hi then return m.args end
  local args = compute_range_args(fn, dev, ft, lo, hi)
  d[ft] = {lo = lo, hi = hi, args = args}
  return args
end

local OPTIONS = H.option_names{"bins", "range", "out", "accumulate", "wait", "queue"}

-- algo.histogram(b, {bins = n [, range = {lo, hi}] [, out =] [, accumulate =]})
--   -> counts (uint, bins elements), Event. Everything is checked before
-- the first command.
function M.histogram(b, opts)
  local fn = "algo.histogram"
  local o = H.check_options(fn, 2, opts, OPTIONS)
  local t, root, off, buf = B.check_buffer(fn, 1, b)
  local n = #buf
  local bins = o.bins
  local nb = H.integer(bins)
  if bins == nil then fail(fn, "argument #2: option bins is missing (the number of bins)") end
  if not nb or nb < 1 or nb > MAX_BINS then
    fail(fn, "argument #2: option bins: expected an integer from 1 to %d, got %s", MAX_BINS,
         show(bins))
  end
  local lo, hi
  local ranged = o.range ~= nil
  if ranged then
    lo, hi = check_range(fn, o.range)
  elseif not INTEGERS[t] then
    fail(fn, "argument #2: option range is missing (needed for %s values; bins without a " ..
         "range count integer keys 0 .. bins - 1)", t)
  end
  local accumulate = B.flag(fn, 2, o, "accumulate")
  local q = o.queue
  local dev = q and q.device or root.device
  if q then B.check_platform(fn, "argument #1", root, dev) end
  local out, counts = o.out
  if out ~= nil then
    local where = "argument #2: option out"
    local ot, oroot, ooff, ob = B.check_buffer_option(fn, 2, out, "out")
    if ot ~= "uint" then fail(fn, "%s: expected a buffer of uint, got %s", where, ot) end
    if #ob ~= nb then
      fail(fn, "%s: expected %d elements (one per bin), got %d", where, nb, #ob)
    end
    if ooff ~= 0 then     -- the kernels add to out from its root's first element
      fail(fn, "%s: expected a whole buffer, got a view", where)
    end
    B.check_platform(fn, where, oroot, dev)
    -- the input is read while the counts are written
    B.check_overlap(fn, where, root, off, n, oroot, ooff, nb)
    out, counts = ob, oroot
  elseif accumulate then
    fail(fn, "argument #2: option accumulate needs option out (the counts to add to)")
  end
  local ft = ranged and arithmetic(t, dev, lo, hi)
  local args = {0, 0, 1, 1, 0, 1}     -- integer keys: not read
  if ranged then args = range_args(fn, dev, ft, lo, hi) end
  local e = entry_for(fn, dev, t, ranged, ft or "float")
  if out == nil then out = dev:buffer("uint", nb); counts = out end
  local seq = B.sequence(q, o.wait)
  if not accumulate and o.out ~= nil then seq:cmd(out, "fill", 0) end
  if n == 0 or not args then      -- nothing to count
    return out, seq:event(dev)
  end
  local L = e.L
  local groups = min(e.groups, (n + L - 1) // L)
  local lo_, hi_, p, ip, plo, phi = table.unpack(args)
  if nb <= e.local_bins then
    seq:run(e.hist_local(root, off, n, lo_, hi_, p, ip, plo, phi, nb, counts,
                         gpu.localmem("uint", nb)), {groups * L}, {L})
  else
    seq:run(e.hist_global(root, off, n, lo_, hi_, p, ip, plo, phi, nb, counts),
            {groups * L}, {L})
  end
  return out, seq:event(dev)
end

return M
