-- luagpu.algo.base: what the parts of luagpu.algo share (scan, sort,
-- compaction, histograms): the device classes and their settings, argument
-- checks, building their programs (through luagpu.core.programs, family
-- "algo"), and running a sequence of commands on one queue. Not meant for
-- scripts.

local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local SET = require "luagpu.core.settings"

local type, ipairs, tostring = type, ipairs, tostring
local setmetatable, unpack = setmetatable, table.unpack
local format, concat = string.format, table.concat
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local SIZES = TY.SIZES

local B = {}

-- Largest element count the kernels index (their counts are ulong, tiles
-- and groups uint): 2^40 is far beyond any device's memory.
B.MAX_COUNT = 1 << 40

-- The module's counters (algo.stats): programs_built, the programs of
-- family "algo" built so far, read through the table's metatable.
B.stats = P.counter({}, "algo")

------------------------------------------------------------------ classes

-- Per device class, the settings of each part. A script may change them
-- (algo.classes.gpu.scan_local = 128); the next call on a device of that
-- class checks them (SETTINGS) and builds its kernels again.
--   scan_local, scan_items   work-items per group and elements per
--                            work-item of a scan tile (halved for 8-byte
--                            accumulators)
--   scan_staged              tiles pass through local memory
--   scan_lookback            single-pass scans (decoupled look-back);
--                            false: the three-pass scan
--   scan_groups_per_cu       groups of the three-pass scan per compute unit
--   scan_ptx, scan_ptx_items on NVIDIA devices, the look-back scan of
--                            4-byte accumulators without segments with warp
--                            shuffles (inline PTX), and its elements per
--                            work-item (scan_local of them per group)
--   scan_ptx_ticket          the PTX look-back numbers its tiles by an
--                            atomic ticket (true) or by work-group id
--                            (false: loads start at once; NVIDIA starts
--                            groups in id order, as CUB's scan assumes)
--   sort_local, sort_items   the same for a radix sort tile
--   sort_ptx                 on NVIDIA devices, tiles ranked warp by warp
--                            with match instructions (inline PTX);
--                            "emulated": that kernel with the instructions
--                            emulated in local memory, on any device (slow:
--                            for specs)
--   sort_ptx_local, sort_ptx_items   its tile (sort_local and sort_items
--                            are the portable kernel's)
--   sort_ptx_local_bytes     the local memory its tiles may take; 0: the
--                            device's local_mem_size, or 150000 bytes on
--                            an sm_90 device (NVIDIA's OpenCL reports 48
--                            KB, and runs more there)
--   sort_onesweep            with tiles ranked warp by warp, one kernel a
--                            key pass (one-sweep: the digit counts of all
--                            passes up front, each tile's places by a
--                            decoupled look-back); false: five kernels a
--                            pass (counts, their scan, the scatter)
--   hist_local, hist_groups_per_cu   histograms' groups
--   sort_hist_items          the one-sweep sort's digit counts
--                            (sort_histograms): keys a work-item counts at
--                            least (fewer groups for fewer keys, fewer adds
--                            of each group's counts: 2^20 floats on an H100
--                            14.0 us at 8, 19.2-20.0 at 1, 15.9 at 32)
--   sort_skip_from           a one-sweep sort of at least this many integer
--                            or double keys on the default queue reads its
--                            digit counts back and leaves out the passes
--                            whose digit every key shares; 0: never (on an
--                            H200 the read and the enqueues after it cost
--                            about as much as two passes of 2^20 keys: 2^21
--                            for GPUs; CPUs read back at no cost)
--   sort_rows_max            rows (or a whole buffer) of at most this many
--                            keys that fit a group's local memory sort in
--                            one group (algo/sort_rows.lua, a bitonic sort);
--                            0: always the radix sort
--   sort_rows_local          work-items per group of that sort
--   sort_rows_group          its slots per group, at least (short rows
--                            share a group)
B.CLASSES = {
  gpu = SET.watched{scan_local = 256, scan_items = 32, scan_staged = true, scan_lookback = true,
                    scan_groups_per_cu = 4, scan_ptx = true, scan_ptx_items = 64,
                    scan_ptx_ticket = false,
                    sort_local = 32, sort_items = 32, sort_ptx = true,
                    sort_ptx_local = 256, sort_ptx_items = 24, sort_onesweep = true,
                    sort_ptx_local_bytes = 0,
                    hist_local = 256, hist_groups_per_cu = 8, sort_hist_items = 8,
                    sort_skip_from = 1 << 21,
                    sort_rows_max = 1 << 16, sort_rows_local = 64, sort_rows_group = 512},
  cpu = SET.watched{scan_local = 16, scan_items = 128, scan_staged = false, scan_lookback = false,
                    scan_groups_per_cu = 4, scan_ptx = true, scan_ptx_items = 64,
                    scan_ptx_ticket = false,
                    sort_local = 16, sort_items = 256, sort_ptx = true,
                    sort_ptx_local = 256, sort_ptx_items = 12, sort_onesweep = false,
                    sort_ptx_local_bytes = 0,
                    hist_local = 16, hist_groups_per_cu = 4, sort_hist_items = 1,
                    sort_skip_from = 1 << 18,
                    sort_rows_max = 1 << 16, sort_rows_local = 64, sort_rows_group = 1024},
}
B.CLASSES.accelerator = B.CLASSES.gpu
B.CLASSES.other = B.CLASSES.gpu

-- name, check, what is allowed (in words: the check's second value).
-- scan_local starts at 4: PoCL's compiler fails on the scan kernels with
-- 1 or 2 work-items per group.
local pow2_in, int_in, boolean, boolean_or = SET.pow2_in, SET.int_in, SET.boolean, SET.boolean_or
local SETTINGS = {
  {"scan_local", pow2_in(4, 1024)}, {"scan_items", pow2_in(1, 512)},
  {"scan_staged", boolean()}, {"scan_lookback", boolean()},
  {"scan_groups_per_cu", int_in(1, 1024)},
  {"scan_ptx", boolean()}, {"scan_ptx_items", pow2_in(4, 128)},
  {"scan_ptx_ticket", boolean()},
  {"sort_local", pow2_in(2, 256)}, {"sort_items", int_in(1, 256)},
  {"sort_ptx", boolean_or("emulated")}, {"sort_ptx_local", pow2_in(32, 256)},
  {"sort_ptx_items", int_in(1, 256)}, {"sort_onesweep", boolean()},
  {"sort_ptx_local_bytes", int_in(0, 1 << 20)},
  {"hist_local", pow2_in(1, 1024)}, {"hist_groups_per_cu", int_in(1, 1024)},
  {"sort_hist_items", int_in(1, 1 << 16)}, {"sort_skip_from", int_in(0, 1 << 40)},
  {"sort_rows_max", int_in(0, 1 << 30)}, {"sort_rows_local", pow2_in(1, 1024)},
  {"sort_rows_group", pow2_in(2, 1 << 20)},
}

-- The settings of dev's class, checked (a table the caller must not
-- change), and their signature (part of the cache keys, so changed
-- settings build again). Checked again only when a value changed.
B.device_class = SET.reader("algo.classes", B.CLASSES, SETTINGS)

-- The options key of a tensor op's own name (a table: no script names it).
-- A tensor op that calls algo.sort, algo.argsort or algo.scan puts its name
-- there (opts[B.CALLER] = "tensor:sort"); past its check of the options,
-- the helper then raises under that name, its one check of algo.classes
-- included, so that a bad setting names
-- the script's call and the settings are checked once per call, not once by
-- the tensor op and again inside.
B.CALLER = setmetatable({}, {__tostring = function() return "(the caller's name)" end})

-- H.option_names(names), taking B.CALLER too.
function B.option_names(names)
  local known = H.option_names(names)
  known.set[B.CALLER] = true
  return known
end

------------------------------------------------------------------ checks

-- Checks argument #arg of fn to be a live buffer (or what converts to one,
-- such as a tensor) of scalars; returns its element type, root, offset and
-- the buffer itself.
-- A live Buffer's type, root and offset never change: learned once per
-- Buffer (weak keys), read again only after gpu.type says it is live.
local BUFFER_INFO = setmetatable({}, {__mode = "k"})
local gpu_type = require("luagpu").type

function B.check_buffer(fn, arg, b)
  local live = gpu_type(b) == "Buffer"
  local info = live and BUFFER_INFO[b]
  if info then return info[1], info[2], info[3], b end
  local t, root, offset, buf = H.check_buffer(fn, arg, b)
  if not SIZES[t] then
    fail(fn, "argument #%d: expected a buffer of scalars, got %s elements", arg, t)
  end
  if live then BUFFER_INFO[b] = {t, root, offset} end
  return t, root, offset, buf or b
end

-- Checks b, the buffer option name of argument #arg, the same way;
-- returns its element type, root, offset and the buffer itself.
function B.check_buffer_option(fn, arg, b, name)
  local where = format("argument #%d: option %s", arg, name)
  if H.to_buffer then b = H.to_buffer(b, fn, where) end
  local cls, released = H.class_of(b)
  if cls ~= "Buffer" then
    fail(fn, "%s: expected a buffer, got %s", where, typename(b))
  end
  if released then fail(fn, "%s: attempt to use a released buffer", where) end
  local t = b.type
  if not SIZES[t] then fail(fn, "%s: expected a buffer of scalars, got %s elements", where, t) end
  return t, b.root, b.offset, b
end

-- Checks that buffer b (described by where) is on a device of dev's
-- platform.
function B.check_platform(fn, where, b, dev)
  local d = b.device
  if d ~= dev and d.platform ~= dev.platform then
    fail(fn, "%s: the buffer is on %s, not on the platform of %s", where, d.name, dev.name)
  end
end

-- Checks an optional boolean option; returns it (false when absent).
function B.flag(fn, arg, opts, name)
  local v = opts[name]
  if v == nil then return false end
  if type(v) ~= "boolean" then
    fail(fn, "argument #%d: option %s: expected a boolean, got %s", arg, name, show(v))
  end
  return v
end

-- Checks an optional count option (an integer from lo up to B.MAX_COUNT);
-- returns it, or nil when absent.
function B.count_option(fn, arg, opts, name, lo)
  local v = opts[name]
  if v == nil then return nil end
  local i = integer(v)
  if not i or i < lo or i > B.MAX_COUNT then
    fail(fn, "argument #%d: option %s: expected an integer from %d to 2^40, got %s",
         arg, name, lo, show(v))
  end
  return i
end

-- Checks the row_length option for a buffer of n elements: nil (one row)
-- or a positive integer dividing n. Returns it (n when absent, 0 for an
-- empty buffer without it).
function B.row_length(fn, arg, opts, n)
  local r = B.count_option(fn, arg, opts, "row_length", 1)
  if r == nil then return n end
  if n % r ~= 0 then
    fail(fn, "argument #%d: option row_length: %d does not divide the %d elements", arg, r, n)
  end
  return r
end

-- Checks that two buffers (root, offset, count), an input and an output
-- (where names it), share no element; with same_ok they may also be the
-- same elements (an operation that works in place). input names the input
-- in the message ("the input" when nil).
function B.check_overlap(fn, where, r1, o1, n1, r2, o2, n2, same_ok, input)
  if r1 ~= r2 or n1 == 0 or n2 == 0 or not (o1 < o2 + n2 and o2 < o1 + n1) then return end
  input = input or "the input"
  if o1 == o2 and n1 == n2 then
    if same_ok then return end
    fail(fn, "%s: the output is %s (give another buffer)", where, input)
  end
  fail(fn, "%s: the output overlaps %s (give %s)", where, input,
       same_ok and "the same buffer, or one apart" or "a buffer apart from it")
end

-- A scalar element type given as field or option name.
B.element_type = TY.check_scalar

------------------------------------------------------------------ programs

-- The program of kernels/FILE (or of a list of files, one source) on dev
-- after the #define lines of defines
-- ({{name, value}, ...}, in order); custom names the user's expressions
-- for the message when it does not compile (nil: the error as it is).
-- Every part builds through here (a spec wraps it to see the defines).
function B.build(fn, dev, defines, file, custom)
  local r = {family = "algo", defines = defines, custom = custom, fn = fn}
  if type(file) == "table" then r.files = file else r.file = file end   -- files: one source
  return P.get(dev, r)
end

-- Checks that dev can hold type t (doubles need fp64).
function B.check_fp64(fn, dev, t)
  if t == "double" and not dev.fp64 then
    fail(fn, "%s has no double precision (fp64)", dev.name)
  end
end

------------------------------------------------------------------ look-back

-- Sets up what a decoupled look-back (scan.cl's scan_lookback, sort.cl's
-- sort_onesweep) keeps in entry e of dev: e.ticket, the counter that
-- numbers the tiles in the order they start, and e.epoch, the tag of the
-- last run's status words (none yet). Returns e.
function B.lookback_init(e, dev)
  e.ticket, e.epoch = dev:buffer("uint", 1), 0
  return e
end

-- The epoch of the next look-back run of entry e, which tags its status
-- words: one more than the last, or 1 again after most (the largest the
-- words hold), once seq has cleared words.
function B.next_epoch(seq, e, words, most)
  local epoch = e.epoch + 1
  if epoch > most then
    seq:cmd(words, "fill", 0)
    epoch = 1
  end
  e.epoch = epoch
  return epoch
end

------------------------------------------------------------------ running

-- A sequence of commands on queue q (nil: the default queue of the
-- device), the first after the Events in waits, each after the one
-- before. seq:run(call, global, local) and seq:cmd(obj, method, ...)
-- (obj:method(..., opts), a buffer method) enqueue; seq.last is the Event
-- of the last one, which a part may also set (to a scan's, S.run), or
-- false when the last one asked for none; seq:event(dev) is the Event a
-- helper returns (a marker's when the last command has none).
-- On an in-order queue the kernels ask for no Event: the queue orders
-- them, and one enqueue with a profiled Event costs NVIDIA's OpenCL about
-- 11 us against 4 without (a radix sort of 28 launches spent 200 us of
-- host time on Events nobody read).
-- Not core/steps' ST.run, which enqueues a list of bound kernel calls: a
-- sequence mixes kernels with buffer commands (fill, copy_to), whole
-- scans (with scratch buffers and a last user of their own) and, in a
-- compaction, the blocking read of the count between them.
local Seq = {}
Seq.__index = Seq

local NO_EVENT = ST.NO_EVENT

function B.sequence(q, waits)
  return setmetatable({q = q, waits = waits, quiet = ST.in_order(q)}, Seq)
end

-- The options of the next command: after the last one (ST.after), or
-- for the first, after the waits (nil: call:run's fast path).
function Seq:opts()
  local last = self.last
  if last then return ST.after(self.q, last) end
  if last == false then return self.q and {queue = self.q} or nil end
  if self.q or self.waits[1] then return {wait = self.waits, queue = self.q} end
  return nil
end

function Seq:run(call, global, lsz)
  if not self.quiet then
    self.last = call:run(global, lsz, self:opts())
    return self.last
  end
  local o = self:opts()
  if o then o.event = false else o = NO_EVENT end
  call:run(global, lsz, o)
  self.last = false
  return false
end

function Seq:cmd(obj, method, ...)
  local args = {...}
  args[#args + 1] = self:opts() or {}
  self.last = obj[method](obj, unpack(args))
  return self.last
end

-- An Event that completes when what came before in the sequence has (for
-- calls that enqueue nothing).
function Seq:marker(dev)
  local q = self.q or dev:default_queue()
  self.last = q:marker(self.last and {wait = {self.last}} or {wait = self.waits})
  return self.last
end

-- The sequence's Event: its last command's, or a marker's after it.
function Seq:event(dev)
  return self.last or self:marker(dev)
end

-- What a call returns for its sequence: the Event as Seq:event, or false
-- where the caller asked for none (option event = false) and its commands
-- made none (an in-order queue orders what comes next by itself: no
-- marker enqueued).
function Seq:result(dev, want)
  if not want and self.last == false then return false end
  return self:event(dev)
end

-- Option event of opts (argument arg of fn): false asks for no Event at
-- the end of the call; returns whether one is wanted.
function B.want_event(fn, arg, opts)
  local v = opts.event
  if v == nil then return true end
  if type(v) ~= "boolean" then
    fail(fn, "argument #%d: option event: expected a boolean, got %s", arg, show(v))
  end
  return v
end

return B
