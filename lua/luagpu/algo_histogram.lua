-- luagpu.algo_histogram: algo.histogram with kernels/histogram.cl. Part of
-- luagpu.algo; not meant to be required by scripts.

local gpu = require "luagpu"
local H = require "luagpu.helper"
local B = require "luagpu.algo_base"

local type, min, max = type, math.min, math.max
local fail, show, typename = H.fail, H.show, H.typename

local M = {}

-- Most bins counted in local memory (4 bytes each); more go to global atomics.
local MAX_LOCAL_BINS = 8192
local MAX_BINS = (1 << 31) - 1
local SIGNED = {char = true, short = true, int = true, long = true}

local cache = H.device_cache()

local function floor_pow2(n)
  local p = 1
  while p * 2 <= n do p = p * 2 end
  return p
end

-- The histogram kernels for type t on dev, by range or by integer keys.
local function entry_for(fn, dev, t, ranged)
  local cls, sig = B.device_class(fn, dev)
  local entries = H.device_entries(cache, dev, sig)
  local key = "hist " .. t .. (ranged and " range" or " keys")
  local e = entries[key]
  if e then return e end
  B.check_fp64(fn, dev, t)
  local ft = (t == "double" or (not B.FLOATS[t] and dev.fp64)) and "double" or "float"
  local prog = B.build(fn, dev, {{"T", t}, {"FT", ft}, {"RANGE", ranged and 1 or 0},
                                 {"SIGNED", SIGNED[t] and 1 or 0}}, "histogram.cl")
  local L = floor_pow2(min(cls.hist_local, dev.max_work_group_size,
                           prog.hist_local.work_group_size, prog.hist_global.work_group_size))
  e = {hist_local = prog.hist_local, hist_global = prog.hist_global, L = L,
       groups = max(1, dev.compute_units * cls.hist_groups_per_cu),
       local_bins = min(MAX_LOCAL_BINS, dev.local_mem_size // 8)}
  entries[key] = e
  return e
end

-- Checks the range option {lo, hi}: finite numbers, lo < hi.
local function check_range(fn, r)
  if type(r) ~= "table" then
    fail(fn, "argument #2: option range: expected a table {lo, hi}, got %s", typename(r))
  end
  local lo, hi = r[1], r[2]
  for i, v in ipairs {lo, hi} do
    if type(v) ~= "number" or v ~= v or v == 1 / 0 or v == -1 / 0 then
      fail(fn, "argument #2: option range: expected finite numbers {lo, hi}, got %s at %d",
           show(v), i)
    end
  end
  if lo == nil or hi == nil then
    fail(fn, "argument #2: option range: expected finite numbers {lo, hi}")
  end
  if not (lo < hi) then
    fail(fn, "argument #2: option range: expected lo < hi, got {%s, %s}", show(lo), show(hi))
  end
  return lo, hi
end

local OPTIONS = H.option_names{"bins", "range", "out", "accumulate", "wait", "queue"}

-- algo.histogram(b, {bins = n [, range = {lo, hi}] [, out =] [, accumulate =]})
--   -> counts (uint, bins elements), Event
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
  local lo, hi = 0, 1
  local ranged = o.range ~= nil
  if ranged then
    lo, hi = check_range(fn, o.range)
  elseif not B.INTEGERS[t] then
    fail(fn, "argument #2: option range is missing (needed for %s values; bins without a " ..
         "range count integer keys 0 .. bins - 1)", t)
  end
  local accumulate = B.flag(fn, 2, o, "accumulate")
  local q = o.queue
  local dev = q and q.device or root.device
  if q then B.check_platform(fn, "argument #1", root, dev) end
  local out = o.out
  if out ~= nil then
    local ot, oroot, _, ob = B.check_buffer_option(fn, 2, out, "out")
    if ot ~= "uint" then fail(fn, "argument #2: option out: expected a buffer of uint, got %s", ot) end
    if #ob ~= nb then
      fail(fn, "argument #2: option out: expected %d elements (one per bin), got %d", nb, #ob)
    end
    out = ob
    B.check_platform(fn, "argument #2: option out", oroot, dev)
  elseif accumulate then
    fail(fn, "argument #2: option accumulate needs option out (the counts to add to)")
  else
    out = dev:buffer("uint", nb)
  end
  local e = entry_for(fn, dev, t, ranged)
  local seq = B.sequence(q, o.wait)
  if not accumulate and o.out ~= nil then seq:cmd(out, "fill", 0) end
  if n == 0 then
    if not seq.last then seq:marker(dev) end
    return out, seq.last
  end
  local L = e.L
  local groups = min(e.groups, (n + L - 1) // L)
  local scale = nb / (hi - lo)
  local oroot, ooff = out.root, out.offset
  if ooff ~= 0 then     -- kernels add to out from its first element: use a view's root
    fail(fn, "argument #2: option out: expected a whole buffer, got a view")
  end
  if nb <= e.local_bins then
    seq:run(e.hist_local(root, off, n, lo, hi, scale, nb, oroot, gpu.localmem("uint", nb)),
            {groups * L}, {L})
  else
    seq:run(e.hist_global(root, off, n, lo, hi, scale, nb, oroot), {groups * L}, {L})
  end
  return out, seq.last
end

return M
