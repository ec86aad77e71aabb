-- luagpu.split: luagpu.matmul and luagpu.reduce over several devices of one
-- platform (one context), called through them:
--
--   matmul({A1, A2}, {B1, B2} [, {C1, C2}] [, opts])   each product on its
--       A's device, all at once: returns the list of Cs, an Event for all,
--       and the list of the products' Events
--   matmul(A, B [, C], {devices = {d1, d2} [, shares = {w1, w2}]})   row
--       blocks of A on each device, C put together on C's (or A's) device;
--       A, B and C may be host arrays: each device then takes its rows
--       from the host and sends its rows of C back
--   reduce.sum({b1, b2}), reduce.sum(b, {devices = {d1, d2}})   (min, max too)
--
-- Operands that all live on one of the devices (and no shares given) are
-- not split: the call runs on that device alone (sole_device says why).
--
-- Where a buffer is written from several devices, OpenCL leaves the result
-- undefined: each device writes its own scratch buffers, and C is written
-- by its own device alone (its block in place, the others' copied in after
-- them). Shares default to each device's compute units times its clock.

local gpu = require "luagpu"
local H = require "luagpu.core.check"

local type, ipairs, pairs, getmetatable = type, ipairs, pairs, getmetatable
local floor = math.floor
local fail, typename = H.fail, H.typename

local S = {}

-- Whether v is a plain list (a table that is no luagpu object, tensor or
-- options table with names).
function S.is_list(v)
  return type(v) == "table" and getmetatable(v) == nil and v[1] ~= nil
end

-- The live buffer that item i of list (argument #arg of fn) is or stands for.
local function list_buffer(fn, arg, list, i)
  local b = H.to_buffer(list[i])
  local cls, released = H.class_of(b)
  if cls ~= "Buffer" or released then
    fail(fn, "argument #%d[%d]: expected a live buffer, got %s", arg, i,
         released and "a released buffer" or typename(list[i]))
  end
  return b
end

-- Checks opts.devices: a list of distinct live Devices of one platform,
-- without holes; returns it.
local function check_devices(fn, arg, devices)
  if type(devices) ~= "table" or getmetatable(devices) ~= nil then
    fail(fn, "argument #%d: option devices: expected a list of devices, got %s", arg,
         typename(devices))
  end
  local count = 0
  for _ in pairs(devices) do count = count + 1 end
  if count == 0 then
    fail(fn, "argument #%d: option devices: expected a list of devices, got an empty one", arg)
  end
  local seen = {}
  for i = 1, count do                   -- (a hole or a name: a position holds nil)
    local d = devices[i]
    if H.class_of(d) ~= "Device" then
      fail(fn, "argument #%d: option devices[%d]: expected a luagpu.Device, got %s", arg, i,
           typename(d))
    end
    if seen[d] then fail(fn, "argument #%d: option devices[%d]: %s is listed twice", arg, i, d.name) end
    if d.platform ~= devices[1].platform then
      fail(fn, "argument #%d: option devices[%d]: %s is not on the platform of %s (devices " ..
           "of one platform share memory; others cannot)", arg, i, d.name, devices[1].name)
    end
    seen[d] = true
  end
  return devices
end

-- Splits n into #devices parts by weight (opts.shares, else compute units
-- times clock); returns the list of {first, count} (0-based first).
local function split_rows(fn, arg, n, devices, shares)
  local w, total = {}, 0.0
  for i, d in ipairs(devices) do
    local s
    if shares ~= nil then
      if type(shares) ~= "table" or #shares ~= #devices then
        fail(fn, "argument #%d: option shares: expected a list of %d numbers (one per device)",
             arg, #devices)
      end
      s = shares[i]
      if math.type(s) == nil or not (s >= 0) or s == math.huge then
        fail(fn, "argument #%d: option shares[%d]: expected a finite number >= 0, got %s", arg, i,
             H.show(s))
      end
    else
      s = d.compute_units * math.max(d.max_clock_frequency or 1, 1)
    end
    w[i], total = s + 0.0, total + s     -- (as floats: integers past 2^63 wrap)
  end
  if not (total > 0) then fail(fn, "argument #%d: option shares: they add up to 0", arg) end
  if total == math.huge then
    fail(fn, "argument #%d: option shares: they add up to more than a double holds (scale them " ..
         "down)", arg)
  end
  local parts, given = {}, 0
  for i = 1, #devices do
    local count = i == #devices and n - given or floor(n * (w[i] / total))
    parts[i] = {given, count}
    given = given + count
  end
  return parts
end

-- The device that buffers bufs all live on, when it is one of devices and
-- no shares were given; else nil. A split of data that lives on one
-- device must move it to the others, which costs more than their work
-- saves (NVIDIA's OpenCL moves buffers through the host: docs/SCALING.md),
-- so such a call runs on that device alone; shares force the split.
local function sole_device(devices, shares, bufs)
  if shares ~= nil then return nil end
  local d = bufs[1].device
  for i = 2, #bufs do
    if bufs[i].device ~= d then return nil end
  end
  for _, x in ipairs(devices) do
    if x == d then return d end
  end
end

------------------------------------------------------------------ matmul

-- Markers on the default queues of devices (each once), after which work
-- on other devices may read what those queues wrote; with the events of
-- wait (nil, an Event or a list) added.
local function after_queues(devices, wait)
  local list, seen = {}, {}
  for _, d in ipairs(devices) do
    if not seen[d] then
      seen[d] = true
      local q = d:default_queue()
      list[#list + 1] = q:marker()
      q:flush()
    end
  end
  if type(wait) == "table" and getmetatable(wait) == nil then
    for _, ev in ipairs(wait) do list[#list + 1] = ev end
  elseif wait ~= nil then
    list[#list + 1] = wait
  end
  return list
end

local MATMUL_LIST_OPTIONS = H.option_names({"variant", "params", "wait"}, "option ")

-- matmul's list form: product i on As[i]'s device's default queue.
function S.matmul_list(matmul, As, Bs, Cs, opts)
  local fn = "matmul"
  if opts == nil and S.is_list(Cs) == false and type(Cs) == "table" then Cs, opts = nil, Cs end
  opts = H.check_options(fn, Cs and 4 or 3, opts, MATMUL_LIST_OPTIONS) or {}
  if not S.is_list(Bs) or #Bs ~= #As then
    fail(fn, "argument #2: expected a list of %d buffers (one B per A), got %s", #As,
         S.is_list(Bs) and "a list of " .. #Bs or typename(Bs))
  end
  if Cs ~= nil and (not S.is_list(Cs) or #Cs ~= #As) then
    fail(fn, "argument #3: expected a list of %d buffers (one C per A), got %s", #As,
         S.is_list(Cs) and "a list of " .. #Cs or typename(Cs))
  end
  local out, last, queues = {}, {}, {}
  for i = 1, #As do
    local A = list_buffer(fn, 1, As, i)
    local dev = A.device
    local C, ev = matmul(A, list_buffer(fn, 2, Bs, i), Cs and list_buffer(fn, 3, Cs, i) or nil,
                         {queue = dev:default_queue(), wait = opts.wait,
                          variant = opts.variant, params = opts.params})
    out[i], last[i], queues[i] = C, ev, dev:default_queue()
  end
  for _, q in ipairs(queues) do q:flush() end
  local ev = queues[1]:marker{wait = last}
  return out, ev, last
end

local MATMUL_SPLIT_OPTIONS = H.option_names({"devices", "shares", "variant", "params", "wait"},
                                            "option ")

-- Checks host array v (argument #arg) to be 2-D of type t (nil: float or
-- double); returns its two sizes.
local function host_matrix(fn, arg, v, t)
  if H.class_of(v) ~= "Array" or #v.shape ~= 2 then
    fail(fn, "argument #%d: expected a 2-D host array (as A), got %s", arg,
         H.class_of(v) == "Array" and "a " .. #v.shape .. "-D one" or typename(v))
  end
  if t and v.type ~= t or not t and v.type ~= "float" and v.type ~= "double" then
    fail(fn, "argument #%d: expected a host array of %s, got one of %s", arg,
         t or "float or double", v.type)
  end
  return v.shape[1], v.shape[2]
end

-- matmul over opts.devices from host arrays A and B into host array C (made
-- when nil): each device gets its rows of A and all of B from the host,
-- and sends its rows of C back, all at once.
local function matmul_hosts(matmul, A, B, C, opts, devices, optarg)
  local fn = "matmul"
  local m, k = host_matrix(fn, 1, A)
  local t = A.type
  local kb, n = host_matrix(fn, 2, B, t)
  if kb ~= k then fail(fn, "argument #2: B has %d rows, A %d columns", kb, k) end
  if C == nil then
    C = gpu.array(t, {shape = {m, n}})
  else
    local mc, nc = host_matrix(fn, 3, C, t)
    if mc ~= m or nc ~= n then
      fail(fn, "argument #3: expected a host array of {%d, %d}, got {%d, %d}", m, n, mc, nc)
    end
  end
  local events, queues = {}, {}
  for i, part in ipairs(split_rows(fn, optarg, m, devices, opts.shares)) do
    local first, rows, dev = part[1], part[2], devices[i]
    if rows > 0 then
      local q = dev:default_queue()
      local Ai, Bi, Ci = dev:buffer(t, {rows, k}), dev:buffer(t, {k, n}), dev:buffer(t, {rows, n})
      if k > 0 then Ai:write(A:sub(first * k + 1, (first + rows) * k), {queue = q, wait = opts.wait}) end
      if k > 0 and n > 0 then Bi:write(B, {queue = q, wait = opts.wait}) end
      matmul(Ai, Bi, Ci, {queue = q, variant = opts.variant, params = opts.params})
      if n > 0 then events[#events + 1] = Ci:read(C:sub(first * n + 1, (first + rows) * n), {queue = q}) end
      q:flush()
      queues[#queues + 1] = q
    end
  end
  local ev = (queues[1] or devices[1]:default_queue()):marker{wait = events}
  return C, ev, events
end

-- matmul over opts.devices: row blocks of A.
function S.matmul_devices(matmul, A, B, C, opts, optarg)
  local fn = "matmul"
  H.check_options(fn, optarg, opts, MATMUL_SPLIT_OPTIONS)
  local devices = check_devices(fn, optarg, opts.devices)
  if H.class_of(A) == "Array" then return matmul_hosts(matmul, A, B, C, opts, devices, optarg) end
  -- tensors pass their buffers and their shapes (C must be contiguous: it is written)
  local given, shapes = C == nil and 2 or 3, {}
  for i, v in ipairs{A, B, C} do
    if type(v) == "table" and gpu.type(v) == "Tensor" then shapes[i] = v.shape end
  end
  -- (A and B only read: a view that is not contiguous is copied first)
  if shapes[1] then A = A:contiguous() end
  if shapes[2] then B = B:contiguous() end
  local a, b = H.to_buffer(A, fn, "argument #1"), H.to_buffer(B, fn, "argument #2")
  local cbuf = C and H.to_buffer(C, fn, "argument #3")
  local sizes, operands = {}, {a, b, cbuf}
  for i = 1, given do
    local v = operands[i]
    local shape = shapes[i] or H.class_of(v) == "Buffer" and v.shape
    if not shape or #shape ~= 2 then
      fail(fn, "argument #%d: with option devices, expected a 2-D buffer or tensor, got %s", i,
           shape and "a " .. #shape .. "-D one" or typename(v))
    end
    sizes[i] = shape
  end
  local m, k, n, t = sizes[1][1], sizes[1][2], sizes[2][2], a.type
  if b.type ~= t then fail(fn, "argument #2: expected a buffer of %s (as A), got one of %s", t, b.type) end
  if sizes[2][1] ~= k then
    fail(fn, "argument #2: B has %d rows, but A has %d columns", sizes[2][1], k)
  end
  if cbuf then
    if cbuf.type ~= t then
      fail(fn, "argument #3: expected a buffer of %s (as A), got one of %s", t, cbuf.type)
    end
    if sizes[3][1] ~= m then fail(fn, "argument #3: C has %d rows, but A has %d rows", sizes[3][1], m) end
    if sizes[3][2] ~= n then
      fail(fn, "argument #3: C has %d columns, but B has %d columns", sizes[3][2], n)
    end
  end
  if sole_device(devices, opts.shares, {a, b, cbuf or a}) then
    return matmul(A, B, C, {variant = opts.variant, params = opts.params, wait = opts.wait})
  end
  local home = cbuf and cbuf.device or a.device
  if C == nil then C = home:buffer(t, {m, n}) end
  local c = cbuf or C
  local homeq = home:default_queue()
  local copies, events = {}, {}
  -- other devices' copies of A and B follow what A's and B's devices (and
  -- the caller's wait list) had enqueued before this call
  local before = after_queues({a.device, b.device}, opts.wait)
  for i, part in ipairs(split_rows(fn, optarg, m, devices, opts.shares)) do
    local first, rows, dev = part[1], part[2], devices[i]
    if rows > 0 then
      local q = dev:default_queue()
      local sub = {m = rows, n = n, k = k, queue = q, variant = opts.variant,
                   params = opts.params, wait = before}
      local Arows = a:sub(first * k + 1, (first + rows) * k)
      local Crows = c:sub(first * n + 1, (first + rows) * n)
      if dev == home then
        local _, ev = matmul(Arows, b, Crows, sub)
        events[#events + 1] = ev
      else
        -- this device's own copies: A's rows, B, and its block of C
        local Ai, Bi, Ci = dev:buffer(t, {rows, k}), dev:buffer(t, {k, n}), dev:buffer(t, {rows, n})
        Arows:copy_to(Ai, {wait = before, queue = q})
        b:copy_to(Bi, {queue = q})
        sub.wait = nil
        local _, ev = matmul(Ai, Bi, Ci, sub)
        q:flush()
        copies[#copies + 1] = {Ci, Crows, ev}
        events[#events + 1] = ev
      end
    end
  end
  for _, cp in ipairs(copies) do
    events[#events + 1] = cp[1]:copy_to(cp[2], {wait = {cp[3]}, queue = homeq})
  end
  local ev = homeq:marker{wait = events}
  return C, ev, events
end

------------------------------------------------------------------ reduce

-- Folds the numbers got of kind "sum", "min" or "max" (min and max skip
-- NaNs, as fmin and fmax: NaN only when every part gave NaN).
local function combine(kind, got)
  local r = got[1]
  for i = 2, #got do
    local v = got[i]
    if kind == "sum" then r = r + v
    elseif kind == "min" then if v < r or r ~= r then r = v end
    elseif v > r or r ~= r then r = v end
  end
  return r
end

-- reduce.KIND over the buffers of list bs, each on its device, at once:
-- on distinct devices every kernel starts before any read
-- (reduce.enqueue_each, which returns the numbers); buffers sharing a
-- device go one after another.
function S.reduce_list(fn, kind, reduce_one, bs, acc, enqueue_each)
  local evs, t, seen, distinct = {}, nil, {}, true
  local bufs = {}
  for i = 1, #bs do
    local b = list_buffer(fn, 1, bs, i)
    if t and b.type ~= t then
      fail(fn, "argument #1[%d]: expected a buffer of %s (as the first), got one of %s", i, t,
           b.type)
    end
    t = b.type
    distinct = distinct and not seen[b.root.device]
    seen[b.root.device] = true
    bufs[i] = b
  end
  if distinct then return combine(kind, enqueue_each(fn, kind, bufs, acc)) end
  for i, b in ipairs(bufs) do
    local q = b.device:default_queue()
    evs[i] = reduce_one(b, {async = true, queue = q, acc = acc})
    q:flush()
  end
  local got = {}
  for i, ev in ipairs(evs) do got[i] = ev:wait() end
  return combine(kind, got)
end

-- reduce.KIND of b split over devices: parts of b, each on a device (an
-- empty part gets nothing to do).
function S.reduce_devices(fn, kind, reduce_one, b, opts)
  local devices = check_devices(fn, 2, opts.devices)
  local buf = H.to_buffer(b)
  if H.class_of(buf) == "Buffer" and sole_device(devices, opts.shares, {buf}) then
    return reduce_one(buf, {acc = opts.acc})
  end
  local evs, before = {}, after_queues({buf.device})
  for i, part in ipairs(split_rows(fn, 2, #buf, devices, opts.shares)) do
    if part[2] > 0 then
      local q = devices[i]:default_queue()
      evs[#evs + 1] = reduce_one(buf:sub(part[1] + 1, part[1] + part[2]),
                                 {async = true, queue = q, acc = opts.acc, wait = before})
      q:flush()
    end
  end
  if #evs == 0 then return reduce_one(buf, {acc = opts.acc}) end   -- empty: sum is 0
  local got = {}
  for i, ev in ipairs(evs) do got[i] = ev:wait() end
  return combine(kind, got)
end

return S
