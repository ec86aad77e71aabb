-- luagpu.mpi_shard: sharded tensors over MPI, whose shards are the ranks'
-- (mpi.shard and mpi.sharded; scripts reach them through luagpu.mpi).
--
--   mpi.shard(x [, dim])      x, the same tensor on every rank, cut along
--                             dim (default 1): each rank keeps its part
--                             (rank r the r+1-th, as gpu.shard cuts)
--   mpi.sharded(part [, dim]) each rank's own part; the parts' sizes along
--                             dim are exchanged once (the other dims must
--                             agree on every rank)
--
-- The same operations as gpu.shard's over a script's devices, run on each
-- rank's part at once: elementwise ops and operators (with numbers, with
-- another tensor sharded alike, or with a plain tensor every rank holds
-- alike, broadcast on each rank: a bias row), whole reductions (each part
-- reduced, the numbers combined by one allreduce), reductions along a dim
-- (along another dim: still sharded; along the sharded dim: the parts'
-- partial results combined by an allreduce into a plain tensor every rank
-- holds), mm (rows of A sharded, B a plain tensor every rank holds), and
-- xs:gather() / xs:allgather() (the whole tensor on every rank). Nothing
-- moves between ranks but in those reductions and gathers. Every rank must
-- call the same operations in the same order (they are collective where
-- they move data), as with any MPI program.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local SH = require "luagpu.tensor.shard"
local TY = require "luagpu.core.types"

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring
local getmetatable, setmetatable, rawget = getmetatable, setmetatable, rawget
local mtype, format = math.type, string.format
local fail, typename, show = H.fail, H.typename, H.show
local is_tensor, show_shape, no_more = O.is_tensor, O.show_shape, O.no_more

local MS = {}
local Methods = {}
local MMT = {__name = "luagpu.MpiShardedTensor"}
MS.MT = MMT

local mpi                                   -- luagpu.mpi, given by init
local join                                  -- luagpu.tensor.join, loaded when asked

-- luagpu.mpi hands itself over (it requires this module, not the reverse).
function MS.init(m) mpi = m end

------------------------------------------------------------------ checks

local function is_msharded(v) return getmetatable(v) == MMT end

-- What each MPI-sharded tensor was made with: a script's rawset of its
-- fields raises, even where they would still agree.
local ORIGIN = setmetatable({}, {__mode = "k"})

-- The part, dim and sizes of sharded s (argument arg of fn), checked: a
-- live tensor whose size along dim is this rank's entry of sizes (a list
-- of one size per rank).
local function fields(fn, arg, s)
  if not is_msharded(s) then
    fail(fn, "argument #%d: expected an MPI-sharded tensor, got %s", arg, typename(s))
  end
  local x, d, sizes = rawget(s, "_part"), rawget(s, "_dim"), rawget(s, "_sizes")
  local o = ORIGIN[s]
  if not is_tensor(x) or mtype(d) ~= "integer" or type(sizes) ~= "table" or
     getmetatable(sizes) ~= nil or #sizes ~= mpi.size or
     o and (o[1] ~= x or o[2] ~= d or o[3] ~= sizes) then
    fail(fn, "argument #%d: the MPI-sharded tensor's fields were changed", arg)
  end
  X.check(fn, arg, x, true)
  if d < 1 or d > #x._shape or x._shape[d] ~= rawget(sizes, mpi.rank + 1) then
    fail(fn, "argument #%d: the MPI-sharded tensor's fields were changed", arg)
  end
  for i = 1, #sizes do
    local n = rawget(sizes, i)
    if mtype(n) ~= "integer" or n < 0 then
      fail(fn, "argument #%d: the MPI-sharded tensor's fields were changed", arg)
    end
  end
  return x, d, sizes
end

-- The element types as numbers, to compare the ranks' in one allgather.
local TYPE_CODE = {char = 1, uchar = 2, short = 3, ushort = 4, int = 5, uint = 6, long = 7,
                   ulong = 8, float = 9, double = 10}

-- Raises on every rank unless every rank brings v (fn's argument #1, what).
local function same_everywhere(fn, v, what)
  local got = mpi.allgather(v)
  for r = 2, #got do
    if got[r] ~= got[1] then
      fail(fn, "argument #1: the ranks' tensors differ in %s (%s on rank 0, %s on rank %d)",
           what, tostring(got[1]), tostring(got[r]), r - 1)
    end
  end
  return got
end

-- This rank's first position along the sharded dim (1-based).
local function first_of(sizes)
  local first = 1
  for r = 1, mpi.rank do first = first + sizes[r] end
  return first
end

local function total_of(sizes)
  local n = 0
  for _, k in ipairs(sizes) do n = n + k end
  return n
end

local function make(x, d, sizes)
  local s = setmetatable({_part = x, _dim = d, _sizes = sizes}, MMT)
  ORIGIN[s] = {x, d, sizes}
  return s
end

local function check_dim(fn, arg, x, dim)
  return O.check_dim(fn, "argument #" .. arg, x, dim == nil and 1 or dim)
end

-- The dim (argument #2) every rank gives, checked: a rank whose dim is bad
-- or differs from the others' raises on every rank (one raising alone
-- would leave the others waiting in the next collective).
local function agreed_dim(fn, x, dim)
  local ok, d = pcall(check_dim, fn, 2, x, dim)
  local got = mpi.allgather(ok and d or 0)
  for r = 2, #got do
    if got[r] ~= got[1] then
      local function show_dim(v) return v == 0 and "a bad one" or tostring(v) end
      fail(fn, "argument #2: the ranks shard along different dims (%s on rank 0, %s on rank %d)",
           show_dim(got[1]), show_dim(got[r]), r - 1)
    end
  end
  if not ok then error(d, 0) end
  return d
end

------------------------------------------------------------------ making

-- mpi.shard(x [, dim]): rank r keeps the r+1-th of size parts of x along
-- dim (the first size % ranks parts one longer), copied.
function MS.shard(x, dim)
  local fn = "mpi.shard"
  if not is_tensor(x) then fail(fn, "argument #1: expected a tensor, got %s", typename(x)) end
  x = X.check(fn, 1, x)
  -- every rank brings the same shape, type and dim, or every rank raises
  same_everywhere(fn, #x._shape, "their number of dims")
  if #x._shape == 0 then fail(fn, "argument #1: a 0-d tensor has no dim to shard") end
  local d = agreed_dim(fn, x, dim)
  for i, n in ipairs(x._shape) do same_everywhere(fn, n, "size of dim " .. i) end
  same_everywhere(fn, TYPE_CODE[x._type], "element type (as a code)")
  local size, k = x._shape[d], mpi.size
  local sizes = {}
  for r = 1, k do sizes[r] = size // k + (r <= size % k and 1 or 0) end
  local first, n = first_of(sizes), sizes[mpi.rank + 1]
  return make(x:slice(d, first, first + n - 1):clone(), d, sizes)
end

-- mpi.sharded(part [, dim]): the ranks' parts as one tensor sharded along
-- dim; their other sizes and their type must agree.
function MS.sharded(x, dim)
  local fn = "mpi.sharded"
  if not is_tensor(x) then fail(fn, "argument #1: expected a tensor, got %s", typename(x)) end
  x = X.check(fn, 1, x)
  same_everywhere(fn, #x._shape, "their number of dims")
  if #x._shape == 0 then fail(fn, "argument #1: a 0-d tensor has no dim to shard") end
  local d = agreed_dim(fn, x, dim)
  local sizes
  for i = 1, #x._shape do
    if i == d then sizes = mpi.allgather(x._shape[i])
    else same_everywhere(fn, x._shape[i], "size of dim " .. i .. " (only the sharded dim " ..
                         d .. " may differ)") end
  end
  same_everywhere(fn, TYPE_CODE[x._type], "element type (as a code)")
  return make(x, d, sizes)
end

------------------------------------------------------------------ fields

local FIELDS = {}
function FIELDS.dim(s) local _, d = fields("mpi_sharded:dim", 0, s) return d end
function FIELDS.type(s) return (fields("mpi_sharded:type", 0, s))._type end
function FIELDS.ndim(s) return #(fields("mpi_sharded:ndim", 0, s))._shape end
function FIELDS.part(s) return (fields("mpi_sharded:part", 0, s)) end
function FIELDS.sizes(s)
  local _, _, sizes = fields("mpi_sharded:sizes", 0, s)
  return {table.unpack(sizes)}
end
function FIELDS.shape(s)
  local x, d, sizes = fields("mpi_sharded:shape", 0, s)
  local shape, n = {table.unpack(x._shape)}, 0
  for _, k in ipairs(sizes) do n = n + k end
  shape[d] = n
  return shape
end

MMT.__tostring = function(s)
  local ok, x, d = pcall(fields, "mpi_sharded:tostring", 0, s)
  if not ok then return "luagpu.MpiShardedTensor (broken: " .. tostring(x) .. ")" end
  return format("luagpu.MpiShardedTensor<%s>%s along dim %d over %d rank%s (this rank: %s)",
                x._type, show_shape(FIELDS.shape(s)), d, mpi.size, mpi.size == 1 and "" or "s",
                show_shape(x._shape))
end

------------------------------------------------------------------ elementwise

-- The part of b matching a's (sharded alike, a number, or a plain tensor
-- every rank holds alike, which broadcasts on each rank).
local function operand(fn, arg, x, a_sizes, d, b)
  if type(b) == "number" then return b end
  if is_msharded(b) then
    local y, db, sb = fields(fn, arg, b)
    -- (dims align from the last, as in broadcasting)
    local nx, ny = #x._shape, #y._shape
    if d - nx ~= db - ny then
      fail(fn, "the tensors are sharded along dims %d and %d (of %d and %d dims)", d, db,
           nx, ny)
    end
    for r = 1, #sb do
      if sb[r] ~= a_sizes[r] then
        fail(fn, "rank %d holds %d and %d along dim %d: shard both alike", r - 1,
             a_sizes[r], sb[r], d)
      end
    end
    return y
  end
  if is_tensor(b) then
    -- b's dim under the sharded one (dims align from the last)
    local nx, nb = #x._shape, #b._shape
    local k = d - (nx - nb)
    local bd = k >= 1 and b._shape[k] or 1
    local total = total_of(a_sizes)
    if bd == 1 then return b end
    if total == 1 then
      -- the whole's size 1 there broadcasts: the rank of that 1 takes b
      -- whole, the others none of it (the result's sizes: new ones)
      local sizes = {}
      for r, n in ipairs(a_sizes) do sizes[r] = n == 1 and bd or 0 end
      return a_sizes[mpi.rank + 1] == 1 and b or b:slice(k, 1, 0), sizes
    end
    if bd == total then                          -- the whole: this rank's part of it
      local first = first_of(a_sizes)
      return b:slice(k, first, first + a_sizes[mpi.rank + 1] - 1)
    end
    fail(fn, "argument #%d: a tensor of size %d along the sharded dim %d: give the whole " ..
         "(%d) or 1 (broadcast)", arg, bd, d, total)
  end
  fail(fn, "argument #%d: expected an MPI-sharded tensor, a tensor or a number, got %s", arg,
       typename(b))
end

local function map2(fn, f, a, b)
  local swapped = false
  if not is_msharded(a) then a, b, swapped = b, a, true end
  local x, d, sizes = fields(fn, swapped and 2 or 1, a)
  local y, new_sizes = operand(fn, swapped and 1 or 2, x, sizes, d, b)
  local ok, z
  if swapped then ok, z = pcall(f, y, x) else ok, z = pcall(f, x, y) end
  if not ok then SH.rethrow(fn, z) end
  -- an operand of more dims moves the sharded dim (aligned from the last)
  return make(z, d + (#z._shape - #x._shape), new_sizes or sizes)
end

local function map1(fn, f, s, ...)
  local x, d, sizes = fields(fn, 0, s)
  local ok, z = pcall(f, x, ...)
  if not ok then SH.rethrow(fn, z) end
  return make(z, d, sizes)
end

function Methods.clamp(s, lo, hi, ...)
  no_more("mpi_sharded:clamp", 3, ...)
  if type(lo) ~= "number" and lo ~= nil or type(hi) ~= "number" and hi ~= nil then
    fail("mpi_sharded:clamp", "expected numbers for the bounds")
  end
  return map1("mpi_sharded:clamp", function(x) return x:clamp(lo, hi) end, s)
end

-- xs:eval(): this rank's part evaluated.
function Methods.eval(s, ...)
  local x = fields("mpi_sharded:eval", 0, s)
  no_more("mpi_sharded:eval", 1, ...)
  x:eval()
  return s
end

function Methods.release(s, ...)
  no_more("mpi_sharded:release", 1, ...)
  -- a second release (or <close> after one) does nothing, as for tensors
  local x = is_msharded(s) and rawget(s, "_part")
  if is_tensor(x) then return x:release() end
  fields("mpi_sharded:release", 0, s)
end

------------------------------------------------------------------ reductions

local MPI_OP = {sum = "sum", prod = "prod", min = "min", max = "max", mean = "sum"}
local FLOATS = {float = true, double = true}

-- What a rank with no element brings to op's combination.
local function identity(op, t)
  if op == "min" then return FLOATS[t] and math.huge or math.maxinteger end
  if op == "max" then return FLOATS[t] and -math.huge or math.mininteger end
  if op == "prod" then return 1 end
  return 0
end

-- What a rank with no element brings to min or max along the sharded dim:
-- a tensor of shape of type t's largest (min) or smallest (max) value.
-- (sum, prod and mean of an empty part along a dim are already 0 or 1, of
-- the type the other ranks' partials have.)
local function identity_part(op, t, dev, shape)
  if FLOATS[t] then return dev:full(t, shape, identity(op, t)) end
  if t == "ulong" and op == "min" then              -- 2^64 - 1: no Lua integer
    return dev:full("long", shape, -1):astype("ulong"):eval()
  end
  local r = TY.RANGES[t]
  return dev:full(t, shape, op == "min" and r[2] or r[1])
end

-- A whole reduction: each rank's part reduced to a number, the numbers
-- combined by one allreduce (a NaN anywhere, for min and max, by a second).
local function whole(fn, op, x, s)
  local everywhere = O.numel(FIELDS.shape(s))
  if everywhere == 0 then return x[op](x) end    -- no element anywhere: as one tensor says
  local t, local_n = x._type, O.numel(x._shape)
  local v
  -- ulong min and max: Lua holds values from 2^63 as negative integers,
  -- which the allreduce compares signed; with the top bit flipped the
  -- signed order is ulong's (identities 2^64 - 1 and 0, flipped too)
  local flip = t == "ulong" and (op == "min" or op == "max")
  if local_n == 0 then v = flip and (op == "min" and -1 or 0) or identity(op, t)
  elseif op == "mean" then v = x:sum()
  else v = x[op](x) end
  if FLOATS[t] or op == "mean" then v = v + 0.0 else v = math.tointeger(v) or v end
  if flip then return mpi.allreduce(v ~ math.mininteger, MPI_OP[op]) ~ math.mininteger end
  if (op == "min" or op == "max") and FLOATS[t] then
    -- NaNs are skipped (as one tensor's min): a rank whose part is all NaN
    -- (or empty) brings the identity; NaN only when no rank has a number
    local has = local_n > 0 and v == v
    if not has then v = identity(op, t) end
    if mpi.allreduce(has and 1 or 0, "sum") == 0 then return 0 / 0 end
  end
  local r = mpi.allreduce(v, MPI_OP[op])
  if op == "mean" then return r / everywhere end
  return r
end

-- The reduction op of s (part x, along d, sizes) along dim (nil: whole).
local function reduce_part(fn, op, s, x, d, sizes, dim, keepdim)
  if dim == nil then return whole(fn, op, x, s) end
  local k = O.check_dim(fn, "argument #1", x, dim)
  if k ~= d then                             -- along another dim: still sharded
    local nd = (not keepdim and k < d) and d - 1 or d
    return make(x[op](x, k, keepdim), nd, sizes)
  end
  -- along the sharded dim: each rank's partial (a rank without elements
  -- brings op's identity), combined on every rank by one allreduce
  local total = total_of(sizes)
  if total == 0 then return x[op](x, k, keepdim) end
  local p
  if x._shape[d] == 0 and (op == "min" or op == "max") then
    local shape = {table.unpack(x._shape)}
    shape[d] = 1
    p = identity_part(op, x._type, x._dev, shape)
  elseif op == "mean" then
    p = x:astype("double"):sum(k, true)
  else
    p = x[op](x, k, true)
  end
  local ranks_with
  if (op == "min" or op == "max") and FLOATS[x._type] then
    -- as for whole ones: NaN partials (rows all NaN) bring the identity,
    -- and NaN comes back where no rank had a number
    local ok = x._shape[d] == 0 and p:zeros_like("uchar") or p:isnan():eq(0)
    p = gpu.where(ok, p, identity(op, x._type))
    ranks_with = mpi.allreduce(ok:astype("int"):contiguous(), "sum")
  end
  local r = mpi.allreduce(p:contiguous(), MPI_OP[op])
  if ranks_with then r = gpu.where(ranks_with:gt(0), r, 0 / 0):eval() end
  if op == "mean" then r = (r / total):astype(FLOATS[x._type] and x._type or "double"):eval() end
  if not keepdim then r = r:squeeze(k) end
  return r
end

local function reduction(op)
  local fn = "mpi_sharded:" .. op
  return function(s, dim, opts, ...)
    local x, d, sizes = fields(fn, 0, s)
    no_more(fn, 3, ...)
    if type(dim) == "table" then
      fail(fn, "argument #1: several dims at once are not supported on an MPI-sharded tensor")
    end
    local keepdim, t = SH.reduce_options(fn, opts)
    if t ~= nil then
      if op == "min" or op == "max" then
        fail(fn, "argument #2: option type is for sum, prod and mean, not %s", op)
      end
      O.check_type(fn, "argument #2: option type", t)
      O.check_device_type(fn, x._dev, t)
      x = x:astype(t)
      s = make(x, d, sizes)
    end
    local ok, r = pcall(reduce_part, fn, op, s, x, d, sizes, dim, keepdim)
    if not ok then SH.rethrow(fn, r) end
    if t == nil then return r end
    if is_msharded(r) then
      local p = rawget(r, "_part")
      return make(p._type == t and p or p:astype(t), rawget(r, "_dim"), rawget(r, "_sizes"))
    end
    return SH.as_type(t, r)
  end
end

for op in pairs(MPI_OP) do Methods[op] = reduction(op) end

------------------------------------------------------------------ products

-- xs:mm(b): each rank's rows (sharded along dim 1) times b, a plain tensor
-- every rank holds alike: sharded along dim 1.
function Methods.mm(s, b, ...)
  local fn = "mpi_sharded:mm"
  local x, d, sizes = fields(fn, 0, s)
  no_more(fn, 2, ...)
  if d ~= 1 then
    fail(fn, "expected a tensor sharded along dim 1 (rows, or batches), got one along dim %d", d)
  end
  if not is_tensor(b) then
    fail(fn, "argument #1: expected a tensor every rank holds alike, got %s", typename(b))
  end
  -- batches (x of 3 dims) times b's batches (b's batch dim aligned from
  -- the last): this rank's part of them, or b's one batch
  local new_sizes
  if #x._shape >= 3 and #b._shape >= 3 then
    local k = #b._shape - 2
    local nb, total = b._shape[k], total_of(sizes)
    if total == 1 and nb ~= 1 then
      new_sizes = {}
      for r, n in ipairs(sizes) do new_sizes[r] = n == 1 and nb or 0 end
      if x._shape[1] == 0 then b = b:slice(k, 1, 0) end
    elseif nb == total and nb ~= 1 then
      local first = first_of(sizes)
      b = b:slice(k, first, first + x._shape[1] - 1)
    end
  end
  local ok, z = pcall(x.mm, x, b)
  if not ok then SH.rethrow(fn, z) end
  -- (a b of more dims than x moves x's rows: dims align from the last)
  return make(z, 1 + #z._shape - #x._shape, new_sizes or sizes)
end

------------------------------------------------------------------ gathering

-- xs:gather() (also allgather): the whole tensor on every rank, on its
-- part's device: the parts, moved to dim 1 and padded to the longest,
-- exchanged by one allgather, then joined.
function Methods.gather(s, ...)
  local fn = "mpi_sharded:gather"
  local x, d, sizes = fields(fn, 0, s)
  no_more(fn, 1, ...)
  local nd = #x._shape
  local order, back = {d}, {}
  for i = 1, nd do if i ~= d then order[#order + 1] = i end end
  for i, v in ipairs(order) do back[v] = i end
  local most = 0
  for _, k in ipairs(sizes) do if k > most then most = k end end
  local front = x:permute(order):contiguous()
  if front._shape[1] < most then
    local pad = {table.unpack(front._shape)}
    pad[1] = most - front._shape[1]
    join = join or require "luagpu.tensor.join"
    local z = x._dev:zeros(x._type, pad)
    front = front._shape[1] == 0 and z or join.cat({front, z}, 1)
  end
  local all = mpi.allgather(front)
  local pieces, at = {}, 0
  for _, k in ipairs(sizes) do
    if k > 0 then pieces[#pieces + 1] = all:slice(1, at + 1, at + k) end
    at = at + most
  end
  join = join or require "luagpu.tensor.join"
  -- no rank holds an element: the gathered rows are the (empty) whole
  local whole = #pieces == 0 and all or #pieces == 1 and pieces[1] or join.cat(pieces, 1)
  return whole:permute(back):contiguous()
end
Methods.allgather = Methods.gather

function Methods.get(s, ...)
  no_more("mpi_sharded:get", 1, ...)
  return Methods.gather(s):get()
end
function Methods.totable(s, ...)
  no_more("mpi_sharded:totable", 1, ...)
  return Methods.gather(s):totable()
end

------------------------------------------------------------------ the type

local DESCRIBE = {
  astype = "xs:astype(type): this rank's part converted",
  clamp = "xs:clamp(lo, hi): each part limited to lo..hi (numbers)",
  eval = "xs:eval(): this rank's part evaluated",
  release = "xs:release(): this rank's part's memory back now",
  sum = "xs:sum([dim [, keepdim]]): whole (a number on every rank), or along a dim",
  prod = "xs:prod([dim [, keepdim]]): whole, or along a dim",
  mean = "xs:mean([dim [, keepdim]]): whole, or along a dim",
  min = "xs:min([dim [, keepdim]]): the smallest, whole or along a dim",
  max = "xs:max([dim [, keepdim]]): the largest, whole or along a dim",
  mm = "xs:mm(b): each rank's rows times b (a tensor every rank holds)",
  gather = "xs:gather(): the whole tensor on every rank",
  allgather = "xs:allgather(): the same as xs:gather()",
  get = "xs:get(): the whole as a host array (every rank)",
  totable = "xs:totable(): the whole as nested Lua tables (every rank)",
}
SH.build_type{mt = MMT, methods = Methods, fields = FIELDS, is = is_msharded,
              map1 = map1, map2 = map2, prefix = "mpi_sharded", name = "MPI-sharded tensor",
              a_name = "an MPI-sharded tensor", describe = DESCRIBE,
              instead = "gather it first (xs:gather()), or run it on xs.part"}

return MS
