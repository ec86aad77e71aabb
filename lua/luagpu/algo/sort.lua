-- luagpu.algo.sort: radix sorts (algo.sort, algo.argsort) with
-- kernels/sort.cl and kernels/sort_gather.cl. Part of luagpu.algo; not
-- meant to be required by scripts.
--
-- Rows (or a whole buffer) that fit a work-group's local memory sort
-- there instead, one kernel (luagpu.algo.sort_rows). Longer ones: keys
-- sort in 8-bit passes (1 per byte of the key type). Values move
-- with the keys in every pass. Rows of row_length sort on their own by
-- further passes over the row of each key's original index, which the
-- passes then carry instead (as they do for argsort); values then move
-- once, at the end, by a gather through the indices. Counts and indices
-- are uint: at most 2^32 - 1 keys.
--
-- A pass is five kernels (counts per tile, their scan in three, the
-- scatter), or one (kernels/sort.cl's sort_onesweep, where the class's
-- sort_onesweep or the onesweep option says so, on the warp-ranked
-- tiles): the global digit counts of every key pass come first from one
-- kernel (sort_histograms), and each pass's groups then find their tiles'
-- places by a decoupled look-back over the tiles before them; a row
-- pass's digit counts need no histogram (each row holds row_length keys:
-- sort.cl's lg_pass_count). There, on the device's default queue,
-- a sort of one row of at least algo.classes.X.sort_skip_from integer or
-- double keys (2^21 on GPUs: below, the read costs what it saves) reads those counts
-- back (one read of 256 counts a pass) and leaves out each pass whose
-- digit is the same for every key (the high bytes of small integers, the
-- low ones of integral doubles): the next pass reads the keys where they
-- are. Floats do not: their passes are seldom trivial, and at 2^20 keys
-- the read costs a tenth of the sort.

local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local PTX = require "luagpu.core.ptx"
local B = require "luagpu.algo.base"
local S = require "luagpu.algo.scan"
local RS = require "luagpu.algo.sort_rows"

local min, max = math.min, math.max
local fail, show = H.fail, H.show
local SIZES, FLOATS, SIGNED, INTEGERS = TY.SIZES, TY.FLOATS, TY.SIGNED, TY.INTEGERS
local floor_pow2 = ST.floor_pow2
local CALLER = B.CALLER

local M = {}

local NO_INIT = ST.NO_INIT         -- outputs the kernels write whole: no zero-fill

local RADIX = 256
-- The local memory a sort_ptx tile takes by default on an sm_90 device
-- (NVIDIA's OpenCL reports 48 KB and runs up to 227 KB a work-group
-- there): argsort's 256 x 24 tiles keep their 24 keys a work-item (2^24
-- floats: 1065 us of device time against 1136 with 12 on an H100).
local SM90_LOCAL = 150000
local MAX_KEYS = (1 << 32) - 1
-- Epochs tag the one-sweep look-back's words (31 bits of them); after the
-- last one the words are cleared and they start again.
local MAX_EPOCH = (1 << 31) - 1

------------------------------------------------------------------ programs

local cache = ST.device_cache()

-- The radix sort of keys of type kt carrying vt (uint: indices) on dev:
-- {count, scatter (kernels), L, tile, scratch buffers; onesweep: its
-- kernels, ticket, histograms}. force: the onesweep option (nil: the
-- class's sort_onesweep, where the tiles are ranked warp by warp; true:
-- one sweep, with the warp instructions emulated where the device has
-- none; false: five kernels a pass).
local function entry_for(fn, dev, kt, vt, force)
  local cls, sig = B.device_class(fn, dev)
  local entries = ST.device_entries(cache, dev, sig)
  local key = "sort " .. kt .. " " .. vt .. " " .. tostring(force)
  local e = entries[key]
  if e then return e end
  B.check_fp64(fn, dev, kt)
  B.check_fp64(fn, dev, vt)
  local size, vsize = SIZES[kt], SIZES[vt]
  local wgs = floor_pow2(dev.max_work_group_size)
  -- on NVIDIA, tiles ranked warp by warp with match instructions
  -- (sort_scatter_ptx), which need no counts per work-item, in tiles of
  -- their own settings ("emulated": the same kernel with the warp
  -- instructions emulated in local memory, on any device, for specs)
  local kw = cls.sort_ptx and wgs >= 32
             and (cls.sort_ptx == "emulated" and "emulated" or PTX.keyword(dev))
  local sweep = force
  if sweep == nil then sweep = cls.sort_onesweep and kw and true or false end
  if sweep and not kw then
    kw = wgs >= 32 and (PTX.keyword(dev) or "emulated")
    sweep = kw and true or false
  end
  local L = min(kw and cls.sort_ptx_local or cls.sort_local, wgs, RADIX)
  local ipt = kw and cls.sort_ptx_items or cls.sort_items
  while L * ipt > 32768 do ipt = ipt // 2 end    -- tile ranks are ushort
  -- local memory: counts per work-item and digit (ushort; sort_scatter_ptx:
  -- per warp and digit, uint), the tile's keys and what they carry, and
  -- small tables
  local function bytes()
    local counts = kw and (L // 32) * RADIX * 4 or L * RADIX * 2
    return counts + RADIX * (kw and 8 or 4) + L * 4 + L * ipt * (size + vsize) + 64
           + (sweep and RADIX * 4 or 0)
  end
  local limit = dev.local_mem_size
  if kw and cls.sort_ptx_local_bytes > 0 then
    limit = cls.sort_ptx_local_bytes
  elseif kw and kw ~= "emulated" and PTX.target(dev) == "sm_90" then
    limit = max(limit, SM90_LOCAL)
  end
  while bytes() > limit and ipt > 1 do ipt = ipt // 2 end
  while bytes() > limit and L > (kw and 32 or 1) do L = L // 2 end
  local prog
  local scatter = kw and "sort_scatter_ptx" or "sort_scatter"
  while true do
    local defines = {
      {"K", kt}, {"U", size == 8 and "ulong" or "uint"},
      {"KIND", FLOATS[kt] and 2 or SIGNED[kt] and 1 or 0}, {"BITS", size * 8}, {"V", vt},
      {"L", L}, {"IPT", ipt},
    }
    if kw then
      defines[#defines + 1] = {"WARP_PTX", 1}
      defines[#defines + 1] = kw == "emulated" and {"LG_EMULATE_WARP", 1} or {"LG_ASM", kw}
    end
    if sweep then
      defines[#defines + 1] = {"ONESWEEP", 1}
      defines[#defines + 1] = {"NPASS", size}
    end
    prog = B.build(fn, dev, defines, {"sort_keys.cl", "sort.cl"})
    local wgs = min(prog.sort_count.work_group_size, prog[scatter].work_group_size)
    if sweep then
      wgs = min(wgs, prog.sort_onesweep.work_group_size, prog.sort_histograms.work_group_size)
    end
    if wgs >= L or L == 1 or (kw and L == 32) then break end
    L = max(floor_pow2(wgs), kw and 32 or 1)
  end
  e = {count = prog.sort_count, scatter = prog[scatter], L = L, tile = L * ipt, vt = vt,
       chunk_sums = prog.sort_chunk_sums, chunk_places = prog.sort_chunk_places,
       chunks = max(1, dev.compute_units * 4)}
  if sweep then
    -- the histograms of the key passes, two sets: a call counts into
    -- hists[parity] while its first pass zeroes the other, the next
    -- call's (dirty: a call stopped between the two, so the next one
    -- clears its set itself)
    e.onesweep, e.histograms, e.sweep = true, prog.sort_histograms, prog.sort_onesweep
    B.lookback_init(e, dev)
    e.hists = {dev:buffer("uint", size * RADIX), dev:buffer("uint", size * RADIX)}
    e.parity, e.dirty = 1, false
    e.hist_groups = max(1, dev.compute_units * 8)
    e.hist_items, e.skip_from = cls.sort_hist_items, cls.sort_skip_from
  end
  entries[key] = e
  return e
end

-- The gather program for element type t on dev.
local function gather_for(fn, dev, t)
  local cls, sig = B.device_class(fn, dev)
  local entries = ST.device_entries(cache, dev, sig)
  local key = "gather " .. t
  local e = entries[key]
  if e then return e end
  B.check_fp64(fn, dev, t)
  local prog = B.build(fn, dev, {{"V", t}}, "sort_gather.cl")
  e = {gather = prog.sort_gather, positions = prog.sort_positions}
  entries[key] = e
  return e
end

------------------------------------------------------------------ running

local dummies = ST.device_cache()

-- A one-element buffer of type t (uint by default) on dev, for kernel
-- arguments that are not read.
local function dummy(dev, t)
  t = t or "uint"
  local d = dummies[dev]
  if not d then d = {}; dummies[dev] = d end
  if not d[t] then d[t] = dev:buffer(t, 1) end
  return d[t]
end

local UINT_SUM = S.builtin("sum", "uint", "uint")

-- The passes (as radix lists them) less the key passes whose digit every
-- one of the n keys shares: its counts (hist, 256 a key pass, read back
-- after the commands of seq) hold n for that digit. One pass stays when
-- every key pass is trivial (all keys equal): the indices and the output
-- still come from a pass.
local function nontrivial(seq, hist, passes, npass, n)
  local counts = hist:sub(1, RADIX * npass):get(seq:opts() or {})
  local keep = {}
  for _, p in ipairs(passes) do
    local trivial = false
    if p[1] == 0 then
      local base = p[2] // 8 * RADIX
      for d = base + 1, base + RADIX do
        local c = counts[d]
        if c ~= 0 then trivial = c == n; break end
      end
    end
    if not trivial then keep[#keep + 1] = p end
  end
  if #keep == 0 then keep[1] = passes[#passes] end
  return keep
end

-- Sorts the n keys of type kt at (root, off) in place, on the sequence
-- seq: r = {descending, rowlen (0: one row), carry (keep the original
-- indices), values (root, offset and type of values moved along, when
-- not carrying indices), keep (a scratch buffer of n keys: the keys at
-- root stay as they are, the passes go between keep and another scratch
-- buffer, and only the indices of the last pass matter)}. Returns the
-- uint buffer of the indices (carry) or nil.
local function radix(fn, dev, e, seq, root, off, n, kt, r)
  local L, tile = e.L, e.tile
  local ntiles = (n + tile - 1) // tile
  local keys2 = ST.scratch_buffer(e, dev, "keys", kt, n)
  local counts, rpc, chunks, sums, places
  if not e.onesweep then                       -- passes of five kernels
    -- per tile and digit: its keys, then their place (tile-major, in place)
    counts = ST.scratch_buffer(e, dev, "counts", "uint", RADIX * ntiles)
    -- the tiles in chunks: per chunk and digit, its keys, then their place
    rpc = (ntiles + e.chunks - 1) // e.chunks
    chunks = (ntiles + rpc - 1) // rpc
    sums = ST.scratch_buffer(e, dev, "sums", "uint", RADIX * chunks)
    places = ST.scratch_buffer(e, dev, "places", "uint", RADIX * chunks)
  end
  local carry = r.carry or r.rowlen ~= 0
  local nodata, nolong = dummy(dev), dummy(dev, "long")
  -- what the passes carry: from (va, vaoff) to (vb, vboff), swapped after each
  local none = dummy(dev, e.vt)
  local va, vaoff, vb, vboff, cmode = none, 0, none, 0, 0
  if carry then
    va = ST.scratch_buffer(e, dev, "idx_a", "uint", n)
    vb = ST.scratch_buffer(e, dev, "idx_b", "uint", n)
    cmode = 2
  elseif r.values then
    local v = r.values
    va, vaoff = v.root, v.offset
    vb = ST.scratch_buffer(e, dev, "values", v.type, n)
    cmode = 1
  end
  local passes = {}
  for p = 0, SIZES[kt] - 1 do passes[#passes + 1] = {0, 8 * p} end
  if r.rowlen ~= 0 then
    local last_row = n // r.rowlen - 1
    local shift = 0
    repeat
      passes[#passes + 1] = {1, shift}
      shift = shift + 8
    until last_row >> shift == 0
  end
  local src, soff, dst, doff = root, off, keys2, 0
  local desc = r.descending and 1 or 0
  local rowlen = r.rowlen ~= 0 and r.rowlen or 1
  local words, hist, other
  if e.onesweep then
    words = ST.scratch_buffer(e, dev, "words", "ulong", RADIX * ntiles)
    hist, other = e.hists[e.parity], e.hists[3 - e.parity]
    if e.dirty then seq:cmd(hist, "fill", 0) end
    e.dirty = true
    local groups = min(e.hist_groups, (n + L * e.hist_items - 1) // (L * e.hist_items))
    seq:run(e.histograms(root, off, n, desc, hist), {groups * L}, {L})
    local from = e.skip_from
    -- (not for rows: a row pass must not come first, where no index is carried yet)
    if from > 0 and n >= from and kt ~= "float" and SIZES[kt] > 1 and seq.q == nil
       and r.rowlen == 0 then
      passes = nontrivial(seq, hist, passes, SIZES[kt], n)
    end
  end
  for pi, p in ipairs(passes) do
    local rows = p[1] == 1
    if e.onesweep then
      local epoch = B.next_epoch(seq, e, words, MAX_EPOCH)
      local first = pi == 1
      local last = pi == #passes
      local keys_out = (r.keep and last) and 0 or 1
      -- argsort's positions (long, from its base) written by the last pass
      local pp = last and r.positions
      seq:run(e.sweep(src, soff, dst, doff, va, vaoff, vb, vboff, cmode, n, p[1], p[2], desc,
                      rowlen, n // rowlen, hist, rows and 0 or p[2] // 8 * RADIX, words,
                      e.ticket, epoch,
                      first and other or nodata, first and #other or 0, keys_out,
                      pp and pp.root or nolong, pp and pp.offset or 0, pp and pp.base or 0,
                      pp and 1 or 0),
              {ntiles * L}, {L})
      if pp then r.positions_done = true end
      if first then e.parity, e.dirty = 3 - e.parity, false end
    else
      seq:run(e.count(src, soff, rows and va or nodata, rows and 1 or 0, n, p[1], p[2], desc,
                      rowlen, ntiles, counts), {ntiles * L}, {L})
      seq:run(e.chunk_sums(counts, ntiles, rpc, sums), {chunks * L}, {L})
      seq.last = S.run(fn, {spec = UINT_SUM, x = sums, xoff = 0, n = RADIX * chunks,
                            rowlen = 0, out = places, ooff = 0, exclusive = true,
                            queue = seq.q, wait = {seq.last or nil}, quiet = seq.quiet})
      seq:run(e.chunk_places(counts, ntiles, rpc, places), {chunks * L}, {L})
      seq:run(e.scatter(src, soff, dst, doff, va, vaoff, vb, vboff, cmode, n, p[1], p[2],
                        desc, rowlen, ntiles, counts), {ntiles * L}, {L})
    end
    src, soff, dst, doff = dst, doff, src, soff
    if pi == 1 and r.keep then dst, doff = r.keep, 0 end
    if pi == 1 and r.out then dst, doff = r.out.root, r.out.offset end
    if cmode ~= 0 then va, vaoff, vb, vboff, cmode = vb, vboff, va, vaoff, 1 end
  end
  if r.out then                         -- the keys into out, the input left as it was
    if src ~= r.out.root then
      seq:cmd(src:sub(soff + 1, soff + n), "copy_to",
              r.out.root:sub(r.out.offset + 1, r.out.offset + n))
    end
    if r.values and not carry and va ~= r.values.root then
      seq:cmd(va:sub(1, n), "copy_to", r.values.root:sub(r.values.offset + 1, r.values.offset + n))
    end
  elseif src ~= root and not r.keep then   -- an odd number of passes: the keys are in keys2
    seq:cmd(keys2:sub(1, n), "copy_to", root:sub(off + 1, off + n))
    if r.values and not carry then
      seq:cmd(va:sub(1, n), "copy_to", r.values.root:sub(r.values.offset + 1, r.values.offset + n))
    end
  end
  return carry and va or nil
end

-- Checks that n keys fit the sort's uint counts and indices.
local function check_count(fn, n)
  if n > MAX_KEYS then
    fail(fn, "argument #1: %d keys are too many (at most 2^32 - 1)", n)
  end
end

-- Checks the keys (argument #1) of fn; returns their type, root, offset,
-- count and device (the queue's when one is given).
local function check_keys(fn, keys, o)
  local kt, root, off, buf = B.check_buffer(fn, 1, keys)
  local n = #buf
  check_count(fn, n)
  local dev = o.queue and o.queue.device or root.device
  if o.queue then B.check_platform(fn, "argument #1", root, dev) end
  B.check_fp64(fn, dev, kt)
  return kt, root, off, n, dev
end

-- The onesweep option: nil (the class decides) or a boolean.
local function onesweep_of(fn, o)
  local v = o.onesweep
  if v ~= nil and type(v) ~= "boolean" then
    fail(fn, "argument #2: option onesweep: expected a boolean, got %s", show(v))
  end
  return v
end

-- The row_length option as the radix sort takes it: 0 for one row.
local function rows_of(fn, o, n)
  local rl = B.row_length(fn, 2, o, n)
  return (o.row_length ~= nil and rl < n) and rl or 0
end

------------------------------------------------------------------ algo.sort

local sort_run                              -- (below M.sort)

local SORT_OPTIONS = B.option_names{"values", "descending", "row_length", "onesweep", "out",
                                    "event",
                                    "wait", "queue"}

-- algo.sort(keys [, opts]) -> keys, Event: sorts keys (and opts.values)
-- in place; with opts.out (a buffer of the keys' type and count) the
-- sorted keys go there and keys stay as they were (out is returned).
function M.sort(keys, opts)
  local o = H.check_options("algo.sort", 2, opts, SORT_OPTIONS)
  local fn = o[CALLER] or "algo.sort"
  local kt, root, off, n, dev = check_keys(fn, keys, o)
  local r = {descending = B.flag(fn, 2, o, "descending"), rowlen = rows_of(fn, o, n),
             onesweep = onesweep_of(fn, o)}
  local want = B.want_event(fn, 2, o)
  local vals, vt, vroot, voff = o.values
  if vals ~= nil then
    local vb
    vt, vroot, voff, vb = B.check_buffer_option(fn, 2, vals, "values")
    if #vb ~= n then
      fail(fn, "argument #2: option values: expected %d elements (as many as the keys), got %d",
           n, #vb)
    end
    B.check_platform(fn, "argument #2: option values", vroot, dev)
    if vroot == root and voff == off and n > 0 then
      fail(fn, "argument #2: option values: the values are the keys")
    end
    if vroot == root and n > 0 and voff < off + n and off < voff + n then
      fail(fn, "argument #2: option values: the values overlap the keys (give a buffer apart " ..
           "from them)")
    end
    if r.rowlen == 0 then r.values = {root = vroot, offset = voff, type = vt}
    else r.carry = true end
  end
  local out = o.out
  if out ~= nil then
    local ot, oroot, ooff, ob = B.check_buffer_option(fn, 2, out, "out")
    if ot ~= kt then
      fail(fn, "argument #2: option out: expected a buffer of %s (the keys' type), got one of %s",
           kt, ot)
    end
    if #ob ~= n then fail(fn, "argument #2: option out: expected %d elements, got %d", n, #ob) end
    B.check_platform(fn, "argument #2: option out", oroot, dev)
    B.check_overlap(fn, "argument #2: option out", root, off, n, oroot, ooff, n, true,
                    "the keys")
    if vals ~= nil then
      B.check_overlap(fn, "argument #2: option out", vroot, voff, n, oroot, ooff, n, false,
                      "the values")
    end
    if not (oroot == root and ooff == off) then r.out = {root = oroot, offset = ooff} end
  end
  return r.out and out or keys, sort_run(fn, dev, kt, root, off, n, r, vals and vt, vroot, voff,
                                         o.queue, o.wait, want)
end

-- The sort of n checked keys of kt at (root, off) on dev (r as radix
-- takes it; vt, vroot, voff: the values' type, root and offset, or nil),
-- after waits, on q; returns what Seq:result gives (want: an Event).
function sort_run(fn, dev, kt, root, off, n, r, vt, vroot, voff, q, waits, want)
  local rl = r.rowlen ~= 0 and r.rowlen or n
  local le = n > 1 and RS.entry(fn, dev, kt, rl, n // rl, {keys = true, vt = vt or nil})
  if le or (r.out and n <= 1) then
    local seq = B.sequence(q, waits)
    local kout, kooff                        -- nil: in place
    if r.out then kout, kooff = r.out.root, r.out.offset end
    if not le and n > 0 then                 -- one key: its copy
      seq:cmd(root:sub(off + 1, off + n), "copy_to", kout:sub(kooff + 1, kooff + n))
    end
    if le then
      -- (the kernel reads the keys and writes them sorted into out)
      RS.run(seq, le, {dev = dev, keys = root, koff = off, kout = kout, kooff = kooff,
                       vals = vroot, voff = voff,
                       rowlen = rl, nrows = n // rl, descending = r.descending})
    end
    return seq:result(dev, want)
  end
  -- what the passes carry: the values, the original indices (rows), or
  -- nothing (uchar then: the tile's unused slots take the least room)
  local e = entry_for(fn, dev, kt, r.values and vt or (r.carry or r.rowlen ~= 0) and "uint"
                                   or "uchar", r.onesweep)
  local ge = r.carry and vt and gather_for(fn, dev, vt)
  ST.wait_for_last_user(e, q, dev, waits)
  local seq = B.sequence(q, waits)
  if n <= 1 then
    seq:marker(dev)
  else
    local idx = radix(fn, dev, e, seq, root, off, n, kt, r)
    if idx and vt then
      local v2 = ST.scratch_buffer(e, dev, "values " .. vt, vt, n)
      seq:run(ge.gather(vroot, voff, v2, 0, idx, n), {n})
      seq:cmd(v2:sub(1, n), "copy_to", vroot:sub(voff + 1, voff + n))
    end
  end
  local ev = seq:result(dev, want)
  ST.set_last_user(e, ev, q, dev)
  return ev
end

-- x:sort's call (luagpu.tensor), prepared as the scan's S.tensor_scan is:
-- no options table and no checks of its buffers (the tensor op checked
-- its tensors): the n keys of kt at (root, off) in rows of rowlen (n: one
-- row) sorted, descending or not, into (oroot, ooff), apart from them or
-- the keys themselves, on dev's default queue, with no Event.
function M.tensor_sort(fn, dev, kt, root, off, n, rowlen, descending, oroot, ooff)
  check_count(fn, n)
  B.check_fp64(fn, dev, kt)
  local r = {descending = descending, rowlen = rowlen < n and rowlen or 0}
  if not (oroot == root and ooff == off) then r.out = {root = oroot, offset = ooff} end
  sort_run(fn, dev, kt, root, off, n, r, nil, nil, nil, nil, {}, false)
end

------------------------------------------------------------------ algo.argsort

local argsort_run                           -- (below M.argsort)

local ARGSORT_OPTIONS = B.option_names{"descending", "row_length", "type", "base", "out", "event",
                                       "onesweep", "wait", "queue"}

-- algo.argsort(keys [, opts]) -> positions, Event: the positions (in their
-- row, from opts.base, 1 by default) of the keys in sorted order.
function M.argsort(keys, opts)
  local o = H.check_options("algo.argsort", 2, opts, ARGSORT_OPTIONS)
  local fn = o[CALLER] or "algo.argsort"
  local kt, root, off, n, dev = check_keys(fn, keys, o)
  local r = {descending = B.flag(fn, 2, o, "descending"), rowlen = rows_of(fn, o, n),
             carry = true, onesweep = onesweep_of(fn, o)}
  local want = B.want_event(fn, 2, o)
  local base = o.base
  if base == nil then base = 1 end
  if base ~= 0 and base ~= 1 then
    fail(fn, "argument #2: option base: expected 0 or 1, got %s", show(base))
  end
  local it = o.type
  local out = o.out
  local oroot, ooff
  if out ~= nil then
    local ot, ob
    ot, oroot, ooff, ob = B.check_buffer_option(fn, 2, out, "out")
    if it ~= nil and it ~= ot then
      fail(fn, "argument #2: option out: expected a buffer of %s, got %s", tostring(it), ot)
    end
    if not INTEGERS[ot] then
      fail(fn, "argument #2: option out: expected a buffer of integers, got %s elements", ot)
    end
    it = ot
    if #ob ~= n then fail(fn, "argument #2: option out: expected %d elements, got %d", n, #ob) end
    B.check_platform(fn, "argument #2: option out", oroot, dev)
    -- argsort reads the keys before it writes out: out may be the keys themselves
    B.check_overlap(fn, "argument #2: option out", root, off, n, oroot, ooff, n, true)
  end
  it = it or "long"
  if not INTEGERS[it] then
    fail(fn, "argument #2: option type: expected an integer element type, got %s", show(it))
  end
  local rowlen = r.rowlen ~= 0 and r.rowlen or n
  if rowlen - 1 + base > TY.RANGES[it][2] then      -- ulong's: math.maxinteger
    fail(fn, "argument #2: option type: %s cannot hold positions up to %d", it, rowlen - 1 + base)
  end
  if out == nil then
    out = dev:buffer(it, n, NO_INIT)   -- the gather writes every position
    oroot, ooff = out, 0
  end
  return out, argsort_run(fn, dev, kt, root, off, n, r, it, base, oroot, ooff, o.queue, o.wait,
                          want)
end

-- The argsort of n checked keys of kt at (root, off) on dev (r as radix
-- takes it) into positions of integer type it from base at (oroot, ooff),
-- after waits, on q; returns what Seq:result gives (want: an Event).
function argsort_run(fn, dev, kt, root, off, n, r, it, base, oroot, ooff, q, waits, want)
  local rowlen = r.rowlen ~= 0 and r.rowlen or n
  local le = n > 0 and RS.entry(fn, dev, kt, rowlen, n // rowlen, {ot = it})
  if le then
    local seq = B.sequence(q, waits)
    RS.run(seq, le, {dev = dev, keys = root, koff = off, pos = oroot, poff = ooff,
                     rowlen = rowlen, nrows = n // rowlen, descending = r.descending,
                     base = base})
    return seq:result(dev, want)
  end
  local e = entry_for(fn, dev, kt, "uint", r.onesweep)
  local ge = gather_for(fn, dev, it)
  ST.wait_for_last_user(e, q, dev, waits)
  local seq = B.sequence(q, waits)
  if n == 0 then
    seq:marker(dev)
  else
    -- the first pass reads the keys, the others go between two scratch
    -- buffers
    r.keep = ST.scratch_buffer(e, dev, "argsort keys", kt, n)
    -- one row into long positions: the last one-sweep pass writes them
    if r.rowlen == 0 and it == "long" then r.positions = {root = oroot, offset = ooff, base = base} end
    local idx = n > 1 and radix(fn, dev, e, seq, root, off, n, kt, r) or dummy(dev)
    if not r.positions_done then
      seq:run(ge.positions(idx, oroot, ooff, n, rowlen, base), {n})
    end
  end
  local ev = seq:result(dev, want)
  ST.set_last_user(e, ev, q, dev)
  return ev
end

-- x:argsort's call (luagpu.tensor), prepared as M.tensor_sort: the
-- 1-based long positions of the n keys of kt at (root, off) in their rows
-- of rowlen (n: one row), descending or not, into (oroot, ooff), on dev's
-- default queue, with no Event.
function M.tensor_argsort(fn, dev, kt, root, off, n, rowlen, descending, oroot, ooff)
  check_count(fn, n)
  B.check_fp64(fn, dev, kt)
  local r = {descending = descending, rowlen = rowlen < n and rowlen or 0, carry = true}
  argsort_run(fn, dev, kt, root, off, n, r, "long", 1, oroot, ooff, nil, {}, false)
end

return M
