-- luagpu.tensor.shard: sharded tensors, one tensor in parts on several
-- devices (internal to luagpu.tensor; gpu.shard and gpu.replicate).
--
--   gpu.shard(x, devices [, dim])  x cut along dim (default 1) into one
--                                  part per device, each copied there
--   gpu.shard(list [, dim])        the tensors of list (one per device) as
--                                  the parts, no copy
--   gpu.replicate(x, devices)      a whole copy of x on each device
--
-- A sharded tensor keeps its parts (shards) on their devices: elementwise
-- ops and operators run shard by shard, each on its own device and queue,
-- lazily (a chain fuses into one kernel per shard, as on one device);
-- reductions reduce each shard at once and combine the partial results
-- (on the host for a whole reduction, on the first device along the
-- sharded dim); mm multiplies each shard of rows by B on its device;
-- xs:to(dev) (or xs:gather(dev)) puts the whole on one device. No op moves
-- a shard between devices except those (and mm's copy of a B that is not
-- replicated). A replicated tensor (dim nil) combines with a sharded one
-- by broadcasting on each device (a bias row over sharded rows).

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local OPS = require "luagpu.tensor.ops"
local TY = require "luagpu.core.types"

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring
local getmetatable, setmetatable, rawget, rawequal, next = getmetatable, setmetatable, rawget,
  rawequal, next
local mtype, format, concat = math.type, string.format, table.concat
local fail, typename, show = H.fail, H.typename, H.show
local is_tensor, show_shape, RELEASED, no_more = O.is_tensor, O.show_shape, O.RELEASED,
  O.no_more

local SH = {}
local RD                                    -- luagpu.reduce, loaded when asked
local Sharded = {}                          -- the methods
local SMT = {__name = "luagpu.ShardedTensor"}
SH.MT = SMT

------------------------------------------------------------------ checks

local function is_sharded(v) return getmetatable(v) == SMT end
SH.is_sharded = is_sharded

-- Sharded tensors that passed the whole check of parts below, or that
-- luagpu made from parts it knew to agree, with what that saw, in one
-- flat table: {list =, dim =, n =, t =, nd =, at = {[shard i] = i}, [i] =
-- its device, its shape's values from n + 1 + (i - 1) * nd on}. A
-- sharded tensor op after op is checked again only as far as telling that
-- none of that changed (each shard's buffer and fields are checked by the
-- op on it, at its launch, as for any tensor). Tensors as keys are raw
-- lookups: no rawequal per shard, and a script's __eq never answers.
local PASSED = setmetatable({}, {__mode = "k"})

-- What each sharded tensor was made with, in the same form (the record
-- made() remembers, or make()'s own {list =, dim =, n =, at =}):
-- a script's rawset of its fields or of its list's entries raises, even
-- where the parts would still agree.
local ORIGIN = setmetatable({}, {__mode = "k"})

-- The record of the parts in list (checked to agree, or known to).
local function record(list, dim)
  local n, first = #list, list[1]
  local nd = #first._shape
  local at = {}
  local m = {list = list, dim = dim, n = n, t = first._type, nd = nd, at = at}
  for i = 1, n do
    local x = list[i]
    local shape = x._shape
    at[x], m[i] = i, x._dev
    local base = n + (i - 1) * nd
    for k = 1, nd do m[base + k] = shape[k] end
  end
  return m
end

local function full_parts(fn, arg, s)
  PASSED[s] = nil
  local list, dim = rawget(s, "_shards"), rawget(s, "_dim")
  local o = ORIGIN[s]
  local changed = type(list) ~= "table" or getmetatable(list) ~= nil or
                  (dim ~= nil and (mtype(dim) ~= "integer" or dim < 1)) or
                  o and (list ~= o.list or dim ~= o.dim)
  if changed then fail(fn, "argument #%d: the sharded tensor's fields were changed", arg) end
  local first = nil
  for i = 1, #list do
    local x = rawget(list, i)
    if not is_tensor(x) then
      fail(fn, "argument #%d: the sharded tensor's shard %d is %s, not a tensor", arg, i,
           typename(x))
    end
    X.check(fn, arg, x, true)
    for j = 1, i - 1 do
      if rawget(list, j)._dev == x._dev then
        fail(fn, "argument #%d: the sharded tensor's shards %d and %d share a device", arg, j, i)
      end
    end
    if not first then first = x
    else
      local a, b = first._shape, x._shape
      local ok = x._type == first._type and #a == #b
      for k = 1, #a do if k ~= dim and a[k] ~= b[k] then ok = false end end
      if not ok then
        fail(fn, "argument #%d: the sharded tensor's shard %d (%s %s) does not match shard " ..
             "1 (%s %s)", arg, i, x._type, show_shape(b), first._type, show_shape(a))
      end
    end
  end
  if not first then fail(fn, "argument #%d: the sharded tensor has no shards", arg) end
  changed = dim and dim > #first._shape or o and #list ~= o.n
  for i = 1, o and not changed and o.n or 0 do
    if o.at[rawget(list, i)] ~= i then changed = true end
  end
  if changed then fail(fn, "argument #%d: the sharded tensor's fields were changed", arg) end
  PASSED[s] = record(list, dim)
  return list, dim
end

-- The shards of sharded tensor s (argument arg of fn), checked: a list of
-- live tensors on distinct devices, of one type, whose shapes agree but
-- along the sharded dim (all of them, replicated); returns the shards and
-- the dim (nil: replicated). The list is s's own, for the caller to read
-- within its call and never to write or hand out (FIELDS.shards copies).
local function parts(fn, arg, s)
  if getmetatable(s) ~= SMT then
    fail(fn, "argument #%d: expected a sharded tensor, got %s", arg, typename(s))
  end
  local m = PASSED[s]
  if m == nil then return full_parts(fn, arg, s) end
  -- (s's fields read plainly: a field a script removed reads nil through
  -- SMT.__index; the list's entries too, once it is known to have no
  -- metatable)
  local list, n = s._shards, m.n
  if list ~= m.list or s._dim ~= m.dim or getmetatable(list) ~= nil or #list ~= n then
    return full_parts(fn, arg, s)
  end
  local t, nd, at = m.t, m.nd, m.at
  local base = n
  for i = 1, n do
    local x = list[i]
    if at[x] ~= i then return full_parts(fn, arg, s) end
    local shape = x._shape
    if x._st == RELEASED or x._dev ~= m[i] or x._type ~= t or getmetatable(shape) ~= nil or
       #shape ~= nd then
      return full_parts(fn, arg, s)
    end
    for k = 1, nd do
      if shape[k] ~= m[base + k] then return full_parts(fn, arg, s) end
    end
    base = base + nd
  end
  return list, m.dim
end

local function make(shards, dim)
  local s = setmetatable({_shards = shards, _dim = dim}, SMT)
  local n = #shards
  local at = {}
  for i = 1, n do at[shards[i]] = i end
  local o = {list = shards, dim = dim, n = n, at = at}
  ORIGIN[s] = o
  return s
end

-- A sharded tensor of parts luagpu just made from checked ones (an op on
-- each shard), known to agree: remembered as checked.
local function made(shards, dim)
  local s = setmetatable({_shards = shards, _dim = dim}, SMT)
  local m = record(shards, dim)
  PASSED[s], ORIGIN[s] = m, m
  return s
end

-- Raises unless list (argument arg of fn, of what) has no key but 1..n.
local function check_list(fn, arg, list, n, what)
  for k in next, list do
    if mtype(k) ~= "integer" or k < 1 or k > n then
      fail(fn, "argument #%d: expected a list of %s, got a table with key %s%s", arg, what,
           show(k), n == 0 and "" or format(" (a hole after entry %d, or not a position)", n))
    end
  end
end

-- The device list (argument arg): a list of distinct live Devices.
local function device_list(fn, arg, devices)
  if type(devices) ~= "table" or getmetatable(devices) ~= nil then
    fail(fn, "argument #%d: expected a list of devices%s, got %s", arg,
         type(devices) == "table" and " (a table without a metatable)" or "", typename(devices))
  end
  local out, seen = {}, {}
  local n = rawget(devices, 1) ~= nil and #devices or 0
  if n == 0 and next(devices) == nil then
    fail(fn, "argument #%d: expected a list of devices, got an empty one", arg)
  end
  check_list(fn, arg, devices, n, "devices")
  for i = 1, n do
    local d = rawget(devices, i)
    local cls, released = H.class_of(d)
    if cls ~= "Device" or released then
      fail(fn, "argument #%d: entry %d: expected a luagpu.Device, got %s", arg, i,
           released and "a released device" or typename(d))
    end
    if seen[d] then fail(fn, "argument #%d: device %d and %d are the same", arg, seen[d], i) end
    seen[d] = i
    out[i] = d
  end
  return out
end

-- A tensor argument of fn (argument arg), realized when lazy.
local function tensor_arg(fn, arg, x)
  if not is_tensor(x) then fail(fn, "argument #%d: expected a tensor, got %s", arg, typename(x)) end
  return X.check(fn, arg, x)
end

------------------------------------------------------------------ making

-- x's own copy on dev (a new tensor also on x's own device).
local function copy_to(x, dev)
  if x._dev == dev then return x:clone() end
  return x:to(dev)
end

-- gpu.shard(x, devices [, dim]) or gpu.shard(list [, dim])
function SH.shard(x, devices, dim)
  local fn = "gpu.shard"
  if is_tensor(x) then
    x = tensor_arg(fn, 1, x)
    local devs = device_list(fn, 2, devices)
    if #x._shape == 0 then fail(fn, "argument #1: a 0-d tensor has no dim to shard") end
    local d = O.check_dim(fn, "argument #3", x, dim == nil and 1 or dim)
    local size, k = x._shape[d], #devs
    local shards, first = {}, 1
    for i, dev in ipairs(devs) do
      O.check_device_type(fn, dev, x._type)
      local n = size // k + (i <= size % k and 1 or 0)
      shards[i] = copy_to(x:slice(d, first, first + n - 1), dev)
      first = first + n
    end
    return make(shards, d)
  end
  if type(x) ~= "table" or getmetatable(x) ~= nil then
    fail(fn, "argument #1: expected a tensor or a list of tensors%s, got %s",
         type(x) == "table" and " (a table without a metatable)" or "", typename(x))
  end
  -- the parts given: argument #2 is the dim
  dim = devices
  local n = rawget(x, 1) ~= nil and #x or 0
  if n == 0 and next(x) == nil then
    fail(fn, "argument #1: expected a list of tensors, got an empty one")
  end
  check_list(fn, 1, x, n, "tensors")
  local shards = {}
  for i = 1, n do
    local t = rawget(x, i)
    if not is_tensor(t) then
      fail(fn, "argument #1: entry %d: expected a tensor, got %s", i, typename(t))
    end
    shards[i] = X.check(fn, 1, t)
  end
  if #shards[1]._shape == 0 then fail(fn, "argument #1: a 0-d tensor has no dim to shard") end
  local d = O.check_dim(fn, "argument #2", shards[1], dim == nil and 1 or dim)
  local s = make(shards, d)
  parts(fn, 1, s)
  return s
end

-- gpu.replicate(x, devices): x whole on every device.
function SH.replicate(x, devices)
  local fn = "gpu.replicate"
  x = tensor_arg(fn, 1, x)
  local devs = device_list(fn, 2, devices)
  local shards = {}
  for i, dev in ipairs(devs) do
    O.check_device_type(fn, dev, x._type)
    shards[i] = copy_to(x, dev)
  end
  return make(shards, nil)
end

------------------------------------------------------------------ fields

local FIELDS = {}
function FIELDS.dim(s) local _, d = parts("sharded:dim", 0, s) return d end
function FIELDS.type(s) return parts("sharded:type", 0, s)[1]._type end
function FIELDS.ndim(s) return #parts("sharded:ndim", 0, s)[1]._shape end
function FIELDS.shards(s)
  local list = parts("sharded:shards", 0, s)
  return table.move(list, 1, #list, 1, {})
end
function FIELDS.devices(s)
  local out = {}
  for i, x in ipairs(parts("sharded:devices", 0, s)) do out[i] = x._dev end
  return out
end
function FIELDS.shape(s)
  local list, d = parts("sharded:shape", 0, s)
  local shape = {table.unpack(list[1]._shape)}
  if d then
    local n = 0
    for _, x in ipairs(list) do n = n + x._shape[d] end
    shape[d] = n
  end
  return shape
end

-- tostring(xs): a header (type, whole shape, layout, devices), then the
-- values: the whole's as one tensor prints them (gathered on the first
-- shard's device) up to SHOW_WHOLE elements, past that each shard's own
-- summary (nothing moves between devices to print a large one).
local SHOW_WHOLE <const> = 1000
local gathered             -- whole() under gathering, below
SMT.__tostring = function(s)
  local ok, list, d = pcall(parts, "sharded:tostring", 0, s)
  if not ok then return "luagpu.ShardedTensor (broken: " .. tostring(list) .. ")" end
  local names, shape = {}, FIELDS.shape(s)
  for i, x in ipairs(list) do names[i] = H.device_label(x._dev) end
  local head = format("luagpu.ShardedTensor<%s>%s %s over %d device%s (%s)", list[1]._type,
                      show_shape(shape), d and "along dim " .. d or "replicated", #list,
                      #list == 1 and "" or "s", concat(names, ", "))
  local n = 1
  for _, m in ipairs(shape) do n = n * m end
  local shown
  ok, shown = pcall(function()
    if n <= SHOW_WHOLE then
      return (tostring(gathered("sharded:tostring", s, list[1]._dev, false)):gsub("^[^\n]*\n", ""))
    end
    local lines = {}
    for i, x in ipairs(list) do
      lines[i] = format("shard %d, on %s: %s", i, names[i], tostring(x))
      if d == nil then break end           -- replicated: the first is the whole
    end
    return concat(lines, "\n")
  end)
  if not ok then return head .. ": " .. tostring(shown) end
  return head .. ":\n" .. shown
end

------------------------------------------------------------------ building a type

-- SH.build_type(t): what a sharded type's metatable t.mt and method table
-- t.methods share (gpu.shard's here, mpi.shard's in luagpu.mpi_shard):
--   a method per elementwise op of the op table (unless t.methods has its
--   own of that name) and the operators, run on each shard by
--   t.map1(fn, f, s) and t.map2(fn, f, a, b); t.is(v) says v is of the type
--   astype(type), by t.map1 (the type checked first)
--   __index: a method, else a field (t.fields[k](s)), else a refusal of
--   the tensor methods the type lacks (t.instead: what to do instead)
--   read-only fields, __close (t.methods.release), and __help (the lines
--   of t.describe; the op table's too when t.op_help)
-- Messages name the type by t.prefix ("sharded": "sharded:add"), t.name
-- ("sharded tensor") and t.a_name ("a sharded tensor").
function SH.build_type(t)
  local mt, methods, fields, is = t.mt, t.methods, t.fields, t.is
  local map1, map2, prefix = t.map1, t.map2, t.prefix
  for _, row in ipairs(OPS.list) do
    local name = row.name
    local names = {}
    if row.method then names[1] = name end
    for _, a in ipairs(row.aliases) do names[#names + 1] = a end
    local fn = prefix .. ":" .. name
    local f
    -- (each op's function on one part made once, not per call)
    if row.arity == 1 then
      local one = function(x) return x[name](x) end
      f = function(s, ...)
        no_more(fn, 1, ...)
        return map1(fn, one, s)
      end
    elseif row.arity == 2 then
      local one = function(x, y) return x[name](x, y) end
      f = function(a, b, ...)
        if not is(a) then
          fail(fn, "expected %s (call it as xs:%s(y)), got %s", t.a_name, name, typename(a))
        end
        no_more(fn, 2, ...)
        return map2(fn, one, a, b)
      end
    end
    if f then
      for _, n in ipairs(names) do methods[n] = methods[n] or f end
      if row.meta then
        local op = row.meta
        local mfn = prefix .. " " .. op:sub(3)
        if row.arity == 1 then
          local one = function(x) return O.MT[op](x, x) end
          mt[op] = function(a) return map1(mfn, one, a) end
        else
          local one = function(x, y) return O.MT[op](x, y) end
          mt[op] = function(a, b) return map2(mfn, one, a, b) end
        end
      end
    end
  end

  -- xs:astype(t): each part converted (the type checked first, so that
  -- its message names the sharded call)
  local astype = prefix .. ":astype"
  methods.astype = methods.astype or function(s, tp, ...)
    O.check_type(astype, "argument #1", tp)
    no_more(astype, 2, ...)
    return map1(astype, function(x) return x:astype(tp) end, s)
  end

  mt.__index = function(s, k)
    local m = methods[k]
    if m then return m end
    local f = fields[k]
    if f then return f(s) end
    if type(k) == "string" and O.methods[k] then
      return function()
        fail(prefix .. ":" .. k, "not supported on %s: %s", t.a_name, t.instead)
      end
    end
    -- an internal field a script removed with rawset: nil here, and the
    -- check of the parts names it
    if type(k) == "string" and k:byte(1) == 95 then return nil end
    -- as a tensor's: a number is x[i] (which a sharded tensor lacks), and
    -- any other key raises
    if type(k) == "number" then
      fail(prefix .. "[i]", "not supported on %s: %s", t.a_name, t.instead)
    end
    if O.fields[k] then
      fail(prefix .. "." .. k, "not supported on %s: %s", t.a_name, t.instead)
    end
    fail(t.name, "no field or method %s%s", type(k) == "string" and "'" .. k .. "'" or show(k),
         H.did_you_mean(k, methods, fields))
  end

  -- #xs: its number of elements, as a tensor's
  mt.__len = function(s) return O.numel(fields.shape(s)) end

  mt.__newindex = function(_, k)
    fail(t.name, "its fields are read-only (assigning %s)", show(k))
  end

  mt.__close = function(s) methods.release(s) end

  -- What the REPL's help(xs) and Tab show: the fields, and a line per method.
  mt.__methods = methods
  mt.__help = function()
    local lines = {}
    for name in pairs(methods) do lines[name] = t.describe[name] or "xs:" .. name .. "(...)" end
    if t.op_help then
      for _, row in ipairs(OPS.list) do
        local call = row.arity == 1 and "xs:%s()" or "xs:%s(ys | number)"
        if row.method then
          lines[row.name] = format(call .. ": elementwise %s on each shard", row.name, row.name)
        end
        for _, a in ipairs(row.aliases) do
          lines[a] = format(call .. ": the same as xs:%s", a, row.name)
        end
      end
    end
    local names = {}
    for name in pairs(fields) do names[#names + 1] = name end
    table.sort(names)
    return {fields = names, methods = lines}
  end
end

------------------------------------------------------------------ elementwise

-- The parts of replicated lr (argument arg) that go with the shards ls
-- (sharded along d), as a whole tensor broadcasts against the whole
-- (NumPy's rule, dims aligned from the last): lr itself where its size
-- along the sharded dim is 1 or it has no such dim, else, where it is the
-- whole's size, each shard's slice of it.
local function matching(fn, arg, ls, d, lr, ns, nr)
  ns, nr = ns or #ls[1]._shape, nr or #lr[1]._shape
  local k = d - (ns - nr)
  local size = k >= 1 and lr[1]._shape[k] or 1
  if size == 1 then return lr end
  local total = 0
  for i = 1, #ls do total = total + ls[i]._shape[d] end
  if total == 1 then
    -- the whole's size 1 there broadcasts: its one shard of 1 takes lr
    -- whole, the empty ones none of it (an uneven result)
    local out = {}
    for i = 1, #ls do out[i] = ls[i]._shape[d] == 1 and lr[i] or lr[i]:slice(k, 1, 0) end
    return out
  end
  if size ~= total then
    fail(fn, "argument #%d: a replicated tensor of size %d along the sharded dim %d: give " ..
         "the whole (%d) or 1 (broadcast)", arg, size, d + (nr > ns and nr - ns or 0), total)
  end
  local out, first = {}, 1
  for i = 1, #ls do
    local m = ls[i]._shape[d]
    out[i] = lr[i]:slice(k, first, first + m - 1)
    first = first + m
  end
  return out
end

-- The layout that a and b (sharded tensors) share, for an op of fn: the
-- parts of each, paired by device, and the result's sharded dim (dims
-- align from the last, as in broadcasting). A replicated operand pairs
-- with any layout over the same devices (broadcast on each device, or
-- sliced as the shards where it spans the sharded dim); two sharded ones
-- must be sharded alike.
-- The parts of sharded tensors a and b, paired by device (shard i of
-- each on one device), and their dims.
local function same_devices(fn, a, b)
  local la, da = parts(fn, 1, a)
  local lb, db = parts(fn, 2, b)
  if #la ~= #lb then
    fail(fn, "the sharded tensors have %d and %d shards", #la, #lb)
  end
  for i = 1, #la do
    if la[i]._dev ~= lb[i]._dev then
      fail(fn, "shard %d of the sharded tensors is on two devices (%s and %s)", i,
           H.device_label(la[i]._dev), H.device_label(lb[i]._dev))
    end
  end
  return la, da, lb, db
end

local function paired(fn, a, b)
  local la, da, lb, db = same_devices(fn, a, b)
  local na, nb = #la[1]._shape, #lb[1]._shape
  local n = na > nb and na or nb
  if da and db then
    if da + (n - na) ~= db + (n - nb) then
      fail(fn, "the tensors are sharded along dims %d and %d (of %d and %d dims)", da, db,
           na, nb)
    end
    for i = 1, #la do
      if la[i]._shape[da] ~= lb[i]._shape[db] then
        fail(fn, "shard %d holds %d and %d along dim %d: shard both alike", i,
             la[i]._shape[da], lb[i]._shape[db], da)
      end
    end
    return la, lb, da + (n - na)
  elseif da then
    return la, matching(fn, 2, la, da, lb), da + (n - na)
  elseif db then
    return matching(fn, 1, lb, db, la), lb, db + (n - nb)
  end
  return la, lb, nil
end

-- Raises error e (of an op on the shards, caught) again at the script's
-- call: a tensor op's message names fn, the sharded call, instead
-- ("luagpu: tensor:add: argument #2: -4 does not fit uchar" becomes
-- "luagpu: sharded add: ..."); luagpu's own keep their name.
local function rethrow(fn, e)
  if type(e) == "string" then
    local name, rest = e:match("^luagpu: ([^:]+[:%[%.]?[%w_%]]*): (.*)$")
    if name then
      if name:match("^tensor") then name = fn end
      fail(name, "%s", rest)
    end
  end
  error(e, 0)
end
SH.rethrow = rethrow

-- out[i] = f(la[i], lb[i]) for each shard (lb: a list, or a number that
-- goes second, or first when before). The shards after the first take the
-- first's node made again over theirs (X.again: one op's checks, not one
-- per shard), or where that does not apply, f.
local again = X.again
local function each2(f, la, lb, out, before)
  if type(lb) == "table" then
    local a, b = la[1], lb[1]
    local r = f(a, b)
    out[1] = r
    for i = 2, #la do out[i] = again(r, a, b, la[i], lb[i]) or f(la[i], lb[i]) end
  elseif before then
    local r = f(lb, la[1])
    out[1] = r
    for i = 2, #la do out[i] = again(r, lb, la[1], lb, la[i]) or f(lb, la[i]) end
  else
    local r = f(la[1], lb)
    out[1] = r
    for i = 2, #la do out[i] = again(r, la[1], lb, la[i], lb) or f(la[i], lb) end
  end
  return out
end

local function each1(f, list, out, ...)
  local a = list[1]
  local r = f(a, ...)
  out[1] = r
  local plain = select("#", ...) == 0
  for i = 2, #list do
    out[i] = plain and again(r, a, nil, list[i]) or f(list[i], ...)
  end
  return out
end

-- The op f over the shards of the operands (sharded tensors or numbers:
-- at least one sharded); arg names fn's operands in messages.
local function map2(fn, f, a, b)
  local sa, sb = getmetatable(a) == SMT, getmetatable(b) == SMT
  if sa and sb then
    local la, lb, d = paired(fn, a, b)
    local ok, out = pcall(each2, f, la, lb, {})
    if not ok then rethrow(fn, out) end
    return made(out, d)
  end
  local s, v, first = a, b, true
  if not sa then s, v, first = b, a, false end
  if type(v) ~= "number" then
    if is_tensor(v) then
      fail(fn, "a sharded tensor with a tensor on one device: shard it alike (gpu.shard) " ..
           "or replicate it (gpu.replicate), or put the sharded one on one device " ..
           "(xs:to(dev))")
    end
    fail(fn, "argument #%d: expected a sharded tensor or a number, got %s", first and 2 or 1,
         typename(v))
  end
  local list, d = parts(fn, first and 1 or 2, s)
  local ok, out = pcall(each2, f, list, v, {}, not first)
  if not ok then rethrow(fn, out) end
  return made(out, d)
end

local function map1(fn, f, s, ...)
  local list, d = parts(fn, 0, s)
  local ok, out = pcall(each1, f, list, {}, ...)
  if not ok then rethrow(fn, out) end
  return made(out, d)
end

-- xs:clamp(lo, hi): on each shard (xs:astype: SH.build_type)
function Sharded.clamp(s, lo, hi, ...)
  no_more("sharded:clamp", 3, ...)
  for i, v in ipairs{lo, hi} do
    if v ~= nil and type(v) ~= "number" then
      fail("sharded:clamp", "argument #%d: expected a number or nil, got %s%s", i,
           typename(v), (is_tensor(v) or is_sharded(v)) and
           " (bounds as tensors are not supported on a sharded tensor)" or "")
    end
  end
  return map1("sharded:clamp", function(x) return x:clamp(lo, hi) end, s)
end

-- xs:eval(): every shard evaluated (each launch on its own device first,
-- then nothing waited for). Every shard's output block is taken first, so
-- that a collection the pool may run comes before the first launch, not
-- between two devices' launches.
function Sharded.eval(s, ...)
  local list = parts("sharded:eval", 0, s)
  no_more("sharded:eval", 1, ...)
  local blocks = {}
  for i, x in ipairs(list) do blocks[i] = X.storage_for(x) or false end
  for i, x in ipairs(list) do
    if blocks[i] then X.realize(x, blocks[i]) else x:eval() end
  end
  return s
end

-- xs:release(): every shard's memory back now.
function Sharded.release(s, ...)
  no_more("sharded:release", 1, ...)
  -- each shard's release twice does nothing, so neither does this (<close>
  -- after an explicit release)
  local list = is_sharded(s) and rawget(s, "_shards")
  local ok = type(list) == "table" and getmetatable(list) == nil
  for i = 1, ok and #list or 0 do ok = ok and is_tensor(rawget(list, i)) end
  if not ok then parts("sharded:release", 0, s) end
  for i = 1, #list do rawget(list, i):release() end
end

------------------------------------------------------------------ reductions

-- How partial results combine: on the host (whole) and as tensors.
local COMBINE = {
  sum = {function(a, b) return a + b end, function(a, b) return a + b end},
  prod = {function(a, b) return a * b end, function(a, b) return a * b end},
  -- (min and max skip NaNs, as one tensor's: NaN only when both are)
  min = {function(a, b) return (a < b or b ~= b) and a or b end,
         function(a, b) return a:min(b) end},
  max = {function(a, b) return (a > b or b ~= b) and a or b end,
         function(a, b) return a:max(b) end},
}

local REDUCE_OPTIONS = H.option_names({"keepdim", "type"}, "option ")

-- A reduction's options (argument #2: keepdim, or a table of keepdim and
-- type): keepdim, type.
local function reduce_options(fn, opts)
  if type(opts) == "table" then
    local o = H.check_options(fn, 2, opts, REDUCE_OPTIONS)
    if o.keepdim ~= nil and type(o.keepdim) ~= "boolean" then
      fail(fn, "argument #2: option keepdim: expected a boolean, got %s", show(o.keepdim))
    end
    return o.keepdim == true, o.type
  end
  if opts ~= nil and type(opts) ~= "boolean" then
    fail(fn, "argument #2: keepdim: expected a boolean, got %s", show(opts))
  end
  return opts == true, nil
end

-- A whole reduction of the shards in list: every shard's passes launched
-- first (luagpu.reduce's LAUNCH form where x:sum() takes it, else a
-- reduction into one element), then every result's read enqueued, then
-- the reads waited for (all at once), combined on the host (a mean from the shards'
-- sums, or their means times their counts). (On NVIDIA's driver a
-- blocking read costs about 15 us more than a read enqueued while the
-- passes run.)
local function whole(fn, op, list)
  RD = RD or require "luagpu.reduce"
  -- got[k]: the k-th non-empty shard's read (a function: luagpu.reduce's
  -- LAUNCH form), its read's Event, or false where how[k] gives its value
  -- (how: nil while every one is a read or an Event)
  local got, how, k, n = {}, nil, 0, 0
  local launch = (op == "sum" or op == "min" or op == "max") and RD[op]
  local LAUNCH, elements_of = RD.LAUNCH, O.elements_of
  for i = 1, #list do
    local x = list[i]
    local shape = x._shape
    local c = #shape == 1 and shape[1] or O.numel(shape)
    if c > 0 then
      local flat = x
      if #shape ~= 1 or x._expr or (c ~= 1 and x._strides[1] ~= 1) then
        flat = x:reshape({c}):contiguous()
      end
      k = k + 1
      if launch then
        got[k] = launch(elements_of(flat), LAUNCH)
      elseif op == "mean" and flat._type == "float" then   -- a sum in double, for the mean
        got[k] = RD.sum(O.elements_of(flat), {async = true, acc = "double"})
      else
        local r = flat[op](flat, 1)
        how = how or {}
        how[k] = op == "mean" and function() return r:item() * c end or
                 function() return r:item() end
        got[k] = false
      end
      n = n + c
    end
  end
  if k == 0 then return list[1][op](list[1]) end    -- no element: as one device says
  -- the reads enqueued, then waited for at once (one clWaitForEvents)
  local values
  if how == nil then
    for j = 1, k do
      local g = got[j]
      if type(g) == "function" then got[j] = g() end
    end
    values = {gpu.wait(got)}
  else
    local evs, at = {}, {}
    for j = 1, k do
      local g = got[j]
      if type(g) == "function" then g = g() end
      if g then evs[#evs + 1], at[#evs + 1] = g, j end
    end
    values = {}
    if #evs > 0 then
      local w = {gpu.wait(evs)}
      for e, j in ipairs(at) do values[j] = w[e] end
    end
    for j = 1, k do
      if values[j] == nil then values[j] = how[j]() end
    end
  end
  local add = COMBINE[op == "mean" and "sum" or op][1]
  if list[1]._type == "ulong" and (op == "min" or op == "max") then
    -- (ulong values from 2^63 are negative Lua integers: compared as ulong)
    local ult = math.ult
    add = op == "min" and function(a, b) return ult(b, a) and b or a end
                      or function(a, b) return ult(a, b) and b or a end
  end
  local acc = values[1]
  for j = 2, k do acc = add(acc, values[j]) end
  if op == "mean" then return acc / n end
  return acc
end

-- v (a reduction's result: a Lua number, a tensor or a sharded one) as
-- type t (the option type), as one tensor's reduction converts it:
-- integers wrap as C converts, float rounds.
local function as_type(t, v)
  if type(v) ~= "number" then
    if is_sharded(v) then
      local out = {}
      for i, x in ipairs(rawget(v, "_shards")) do out[i] = x._type == t and x or x:astype(t) end
      return made(out, rawget(v, "_dim"))
    end
    return v._type == t and v or v:astype(t):eval()
  end
  if t == "float" then return (string.unpack("f", string.pack("f", v))) end
  if t == "double" then return v + 0.0 end
  local bits = TY.SIZES[t] * 8
  v = math.tointeger(v) or v
  if bits == 64 or mtype(v) ~= "integer" then return v end
  v = v % (1 << bits)
  if TY.SIGNED[t] and v >= 1 << (bits - 1) then v = v - (1 << bits) end
  return v
end

-- The reduction op of the shards in list (sharded along d) along dim
-- (nil: whole), keepdim keep.
local function reduce_parts(fn, op, list, d, dim, keep)
  local total = 0
  for _, x in ipairs(list) do total = total + x._shape[d] end
  if dim == nil then
    if op == "min" or op == "max" then
      local n = 0
      for _, x in ipairs(list) do n = n + O.numel(x._shape) end
      if n == 0 then fail(fn, "the %s of an empty tensor is undefined", op) end
    end
    local r = whole(fn, op, list)
    -- (float partials combined in double: rounded as one tensor's)
    if list[1]._type == "float" and op ~= "mean" then r = as_type("float", r) end
    return r
  end
  local k = O.check_dim(fn, "argument #1", list[1], dim)
  if k ~= d then                              -- along another dim: still sharded
    local out = {}
    for i, x in ipairs(list) do out[i] = x[op](x, k, keep) end
    return make(out, (not keep and k < d) and d - 1 or d)
  end
  -- along the sharded dim: each shard's partial (dim kept), combined on
  -- the first device (a mean's: sums in double, but float's, as one
  -- tensor's mean accumulates)
  if total == 0 and (op == "min" or op == "max") then
    fail(fn, "the %s of an empty dim is undefined (dim %d has size 0)", op, k)
  end
  local home = list[1]._dev
  local acc
  for _, x in ipairs(list) do
    if x._shape[d] > 0 then
      local p
      if op == "mean" then
        p = (x._type == "float" and x or x:astype("double")):sum(k, true)
      else
        p = x[op](x, k, true)
      end
      p = p:to(home)
      acc = acc and COMBINE[op == "mean" and "sum" or op][2](acc, p) or p
    end
  end
  if not acc then return list[1][op](list[1], k, keep) end
  if op == "mean" then acc = acc / total end
  acc = acc:eval()
  if not keep then acc = acc:squeeze(k) end
  return acc
end

local function reduction(op)
  local fn = "sharded:" .. op
  local empty = op == "min" or op == "max"
  return function(s, dim, opts, ...)
    local list, d = parts(fn, 0, s)
    no_more(fn, 3, ...)
    if dim == nil and opts == nil and d ~= nil and not empty then
      -- xs:sum(), the whole: what reduce_parts does, without its options
      local ok, r = pcall(whole, fn, op, list)
      if not ok then rethrow(fn, r) end
      if op ~= "mean" and list[1]._type == "float" then r = as_type("float", r) end
      return r
    end
    if type(dim) == "table" then
      fail(fn, "argument #1: several dims at once are not supported on a sharded tensor")
    end
    if d == nil then                          -- replicated: any copy answers
      local ok, r = pcall(list[1][op], list[1], dim, opts)
      if not ok then rethrow(fn, r) end
      return r
    end
    local keep, t = reduce_options(fn, opts)
    O.check_keepdim(fn, dim, keep)
    if t == nil then
      local ok, r = pcall(reduce_parts, fn, op, list, d, dim, keep)
      if not ok then rethrow(fn, r) end
      return r
    end
    if op == "min" or op == "max" then
      fail(fn, "argument #2: option type is for sum, prod and mean, not %s", op)
    end
    O.check_type(fn, "argument #2: option type", t)
    local conv = {}
    for i, x in ipairs(list) do
      O.check_device_type(fn, x._dev, t)
      conv[i] = x:astype(t)
    end
    list = conv
    local ok, r = pcall(reduce_parts, fn, op, list, d, dim, keep)
    if not ok then rethrow(fn, r) end
    return as_type(t, r)
  end
end

for _, op in ipairs{"sum", "prod", "mean"} do Sharded[op] = reduction(op) end
-- xs:min(ys) / xs:max(ys) with a sharded ys: elementwise; else reductions
for _, op in ipairs{"min", "max"} do
  local fn, reduce = "sharded:" .. op, reduction(op)
  local function each(x, y) return x[op](x, y) end
  Sharded[op] = function(s, a, ...)
    if is_sharded(a) then
      no_more(fn, 2, ...)
      return map2(fn, each, s, a)
    end
    return reduce(s, a, ...)
  end
end

------------------------------------------------------------------ products

-- xs:mm(b): each shard of xs's rows (sharded along dim 1) times b on its
-- device: b replicated over xs's devices (gpu.replicate), or a tensor
-- (copied to each device that lacks it, each call), or, for batches
-- (3-d), sharded along dim 1 alike. The product sharded along dim 1.
function Sharded.mm(s, b, ...)
  local fn = "sharded:mm"
  local list, d = parts(fn, 0, s)
  no_more(fn, 2, ...)
  if d ~= 1 then
    fail(fn, "expected a tensor sharded along dim 1 (rows, or batches), got one %s",
         d and "sharded along dim " .. d or "replicated")
  end
  local rhs, alike = {}, false
  if is_sharded(b) then
    local _, _, lb, db = same_devices(fn, s, b)
    alike = db ~= nil
    if db ~= nil and not (db == 1 and #list[1]._shape == 3) then
      fail(fn, "argument #1: expected a replicated tensor (gpu.replicate), or batches " ..
           "sharded alike, got one sharded along dim %d", db)
    end
    for i = 1, db and #list or 0 do
      if list[i]._shape[1] ~= lb[i]._shape[1] then
        fail(fn, "shard %d holds %d and %d batches: shard both alike", i,
             list[i]._shape[1], lb[i]._shape[1])
      end
    end
    rhs = lb
  elseif is_tensor(b) then
    b = tensor_arg(fn, 1, b)
    for i, x in ipairs(list) do rhs[i] = b._dev == x._dev and b or b:to(x._dev) end
  else
    fail(fn, "argument #1: expected a tensor or a replicated tensor, got %s", typename(b))
  end
  -- batches (xs of 3 dims) times a whole b of batches: each shard's
  -- batches times b's (b's batch dim aligned from the last, as broadcasting
  -- does), or b's one batch
  local na, nb = #list[1]._shape, #rhs[1]._shape
  if not alike and na >= 3 and nb >= 3 then
    rhs = matching(fn, 1, list, 1, rhs, na - 2, nb - 2)
  end
  local ok, out = pcall(each2, list[1].mm, list, rhs, {})
  if not ok then rethrow(fn, out) end
  -- (a b of more dims than xs moves xs's rows: dims align from the last)
  return make(out, 1 + #out[1]._shape - na)
end

------------------------------------------------------------------ gathering

-- The whole of sharded s on dev (shards copied there and joined along the
-- sharded dim; a replicated one: the copy on dev, or the first's copied).
-- own: the result is the caller's, never a shard itself (a shard already
-- on dev is cloned); else it may be one, to be read only.
local function whole(fn, s, dev, own)
  local list, d = parts(fn, 0, s)
  local cls, released = H.class_of(dev)
  if cls ~= "Device" or released then
    fail(fn, "argument #1: expected a luagpu.Device, got %s",
         released and "a released device" or typename(dev))
  end
  if d == nil or #list == 1 then
    for _, x in ipairs(list) do
      if x._dev == dev then return own and x:clone() or x end
    end
    return list[1]:to(dev)
  end
  local moved = {}
  for i, x in ipairs(list) do moved[i] = x:to(dev) end
  return require("luagpu.tensor.join").cat(moved, d)
end

gathered = whole

-- xs:to(dev): the whole tensor on dev, a tensor of its own (a copy even
-- where a shard already is the whole on dev: writing it never writes xs).
function Sharded.to(s, dev, ...)
  no_more("sharded:to", 2, ...)
  return whole("sharded:to", s, dev, true)
end
Sharded.gather = Sharded.to

-- xs:get(), xs:totable(): the whole, as one device's tensor gives them
-- (on the first shard's device; read there, no copy of a shard on it).
local function first_device(fn, s) return parts(fn, 0, s)[1]._dev end
function Sharded.get(s, ...)
  no_more("sharded:get", 1, ...)
  return whole("sharded:get", s, first_device("sharded:get", s), false):get()
end
function Sharded.totable(s, ...)
  no_more("sharded:totable", 1, ...)
  return whole("sharded:totable", s, first_device("sharded:totable", s), false):totable()
end

------------------------------------------------------------------ the type

-- What the REPL's help(xs) and Tab show for the methods above (the
-- elementwise ones come from the op table).
local DESCRIBE = {
  astype = "xs:astype(type): each shard converted",
  clamp = "xs:clamp(lo, hi): each shard limited to lo..hi (numbers)",
  eval = "xs:eval(): every shard's pending expression launched, each on its device",
  release = "xs:release(): every shard's memory back now",
  sum = "xs:sum([dim [, keepdim]]): whole (a number), or along a dim",
  prod = "xs:prod([dim [, keepdim]]): whole (a number), or along a dim",
  mean = "xs:mean([dim [, keepdim]]): whole (a number), or along a dim",
  min = "xs:min([dim [, keepdim]] | ys): the smallest, or elementwise with a sharded ys",
  max = "xs:max([dim [, keepdim]] | ys): the largest, or elementwise with a sharded ys",
  mm = "xs:mm(b): each shard of rows times b (replicated, or a tensor copied to each device)",
  to = "xs:to(dev): the whole tensor on dev, a copy (shards copied there and joined)",
  gather = "xs:gather(dev): the same as xs:to(dev)",
  get = "xs:get(): the whole as a host array",
  totable = "xs:totable(): the whole as nested Lua tables",
}
SH.build_type{mt = SMT, methods = Sharded, fields = FIELDS, is = is_sharded,
              map1 = map1, map2 = map2, prefix = "sharded", name = "sharded tensor",
              a_name = "a sharded tensor", describe = DESCRIBE, op_help = true,
              instead = "put it on one device first (xs:to(dev)), or run it on each of " ..
                        "xs.shards"}

SH.methods = Sharded
SH.reduce_options, SH.as_type = reduce_options, as_type
return SH
