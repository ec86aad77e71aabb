-- luagpu.tensor.index: selecting and writing elements by index tensors and
-- masks (internal to luagpu.tensor, which makes these its methods), with
-- kernels/tensor_index.cl.
--
--   x:gather(dim, idx)  x:index_select(dim, idx)  x:take(idx)
--   x:scatter(dim, idx, src)  x:scatter_add(dim, idx, src)  x:put(idx, v)
--   x:masked_fill(mask, v)  x:masked_select(mask)  x:nonzero()
--
-- Index tensors hold 1-based positions (negatives from the end), of any
-- integer type. A position out of range is found on the device: the kernel
-- records the first one in a per-device flag, which the call reads once
-- (one blocking read of 16 bytes per call) and raises with.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local PTX = require "luagpu.core.ptx"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local E = require "luagpu.tensor.elementwise"

local type, ipairs, tostring, pcall, rawequal = type, ipairs, tostring, pcall, rawequal
local fail, typename, show = H.fail, H.typename, H.show
local check, check_dim, show_shape, is_tensor = X.check, O.check_dim, O.show_shape, O.is_tensor
local drop = O.drop
local INTEGERS, FLOATS = TY.INTEGERS, TY.FLOATS
local ceil, NO_EVENT = ST.round_up, ST.NO_EVENT
local setmetatable = setmetatable
local ZERO = {0}

local I = {methods = {}}
local methods = I.methods

local LOCAL = 256
local PTX_FLOAT_ADD = 5
local BIG = 1 << 31      -- buffers of at least this many elements: 64-bit positions
local ROW_MIN = 32       -- index_select copies whole rows of at least this many elements
local INDEX_TYPES = {int = "int", long = "long"}

------------------------------------------------------------------ kernels

local programs = ST.device_cache()    -- dev -> T -> I -> nd, ADD_KIND, IDX -> kernels

-- The kernels of element type t, index type it, nd dims, ADD_KIND add and
-- position type idx (uint where every buffer has fewer than 2^31 elements):
-- a table of the program's kernels by name, each looked up once (kernel).
local function program(fn, dev, t, it, nd, add, idx)
  idx = idx or "ulong"
  local c = programs[dev]
  if not c then c = {}; programs[dev] = c end
  local ct = c[t]
  if not ct then ct = {}; c[t] = ct end
  local ci = ct[it]
  if not ci then ci = {}; ct[it] = ci end
  local key = (nd * 8 + add) * 2 + (idx == "uint" and 0 or 1)
  local ks = ci[key]
  if ks then return ks end
  local defines = {{"T", t}, {"I", it}, {"ND", nd}, {"ADD_KIND", add}, {"IDX", idx},
                   {"IS_FLOAT", FLOATS[t] and 1 or 0}}
  if add == PTX_FLOAT_ADD then defines[#defines + 1] = {"LG_ASM", PTX.keyword(dev)} end
  local ok, prog = pcall(P.get, dev, {family = "tensor", file = "tensor_index.cl",
                                      defines = defines})
  if not ok then fail(fn, "the index kernels do not compile for %s: %s", t, tostring(prog)) end
  ks = setmetatable({}, {__index = function(k, name)
    local kernel = prog[name]
    k[name] = kernel
    return kernel
  end})
  ci[key] = ks
  return ks
end

-- The flag of bad positions of dev: a long[2] made zero once (bad[1] set
-- once by the first bad position, bad[2] its value).
local flags = ST.device_cache()
local get                   -- Buffer's get, looked up once
local function flag_of(dev)
  local b = flags[dev]
  if not b then
    b = dev:buffer("long", 2)
    flags[dev] = b
    get = get or b.get
  end
  return b
end

-- Reads flag b (dev's) after the kernels that may set it: raises naming
-- the first bad position (and puts the flag back to zero). One blocking
-- read of 16 bytes (through page-locked memory where the platform has it).
local function check_flag(fn, b, where, len)
  local h = get(b)
  if h[1] ~= 0 then
    b:fill(0):wait()
    fail(fn, "%s: position %d is out of range %s", where, h[2], O.positions(len))
  end
end

-- Position tensors found in range, so that a call reading the same
-- positions again does not wait for the flag (issue 32: that read is most
-- of the wall clock of a whole-row index_select). checked[storage] records
-- what its last check covered: the buffer and its version just after the
-- checking launch (b.version counts every command that may write it), the
-- dim length the positions fit (they fit any longer one too) and the
-- elements read (offset, then size and stride of each dim that moves).
-- A call skips the read only where all of these still hold, so a write by
-- any command luagpu enqueues brings the check back. The kernels never
-- read or write outside the data for a bad position (0, or nothing), so a
-- skipped check can cost an error message, never memory.
local checked = setmetatable({}, {__mode = "k"})

-- Whether the positions idx reads were checked for a dim of len and not
-- written since.
local function known_good(idx, len)
  local s = idx._st
  local rec = checked[s]
  if rec == nil or rec.buf ~= s.buf or rec.version ~= s.buf.version or rec.version == nil
     or len < rec.len
     or rec.off ~= idx._off then
    return false
  end
  local shape, strides, k = idx._shape, idx._strides, 0
  for i = 1, #shape do
    local st = strides[i]
    if st ~= 0 and shape[i] ~= 1 then
      if rec[k + 1] ~= shape[i] or rec[k + 2] ~= st then return false end
      k = k + 2
    end
  end
  return rec.moving == k
end

-- After the launch that read idx (and wrote the storage written, if any):
-- reads the flag unless known, then records idx's positions as good.
local function check_positions(fn, flag, where, len, idx, known, written)
  if not known then check_flag(fn, flag, where, len) end
  local s = idx._st
  if s == written then checked[s] = nil; return end
  local rec = checked[s]
  if not known then
    rec = {buf = s.buf, len = len, off = idx._off}
    local shape, strides, k = idx._shape, idx._strides, 0
    for i = 1, #shape do
      local st = strides[i]
      if st ~= 0 and shape[i] ~= 1 then
        rec[k + 1], rec[k + 2] = shape[i], st
        k = k + 2
      end
    end
    rec.moving = k
    checked[s] = rec
  end
  rec.version = s.buf.version           -- after the launch, which counted idx as written
end

-- Gathers along the last dim read each row of the data once into local
-- memory (lg_gather_rows) where a row has at least ROWS_MIN elements and
-- fits half the device's local memory (at most ROWS_BYTES): a position
-- then reads local memory, not a sector of global memory.
local ROWS_MIN, ROWS_BYTES = 256, 32768
local room_of = ST.device_cache()     -- dev -> bytes a row may take
local function rows_room(dev, t)
  local room = room_of[dev]
  if not room then
    room = math.min(dev.local_mem_size // 2, ROWS_BYTES)
    room_of[dev] = room
  end
  return room // TY.SIZES[t]
end

-- gpu.localmem(t, n), made once per type and count
local row_memories = setmetatable({}, {__index = function(c, t)
  local by_n = setmetatable({}, {__index = function(b, n)
    local lm = gpu.localmem(t, n)
    b[n] = lm
    return lm
  end})
  c[t] = by_n
  return by_n
end})
local function row_memory(t, n) return row_memories[t][n] end

-- lanes of list (a shape or strides), last-first, padded to 8
local function lanes(l)
  local nd = #l
  if nd == 1 then return {l[1], 0, 0, 0, 0, 0, 0, 0} end
  if nd == 2 then return {l[2], l[1], 0, 0, 0, 0, 0, 0} end
  if nd == 3 then return {l[3], l[2], l[1], 0, 0, 0, 0, 0} end
  local v = {0, 0, 0, 0, 0, 0, 0, 0}
  for i = 1, nd do v[i] = l[nd - i + 1] end
  return v
end

-- Whether off and l[1..k] are all multiples of 4.
local function fours(off, l, k)
  if off % 4 ~= 0 then return false end
  for i = 1, k do if l[i] % 4 ~= 0 then return false end end
  return true
end

-- lanes of l[1..k] (the leading dims of a list of k + 1), last-first
local function lead_lanes(l, k)
  local v = {0, 0, 0, 0, 0, 0, 0, 0}
  for i = 1, k do v[i] = l[k - i + 1] end
  return v
end

local function zeros(nd)
  local z = {}
  for i = 1, nd do z[i] = 0 end
  return z
end

------------------------------------------------------------------ arguments

-- Checks an index tensor (argument #arg); returns it realized, as int or
-- long (other integer types converted).
local function index_arg(fn, arg, idx, dev)
  if not is_tensor(idx) then
    fail(fn, "argument #%d: expected an index tensor (of integers), got %s", arg, typename(idx))
  end
  check(fn, arg, idx)
  O.check_same_device(fn, arg, idx, dev)
  if not INTEGERS[idx._type] then
    fail(fn, "argument #%d: expected an index tensor of integers (long or int), got one of %s",
         arg, idx._type)
  end
  if idx._type == "ulong" and idx._n > 0 then
    -- (converted to long, a position from 2^63 would count from the end)
    local hi = idx:max()             -- (the largest; from 2^63 a negative Lua integer)
    if hi < 0 then
      fail(fn, "argument #%d: position %s is out of range (no position reaches 2^63)", arg,
           string.format("%u", hi))
    end
  end
  if not INDEX_TYPES[idx._type] then idx = idx:astype("long"):eval() end
  return idx
end

-- A tensor of x's type from v (argument #arg): a tensor (converted to x's
-- type when it promotes to it), or a number that fits x's type.
local function values_arg(fn, arg, x, v)
  if type(v) == "number" then
    local why = TY.fits(x._type, v)
    if why then fail(fn, "argument #%d: %s", arg, why) end
    return O.empty(fn, x._dev, x._type, {}):set(v)
  end
  if not is_tensor(v) then
    fail(fn, "argument #%d: expected a tensor or a number, got %s", arg, typename(v))
  end
  check(fn, arg, v)
  O.check_same_device(fn, arg, v, x._dev)
  if v._type ~= x._type then
    if TY.promote(x._type, v._type) ~= x._type then
      fail(fn, "argument #%d: cannot write %s values into a %s tensor without a loss: " ..
           "convert with :astype(%q)", arg, v._type, x._type, x._type)
    end
    v = v:astype(x._type):eval()
  end
  return v
end

------------------------------------------------------------------ launches

-- out (contiguous, of idx's shape) = dat at idx's values along a dim:
-- spec {dat =, dst = dat's strides over idx's dims with the indexed one 0,
-- dstep =, len =, d = the indexed dim}. idx may be a view luagpu made of
-- an index tensor (index_select spreads a 1-D one: its elements along one
-- dim, stride 0 in the others).
local function gather(fn, where, out, idx, spec)
  local dev, n = out._dev, out._n
  if n == 0 then return out end
  local shape, ist = idx._shape, idx._strides
  local nd = #shape
  if nd == 0 then shape, ist, nd = {1}, {0}, 1 end
  -- (dat and idx: checked at the method's entry, or views of such)
  local dat = spec.dat
  local big = O.cap(fn, dat) >= BIG or O.cap(fn, idx) >= BIG or n >= BIG
  local flag = flag_of(dev)
  local len = spec.len
  local known = known_good(idx, len)
  if spec.d == nd and len >= ROWS_MIN and len <= rows_room(dev, out._type) then
    -- along the last dim, rows that fit local memory: a group per row
    local prog = program(fn, dev, out._type, idx._type, nd - 1, 0, big and "ulong" or "uint")
    local m, dst, dstep = shape[nd], spec.dst, spec.dstep
    local args = {out._st.buf, out._off, lead_lanes(shape, nd - 1), idx._st.buf, idx._off,
                  lead_lanes(ist, nd - 1), ist[nd], dat._st.buf, dat._off,
                  lead_lanes(dst, nd - 1), dstep, len, m, flag, row_memory(out._type, len)}
    local k = prog.lg_gather_rows
    -- four at a time where idx's and out's rows start on vectors of 4
    if ist[nd] == 1 and m % 4 == 0 and out._off % 4 == 0 and fours(idx._off, ist, nd - 1) then
      k = prog.lg_gather_rows4
      args[15] = row_memory(out._type .. "4", (len + 3) // 4)
      args[16] = dstep == 1 and len % 4 == 0 and fours(dat._off, dst, nd - 1) and 1 or 0
    end
    k(table.unpack(args)):run({n // m * LOCAL}, {LOCAL}, NO_EVENT)
    check_positions(fn, flag, where, len, idx, known, out._st)
    return out
  end
  local k = program(fn, dev, out._type, idx._type, nd, 0, big and "ulong" or "uint").lg_gather
  k(out._st.buf, out._off, lanes(shape), idx._st.buf, idx._off, lanes(ist), dat._st.buf,
    dat._off, lanes(#spec.dst == 0 and ZERO or spec.dst), spec.dstep, spec.len, n,
    flag):run({ceil(n, LOCAL)}, {LOCAL}, NO_EVENT)
  check_positions(fn, flag, where, len, idx, known, out._st)
  return out
end

-- index_select of contiguous x along d by the 1-D idx into out, whole rows
-- of b elements at a time (b the product of x's sizes after d): out taken
-- flat, two units of an element (of 4 where b and both offsets allow) a
-- work-item (kernels/tensor_index.cl).
local function index_rows(fn, out, x, d, idx, b)
  local dev, len, m = out._dev, x._shape[d], idx._n
  local rows = out._n // b
  local big = O.cap(fn, x) >= BIG or O.cap(fn, idx) >= BIG or out._n >= BIG
  local prog = program(fn, dev, out._type, idx._type, 1, 0, big and "ulong" or "uint")
  local vec = b % 4 == 0 and x._off % 4 == 0 and out._off % 4 == 0
  local k = vec and prog.lg_index_rows4 or prog.lg_index_rows
  local units = vec and out._n // 4 or out._n
  local flag = flag_of(dev)
  local known = known_good(idx, len)
  k(out._st.buf, out._off, idx._st.buf, idx._off, idx._strides[1], m, x._st.buf, x._off, len,
    b, rows, flag):run({ceil(units, 2 * LOCAL) // 2}, {LOCAL}, NO_EVENT)
  check_positions(fn, flag, "argument #2", len, idx, known, out._st)
  return out
end

local MAX_GROUPS = (1 << 32) - 1

-- dat at idx's values along a dim = src (or += with add, an ADD_KIND):
-- spec as gather's, src read over idx's dims with its own strides.
local function scatter(fn, where, idx, src, spec, add)
  local dat = spec.dat
  local dev = dat._dev
  local shape, ist, sst = idx._shape, idx._strides, src._strides
  local n = O.numel(shape)
  if n == 0 then return end
  local nd = #shape
  if #sst ~= nd then sst = zeros(nd) end            -- a number: one element
  if nd == 0 then shape, ist, sst, nd = {1}, {0}, {0}, 1 end
  -- (a work-item a position, in groups of LOCAL: drivers launch fewer than
  -- 2^32 groups; an expanded index of 2^40 positions reached call:run)
  if (n - 1) // LOCAL >= MAX_GROUPS then
    fail(fn, "%s: %d positions are too many for one launch (at most %d)", where, n,
         MAX_GROUPS * LOCAL)
  end
  local big = O.cap(fn, dat) >= BIG or O.cap(fn, idx) >= BIG or O.cap(fn, src) >= BIG
              or n >= BIG
  local k = program(fn, dev, dat._type, idx._type, nd, add, big and "ulong" or "uint").lg_scatter
  local flag = flag_of(dev)
  local known = known_good(idx, spec.len)
  k(dat._st.buf, dat._off, lanes(spec.dst), spec.dstep, spec.len, lanes(shape), idx._st.buf,
    idx._off, lanes(ist), src._st.buf, src._off, lanes(sst), n,
    flag):run({ceil(n, LOCAL)}, {LOCAL}, NO_EVENT)
  check_positions(fn, flag, where, spec.len, idx, known, dat._st)
end

-- The spec of x's dim d as gather and scatter take it.
local function along(x, d)
  local dst, st = {}, x._strides
  for i = 1, #st do dst[i] = st[i] end
  dst[d] = 0
  return {dat = x, dst = dst, dstep = x._strides[d], len = x._shape[d], d = d}
end

-- The spec of x's elements in row-major order (x contiguous), for nd
-- index dims.
local function flat(x, nd)
  return {dat = x, dst = zeros(nd), dstep = 1, len = x._n}
end

------------------------------------------------------------------ methods

-- Checks that idx has x's dims and, but in dim d, at most x's sizes (and,
-- with src, at most src's sizes in every dim), as PyTorch's gather and
-- scatter ask.
local function check_shapes(fn, x, d, idx, src)
  local xs, is = x._shape, idx._shape
  if #is ~= #xs then
    fail(fn, "argument #2: the index tensor has %d dims, the tensor %d", #is, #xs)
  end
  for k = 1, #xs do
    if k ~= d and is[k] > xs[k] then
      fail(fn, "argument #2: the index tensor's shape %s exceeds the tensor's %s in dim %d",
           show_shape(is), show_shape(xs), k)
    end
    if src and #src._shape > 0 and (#src._shape ~= #is or is[k] > src._shape[k]) then
      fail(fn, "argument #3: the source's shape %s does not cover the index tensor's %s",
           show_shape(src._shape), show_shape(is))
    end
  end
end

-- x:gather(dim, idx): out[..., j, ...] = x[..., idx[..., j, ...], ...] along
-- dim (PyTorch's gather): the shape of idx, the type of x.
function methods.gather(x, dim, idx, ...)
  local fn = "tensor:gather"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local d = check_dim(fn, "argument #1", x, dim)
  local i = index_arg(fn, 2, idx, x._dev)
  check_shapes(fn, x, d, i)
  local out = O.empty(fn, x._dev, x._type, {table.unpack(i._shape)})
  gather(fn, "argument #2", out, i, along(x, d))
  if i ~= idx then drop(i) end                -- a conversion made here
  return out
end

-- x:index_select(dim, idx): x's slices at the positions of the 1-D idx
-- along dim, in idx's order.
function methods.index_select(x, dim, idx, ...)
  local fn = "tensor:index_select"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local d = check_dim(fn, "argument #1", x, dim)
  local given = idx
  idx = index_arg(fn, 2, idx, x._dev)
  if #idx._shape ~= 1 then
    fail(fn, "argument #2: expected a 1-D index tensor, got shape %s", show_shape(idx._shape))
  end
  local shape, strides = {table.unpack(x._shape)}, zeros(#x._shape)
  shape[d], strides[d] = idx._n, idx._strides[1]
  local out = O.empty(fn, x._dev, x._type, {table.unpack(shape)})
  local b = 1
  for i = d + 1, #shape do b = b * shape[i] end
  if b >= ROW_MIN and out._n > 0 and O.is_contiguous(x) then
    index_rows(fn, out, x, d, idx, b)
    if idx ~= given then drop(idx) end        -- a conversion made here
    return out
  end
  local spec = along(x, d)
  spec.d = d
  local spread = O.view(idx._st, idx._type, shape, strides, idx._off)
  return gather(fn, "argument #2", out, spread, spec)
end

-- x:take(idx): x's elements at idx's flat positions (x read in row-major
-- order): the shape of idx.
function methods.take(x, idx, ...)
  local fn = "tensor:take"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local i = index_arg(fn, 1, idx, x._dev)
  local c = O.is_contiguous(x) and x or x:contiguous()
  local out = O.empty(fn, x._dev, x._type, {table.unpack(i._shape)})
  if out._n > 0 and c._n == 0 then
    fail(fn, "argument #1: the tensor has no elements to take")
  end
  gather(fn, "argument #1", out, i, flat(c, #i._shape))
  if c ~= x then drop(c) end                  -- copies made here
  if i ~= idx then drop(i) end
  return out
end

-- x:scatter(dim, idx, src) / x:scatter_add(dim, idx, src): a copy of x with
-- src's elements (a tensor or a number) written, or added, at idx's
-- positions along dim (PyTorch's scatter and scatter_add).
local ADD_KIND = {int = 1, uint = 1, long = 2, ulong = 2, float = 3, double = 4}

-- Float adds through NVIDIA's atom.global.add.f32 (a compare-and-swap
-- loop retries under contention: several times slower where many add to
-- one place) where a probe build of inline PTX works (luagpu.core.ptx).
local add_kinds = ST.device_cache()   -- dev -> {float's ADD_KIND, 64-bit atomics}
local function device_adds(dev)
  local a = add_kinds[dev]
  if a then return a end
  local ext = false
  for _, e in ipairs(dev.extensions) do
    if e == "cl_khr_int64_base_atomics" then ext = true end
  end
  a = {PTX.keyword(dev) and PTX_FLOAT_ADD or 3, ext}
  add_kinds[dev] = a
  return a
end

-- A new contiguous copy of realized x (fn's): one buffer copy where x is
-- contiguous on a CPU device, else x:clone()'s kernel (on NVIDIA's OpenCL a
-- buffer copy on a profiling queue takes about 9 us more than a kernel:
-- bench/gpu/profiling_probe.lua).
local function copy_of(fn, x)
  if x._n == 0 or x._dev.type ~= "cpu" or not O.is_contiguous(x) then return E.clone(x) end
  local out = O.empty(fn, x._dev, x._type, {table.unpack(x._shape)})
  O.elements_of(x):copy_to(O.elements_of(out), NO_EVENT)
  return out
end

local function scatter_method(fn, x, dim, idx, src, add, ...)
  check(fn, 0, x)
  O.no_more(fn, 4, ...)
  local d = check_dim(fn, "argument #1", x, dim)
  local i = index_arg(fn, 2, idx, x._dev)
  local kind = 0
  if add then
    kind = ADD_KIND[x._type]
    if not kind then
      fail(fn, "adds with atomics of 32 or 64 bits: int, uint, long, ulong, float or double, " ..
           "got %s (convert with :astype)", x._type)
    end
    local adds = device_adds(x._dev)
    if kind == 3 then kind = adds[1] end
    if kind % 2 == 0 then
      if not adds[2] then
        fail(fn, "%s has no 64-bit atomics (cl_khr_int64_base_atomics): %s cannot be added",
             x._dev.name, x._type)
      end
    end
  end
  local v = values_arg(fn, 3, x, src)
  check_shapes(fn, x, d, i, v)
  local out = copy_of(fn, x)
  scatter(fn, "argument #2", i, v, along(out, d), kind)
  if v ~= src then drop(v) end                -- made here (a number's, a conversion)
  if i ~= idx then drop(i) end
  return out
end

function methods.scatter(x, dim, idx, src, ...)
  return scatter_method("tensor:scatter", x, dim, idx, src, false, ...)
end

function methods.scatter_add(x, dim, idx, src, ...)
  return scatter_method("tensor:scatter_add", x, dim, idx, src, true, ...)
end

-- x:put(idx, v): x's elements at idx's flat positions (row-major order)
-- set to v's (a number, or a tensor of as many elements as idx); x itself.
function methods.put(x, idx, v, ...)
  local fn = "tensor:put"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local i = index_arg(fn, 1, idx, x._dev)
  local given = v
  v = values_arg(fn, 2, x, v)
  if #v._shape > 0 then
    if v._n ~= i._n then
      fail(fn, "argument #2: expected %d values (one per position), got %d", i._n, v._n)
    end
    v = v:contiguous():reshape({table.unpack(i._shape)})
  end
  if i._n == 0 then return x end
  if x._n == 0 then fail(fn, "argument #1: the tensor has no elements to put into") end
  -- (an expanded view's places share memory: which write would land there?)
  for d, st in ipairs(x._strides) do
    if st == 0 and x._shape[d] > 1 then
      fail(fn, "the tensor's elements share memory (dim %d has stride 0, as x:expand " ..
           "makes): put into the tensor it expands, or a :clone()", d)
    end
  end
  X.flush_readers(x._st)
  local c = O.is_contiguous(x) and x or x:contiguous()
  -- positions or values in the memory written (x:put(x, v), x:put(idx, x)):
  -- read from copies made first, as if put read them all before writing
  local ic = i._st == c._st and E.clone(i) or i
  local vc = v._st == c._st and E.clone(v) or v
  scatter(fn, "argument #1", ic, vc, flat(c, #i._shape), 0)
  if c ~= x then x:set(c); drop(c) end        -- copies made here
  if ic ~= i then drop(ic) end
  if vc ~= v then drop(vc) end
  if type(given) == "number" then drop(v) end
  if i ~= idx then drop(i) end
  return x
end

-- x:masked_fill(mask, v): a new tensor: v where mask (broadcast to x's
-- shape) is not 0, else x's elements.
function methods.masked_fill(x, mask, v, ...)
  local fn = "tensor:masked_fill"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  if not is_tensor(mask) then
    fail(fn, "argument #1: expected a mask tensor, got %s", typename(mask))
  end
  if type(v) ~= "number" then fail(fn, "argument #2: expected a number, got %s", typename(v)) end
  local why = TY.fits(x._type, v)
  if why then fail(fn, "argument #2: %s", why) end
  check(fn, 1, mask)
  O.check_same_device(fn, 1, mask, x._dev)
  local ms, xs = mask._shape, x._shape
  for i = 1, #ms do
    local n, k = ms[#ms - i + 1], xs[#xs - i + 1]
    if i > #xs or (n ~= 1 and n ~= k) then
      fail(fn, "argument #1: the mask's shape %s does not broadcast to %s", show_shape(ms),
           show_shape(xs))
    end
  end
  -- v as a value of x's type: a Lua float would make where compute in
  -- float (rounding 64-bit integers); a ulong from 2^63 has no Lua integer
  if INTEGERS[x._type] then
    v = math.tointeger(v) or O.empty(fn, x._dev, x._type, {}):set(v)
  end
  local m = mask:ne(0)
  return E.where(m:expand({table.unpack(xs)}), v, x):astype(x._type):eval()
end

local compact     -- luagpu.algo.compact, loaded on first use

-- luagpu.algo.compact, or an error naming fn where this build has no
-- luagpu.algo.
local function compact_module(fn)
  if compact then return compact end
  local ok, mod = pcall(require, "luagpu.algo.compact")
  if not ok then
    fail(fn, "not available: it needs luagpu.algo, which this build does not have")
  end
  compact = mod
  return mod
end

-- The flat positions (1-based, a long tensor) of the elements of
-- contiguous mask m that are not 0 (luagpu.algo.compact's tiled
-- positions), and their count.
local function nonzero_positions(fn, m)
  local pos
  local count = compact_module(fn).positions(fn, m._type, m._st.buf, m._off, m._n, m._dev,
                                             function(c)
    pos = O.empty(fn, m._dev, "long", {c})
    return pos._st.buf, pos._off
  end)
  if count == 0 then return nil, 0 end
  return pos, count
end

-- x:masked_select(mask): a 1-D tensor of x's elements where mask
-- (broadcast to x's shape) is not 0, in row-major order: luagpu.algo.
-- compact's tiled select (a count per tile, their scan, the total read,
-- one kernel moving each tile's kept elements).
function methods.masked_select(x, mask, ...)
  local fn = "tensor:masked_select"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  if not is_tensor(mask) then
    fail(fn, "argument #1: expected a mask tensor, got %s", typename(mask))
  end
  O.check_same_device(fn, 1, mask, x._dev)
  check(fn, 1, mask)
  local dev, t = x._dev, x._type
  local ms, xs = mask._shape, x._shape
  local fits = #ms <= #xs
  for i = 1, fits and #ms or 0 do
    local a, b = ms[#ms - i + 1], xs[#xs - i + 1]
    if a ~= b and a ~= 1 then fits = false end
  end
  if not fits then
    fail(fn, "argument #1: the mask's shape %s does not broadcast to %s", show_shape(ms),
         show_shape(xs))
  end
  -- (a mask of x's shape, contiguous, is used as it is)
  local m = mask
  if #ms ~= #xs or not O.is_contiguous(mask) then
    m = O.contiguous(fn, mask:expand({table.unpack(xs)}))
  else
    for i = 1, #ms do
      if ms[i] ~= xs[i] then m = O.contiguous(fn, mask:expand({table.unpack(xs)})); break end
    end
  end
  if m._n == 0 then return O.empty(fn, dev, t, {0}) end
  local A = compact_module(fn)
  -- (c and m: x and mask, checked at the entry, or copies made here)
  local c, out = O.contiguous(fn, x), nil
  A.select(fn, t, c._st.buf, c._off, m._type, m._st.buf, m._off, m._n, dev, function(count)
    out = O.empty(fn, dev, t, {count})
    return out._st.buf, out._off
  end)
  if c ~= x then drop(c) end                  -- copies made here
  if m ~= mask then drop(m) end
  return out
end

-- x:nonzero(): the positions (1-based) of x's elements that are not 0, a
-- {count, ndim} long tensor in row-major order.
function methods.nonzero(x, ...)
  local fn = "tensor:nonzero"
  check(fn, 0, x)
  O.no_more(fn, 1, ...)
  local nd, dev = #x._shape, x._dev
  if x._n == 0 then return O.empty(fn, dev, "long", {0, nd}) end
  O.check_room(fn, x, "uchar")              -- (the mask below)
  local m = x:ne(0):contiguous()
  local pos, count = nonzero_positions(fn, m)
  if count == 0 or nd == 0 then return O.empty(fn, dev, "long", {count, nd}) end
  local strides = O.contiguous_strides(x._shape)
  local s = dev:tensor("long", {1, nd}, strides)
  local sizes = dev:tensor("long", {1, nd}, x._shape)
  return (((pos:reshape{count, 1} - 1) // s) % sizes + 1):eval()
end

-- gpu.searchsorted(sorted, values [, {right = true}]): per element of
-- values, its 1-based place in the 1-D sorted (ascending, NaN last): the
-- first place whose element is not below it (right: above it), #sorted + 1
-- past them all (NumPy's searchsorted + 1). A long tensor of values' shape.
local SEARCH_OPTIONS = H.option_names({"right"}, "option ")
function I.searchsorted(sorted, values, opts, ...)
  local fn = "gpu.searchsorted"
  O.no_more(fn, 4, ...)
  if not is_tensor(sorted) then
    fail(fn, "argument #1: expected a sorted 1-D tensor, got %s", typename(sorted))
  end
  check(fn, 1, sorted)
  if #sorted._shape ~= 1 then
    fail(fn, "argument #1: expected a 1-D tensor, got shape %s", show_shape(sorted._shape))
  end
  local o = H.check_options(fn, 3, opts, SEARCH_OPTIONS)
  if o.right ~= nil and type(o.right) ~= "boolean" then
    fail(fn, "argument #3: option right: expected a boolean, got %s", show(o.right))
  end
  local dev, t = sorted._dev, sorted._type
  -- sorted and values compared in the type both promote to (a value of
  -- another type converted to sorted's would wrap or truncate first)
  if type(values) == "number" then
    local why = TY.fits(t, values)
    if why and not FLOATS[TY.with_number(t, values)] then fail(fn, "argument #2: %s", why) end
    values = O.empty(fn, dev, TY.with_number(t, values), {}):set(values)
  end
  if not is_tensor(values) then
    fail(fn, "argument #2: expected a tensor or a number, got %s", typename(values))
  end
  check(fn, 2, values)
  O.check_same_device(fn, 2, values, dev)
  if values._type ~= t then
    t = TY.promote(t, values._type)
    O.check_device_type(fn, dev, t)
    if sorted._type ~= t then
      O.check_room(fn, sorted, t)
      sorted = sorted:astype(t):eval()
    end
    if values._type ~= t then
      O.check_room(fn, values, t)
      values = values:astype(t)
    end
  end
  local v = O.contiguous(fn, values)
  local out = O.empty(fn, dev, "long", {table.unpack(values._shape)})
  if out._n == 0 then return out end
  -- (sorted and v: checked at the entry, or made here)
  local k = program(fn, dev, t, "long", 1, 0).lg_searchsorted
  k(sorted._st.buf, sorted._off, sorted._strides[1], sorted._n, v._st.buf, v._off, out._st.buf,
    out._n, o.right and 1 or 0):run({ceil(out._n, LOCAL)}, {LOCAL}, NO_EVENT)
  return out
end

return I
