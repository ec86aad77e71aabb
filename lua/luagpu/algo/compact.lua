-- luagpu.algo.compact: stream compaction (algo.copy_if, algo.nonzero,
-- algo.partition) with kernels/compact.cl. Part of luagpu.algo; not meant
-- to be required by scripts.
--
-- Each is an inclusive algo scan of the predicate (0 or 1 per element,
-- uint), a one-element read of its last value (the count, which sizes the
-- output), then one kernel that moves each element to its place. Positions
-- are uint: at most 2^32 - 1 elements.

local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local B = require "luagpu.algo.base"
local S = require "luagpu.algo.scan"

local type, concat, pairs, min, max = type, table.concat, pairs, math.min, math.max
local fail, show, typename = H.fail, H.show, H.typename
local SIZES, INTEGERS = TY.SIZES, TY.INTEGERS

local M = {}

local MAX_COUNT = (1 << 32) - 1
local cache = ST.device_cache()

-- The compaction of type t by the predicate pred on dev (positions of type
-- it): {values, positions, partition (kernels), spec (of the scan)}.
local function entry_for(fn, dev, t, pred, it)
  local cls, sig = B.device_class(fn, dev)
  local entries = ST.device_entries(cache, dev, sig)
  local key = concat({t, it, pred}, "\0")
  local e = entries[key]
  if e then return e end
  local prog = B.build(fn, dev, {{"T", t}, {"IT", it}, {"PRED", pred}}, "compact.cl",
                       ("predicate '%s' for %s"):format(pred, t))
  local map = "(((" .. pred .. ")) ? 1u : 0u)"
  e = {values = prog.compact_values, positions = prog.compact_positions,
       partition = prog.compact_partition, run_lengths = prog.compact_run_lengths,
       spec = {type = t, acc = "uint", map = map, op = "a + b", neutral = "0", custom = true,
               key = concat({"compact", t, map}, "\0")}}
  entries[key] = e
  return e
end

-- Checks the predicate, argument #arg: an OpenCL C expression in x and i.
local function predicate(fn, arg, p)
  if type(p) ~= "string" or not p:find("%S") then
    fail(fn, "argument #%d: expected a predicate (an OpenCL C expression in x and i), got %s",
         arg, type(p) == "string" and "an empty string" or typename(p))
  end
  H.check_expression(fn, "argument #" .. arg, p)
  return (p:gsub("[\r\n]", " "))
end

-- Runs the scan of the predicate over the n elements of type t at (root,
-- off) on dev (positions of type it) and reads the count: returns the
-- count, the positions (uint buffer), the sequence and the entry.
local function count(fn, pred, o, t, root, off, n, dev, it)
  local q = o.queue
  local e = entry_for(fn, dev, t, pred, it or "long")
  local waits = o.wait
  ST.wait_for_last_user(e, q, dev, waits)
  local seq = B.sequence(q, waits)
  if n == 0 then return 0, nil, seq, e end
  local pos = ST.scratch_buffer(e, dev, "pos", "uint", n)
  seq.last = S.run(fn, {spec = e.spec, x = root, xoff = off, n = n, rowlen = 0, out = pos,
                        ooff = 0, exclusive = false, queue = q, wait = waits,
                        quiet = seq.quiet})
  local c = pos:sub(n, n):get(seq:opts() or {})[1]   -- (a blocking get: page-locked)
  ST.set_last_user(e, nil, q, dev)
  return c, pos, seq, e
end

-- Checks the out option (argument #arg) before anything runs: a buffer of
-- type t (nil: any integer type) on dev's platform, apart from the input
-- (root, off, n) it is written from while read. Returns its root, offset
-- and the buffer.
local function check_out(fn, arg, out, t, dev, root, off, n)
  local where = ("argument #%d: option out"):format(arg)
  local ot, oroot, ooff, ob = B.check_buffer_option(fn, arg, out, "out")
  if ot ~= t then fail(fn, "%s: expected a buffer of %s, got %s", where, t, ot) end
  B.check_platform(fn, where, oroot, dev)
  B.check_overlap(fn, where, root, off, n, oroot, ooff, #ob)
  return oroot, ooff, ob
end

-- Checks that out (argument #arg) holds need elements (exactly need when
-- exact).
local function check_length(fn, arg, ob, need, exact)
  if exact and #ob ~= need or #ob < need then
    fail(fn, "argument #%d: option out: expected %s%d elements, got %d", arg,
         exact and "" or "at least ", need, #ob)
  end
end

-- The input of a compaction (argument #1): its type, root, offset, count
-- and device (the queue's when one is given).
local function check_input(fn, b, o)
  local t, root, off, buf = B.check_buffer(fn, 1, b)
  local n = #buf
  if n > MAX_COUNT then fail(fn, "argument #1: %d elements are too many (at most 2^32 - 1)", n) end
  local q = o.queue
  local dev = q and q.device or root.device
  if q then B.check_platform(fn, "argument #1", root, dev) end
  B.check_fp64(fn, dev, t)
  return t, root, off, n, dev
end

local COPY_OPTIONS = H.option_names{"out", "wait", "queue"}

-- algo.copy_if(b, predicate [, opts]) -> out, count
function M.copy_if(b, pred, opts)
  local fn = "algo.copy_if"
  pred = predicate(fn, 2, pred)
  local o = H.check_options(fn, 3, opts, COPY_OPTIONS)
  local t, root, off, n, dev = check_input(fn, b, o)
  local out, oroot, ooff, ob = o.out
  if out ~= nil then oroot, ooff, ob = check_out(fn, 3, out, t, dev, root, off, n) end
  local c, pos, seq, e = count(fn, pred, o, t, root, off, n, dev)
  if ob then check_length(fn, 3, ob, c, false)
  else out = dev:buffer(t, c); oroot, ooff = out, 0 end
  if c > 0 then seq:run(e.values(root, off, pos, n, oroot, ooff), {n}) end
  local ev = seq:event(dev)
  ST.set_last_user(e, ev, o.queue, dev)
  return out, c, ev
end

local NONZERO_OPTIONS = H.option_names{"type", "base", "out", "wait", "queue"}

-- algo.nonzero(b [, opts]) -> positions, count
function M.nonzero(b, opts)
  local fn = "algo.nonzero"
  local o = H.check_options(fn, 2, opts, NONZERO_OPTIONS)
  local it = o.type
  if o.out ~= nil and it == nil then
    local ob = H.to_buffer and H.to_buffer(o.out, fn, "argument #2: option out") or o.out
    it = H.class_of(ob) == "Buffer" and ob.type or nil
    if it ~= nil and not INTEGERS[it] then
      fail(fn, "argument #2: option out: expected a buffer of integers, got %s elements", it)
    end
  end
  it = it or "long"
  if type(it) ~= "string" or not INTEGERS[it] then
    fail(fn, "argument #2: option type: expected an integer element type, got %s", show(it))
  end
  local base = o.base
  if base == nil then base = 1 end
  if base ~= 0 and base ~= 1 then
    fail(fn, "argument #2: option base: expected 0 or 1, got %s", show(base))
  end
  local t, root, off, n, dev = check_input(fn, b, o)
  if SIZES[it] < 8 and n + base - 1 > TY.RANGES[it][2] then   -- (uchar holds 255)
    fail(fn, "argument #2: option type: %s cannot hold positions up to %d", it, n + base - 1)
  end
  local out, oroot, ooff, ob = o.out
  if out ~= nil then oroot, ooff, ob = check_out(fn, 2, out, it, dev, root, off, n) end
  local c, pos, seq, e = count(fn, "x != 0", o, t, root, off, n, dev, it)
  if ob then check_length(fn, 2, ob, c, false)
  else out = dev:buffer(it, c); oroot, ooff = out, 0 end
  if c > 0 then seq:run(e.positions(root, off, pos, n, oroot, ooff, base), {n}) end
  local ev = seq:event(dev)
  ST.set_last_user(e, ev, o.queue, dev)
  return out, c, ev
end

-- algo.partition(b, predicate [, opts]) -> out, count (of the kept, first)
function M.partition(b, pred, opts)
  local fn = "algo.partition"
  pred = predicate(fn, 2, pred)
  local o = H.check_options(fn, 3, opts, COPY_OPTIONS)
  local t, root, off, n, dev = check_input(fn, b, o)
  local out, oroot, ooff, ob = o.out
  if out ~= nil then
    oroot, ooff, ob = check_out(fn, 3, out, t, dev, root, off, n)
    check_length(fn, 3, ob, n, true)
  end
  local c, pos, seq, e = count(fn, pred, o, t, root, off, n, dev)
  if not ob then out = dev:buffer(t, n); oroot, ooff = out, 0 end
  if n > 0 then seq:run(e.partition(root, off, pos, n, oroot, ooff), {n}) end
  local ev = seq:event(dev)
  ST.set_last_user(e, ev, o.queue, dev)
  return out, c, ev
end

------------------------------------------------------------------ tiled selection

-- The tensors' selections (masked_select, unique, nonzero) tile by tile
-- (compact.cl's compact_tile_*): the count of each tile, the scan of those
-- counts, one read of the total, and one kernel writing each tile's kept
-- elements. Where a scan per element wrote and read back a position per
-- element, these read the input twice: on an H200, x:masked_select(m) of
-- 2^24 floats took 83 us of device time, against 124 (bench/gpu/
-- select_probe.lua).
local TILE_ITEMS, WALKED_TILE = 16, 4096
local TILE_COUNTS_SPEC = {type = "uint", acc = "uint", map = "x", op = "a + b", neutral = "0",
                          custom = true, key = "compact\0tile counts"}

-- The tiled select kernels: KIND 1 moves the kept values, 2 the values
-- and their 1-based positions, 3 the positions alone.
local KINDS = {values = 1, values_at = 2, positions = 3}
local KERNEL_OF = {"compact_tile_select", "compact_tile_select_at", "compact_tile_positions"}

-- The local memory a tiled select kernel of the kind takes for L
-- work-items and elements of type t: staged, the flags, the staged values
-- (one pad in 16), the packed output (values or positions; both: 8 bytes
-- an element) and the scan; walked by one work-item (L nil), the packed
-- output alone.
local function tile_local_bytes(kind, L, tile, t)
  local size = SIZES[t]
  local out = kind == 1 and size or kind == 2 and (L and 8 or size + 8) or 8
  if not L then return tile * out end
  -- (and the look-back's 32 words and 3 uints: 268)
  return tile * (1 + out) + (kind == 3 and 0 or (tile + tile // 16) * size) + 8 * L + 268
end

-- The tiled kernels for elements of type t kept by a mask of type mt
-- (runs: mt is t, and an element is kept where a run of equal sorted
-- values starts), moving what kind names (KINDS), positions long:
-- {counts, select, L (nil: a work-item a tile), tile}. With the class's
-- scan_staged (GPUs) a tile is L work-items of TILE_ITEMS elements, L the
-- class's scan_local cut to the device's work-group and local memory
-- limits; else (CPUs) one work-item walks WALKED_TILE elements (fewer where
-- local memory is short).
local function tiled_for(fn, dev, t, mt, runs, kind)
  local cls, sig = B.device_class(fn, dev)
  local entries = ST.device_entries(cache, dev, sig)
  local key = concat({"tiled", t, mt, runs and "runs" or "mask", kind}, "\0")
  local e = entries[key]
  if e then return e end
  local k, staged = KINDS[kind], cls.scan_staged
  -- (unique's select places its tiles by the look-back where scans do)
  local lookback = staged and k == 2 and cls.scan_lookback
  local L = staged and min(cls.scan_local, ST.floor_pow2(dev.max_work_group_size)) or nil
  local ipt = staged and TILE_ITEMS or WALKED_TILE
  local room = dev.local_mem_size
  while L and L > 4 and tile_local_bytes(k, L, L * ipt, t) > room do L = L // 2 end
  while not L and ipt > 64 and tile_local_bytes(k, nil, ipt, t) > room do ipt = ipt // 2 end
  while true do
    local prog = B.build(fn, dev, {{"T", t}, {"IT", "long"}, {"PRED", "1"}, {"MT", mt},
                                   {"RUNS", runs and 1 or 0}, {"STAGED", staged and 1 or 0},
                                   {"KIND", k}, {"L", L or 1}, {"IPT", ipt},
                                   {"LOOKBACK", lookback and 1 or 0}}, "compact.cl")
    e = {L = L, tile = (L or 1) * ipt, counts = prog:kernel("compact_tile_counts"),
         select = prog:kernel(KERNEL_OF[k]), lookback = lookback}
    local wgs = min(e.counts.work_group_size, e.select.work_group_size)
    if not L or wgs >= L or L <= 4 then break end
    L = max(4, ST.floor_pow2(wgs))
  end
  if lookback then B.lookback_init(e, dev) end
  entries[key] = e
  return e
end

-- The elements of a tile of the tiled selection of elements of type t by
-- a uchar mask on dev (for specs: lengths at the tiles' edges).
function M.tile_size(dev, t)
  return tiled_for("luagpu.algo.compact", dev, t, "uchar", false, "values").tile
end

-- The global and local sizes of a tiled kernel over groups tiles.
local function tile_grid(e, groups)
  local L = e.L
  if L then return {groups * L}, {L} end
  return {groups}, {1}           -- (a group a tile: each runs alone, in order)
end

-- Counts the kept elements of the n at (mroot, moff) tile by tile, scans
-- the counts and reads the total (unless late: nil then, for the caller
-- to read with read_total after what it enqueues next): returns it, the
-- scanned counts, the sequence (on dev's default queue) and the tiles.
-- The total of the selection: the last of the groups scanned counts in
-- incl, read after the commands of seq (a blocking get).
local function read_total(seq, incl, groups)
  return incl:sub(groups, groups):get(seq:opts() or {})[1]
end

local function tiled_count(fn, e, mroot, moff, n, dev, late)
  local groups = (n + e.tile - 1) // e.tile
  local waits = {}
  ST.wait_for_last_user(e, nil, dev, waits)
  local seq = B.sequence(nil, waits)
  local counts = ST.scratch_buffer(e, dev, "counts_buffer", "uint", groups)
  local incl = ST.scratch_buffer(e, dev, "places_buffer", "uint", groups)
  seq:run(e.counts(mroot, moff, n, counts), tile_grid(e, groups))
  seq.last = S.run(fn, {spec = TILE_COUNTS_SPEC, x = counts, xoff = 0, n = groups, rowlen = 0,
                        out = incl, ooff = 0, exclusive = false, wait = waits,
                        quiet = seq.quiet})
  if late then return nil, incl, seq, groups end
  return read_total(seq, incl, groups), incl, seq, groups
end

-- The n elements of type t at (root, off) where the n elements of the
-- mask (type mt at (mroot, moff)) are not 0, in order (luagpu.tensor's
-- masked_select; arguments checked by it). make_out(count) returns the
-- buffer and offset to write them to. Returns the count.
function M.select(fn, t, root, off, mt, mroot, moff, n, dev, make_out)
  if n > MAX_COUNT then fail(fn, "%d elements are too many (at most 2^32 - 1)", n) end
  local e = tiled_for(fn, dev, t, mt, false, "values")
  local c, incl, seq, groups = tiled_count(fn, e, mroot, moff, n, dev)
  local oroot, ooff = make_out(c)
  if c > 0 then
    seq:run(e.select(root, off, mroot, moff, n, incl, oroot, ooff), tile_grid(e, groups))
  end
  ST.set_last_user(e, seq.last, nil, dev)     -- (false: ordered by the default queue)
  return c
end

-- The 1-based positions (long) of the n elements of type mt at (mroot,
-- moff) that are not 0, in order (luagpu.tensor's nonzero). make_out(count)
-- returns the buffer and offset to write them to. Returns the count.
function M.positions(fn, mt, mroot, moff, n, dev, make_out)
  if n > MAX_COUNT then fail(fn, "%d elements are too many (at most 2^32 - 1)", n) end
  local e = tiled_for(fn, dev, mt, mt, false, "positions")
  local c, incl, seq, groups = tiled_count(fn, e, mroot, moff, n, dev)
  local aroot, aoff = make_out(c)
  if c > 0 then
    seq:run(e.select(mroot, moff, n, incl, aroot, aoff), tile_grid(e, groups))
  end
  ST.set_last_user(e, seq.last, nil, dev)
  return c
end

-- The runs of equal values in the n sorted elements of type t at (root,
-- off) on dev (luagpu.tensor's unique; arguments checked by it): the tiled
-- selection of where each run starts (an element that differs from the one
-- before, unless that one is NaN: the NaNs sorted last are one run), its
-- first value and place, then one kernel that turns those places into
-- lengths. make_out(room) returns the buffer and offset for the values,
-- then a long buffer and offset for the lengths, and a long buffer and
-- offset to note the starts in (scratch), each of room elements: the
-- count, or n where the count is read after the last kernel (up to
-- RUNS_READ_LATE elements: the device then runs the selection without
-- waiting for the host's read of the count and its next enqueues, 25-40
-- us on an H200, as long as the sort before it at 2^20). Returns the count.
-- Where the class's scans run the look-back (GPUs), the late selection is
-- one kernel that places its tiles itself (compact.cl's LOOKBACK): two
-- launches fewer, each 13-18 us of an H200's host.
M.RUNS_READ_LATE = 1 << 22
local MAX_EPOCH = (1 << 29) - 1
function M.runs(fn, t, root, off, n, dev, make_out)
  if n > MAX_COUNT then fail(fn, "%d elements are too many (at most 2^32 - 1)", n) end
  local e = tiled_for(fn, dev, t, t, true, "values_at")
  local late = n <= M.RUNS_READ_LATE
  if late and e.lookback then
    local groups = (n + e.tile - 1) // e.tile
    local waits = {}
    ST.wait_for_last_user(e, nil, dev, waits)
    local seq = B.sequence(nil, waits)
    local words = ST.scratch_buffer(e, dev, "words", "ulong", 2 * groups)
    local total = ST.scratch_buffer(e, dev, "total", "uint", 1)
    local epoch = B.next_epoch(seq, e, words, MAX_EPOCH)
    local vroot, voff, lroot, loff, aroot, aoff = make_out(n)
    seq:run(e.select(root, off, root, off, n, words, e.ticket, epoch, total, vroot, voff,
                     aroot, aoff), tile_grid(e, groups))
    local k = entry_for(fn, dev, t, "1", "long")
    seq:run(k.run_lengths(aroot, aoff, total, 0, n, lroot, loff), {n})
    local c = read_total(seq, total, 1)
    ST.set_last_user(e, seq.last, nil, dev)
    return c
  end
  local c, incl, seq, groups = tiled_count(fn, e, root, off, n, dev, late)
  local vroot, voff, lroot, loff, aroot, aoff = make_out(c or n)
  if late or c > 0 then
    seq:run(e.select(root, off, root, off, n, incl, vroot, voff, aroot, aoff),
            tile_grid(e, groups))
    local k = entry_for(fn, dev, t, "1", "long")
    seq:run(k.run_lengths(aroot, aoff, incl, groups - 1, n, lroot, loff), {c or n})
  end
  if late then c = read_total(seq, incl, groups) end
  ST.set_last_user(e, seq.last, nil, dev)
  return c
end

return M
