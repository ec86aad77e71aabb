-- luagpu.mpi: past one machine through Open MPI. Every rank of an
-- `mpirun -np N luagpu script.lua` job runs the script; this module gives
-- it the rank, the size and MPI's point-to-point calls and collectives on
-- numbers, host arrays, device buffers and tensors:
--
--   mpi.rank  mpi.size  mpi.processor_name  mpi.barrier()  mpi.wtime()
--   mpi.send(x, dest [, tag])          mpi.recv(x | type [, source [, tag]])
--   mpi.bcast(x, root)                 mpi.allreduce(x, op)  mpi.reduce(x, op, root)
--   mpi.allgather(x)  mpi.gather(x, root)  mpi.reduce_scatter(x, op)  mpi.abort([code])
--   mpi.chunk_bytes (the pieces of a pipelined allreduce or bcast of device data)
--
-- Device buffers and tensors are staged through host memory (read, the MPI
-- call, written back): a CUDA-aware MPI is not assumed. An allreduce or a
-- bcast of one larger than mpi.chunk_bytes is pipelined: pieces read,
-- reduced (or sent) and written back at once, through page-locked memory. The C half,
-- luagpu_mpi (host/mpi.c, build/luagpu_mpi.so), moves host arrays; here
-- values of the other kinds are turned into host arrays and back, and the
-- results made. docs/API.md describes every call.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"

local type, error, ipairs, tostring = type, error, ipairs, tostring
local mtype = math.type
local fail, typename = H.fail, H.typename

-- The C half: found on package.cpath, else in $LUAGPU_BUILD, beside
-- luagpu's own code (build/luagpu_mpi.so for build/luagpu or build/luagpu.so,
-- whether a script, -e or the REPL runs), in an install's lib/lua/5.4, or
-- beside the running program (arg[-1]).
local function load_core()
  local ok, core = pcall(require, "luagpu_mpi")
  if ok then return core end
  local dirs = {}
  dirs[#dirs + 1] = os.getenv("LUAGPU_BUILD")
  dirs[#dirs + 1] = gpu.code_dir
  if gpu.root then
    dirs[#dirs + 1] = gpu.root .. "/../../lib/lua/" .. _VERSION:match("%d+%.%d+")
  end
  local prog = type(arg) == "table" and arg[-1]
  if type(prog) == "string" then dirs[#dirs + 1] = prog:match("^(.*)/[^/]*$") or "." end
  for _, dir in ipairs(dirs) do
    local open = package.loadlib(dir .. "/luagpu_mpi.so", "luaopen_luagpu_mpi")
    if open then
      local m = open()
      package.loaded.luagpu_mpi = m
      return m
    end
  end
  error("luagpu: mpi: the C module luagpu_mpi is not built or not on package.cpath " ..
        "(build it with `make mpi`, which needs Open MPI: libopenmpi-dev)\n" .. tostring(core), 2)
end
local core = load_core()

local M = {rank = core.rank, size = core.size, processor_name = core.processor_name,
           wtime = core.wtime}

-- Calls the C half's f(...): what it raises ("luagpu: mpi.recv: ...") is
-- raised again at the script's line, as every luagpu error is.
local function call(f, ...)
  local ok, a, b, c = pcall(f, ...)
  if ok then return a, b, c end
  local fn, msg = tostring(a):match("^luagpu: (mpi%.%w+): (.*)$")
  if fn then fail(fn, "%s", msg) end
  error(a, 0)
end

-- A rank (what: "destination rank", ...) at argument #arg: an integer of
-- 0 to size - 1.
local function check_rank(fn, arg, r, what)
  local v = H.integer(r)
  if v == nil then
    fail(fn, "argument #%d: expected a %s (an integer), got %s", arg, what, H.show(r))
  end
  if v < 0 or v >= M.size then
    fail(fn, "argument #%d: %s %d is out of range (0 to %d)", arg, what, v, M.size - 1)
  end
  return v
end

-- An optional tag at argument #arg: nil, or an integer >= 0 (the C half
-- checks MPI's upper bound).
local function check_tag(fn, arg, t)
  if t == nil then return nil end
  local v = H.integer(t)
  if v == nil then fail(fn, "argument #%d: expected a tag (an integer), got %s", arg, H.show(t)) end
  if v < 0 then fail(fn, "argument #%d: tag %d is out of range (0 or more)", arg, v) end
  return v
end

function M.barrier() call(core.barrier) end

function M.abort(code)
  if code ~= nil and H.integer(code) == nil then
    fail("mpi.abort", "argument #1: expected an exit code (an integer), got %s", H.show(code))
  end
  call(core.abort, code)
end

local OPS = {sum = true, prod = true, min = true, max = true}

------------------------------------------------------------------ kinds

-- The tensor module when loaded (no tensor exists before it is).
local function tensor_module()
  return package.loaded["luagpu.tensor"]
end

-- What x is: "number", "array", "buffer" or "tensor"; raises otherwise.
local function kind_of(fn, arg, x)
  if mtype(x) then return "number" end
  local cls, released = H.class_of(x)
  if cls == "Array" then return "array" end
  if cls == "Buffer" then
    if released then fail(fn, "argument #%d: attempt to use a released buffer", arg) end
    return "buffer"
  end
  local T = tensor_module()
  if T and T.is_tensor(x) then
    -- a released one raises here, naming fn (not the tensor op that reads it)
    require("luagpu.tensor.expr").check(fn, arg, x, true)
    return "tensor"
  end
  fail(fn, "argument #%d: expected a number, a host array, a Buffer or a Tensor, got %s", arg,
       typename(x))
end

-- x as a host array (a copy for buffers and tensors; a one-value array for
-- a number: long for integers, double for floats).
local function to_host(kind, x)
  if kind == "array" then return x end
  if kind == "number" then
    return gpu.array(mtype(x) == "integer" and "long" or "double", {x})
  end
  if kind == "buffer" then return x:get() end
  return x:contiguous():get()
end

-- A host array of x's kind, from host array a of shape (for buffers and
-- tensors: on x's device).
local function from_host(kind, x, a, shape)
  if kind == "array" then return a end
  if kind == "number" then return a[1] end
  if kind == "buffer" then return x.device:buffer(x.type, shape, {host = a}) end
  return x.device:tensor(x.type, shape, a)
end

-- A new host array like a (same element type) of the given shape.
local function array_like(a, shape)
  return gpu.array(a.type, {shape = shape})
end

-- Writes host array a back into x (in place).
local function write_back(kind, x, a)
  if kind == "buffer" then
    x:write(a):wait()
  elseif kind == "tensor" then
    x:set(x.device:tensor(x.type, x.shape, a))
  end
end

local function check_root(fn, arg, root)
  return check_rank(fn, arg, root, "root rank")
end

------------------------------------------------------------------ calls

function M.send(x, dest, tag)
  local kind = kind_of("mpi.send", 1, x)
  dest = check_rank("mpi.send", 2, dest, "destination rank")
  tag = check_tag("mpi.send", 3, tag)
  call(core.send, to_host(kind, x), dest, tag)
end

-- recv(x, ...) fills x (a host array, buffer or tensor) and returns it;
-- recv(type, ...) returns a new 1-D host array of what was sent. Both
-- then give the source rank and the tag. Everything that could refuse x is
-- checked before the message is taken: a message that does not fit stays.
function M.recv(x, source, tag)
  local fn = "mpi.recv"
  if source ~= nil then source = check_rank(fn, 2, source, "source rank") end
  tag = check_tag(fn, 3, tag)
  if type(x) == "string" then
    if not TY.SIZES[x] then
      fail(fn, "argument #1: expected a scalar type name (\"float\", \"int\", ...), " ..
           "got \"%s\"", x)
    end
    local n, src, t = call(core.probe, x, source, tag)
    local a = gpu.array(x, n)
    call(core.recv, a, src, t)
    return a, src, t
  end
  local kind = kind_of(fn, 1, x)
  if kind == "number" then
    fail(fn, "argument #1: expected a host array, a Buffer, a Tensor or a type name, " ..
         "got number")
  end
  local a = x
  if kind == "buffer" then
    -- staged in a new array (never read: an "in" buffer takes messages too);
    -- one the host cannot write is refused before anything is received
    if x.access == "out" then
      fail(fn, "argument #1: the buffer has access \"out\" (device to host only): it cannot " ..
           "receive from the host (make it with access = \"mixed\")")
    end
    a = gpu.array(x.type, x.count)
  elseif kind == "tensor" then
    local n = 1
    for _, d in ipairs(x.shape) do n = n * d end
    a = gpu.array(x.type, n)
  end
  local src, t = call(core.recv, a, source, tag)
  write_back(kind, x, a)
  return x, src, t
end

local function check_op(fn, op)
  if not OPS[op] then
    fail(fn, "argument #2: expected \"sum\", \"prod\", \"min\" or \"max\", got %s",
         type(op) == "string" and '"' .. op .. '"' or typename(op))
  end
end

-- The shape of x (staged as host array a).
local function shape_of(kind, x, a)
  if kind == "number" then return {1} end
  if kind == "array" then return a.shape end
  return x.shape or a.shape
end

------------------------------------------------------------------ pipelined staging

-- Buffers and tensors of a scalar type larger than mpi.chunk_bytes are
-- reduced in pieces of that size, each through page-locked host memory:
-- the read of piece i + 1 (on a queue of its own) and the write of piece
-- i - 1 (on another) run on the device while MPI reduces piece i. Every
-- rank proposes a piece size and all use the largest (core.agree), so a
-- rank with a host array (or a smaller setting) cuts its values alike: the
-- same MPI calls over the same pieces, whatever each rank brings.
-- 1 MiB: on two H100s (bench/gpu/mpi_run.sh) 1 MiB pieces beat 4 and 16 at
-- every size from 2^22 to 2^28 floats (Open MPI reduces a piece that
-- stays in the CPU's cache faster than a large one).
M.chunk_bytes = 1 << 20
local SLOTS = 3
-- calls that took the pipelined path, and the pieces they moved
M.stats = {pipelined = 0, pieces = 0}

local function chunk_setting(fn)
  local c = M.chunk_bytes
  if c == false or c == nil then return 0 end
  local v = H.integer(c)
  if v == nil or v < 0 then
    fail(fn, "mpi.chunk_bytes: expected an integer >= 0 (0 or false: no pieces), got %s",
         H.show(c))
  end
  return v
end

-- Staging per device and type: SLOTS pinned buffers of `chunk` elements,
-- each mapped once (host arrays over page-locked memory), and the two
-- queues. Kept while the device lives.
local stages = setmetatable({}, {__mode = "k"})
local function stage_for(dev, t, chunk)
  local per = stages[dev]
  if not per then
    per = {}
    stages[dev] = per
  end
  local s = per[t]
  if s and s.chunk == chunk then return s end
  s = {chunk = chunk, slots = {}, rq = dev:queue{profiling = false},
       wq = dev:queue{profiling = false}}
  for i = 1, SLOTS do
    local b = dev:buffer(t, chunk, {pinned = true, init = false})
    s.slots[i] = {buf = b, arr = b:map("read_write")}
  end
  per[t] = s
  return s
end

-- The elements of a buffer or tensor x as one Buffer (a view) of n
-- elements, in row-major order. A tensor's storage is read as tensor:get
-- reads it (a view kept only for this call: the storage is not exposed).
local function elements(kind, x, n)
  if kind == "buffer" then return x end
  local c = x:contiguous()
  return c._st.buf:sub(c._off + 1, c._off + n)
end

-- The element count, scalar type (nil for vector types) and shape of x.
local function describe(kind, x)
  if kind == "buffer" then return x.count, TY.SIZES[x.type] and x.type, x.shape end
  local shape, n = x.shape, 1
  for _, d in ipairs(shape) do n = n * d end
  return n, TY.SIZES[x.type] and x.type, shape
end

-- The pipeline over n elements of type t on dev in pieces of `chunk`: each
-- piece is read from src into a staging slot (unless src is nil), given
-- to piece(arr) (the MPI call, in place), and written to dst (unless dst
-- is nil). Reads wait for what the default queue holds (what made src)
-- and for the slot's last write; all writes are done on return.
local function pipeline(dev, t, chunk, n, src, dst, piece)
  local st = stage_for(dev, t, chunk)
  local pieces = (n + chunk - 1) // chunk
  local start = dev:default_queue():marker()
  local reads, writes, staged = {}, {}, {}
  local function range(i) return (i - 1) * chunk + 1, math.min(n, i * chunk) end
  local function stage(i)
    local first, last = range(i)
    local arr = st.slots[(i - 1) % SLOTS + 1].arr
    if last - first + 1 < chunk then arr = arr:sub(1, last - first + 1) end
    staged[i] = arr
    if src then
      reads[i] = src:sub(first, last):read(arr, {queue = st.rq,
                                                  wait = {start, writes[i - SLOTS]}})
      st.rq:flush()
    end
  end
  M.stats.pipelined = M.stats.pipelined + 1
  M.stats.pieces = M.stats.pieces + pieces
  stage(1)
  for i = 1, pieces do
    if i < pieces then stage(i + 1) end
    if reads[i] then
      reads[i]:wait()
      reads[i] = nil
    elseif writes[i - SLOTS] then
      writes[i - SLOTS]:wait()                   -- the slot is free again
    end
    piece(staged[i])
    if dst then
      local first, last = range(i)
      writes[i] = dst:sub(first, last):write(staged[i], {queue = st.wq, wait = start})
      st.wq:flush()
    end
  end
  if dst then st.wq:finish() end
end

-- Whether x (of kind) takes the pipelined path for a setting of `bytes`:
-- its element count, scalar type and shape when it does, nil otherwise.
-- Buffers need the access the call uses (the staged path raises the
-- usual error for the others, on their rank only).
local function pipelinable(kind, x, bytes, access_ok)
  if not (kind == "tensor" or kind == "buffer" and access_ok[x.access]) then return nil end
  local n, t, shape = describe(kind, x)
  if t and n > 0 and bytes > 0 and n * TY.SIZES[t] > bytes then return n, t, shape end
end

function M.allreduce(x, op)
  local fn = "mpi.allreduce"
  local kind = kind_of(fn, 1, x)
  check_op(fn, op)
  local bytes = chunk_setting(fn)
  local n, t, shape = pipelinable(kind, x, bytes, {mixed = true, out = true})
  if n then
    -- what may fail on this rank alone comes before the ranks agree
    local src = elements(kind, x, n)
    local out = x.device:buffer(t, kind == "buffer" and shape or n, {init = false})
    local chunk = call(core.agree, "allreduce", t, n, op, nil, nil,
                       math.max(1, bytes // TY.SIZES[t]))
    pipeline(x.device, t, chunk, n, src, out, function(arr)
      call(core.allreduce_part, arr, op, nil, 0, #arr)
    end)
    if kind == "buffer" then return out end
    return x.device:tensor(t, shape, out)
  end
  local a = to_host(kind, x)
  local shape = shape_of(kind, x, a)
  local out
  -- a rank with a large buffer may cut it in pieces: the others cut alike
  local chunk = call(core.agree, "allreduce", a, nil, op, nil, nil, 0)
  if chunk == 0 then
    out = array_like(a, a.shape)
    call(core.allreduce, a, op, out)
  else
    out = a:copy()        -- in place, as the pipelining ranks reduce
    local total = #out    -- scalars (a pipelining rank's pieces are of scalar types)
    for first = 0, total - 1, chunk do
      call(core.allreduce_part, out, op, nil, first, math.min(chunk, total - first))
    end
  end
  return from_host(kind, x, out, shape)
end

-- bcast(x, root): in place. Buffers and tensors above mpi.chunk_bytes go
-- in pieces as allreduce's do: the root reads, the others write.
function M.bcast(x, root)
  local fn = "mpi.bcast"
  local kind = kind_of(fn, 1, x)
  root = check_root(fn, 2, root)
  local bytes = chunk_setting(fn)
  local n, t = pipelinable(kind, x, bytes, {mixed = true})
  if n then
    local src = elements(kind, x, n)
    local dst = M.rank ~= root and src
    if dst and kind == "tensor" then dst = x.device:buffer(t, n, {init = false}) end
    local chunk = call(core.agree, "bcast", t, n, nil, root, nil,
                       math.max(1, bytes // TY.SIZES[t]))
    pipeline(x.device, t, chunk, n, M.rank == root and src or nil, dst or nil, function(arr)
      call(core.bcast_part, arr, root, 0, #arr)
    end)
    if dst and kind == "tensor" then x:set(x.device:tensor(t, x.shape, dst)) end
    return x
  end
  local a = to_host(kind, x)
  local chunk = call(core.agree, "bcast", a, nil, nil, root, nil, 0)
  if chunk == 0 then
    call(core.bcast, a, root)
  else
    for first = 0, #a - 1, chunk do
      call(core.bcast_part, a, root, first, math.min(chunk, #a - first))
    end
  end
  if kind == "number" then return a[1] end
  write_back(kind, x, a)
  return x
end

-- reduce_scatter(x, op): op over the ranks of x, split along the first dim
-- into size equal shares; rank r gets share r + 1 (of x's kind). The first
-- dim must divide by the size.
function M.reduce_scatter(x, op)
  local fn = "mpi.reduce_scatter"
  local kind = kind_of(fn, 1, x)
  check_op(fn, op)
  local a = to_host(kind, x)
  local shape = {}
  for i, d in ipairs(shape_of(kind, x, a)) do shape[i] = d end
  if #shape == 0 then shape[1] = 1 end
  call(core.agree, "reduce_scatter", a, nil, op, nil, shape[1], 0)
  if shape[1] % M.size ~= 0 then
    fail(fn, "the first dim (%d) does not divide by the %d ranks: every rank gets an equal " ..
         "share (pad it to a multiple of %d)", shape[1], M.size, M.size)
  end
  shape[1] = shape[1] // M.size
  -- a 0-d x (one value, as a number: one rank only) gives a 0-d result
  if #shape_of(kind, x, a) == 0 then shape = {} end
  local out = array_like(a, #shape == 0 and {1} or shape)
  call(core.reduce_scatter, a, op, out)
  if kind == "number" then return out[1] end
  return from_host(kind, x, out, shape)
end

function M.reduce(x, op, root)
  local kind = kind_of("mpi.reduce", 1, x)
  check_op("mpi.reduce", op)
  root = check_root("mpi.reduce", 3, root)
  local a = to_host(kind, x)
  local shape = shape_of(kind, x, a)
  local out = M.rank == root and array_like(a, a.shape) or nil
  call(core.reduce, a, op, out, root)
  if out then return from_host(kind, x, out, shape) end
end

-- The gathered shape: every rank's along the first dim ({size} for numbers).
local function gathered(kind, x, a)
  local shape = {}
  for i, d in ipairs(shape_of(kind, x, a)) do shape[i] = d end
  if #shape == 0 then shape[1] = 1 end
  shape[1] = shape[1] * M.size
  return shape
end

-- Host arrays of numbers come back as Lua tables of numbers.
local function numbers(a)
  return a:totable()
end

function M.allgather(x)
  local kind = kind_of("mpi.allgather", 1, x)
  local a = to_host(kind, x)
  local out = array_like(a, gathered("array", a, a))
  call(core.allgather, a, out)
  if kind == "number" then return numbers(out) end
  return from_host(kind, x, out, gathered(kind, x, a))
end

function M.gather(x, root)
  local kind = kind_of("mpi.gather", 1, x)
  root = check_root("mpi.gather", 2, root)
  local a = to_host(kind, x)
  local out = M.rank == root and array_like(a, gathered("array", a, a)) or nil
  call(core.gather, a, out, root)
  if not out then return nil end
  if kind == "number" then return numbers(out) end
  return from_host(kind, x, out, gathered(kind, x, a))
end

-- Calls fn(...) and returns what it returns; when it raises, prints the
-- error with a traceback and aborts the whole job (MPI_Abort): the other
-- ranks would otherwise wait for this one for ever. The luagpu program
-- does this by itself for a script that raises.
function M.run(fn, ...)
  if type(fn) ~= "function" then
    fail("mpi.run", "argument #1: expected a function, got %s", typename(fn))
  end
  local r = table.pack(xpcall(fn, function(e)
    return debug and debug.traceback(tostring(e), 2) or tostring(e)
  end, ...))
  if not r[1] then
    io.stderr:write(("luagpu: mpi rank %d: %s\n"):format(M.rank, tostring(r[2])))
    io.stderr:flush()
    core.abort(1)
  end
  return table.unpack(r, 2, r.n)
end

-- Sharded tensors whose shards are the ranks' (luagpu.mpi_shard):
-- mpi.shard(x [, dim]) and mpi.sharded(part [, dim]).
local MS = require "luagpu.mpi_shard"
MS.init(M)
M.shard, M.sharded = MS.shard, MS.sharded

return M
