-- luagpu.algo.scan: prefix scans (algo.scan, algo.scanner) over device
-- buffers, with kernels/scan.cl. Part of luagpu.algo; also used by its
-- sort and compaction. Not meant to be required by scripts.
--
-- A scan is one kernel (decoupled look-back, scan_lookback) where the
-- device class allows it (algo.classes.X.scan_lookback: true for GPUs,
-- whose running groups make progress while others spin) and the
-- accumulator has 4 bytes or less (a tile publishes its value and state in
-- one 64-bit word, see scan.cl), else three
-- (scan_reduce, scan_partials, scan_apply), which never wait on another
-- group and so run on any device (PoCL's CPU device runs a group to the
-- end on one thread and may not start the next before). Programs and
-- scratch buffers are made once per device and scan, and reused.

local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local PTX = require "luagpu.core.ptx"
local B = require "luagpu.algo.base"

local type, ipairs, tostring, pcall = type, ipairs, tostring, pcall
local format, concat = string.format, table.concat
local max, min = math.max, math.min
local setmetatable = setmetatable
local fail, typename, show = H.fail, H.typename, H.show
local SIZES, LIMITS, FLOATS, INTEGERS = TY.SIZES, TY.LIMITS, TY.FLOATS, TY.INTEGERS
local floor_pow2 = ST.floor_pow2
local CALLER = B.CALLER

local S = {}

local NO_INIT = ST.NO_INIT         -- outputs the kernels write whole: no zero-fill

-- Epochs tag the look-back's status words (29 bits of them); after the
-- last one the status buffer is cleared and they start again.
local MAX_EPOCH = (1 << 29) - 1

-- The conversions of a look-back word (scan.cl) for accumulators of 4
-- bytes or less: AS_BITS, AS_ACC, BITS_T.
local WORD_BITS = {
  char = {"as_uchar", "as_char", "uchar"}, uchar = {"", "", "uchar"},
  short = {"as_ushort", "as_short", "ushort"}, ushort = {"", "", "ushort"},
  int = {"as_uint", "as_int", "uint"}, uint = {"", "", "uint"},
  float = {"as_uint", "as_float", "uint"},
}

-- Accumulators of the PTX look-back (scan.cl's scan_lookback_ptx).
local PTX_ACC = {int = true, uint = true, float = true}

-- The keyword of inline PTX on a device (luagpu.core.ptx's probe).
local ptx_keyword = PTX.keyword

------------------------------------------------------------------ programs

-- Per device (weak keys): scan key -> entry (entry_for).
local cache = ST.device_cache()

-- Bytes of local memory a tile of L * ipt elements needs (see scan.cl).
local function local_bytes(staged, seg, L, ipt, asz)
  local tile = L * ipt
  local padded = tile + tile // 32
  local carry = seg and 2 * max(asz, 4) or asz
  local bytes = 2 * L * carry + 64
  if staged then bytes = bytes + padded * asz + (seg and padded or 0) end
  return bytes
end

-- The scan spec on dev, segmented (flags of type ft) or not: {spec, seg,
-- ft, ipt, staged, L (the class's), groups (of the three passes),
-- use_lookback, passes and lookback (programs, made on first use:
-- kernels_for), scratch buffers, epoch}. Made again when algo.classes
-- changed.
local function entry_for(fn, dev, spec, seg, ft)
  local cls, sig = B.device_class(fn, dev)
  local entries = ST.device_entries(cache, dev, sig)
  local key = spec.key .. "\0" .. (seg and (ft or "uchar") or "-")
  local e = entries[key]
  if e then return e end
  B.check_fp64(fn, dev, spec.type)
  B.check_fp64(fn, dev, spec.acc)
  local asz = SIZES[spec.acc]
  local L = min(cls.scan_local, floor_pow2(dev.max_work_group_size))
  local ipt = cls.scan_items
  if asz > 4 and ipt > 2 then ipt = ipt // 2 end
  local staged = cls.scan_staged
  while ipt > 1 and local_bytes(staged, seg, L, ipt, asz) > dev.local_mem_size do
    ipt = ipt // 2
  end
  e = {
    spec = spec, seg = seg, ft = ft or "uchar", ipt = ipt, staged = staged, L = L,
    groups = max(1, dev.compute_units * cls.scan_groups_per_cu),
    use_lookback = cls.scan_lookback and WORD_BITS[spec.acc] ~= nil, acc = spec.acc,
    ptx = cls.scan_ptx and not seg and L >= 32 and PTX_ACC[spec.acc] and ptx_keyword(dev)
          or false,
    ptx_items = cls.scan_ptx_items, ptx_ticket = cls.scan_ptx_ticket,
  }
  B.lookback_init(e, dev)
  entries[key] = e
  return e
end

local KERNELS = {passes = {"scan_reduce", "scan_partials", "scan_apply"},
                 lookback = {"scan_lookback"}, warp = {"scan_lookback", "scan_lookback_ptx"}}

-- The kernels of entry e of one kind ("passes", "lookback" or "warp": the
-- look-back with scan_lookback_ptx beside), built on first use:
-- {scan_reduce = k, ..., L, tile, ptx_tile}.
local function kernels_for(fn, dev, e, kind)
  local k = e[kind]
  if k then return k end
  local spec = e.spec
  local custom = spec.custom and format("map '%s', op '%s', neutral '%s' for %s -> %s",
                                        spec.map, spec.op, spec.neutral, spec.type, spec.acc)
  local word = WORD_BITS[spec.acc]
  local L = e.L
  while true do
    local defines = {
      {"T", spec.type}, {"ACC", spec.acc}, {"FT", e.ft},
      {"MAP", spec.map}, {"OP", spec.op}, {"NEUTRAL", spec.neutral},
      {"SEGMENTED", e.seg and 1 or 0}, {"STAGED", e.staged and 1 or 0},
      {"L", L}, {"IPT", e.ipt}, {"LOOKBACK", kind ~= "passes" and 1 or 0},
    }
    if kind == "warp" then
      defines[#defines + 1] = {"WARP_PTX", 1}
      defines[#defines + 1] = {"LG_ASM", e.ptx}
      defines[#defines + 1] = {"FIPT", e.ptx_items}
      defines[#defines + 1] = {"TICKET", e.ptx_ticket and 1 or 0}
      defines[#defines + 1] = {"TV", spec.type .. "4"}
      defines[#defines + 1] = {"AV", spec.acc .. "4"}
    end
    if spec.vector then
      defines[#defines + 1] = {"VECTORIZE", 1}
      defines[#defines + 1] = {"ACCV", spec.acc .. "8"}
      defines[#defines + 1] = {"ACC4", spec.acc .. "4"}
      defines[#defines + 1] = {"convert_ACCV", "convert_" .. spec.acc .. "8"}
      if spec.vop8 then
        defines[#defines + 1] = {"VOP8", spec.vop8}
        defines[#defines + 1] = {"VOP4", spec.vop4}
      end
    end
    if word then
      defines[#defines + 1] = {"AS_BITS", word[1]}
      defines[#defines + 1] = {"AS_ACC", word[2]}
      defines[#defines + 1] = {"BITS_T", word[3]}
    end
    local prog = B.build(fn, dev, defines, "scan.cl", custom)
    k = {L = L, tile = L * e.ipt, ptx_tile = L * e.ptx_items}
    local wgs = math.huge
    for _, name in ipairs(KERNELS[kind]) do
      k[name] = prog:kernel(name)
      wgs = min(wgs, k[name].work_group_size)
    end
    if wgs >= L or L == 1 or (kind == "warp" and wgs < 32) then break end
    L = floor_pow2(wgs)
  end
  e[kind] = k
  return k
end

------------------------------------------------------------------ running

local dummy_flags = ST.device_cache()

-- Runs a scan, everything checked: r = {spec, x (root), xoff, n, flags
-- (root or nil), foff, ft, rowlen (0: none), out (root), ooff, exclusive,
-- lookback (nil: the class's choice), queue, wait (a list), quiet (for a
-- helper's sequence on an in-order queue: no Event wanted)}. Returns the
-- Event of its last command (false with quiet: none).
function S.run(fn, r)
  local q = r.queue
  local dev = q and q.device or r.x.device
  local seg = r.flags ~= nil or r.rowlen ~= 0
  local e = entry_for(fn, dev, r.spec, seg, r.ft)
  local waits = r.wait
  ST.wait_for_last_user(e, q, dev, waits)
  local seq = B.sequence(q, waits)
  local n = r.n
  if n == 0 then
    seq:marker(dev)
    ST.set_last_user(e, seq.last, q, dev)
    return seq.last
  end
  local flags = r.flags
  if not flags then
    flags = dummy_flags[dev]
    if not flags then flags = dev:buffer("uchar", 1); dummy_flags[dev] = flags end
  end
  local excl = r.exclusive and 1 or 0
  local x, xoff, foff, hasf, rowlen = r.x, r.xoff, r.foff or 0, r.flags and 1 or 0, r.rowlen
  local lookback = r.lookback
  if lookback == nil then lookback = e.use_lookback end
  lookback = lookback and WORD_BITS[e.acc] ~= nil
  -- the PTX look-back takes 16-byte vectors: input and output from
  -- elements aligned to 4
  local ptx = lookback and e.ptx and xoff % 4 == 0 and r.ooff % 4 == 0
  local k = kernels_for(fn, dev, e, ptx and "warp" or lookback and "lookback" or "passes")
  local L, tile = k.L, ptx and k.ptx_tile or k.tile
  local ntiles = (n + tile - 1) // tile
  if lookback then
    local words = ST.scratch_buffer(e, dev, "words", "ulong", 2 * ntiles)
    local epoch = B.next_epoch(seq, e, words, MAX_EPOCH)
    if ptx then
      seq:run(k.scan_lookback_ptx(x, xoff, n, r.out, r.ooff, excl, words, e.ticket, epoch),
              {ntiles * L}, {L})
    else
      seq:run(k.scan_lookback(x, xoff, flags, foff, hasf, rowlen, n, r.out, r.ooff, excl,
                              words, e.ticket, epoch), {ntiles * L}, {L})
    end
  else
    local groups = min(e.groups, ntiles)
    local per = (ntiles + groups - 1) // groups
    groups = (ntiles + per - 1) // per
    local part = ST.scratch_buffer(e, dev, "part", e.acc, groups)
    local pflag = ST.scratch_buffer(e, dev, "pflag", "uint", groups)
    seq:run(k.scan_reduce(x, xoff, flags, foff, hasf, rowlen, n, per, part, pflag),
            {groups * L}, {L})
    seq:run(k.scan_partials(part, pflag, groups), {L}, {L})
    seq:run(k.scan_apply(x, xoff, flags, foff, hasf, rowlen, n, r.out, r.ooff, excl, per, part),
            {groups * L}, {L})
  end
  local ev = seq.last
  if not (r.quiet and ev == false) then ev = seq:event(dev) end
  ST.set_last_user(e, ev, q, dev)
  return ev
end

------------------------------------------------------------------ checks

local OPTIONS = B.option_names{"exclusive", "row_length", "flags", "out", "acc", "op",
                               "lookback", "event", "wait", "queue"}
local SCANNER_OPTIONS = H.option_names{"exclusive", "row_length", "flags", "out",
                                       "lookback", "event", "wait", "queue"}

-- Checks b (argument #1) and the options of a scan (argument #2); acc_of
-- (t, out_type, o) gives the accumulator type. Returns the run table for
-- S.run, without its spec (its caller: a tensor op's name given under
-- B.CALLER, or nil), and the output buffer (made when not given).
local function check_scan(fn, b, opts, names, acc_of)
  local o = H.check_options(fn, 2, opts, names)
  local t, xroot, xoff, buf = B.check_buffer(fn, 1, b)
  local n = #buf
  local dev = o.queue and o.queue.device or xroot.device
  if o.queue then B.check_platform(fn, "argument #1", xroot, dev) end
  local r = {x = xroot, xoff = xoff, n = n, queue = o.queue, wait = o.wait, type = t,
             caller = o[CALLER]}
  r.exclusive = B.flag(fn, 2, o, "exclusive")
  r.quiet = not B.want_event(fn, 2, o)
  local lb = o.lookback
  if lb ~= nil and type(lb) ~= "boolean" then
    fail(fn, "argument #2: option lookback: expected a boolean, got %s", show(lb))
  end
  r.lookback = lb
  local rl = B.row_length(fn, 2, o, n)
  r.rowlen = (o.row_length ~= nil and rl < n) and rl or 0
  if o.flags ~= nil then
    local ft, froot, foff, fb = B.check_buffer_option(fn, 2, o.flags, "flags")
    if not INTEGERS[ft] then
      fail(fn, "argument #2: option flags: expected a buffer of integers, got %s elements", ft)
    end
    if #fb ~= n then
      fail(fn, "argument #2: option flags: expected %d elements, got %d", n, #fb)
    end
    B.check_platform(fn, "argument #2: option flags", froot, dev)
    r.flags, r.foff, r.ft = froot, foff, ft
  end
  local out = o.out
  local ot
  if out ~= nil then
    local oroot, ooff, ob
    ot, oroot, ooff, ob = B.check_buffer_option(fn, 2, out, "out")
    if #ob ~= n then
      fail(fn, "argument #2: option out: expected %d elements, got %d", n, #ob)
    end
    B.check_platform(fn, "argument #2: option out", oroot, dev)
    B.check_overlap(fn, "argument #2: option out", xroot, xoff, n, oroot, ooff, n, true)
    if r.flags then     -- the flags are read as the input is (so in place too)
      B.check_overlap(fn, "argument #2: option out", r.flags, r.foff, n, oroot, ooff, n, true,
                      "option flags")
    end
    r.out, r.ooff = oroot, ooff
  end
  local acc = acc_of(t, ot, o)
  if ot and ot ~= acc then
    fail(fn, "argument #2: option out: expected a buffer of %s, got %s", acc, ot)
  end
  B.check_fp64(fn, dev, t)
  B.check_fp64(fn, dev, acc)
  if not out then
    out = dev:buffer(acc, n, NO_INIT)
    r.out, r.ooff = out, 0
  end
  return r, out, acc
end

------------------------------------------------------------------ algo.scan

local OPS = {sum = "+", prod = "*"}

-- The unsigned type integer sums and products of acc compute in: as wide
-- as acc and at least uint (C promotes char and short to int, whose
-- overflow is undefined: ushort * ushort can pass INT_MAX). Cast back, the
-- result wraps modulo 2^bits as the docs promise, and the compiler never
-- sees a signed overflow it may assume away (TY.WRAP). Vectors are not
-- promoted: a signed one is reinterpreted (as_<type>N) as the unsigned
-- vector of the same width (TY.UNSIGNED_OF).
local WRAP, SIGNED, UNSIGNED_OF = TY.WRAP, TY.SIGNED, TY.UNSIGNED_OF

-- The operator a OP b of a built-in sum or product in acc: the scalar
-- expression, and for integers those of its 8- and 4-wide vectors
-- (scan.cl's VOP8, VOP4; nil: OP takes vectors as it is).
local function arith(sym, acc)
  local u = WRAP[acc]
  local plain = format("a %s b", sym)
  if not u then return plain end
  local op = format("(%s)((%s)(a) %s (%s)(b))", acc, u, sym, u)
  if not SIGNED[acc] then return op, plain, plain end
  local us = UNSIGNED_OF[acc]
  local function vec(w)
    return format("as_%s%d(as_%s%d(a) %s as_%s%d(b))", acc, w, us, w, sym, us, w)
  end
  return op, vec(8), vec(4)
end

-- The spec of a built-in scan: op "sum", "prod", "min" or "max" over t,
-- accumulated in acc.
local builtin_specs = {}
local function builtin(op, t, acc)
  local key = concat({"scan", op, t, acc}, " ")
  local s = builtin_specs[key]
  if s then return s end
  -- vector: the operator also takes vectors and is commutative (scan.cl's
  -- VECTORIZE)
  s = {type = t, acc = acc, map = "x", key = key, vector = true}
  if OPS[op] then
    s.op, s.vop8, s.vop4 = arith(OPS[op], acc)
    -- (a floating sum starts from -0.0, the identity of +: a cumsum of
    -- -0.0s is -0.0s, as NumPy's; +0.0 turned the first into +0.0)
    s.neutral = op ~= "sum" and "1" or FLOATS[acc] and "-0.0" or "0"
  else
    s.op = format("%s%s(a, b)", FLOATS[acc] and "f" or "", op)
    s.neutral = LIMITS[acc][op == "min" and 2 or 1]
  end
  builtin_specs[key] = s
  return s
end

local OP_NAMES = {sum = true, prod = true, min = true, max = true}

-- algo.scan(b [, opts]) -> out, Event
function S.scan(b, opts)
  local fn = "algo.scan"
  local op
  local r, out = check_scan(fn, b, opts, OPTIONS, function(t, ot, o)
    op = o.op
    if op == nil then op = "sum" end
    if not OP_NAMES[op] then
      fail(fn, "argument #2: option op: expected \"sum\", \"prod\", \"min\" or \"max\", got %s",
           show(op))
    end
    if o.acc == nil then return ot or t end
    return B.element_type(fn, "argument #2: option acc", o.acc)
  end)
  r.spec = builtin(op, r.type, out.type)
  return out, S.run(r.caller or fn, r)
end

------------------------------------------------------------------ algo.scanner

local Scanner = {}
Scanner.__index = Scanner
Scanner.__name = "luagpu.Scanner"

-- Each scanner's spec (weak keys), where no script reaches it: its strings
-- are pasted into kernel source whenever a device first runs it, so they
-- stay as algo.scanner checked them (the scanner's own fields are a copy
-- to read).
local specs = setmetatable({}, {__mode = "k"})

function Scanner.__call(s, b, opts)
  local fn = "scanner"
  local spec = specs[s]
  if not spec then fail(fn, "argument #0: expected a luagpu.Scanner") end
  local r, out = check_scan(fn, b, opts, SCANNER_OPTIONS, function(t)
    if t ~= spec.type then
      fail(fn, "argument #1: expected a buffer of %s, got %s", spec.type, t)
    end
    return spec.acc
  end)
  r.spec = spec
  return out, S.run(fn, r)
end

function Scanner.__tostring(s)
  return format("luagpu.Scanner: %s -> %s, map '%s', op '%s', neutral '%s'",
                s.type, s.acc, s.map, s.op, s.neutral)
end

local NEW_FIELDS = H.option_names{"type", "acc", "map", "op", "neutral", "device"}

-- algo.scanner{type =, op =, neutral = [, acc =] [, map =] [, device =]}
function S.scanner(def)
  local fn = "algo.scanner"
  if type(def) ~= "table" then
    fail(fn, "argument #1: expected a table {type =, op =, neutral =}, got %s", typename(def))
  end
  H.check_keys(fn, "", def, NEW_FIELDS, "field")
  if def.type == nil then fail(fn, "missing field 'type' (an element type such as \"float\")") end
  local t = B.element_type(fn, "field 'type'", def.type)
  local acc = B.element_type(fn, "field 'acc'", def.acc or t)
  local map = H.expression(fn, def, "map", "x")
  local op = H.expression(fn, def, "op")
  local neutral = H.expression(fn, def, "neutral")
  local s = setmetatable({type = t, acc = acc, map = map, op = op, neutral = neutral}, Scanner)
  local spec = {type = t, acc = acc, map = map, op = op, neutral = neutral, custom = true,
                key = concat({"custom", t, acc, map, op, neutral}, "\0")}
  specs[s] = spec
  local dev = def.device
  if dev ~= nil then
    H.check_object(fn, "field 'device'", dev, "Device")
    local e = entry_for(fn, dev, spec, false)
    kernels_for(fn, dev, e, e.use_lookback and (e.ptx and "warp" or "lookback") or "passes")
  end
  return s
end

------------------------------------------------------------------ tensors

-- The built-in specs per op and type (op, t) -> builtin(op, t, t), without
-- the key string builtin makes.
local tensor_specs = {sum = {}, prod = {}}

-- A scan for luagpu.tensor's x:cumsum and x:cumprod, everything checked by
-- the tensor op (its tensors' bounds and types, the device's fp64): rows
-- of rowlen elements (n: one row) of type t from root x at element xoff,
-- op ("sum" or "prod") in t, into root out at ooff, on dev's default
-- queue, no Event. Not algo.scan's option checks, nor a table of options
-- or Buffer views made per call: those cost as much host time as the
-- scan of 2^24 elements on an H200 takes on the device.
function S.tensor_scan(fn, op, t, x, xoff, n, rowlen, out, ooff)
  local specs = tensor_specs[op]
  local spec = specs[t]
  if not spec then spec = builtin(op, t, t); specs[t] = spec end
  return S.run(fn, {spec = spec, x = x, xoff = xoff, n = n, rowlen = rowlen < n and rowlen or 0,
                    out = out, ooff = ooff, wait = {}, quiet = true})
end

S.builtin = builtin
return S
