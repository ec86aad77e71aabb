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

local type, concat = type, table.concat
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
       partition = prog.compact_partition, stepped = prog.compact_stepped,
       stepped_at = prog.compact_stepped_at, run_starts = prog.compact_run_starts,
       run_lengths = prog.compact_run_lengths,
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

-- The n elements of type t at (root, off) where the n elements of the
-- mask (type mt at (mroot, moff)) are not 0, in order (luagpu.tensor's
-- masked_select and unique; arguments checked by them): the scan of the
-- mask, its count read, one kernel that moves the kept elements.
-- make_out(count) returns the buffer and offset to write them to, and
-- optionally a long buffer and offset for their 1-based positions in the
-- input. Returns the count.
function M.select(fn, t, root, off, mt, mroot, moff, n, dev, make_out)
  if n > MAX_COUNT then fail(fn, "%d elements are too many (at most 2^32 - 1)", n) end
  local o = {wait = {}}
  local c, pos, seq, em = count(fn, "x != 0", o, mt, mroot, moff, n, dev)
  local oroot, ooff, aroot, aoff = make_out(c)
  if c > 0 then
    local e = entry_for(fn, dev, t, "1", "long")
    if aroot then seq:run(e.stepped_at(root, off, pos, n, oroot, ooff, aroot, aoff), {n})
    else seq:run(e.stepped(root, off, pos, n, oroot, ooff), {n}) end
  end
  ST.set_last_user(em, seq.last, nil, dev)     -- (false: ordered by the default queue)
  return c
end

-- The runs of equal values in the n sorted elements of type t at (root,
-- off) on dev (luagpu.tensor's unique; arguments checked by it): a kernel
-- that marks where each run starts, the scan of those marks and its count
-- read, one kernel that moves each run's first value and notes where it
-- starts, one that turns those places into lengths. make_out(count)
-- returns the buffer and offset for the values, then a long buffer and
-- offset for the lengths, and a long buffer and offset of count elements
-- to note the starts in (scratch). NaNs (sorted last) are one run.
-- Returns the count.
function M.runs(fn, t, root, off, n, dev, make_out, make_starts)
  if n > MAX_COUNT then fail(fn, "%d elements are too many (at most 2^32 - 1)", n) end
  local e = entry_for(fn, dev, t, "1", "long")
  local sroot, soff = make_starts(n)
  local marks = B.sequence(nil, {})
  marks:run(e.run_starts(root, off, n, sroot, soff), {n})
  local c, pos, seq, em = count(fn, "x != 0", {wait = {}}, "uchar", sroot, soff, n, dev)
  local vroot, voff, lroot, loff, aroot, aoff = make_out(c)
  if c > 0 then
    seq:run(e.stepped_at(root, off, pos, n, vroot, voff, aroot, aoff), {n})
    seq:run(e.run_lengths(aroot, aoff, c, n, lroot, loff), {c})
  end
  ST.set_last_user(em, seq.last, nil, dev)     -- (false: ordered by the default queue)
  return c
end

return M
