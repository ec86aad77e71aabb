-- luagpu.reduce: sum, min, max and custom reductions over device buffers.
--
--   reduce.sum(b [, opts]), reduce.min(b [, opts]), reduce.max(b [, opts])
--   local r = reduce.new{type = "float", map = "x * x", op = "a + b", neutral = "0"}
--   r(b [, opts]); r(x, y [, opts]) when the map reads y
--
-- opts: {wait = {ev, ...}, queue = q, async = true, acc = "double"}. With
-- async the call returns the Event of the result's read (ev:wait() gives the
-- number) and the list of the Events of its kernel passes.
--
-- Each reduction is one kernel of kernels/reduce.cl: a fixed grid of a few
-- groups per compute unit folds the input into one partial per group, and
-- the last group to finish folds the partials (with reduce.single_pass set
-- false: a second kernel does). Programs, partial buffers and result
-- buffers are made once per device and reduction, and reused; so are the
-- bound kernel calls, per input buffer. Without async, on an in-order
-- queue, the kernels ask OpenCL for no Events (on a profiling queue an
-- Event costs more than the enqueue) and one blocking read brings the
-- result.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local SET = require "luagpu.core.settings"

local type, ipairs, tostring = type, ipairs, tostring
local setmetatable, getmetatable, rawget = setmetatable, getmetatable, rawget
local format, concat = string.format, table.concat
local max, min = math.max, math.min
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local next, gpu_type = next, gpu.type
local floor_pow2 = ST.floor_pow2

local SIZES, FLOATS, LIMITS, NAN = TY.SIZES, TY.FLOATS, TY.LIMITS, TY.NAN

-- The module table; programs_built (read through its metatable: the
-- programs of family "reduce" built so far, P.counter); single_pass:
-- whether reductions built from now on fold their partials in the same
-- kernel (an atomic counter finds the last group) or in a second.
local M = P.counter({single_pass = true}, "reduce")

-- Per device class: groups per compute unit, work-items per group, bytes
-- per vector load, grid-stride (GPU) or contiguous chunks (CPU) per
-- work-item, vectors loaded per loop iteration, and the fewest vectors a
-- work-item should get before more groups are started.
-- A script may change these (reduce.classes.gpu.groups_per_cu = 4); the
-- next reduction on a device of that class checks them (TUNABLES, below)
-- and builds its kernels again.
local CLASSES = {
  gpu = SET.watched{groups_per_cu = 4, local_size = 512, vector_bytes = 32, strided = true,
                    unroll = 2, min_vectors = 4},
  cpu = SET.watched{groups_per_cu = 4, local_size = 16, vector_bytes = 64, strided = false,
                    unroll = 1, min_vectors = 256},
}
CLASSES.accelerator = CLASSES.gpu
CLASSES.other = CLASSES.gpu

-- Iterations folded into a fresh accumulator before it joins the running
-- one, for floating-point accumulators (see reduce.cl).
local FLOAT_BLOCK = 32

-- Bounds of the class settings (local_size is then cut to what the device
-- and the kernels allow).
local MAX_GROUPS_PER_CU = 1024
local MAX_LOCAL_SIZE = 1 << 16
local MAX_VECTOR_BYTES = 128          -- 16 doubles: OpenCL's widest vector
local MAX_MIN_VECTORS = 1 << 30
local MAX_VECTOR_WIDTH = 16           -- elements: OpenCL's widest vector type

------------------------------------------------------------------ checks

-- Checks argument #arg of fn to be a live buffer of scalars; returns its
-- element type, element count, root buffer and offset (elements) in it.
local function check_buffer(fn, arg, b)
  local t, root, offset, buf = H.check_buffer(fn, arg, b)
  if not SIZES[t] then
    fail(fn, "argument #%d: expected a buffer of scalars, got %s elements", arg, t)
  end
  return t, #buf, root, offset
end

local OPTIONS = H.option_names{"wait", "queue", "async"}
-- reduce.sum, min and max also split over devices (luagpu.split)
local SUM_OPTIONS = H.option_names{"wait", "queue", "async", "acc", "devices", "shares"}
local BUILTIN_OPTIONS = H.option_names{"wait", "queue", "async", "devices", "shares"}

-- Checks opts, argument #arg of fn: nil or a table of the options in
-- names. Returns their values, checked, in a new table (wait a new list;
-- arg the argument's number; acc as given).
local function check_opts(fn, arg, opts, names)
  local o = H.check_options(fn, arg, opts, names)
  local async = o.async
  if async ~= nil and type(async) ~= "boolean" then
    fail(fn, "argument #%d: async: expected a boolean, got %s", arg, show(async))
  end
  return o
end

-- The settings of a class in reduce.classes: name, check, and what is
-- allowed, in words.
local TUNABLES = {
  {"groups_per_cu", SET.int_in(1, MAX_GROUPS_PER_CU)},
  {"local_size", (SET.pow2_in(1, MAX_LOCAL_SIZE)),
   format("a power of two from 1 to %d (cut to the device's limit)", MAX_LOCAL_SIZE)},
  {"vector_bytes", SET.pow2_in(1, MAX_VECTOR_BYTES)},
  {"strided", SET.boolean()},
  {"unroll", (SET.int_in(1, 2)), "1 or 2"},
  {"min_vectors", SET.int_in(1, MAX_MIN_VECTORS)},
}

------------------------------------------------------------------ programs

-- Per device (weak keys): a reduction key -> its entry (entry_for).
local cache = ST.device_cache()

-- The settings of dev's class in reduce.classes, checked (a table not to
-- be changed), and their signature with reduce.single_pass (tells when a
-- script changed them).
local read_class = SET.reader("reduce.classes", CLASSES, TUNABLES)
local function device_class(fn, dev)
  return read_class(fn, dev, M.single_pass and ",1" or ",0")
end

-- Elements of t per vector load on dev: cls.vector_bytes' worth, at most
-- the device's base address alignment, at least 2 (OpenCL has no 1-wide
-- vector type).
local function vector_width(cls, dev, t)
  local size = SIZES[t]
  local vw = min(MAX_VECTOR_WIDTH, max(1, cls.vector_bytes // size))
  while vw > 1 and vw * size > dev.mem_base_addr_align do vw = vw // 2 end
  return max(vw, 2)
end

-- The program of the reduction spec on dev: kernels/reduce.cl after its
-- definitions; a custom one that does not compile raises with the build
-- log.
local function build(fn, dev, spec, cls, vw, single)
  return P.get(dev, {
    family = "reduce", file = "reduce.cl", fn = fn,
    defines = {
      {"T", spec.type}, {"TV", spec.type .. vw}, {"VW", vw}, {"ACC", spec.acc},
      {"INPUTS", spec.inputs}, {"MAP", spec.map}, {"OP", spec.op}, {"NEUTRAL", spec.neutral},
      {"STRIDED", cls.strided and 1 or 0}, {"BLOCK", FLOATS[spec.acc] and FLOAT_BLOCK or 0},
      {"UNROLL", cls.unroll}, {"SINGLE_PASS", single and 1 or 0},
    },
    custom = spec.custom and format("map '%s', op '%s', neutral '%s' for %s", spec.map,
                                    spec.op, spec.neutral, spec.type),
  })
end

-- The compiled reduction spec on dev, made on first use (and again when
-- reduce.classes changed): {groups, partials (kernels), vw, local_size,
-- max_groups, min_vectors, partial (buffer), result (scalar buffer),
-- scratch (local memory)}. Its buffers are shared by every call: the
-- entry keeps their last user (ST.set_last_user).
local function entry_for(fn, dev, spec)
  local cls, sig = device_class(fn, dev)
  local entries = ST.device_entries(cache, dev, sig)
  local e = entries[spec.key]
  if e then return e end
  if (spec.type == "double" or spec.acc == "double") and not dev.fp64 then
    fail(fn, "%s has no double precision (fp64)", dev.name)
  end
  local vw = vector_width(cls, dev, spec.type)
  local single = M.single_pass
  local prog = build(fn, dev, spec, cls, vw, single)
  local groups, partials = prog.reduce_groups, prog.reduce_partials
  local lsz = floor_pow2(min(cls.local_size, dev.max_work_group_size,
                             groups.work_group_size, partials.work_group_size))
  local maxg = max(1, dev.compute_units * cls.groups_per_cu)
  e = {
    groups = groups, partials = partials,
    vw = vw, local_size = lsz, max_groups = maxg, min_vectors = cls.min_vectors,
    partial = dev:buffer(spec.acc, maxg),
    result = dev:scalar(spec.acc),
    scratch = gpu.localmem(spec.acc, lsz),
    count = single and dev:buffer("uint", 1) or nil,
    calls = setmetatable({}, {__mode = "k"}),   -- input root -> bound calls
    finals = {},                                -- groups -> bound reduce_partials
  }
  entries[spec.key] = e
  return e
end

------------------------------------------------------------------ running

-- Checks the inputs of the reduction spec: x, and y when it takes two.
-- Returns the element count and the inputs as {root, offset} pairs.
local function check_inputs(fn, spec, x, y)
  local t, n, xroot, xoff = check_buffer(fn, 1, x)
  local input = {x = xroot, xoff = xoff}
  if spec.inputs == 2 then
    local ty, ny, yroot, yoff = check_buffer(fn, 2, y)
    if ty ~= t then fail(fn, "argument #2: expected a buffer of %s, got %s", t, ty) end
    if ny ~= n then fail(fn, "argument #2: expected %d elements, got %d", n, ny) end
    if yroot.device ~= xroot.device then
      fail(fn, "argument #2: the buffers are on different devices (%s and %s)",
           H.device_label(xroot.device), H.device_label(yroot.device))
    end
    input.y, input.yoff = yroot, yoff
  end
  if spec.type ~= t then
    fail(fn, "argument #1: expected a buffer of %s, got %s", spec.type, t)
  end
  return n, input
end

local NO_EVENT = ST.NO_EVENT

-- The launches of entry e over the n elements of input: a table {xoff =,
-- n =, y =, yoff = (what they were made for), [i] = a step of core/steps
-- ({Call, {global =, local_size =}, after})}, one per pass: reduce_groups,
-- then reduce_partials after it unless the program folds in one pass (or
-- only reduce_partials, over nothing, for n = 0). Bound once per input
-- buffer (e.calls, weak keys) and reused while the input is the same.
local function launches(e, n, input)
  local x, xoff, y, yoff = input.x, input.xoff, input.y, input.yoff
  local l = e.calls[x]
  if l and l.xoff == xoff and l.n == n and l.y == y and l.yoff == yoff then return l end
  local lsz = e.local_size
  l = {xoff = xoff, n = n, y = y, yoff = yoff}
  if n == 0 then
    l[1] = {e.partials(e.partial, 0, e.result, e.scratch), {global = {lsz}, local_size = {lsz}}}
    e.calls[x] = l
    return l
  end
  local vw = e.vw
  local head = (vw - xoff % vw) % vw
  if yoff and (xoff - yoff) % vw ~= 0 then head = n end  -- no common alignment
  head = min(head, n)
  local nvec = (n - head) // vw
  local items = (nvec + e.min_vectors - 1) // e.min_vectors
  local groups = max(1, min(e.max_groups, (items + lsz - 1) // lsz))
  local out = groups == 1 and e.result or e.partial
  local count = e.count
  local call
  if yoff and count then
    call = e.groups(x, xoff, y, yoff, n, head, nvec, out, e.scratch, e.result, count)
  elseif yoff then
    call = e.groups(x, xoff, y, yoff, n, head, nvec, out, e.scratch)
  elseif count then
    call = e.groups(x, xoff, n, head, nvec, out, e.scratch, e.result, count)
  else
    call = e.groups(x, xoff, n, head, nvec, out, e.scratch)
  end
  l[1] = {call, {global = {groups * lsz}, local_size = {lsz}}}
  if groups > 1 and not count then
    local final = e.finals[groups]
    if not final then
      final = e.partials(e.partial, groups, e.result, e.scratch)
      e.finals[groups] = final
    end
    l[2] = {final, {global = {lsz}, local_size = {lsz}}, {1}}
  end
  e.calls[x] = l
  return l
end

-- Enqueues the passes l (from launches) on the in-order queue q, the
-- first after the Events in waits, without asking for Events (ST.run
-- always asks one for the last step; a blocking read follows these).
local function enqueue_quiet(l, q, waits)
  local later = q and {queue = q, event = false} or NO_EVENT
  local first = (q or waits[1]) and {wait = waits, queue = q, event = false} or NO_EVENT
  for i = 1, #l do
    local p = l[i]
    local launch = p[2]
    p[1]:run(launch.global, launch.local_size, i == 1 and first or later)
  end
end

-- Enqueues the passes of entry e over the n elements of input (after the
-- Events in waits, on q: nil for dev's default queue) and brings the result
-- back: the number, or with async the read Event and the list of pass
-- Events. Synchronous on an in-order queue: the passes ask for no Events
-- and one blocking read brings the result.
local function collect(e, n, input, q, dev, waits, async)
  ST.wait_for_last_user(e, q, dev, waits)
  local l = launches(e, n, input)
  if async == "launch" and ST.in_order(q) then
    -- (on an in-order queue the read waits for the passes: no Events, even
    -- where the queue profiles)
    enqueue_quiet(l, q, waits)
    ST.set_last_user(e, false, q, dev)
    local result = e.result
    return function() return result:read(q and {queue = q} or nil) end
  end
  if not async and ST.in_order(q) then
    enqueue_quiet(l, q, waits)
    ST.set_last_user(e, nil, q, dev)        -- the blocking read sees them done
    return e.result:get(q and {queue = q} or nil)
  end
  local events, ev
  if ST.events_wanted(q, dev) and not (async == "quiet" and ST.in_order(q)) then
    ev, events = ST.run(l, dev, q, waits)
    ev = e.result:read(ST.after(q, ev))
  else                                  -- in order, no profiles: the read's Event says all
    enqueue_quiet(l, q, waits)
    events, ev = {}, e.result:read(q and {queue = q} or nil)
  end
  ST.set_last_user(e, ev, q, dev)
  if async == "launch" then return function() return ev end end
  if async then return ev, events end
  return ev:wait()
end

-- Runs the reduction spec over x (and y) with options opts. Returns the
-- number, or with opts.async the read Event and the list of pass Events.
local function run(fn, spec, x, y, opts)
  local n, input = check_inputs(fn, spec, x, y)
  local q = opts.queue
  local xdev = input.x.device
  local dev = q and q.device or xdev
  if dev ~= xdev and dev.platform ~= xdev.platform then
    fail(fn, "argument #%d: queue: the queue is on %s, not on the platform of %s",
         opts.arg, dev.name, xdev.name)
  end
  local e = entry_for(fn, dev, spec)
  return collect(e, n, input, q, dev, opts.wait, opts.async)
end

------------------------------------------------------------------ built-ins

-- The spec of a built-in reduction ("sum", "min", "max") over type t.
local builtin_specs = {}
local function builtin(kind, t, acc)
  local key = kind .. " " .. t .. " " .. (acc or "")
  local s = builtin_specs[key]
  if s then return s end
  s = {type = t, inputs = 1, map = "x", key = key}
  if kind == "sum" then
    if FLOATS[t] then s.acc = acc or t
    elseif t == "ulong" then s.acc = "ulong"
    else s.acc = "long" end
    -- long sums wrap (computed as ulong: signed overflow is undefined)
    s.op = s.acc == "long" and "(long)((ulong)(a) + (ulong)(b))" or "a + b"
    s.neutral = "0"
  else
    s.acc = t
    if FLOATS[t] then
      -- fmin/fmax skip NaNs; NaN, their neutral element, stays when every
      -- element is NaN
      s.op = format("f%s(a, b)", kind)
      s.neutral = NAN[t]
    else
      s.op = format("%s(a, b)", kind)
      s.neutral = LIMITS[t][kind == "min" and 2 or 1]
    end
  end
  builtin_specs[key] = s
  return s
end

-- For luagpu.split: the built-in reduction kind of each buffer of bs, all
-- on distinct devices, each on its device's default queue: every kernel is
-- enqueued (without Events) before any read, so the devices start
-- together; then each result comes back by a blocking read (no Event: on
-- two H200s, reads with Events then waits cost 0.06-0.08 ms more than the
-- kernels, bench/gpu/twogpu.lua). Returns the numbers, in bs's order.
local function enqueue_each(fn, kind, bs, acc)
  local staged = {}
  for i, b in ipairs(bs) do
    local t = H.check_buffer(fn, 1, b)
    if acc ~= nil and (t ~= "float" or (acc ~= "float" and acc ~= "double")) then
      fail(fn, "argument #2: option acc: expected \"float\" or \"double\" for float " ..
           "buffers, got %s for a %s buffer", type(acc) == "string" and acc or typename(acc), t)
    end
    local spec = builtin(kind, t, acc)
    local n, input = check_inputs(fn, spec, b)
    if n == 0 and kind ~= "sum" then
      fail(fn, "argument #1[%d]: the %s of an empty buffer is undefined", i, kind)
    end
    local dev = input.x.device
    local e = entry_for(fn, dev, spec)
    local waits = {}
    ST.wait_for_last_user(e, nil, dev, waits)
    enqueue_quiet(launches(e, n, input), nil, waits)
    dev:flush()
    staged[i] = {e, dev}
  end
  local got = {}
  for i, s in ipairs(staged) do
    got[i] = s[1].result:get()
    ST.set_last_user(s[1], nil, nil, s[2])   -- done: nothing to wait for
  end
  return got
end

local split   -- luagpu.split, loaded when a call asks for several devices

-- Whether opts takes the quick path of a built-in reduction: nil (false
-- returned: synchronous) or a plain table holding async = true alone (true);
-- else nil. M.QUIET (for luagpu's own helpers, as reduce.sum(b, M.QUIET)):
-- async, and on an in-order queue only the result's read asks for an Event
-- (one enqueue with a profiled Event costs NVIDIA's OpenCL about 11 us, one
-- without 4): "quiet". M.LAUNCH (for reductions over several devices, as
-- a sharded tensor's): the passes enqueued, no read yet; returns a
-- function that enqueues the result's read and returns its Event (ev:wait()
-- gives the number; on an out-of-order queue the read was enqueued with
-- the passes), so that every device's passes run before any read is
-- enqueued and every read before the host waits for one: "launch". (No
-- clFlush: NVIDIA's driver submits at the enqueue, and a flush with work
-- pending cost about 10 us there.)
local QUIET, LAUNCH = {}, {}
M.QUIET, M.LAUNCH = QUIET, LAUNCH

local function quick_async(opts)
  if opts == nil then return false end
  if opts == QUIET then return "quiet" end
  if opts == LAUNCH then return "launch" end
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then return nil end
  local k, v = next(opts)
  if k == "async" and v == true and next(opts, k) == nil then return true end
  return nil
end

local function builtin_call(kind)
  local fn = "reduce." .. kind
  local names = kind == "sum" and SUM_OPTIONS or BUILTIN_OPTIONS
  -- Per buffer object (weak keys), what the last call without options or
  -- with async alone found after its checks: {e = entry, n =, input =,
  -- dev =, key = the spec's}. A buffer object's type, length and place in
  -- its root do not change, so such a call again skips the checks while
  -- the buffer is live and the entry still the current one (the same class
  -- settings and reduce.single_pass).
  local quick = setmetatable({}, {__mode = "k"})
  local reduce_one
  reduce_one = function(b, opts)
    local async = quick_async(opts)
    if async ~= nil and gpu_type(b) == "Buffer" then
      local r = quick[b]
      if r then
        local dev = r.dev
        local _, sig = device_class(fn, dev)
        local e = r.e
        if ST.device_entries(cache, dev, sig)[r.key] == e then
          return collect(e, r.n, r.input, nil, dev, {}, async)
        end
      end
    end
    if type(b) == "table" and getmetatable(b) == nil and rawget(b, 1) ~= nil then
      if opts ~= nil then
        local o = check_opts(fn, 2, opts, names)
        if async == "quiet" or async == "launch" or o.async or o.queue or o.wait[1]
           or o.devices then
          fail(fn, "argument #2: a list of buffers takes only option acc (each buffer is " ..
               "reduced on its own device's default queue)")
        end
      end
      split = split or require "luagpu.split"
      return split.reduce_list(fn, kind, reduce_one, b, opts and opts.acc, enqueue_each)
    end
    opts = check_opts(fn, 2, opts, names)
    local t, n = check_buffer(fn, 1, b)
    local acc = opts.acc
    if acc ~= nil and (t ~= "float" or (acc ~= "float" and acc ~= "double")) then
      fail(fn, "argument #2: option acc: expected \"float\" or \"double\" for a float " ..
           "buffer, got %s for a %s buffer", type(acc) == "string" and acc or typename(acc), t)
    end
    if n == 0 and kind ~= "sum" then
      fail(fn, "argument #1: the %s of an empty buffer is undefined", kind)
    end
    if opts.devices ~= nil then
      if opts.async or opts.queue or opts.wait[1] then
        fail(fn, "argument #2: option devices takes no async, queue or wait (each part " ..
             "runs on its device's default queue)")
      end
      split = split or require "luagpu.split"
      return split.reduce_devices(fn, kind, reduce_one, b, opts)
    end
    local spec = builtin(kind, t, acc)
    if async ~= nil then
      -- (a tensor, or another value that is a buffer, too: QUIET and LAUNCH
      -- return what they promise whatever holds the elements)
      local count, input = check_inputs(fn, spec, b)
      local dev = input.x.device
      local e = entry_for(fn, dev, spec)
      if gpu_type(b) == "Buffer" then
        quick[b] = {e = e, n = count, input = input, dev = dev, key = spec.key}
      end
      return collect(e, count, input, nil, dev, {}, async)
    end
    return run(fn, spec, b, nil, opts)
  end
  return reduce_one
end

------------------------------------------------------------------ reduce.new

local Reducer = {}
Reducer.__index = Reducer
Reducer.__name = "luagpu.Reducer"

-- Each reducer's spec (weak keys), where no script reaches it: its strings
-- are pasted into kernel source whenever a device first runs it, so they
-- stay as reduce.new checked them (the reducer's own fields are a copy to
-- read).
local specs = setmetatable({}, {__mode = "k"})

function Reducer.__call(r, x, y, opts)
  local spec = specs[r]
  if not spec then fail("reducer", "argument #0: expected a luagpu.Reducer") end
  if spec.inputs == 1 then opts, y = y, nil end
  opts = check_opts("reducer", spec.inputs + 1, opts, OPTIONS)
  return run("reducer", spec, x, y, opts)
end

function Reducer.__tostring(r)
  return format("luagpu.Reducer: %s -> %s, map '%s', op '%s', neutral '%s'",
                r.type, r.acc, r.map, r.op, r.neutral)
end

local NEW_FIELDS = H.option_names{"type", "acc", "map", "op", "neutral", "inputs", "device"}

local expression = H.expression

-- Field field of a reduce.new definition: a scalar element type.
local function element_type(fn, field, t)
  return TY.check_scalar(fn, "field '" .. field .. "'", t)
end

-- The inputs field of a reduce.new definition (given: its value): 1 or 2;
-- by default 2 when the map names y.
local function input_count(fn, given, map)
  if given == nil then return map:find("%f[%w_]y%f[^%w_]") and 2 or 1 end
  local inputs = integer(given)
  if inputs ~= 1 and inputs ~= 2 then
    fail(fn, "field 'inputs': expected 1 or 2, got %s", show(given))
  end
  return inputs
end

-- reduce.new{type =, map =, op =, neutral = [, acc =] [, inputs =] [, device =]}
local function new(def)
  local fn = "reduce.new"
  if type(def) ~= "table" then
    fail(fn, "argument #1: expected a table {type =, map =, op =, neutral =}, got %s",
         typename(def))
  end
  H.check_keys(fn, "", def, NEW_FIELDS, "field")
  local t = def.type
  if t == nil then fail(fn, "missing field 'type' (an element type such as \"float\")") end
  t = element_type(fn, "type", t)
  local acc = element_type(fn, "acc", def.acc or t)
  local map = expression(fn, def, "map", "x")
  local op = expression(fn, def, "op")
  local neutral = expression(fn, def, "neutral")
  local inputs = input_count(fn, def.inputs, map)
  local r = setmetatable({type = t, acc = acc, map = map, op = op, neutral = neutral,
                          inputs = inputs}, Reducer)
  local spec = {type = t, acc = acc, map = map, op = op, neutral = neutral,
                inputs = inputs, custom = true,
                key = concat({"new", t, acc, inputs, map, op, neutral}, "\0")}
  specs[r] = spec
  local dev = def.device
  if dev ~= nil then
    H.check_object(fn, "field 'device'", dev, "Device")
    entry_for(fn, dev, spec)
  end
  return r
end

M.enqueue_each = enqueue_each
M.sum = builtin_call("sum")
M.min = builtin_call("min")
M.max = builtin_call("max")
M.new = new
M.classes = CLASSES
return M
