-- spec/mpi_check.lua: run by spec/mpi_spec.lua under mpirun. Every rank
-- checks every call of luagpu.mpi against references computed from the
-- data every rank can make (rank r's values are a formula of r), and the
-- errors that ranks must all raise together. Rank 0 prints "checked N".
local gpu = require "luagpu"
local mpi = require "luagpu.mpi"
local dev = gpu.devices()[mpi.rank % #gpu.devices() + 1]
local size, rank = mpi.size, mpi.rank
local check, raises, checked =
  dofile(arg[0]:match("^(.-)[^/]*$") .. "mpi_support.lua").checks(rank)

-- value i of rank r for element type t
local function value(t, r, i)
  local v = (r * 37 + i * 11) % 23 - 11
  if t:sub(1, 1) == "u" then v = v + 11 end
  if t == "float" or t == "double" then v = v * 0.5 end
  return v
end
local function data(t, r, n)
  local a = gpu.array(t, n)
  for i = 1, n do a[i] = value(t, r, i) end
  return a
end

local TYPES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float"}
if dev.fp64 then TYPES[#TYPES + 1] = "double" end
-- in a list: every rank must call the collectives in the same order
local OPS = {
  {"sum", function(a, b) return a + b end}, {"prod", function(a, b) return a * b end},
  {"min", math.min}, {"max", math.max},
}

-- reductions and gathers of host arrays, every type and op
for _, t in ipairs(TYPES) do
  local n = 7
  local mine = data(t, rank, n)
  for _, o in ipairs(OPS) do
    local op, f = o[1], o[2]
    local got = mpi.allreduce(mine, op)
    local root = size - 1
    local at_root = mpi.reduce(mine, op, root)
    check((at_root ~= nil) == (rank == root), "reduce gives a result on the root only")
    for i = 1, n do
      local want = value(t, 0, i)
      for r = 1, size - 1 do want = f(want, value(t, r, i)) end
      if op ~= "prod" or math.abs(want) < 100 then      -- products that fit every type
        check(got[i] == want, "%s allreduce %s [%d]: got %s, want %s", t, op, i, got[i], want)
        if at_root then check(at_root[i] == want, "%s reduce %s", t, op) end
      end
    end
  end
  local g = mpi.allgather(mine)
  check(#g == n * size, "%s allgather: %d values", t, #g)
  for r = 0, size - 1 do
    for i = 1, n do check(g[r * n + i] == value(t, r, i), "%s allgather [%d][%d]", t, r, i) end
  end
  local b = data(t, rank, n)
  mpi.bcast(b, 1 % size)
  for i = 1, n do check(b[i] == value(t, 1 % size, i), "%s bcast [%d]", t, i) end
end

-- numbers, buffers and tensors
check(mpi.allreduce(rank + 1, "sum") == size * (size + 1) // 2, "number allreduce")
check(math.type(mpi.allreduce(rank + 1, "sum")) == "integer", "integers stay integers")
check(mpi.allreduce(rank + 0.5, "max") == size - 0.5, "float allreduce")
local all = mpi.allgather(rank * 10)
for r = 0, size - 1 do check(all[r + 1] == r * 10, "number allgather") end
check(mpi.bcast(rank + 100, 0) == 100, "number bcast")

local shaped = gpu.array("float", {shape = {2, 3}})
for i = 1, 6 do shaped[i] = rank * 6 + i end
local b = dev:buffer("float", {2, 3}, {host = shaped})
local gb = mpi.allgather(b)
check(gpu.type(gb) == "Buffer" and gb.shape[1] == 2 * size and gb.shape[2] == 3,
      "a Buffer gathers into a Buffer of {2 * size, 3}")
local gbh = gb:get()
for i = 1, 6 * size do check(gbh[i] == i, "buffer allgather [%d]", i) end
local sb = mpi.allreduce(b, "sum"):get()
for i = 1, 6 do
  local want = 0
  for r = 0, size - 1 do want = want + r * 6 + i end
  check(sb[i] == want, "buffer allreduce [%d]", i)
end
mpi.bcast(b, 0)
local bh = b:get()
for i = 1, 6 do check(bh[i] == i, "buffer bcast in place [%d]", i) end

local x = dev:tensor("float", {3, 2}, rank + 1)
local gx = mpi.allgather(x)
check(gx.shape[1] == 3 * size and gx.shape[2] == 2, "a Tensor gathers along dim 1")
check(gx:sum() == 6 * size * (size + 1) / 2, "tensor allgather values")
check(mpi.allreduce(x:t(), "sum"):sum() == 6 * size * (size + 1) / 2, "a transposed view reduces")
mpi.bcast(x, size - 1)
check(x:sum() == 6 * size, "tensor bcast in place")

local DEFAULT_CHUNK = mpi.chunk_bytes      -- put back after each part that sets it
-- pipelined allreduce of buffers and tensors: pieces of mpi.chunk_bytes
-- (small here, so small data takes many, the last one short), against the
-- unpipelined path (bit-identical) and against MPI's reduction of the same
-- pieces of host arrays (core.allreduce_part), for every op and type
local core = require "luagpu_mpi"
local function ref_pieces(a, op, chunk)
  local out = a:copy()
  for first = 0, #out - 1, chunk do
    core.allreduce_part(out, op, nil, first, math.min(chunk, #out - first))
  end
  return out
end
local PTYPES = {"uchar", "short", "int", "uint", "long", "float"}
if dev.fp64 then PTYPES[#PTYPES + 1] = "double" end
for _, t in ipairs(PTYPES) do
  local esize = ({uchar = 1, short = 2, int = 4, uint = 4, long = 8, float = 4, double = 8})[t]
  for _, n in ipairs{37, 100} do
    local host = data(t, rank, n)
    for _, bytes in ipairs{24, 40, 1} do
      for _, o in ipairs(OPS) do
        local op = o[1]
        local before = mpi.stats.pieces
        mpi.chunk_bytes = bytes
        local got = mpi.allreduce(dev:buffer(t, n, {host = host}), op):get()
        local chunk = math.max(1, bytes // esize)
        local want = n * esize > bytes and (n + chunk - 1) // chunk or 0   -- 0: one piece
        check(mpi.stats.pieces - before == want,
              "%s allreduce of %d in pieces of %d bytes: %d pieces", t, n, bytes,
              mpi.stats.pieces - before)
        mpi.chunk_bytes = 0
        local whole = mpi.allreduce(dev:buffer(t, n, {host = host}), op):get()
        local pieces = ref_pieces(host, op, chunk)
        for i = 1, n do
          if op ~= "prod" or t ~= "float" and t ~= "double" then
            check(got[i] == whole[i], "%s %s pipelined [%d] = unpipelined: %s, %s", t, op, i,
                  got[i], whole[i])
          end
          check(got[i] == pieces[i], "%s %s pipelined [%d] = pieces of host arrays", t, op, i)
        end
      end
    end
  end
end
mpi.chunk_bytes = DEFAULT_CHUNK
-- tensors (a transposed view, a shape kept), a shaped buffer, a fill still
-- on the queue when the allreduce starts, ranks with different settings and
-- a rank that brings a host array: every rank uses the largest pieces
do
  mpi.chunk_bytes = 16 * (rank + 1)
  local vals = data("float", rank, 35)
  local x = dev:tensor("float", {5, 7}, vals)
  local before = mpi.stats.pipelined
  local y = mpi.allreduce(x:t(), "sum")
  check(mpi.stats.pipelined == before + 1, "a tensor's allreduce is pipelined")
  check(y.shape[1] == 7 and y.shape[2] == 5, "the pipelined tensor keeps its shape")
  local want = gpu.array("float", 35)
  for i = 1, 35 do
    for r = 0, size - 1 do want[i] = want[i] + value("float", r, i) end
  end
  local yt = y:t():contiguous():get()
  for i = 1, 35 do check(yt[i] == want[i], "pipelined tensor [%d]: %s, want %s", i, yt[i], want[i]) end
  local b2 = dev:buffer("int", {6, 5})
  b2:fill(rank + 2)                                    -- not waited for
  local s2 = mpi.allreduce(b2, "prod")
  check(s2.shape[1] == 6 and s2.shape[2] == 5, "a pipelined Buffer keeps its shape")
  local p = 1
  for r = 0, size - 1 do p = p * (r + 2) end
  local s2h = s2:get()
  for i = 1, 30 do check(s2h[i] == p, "pipelined after a pending fill [%d]: %d", i, s2h[i]) end
  local mixed = rank == 0 and data("long", 0, 41) or dev:buffer("long", 41,
                                                               {host = data("long", rank, 41)})
  local m = mpi.allreduce(mixed, "max")
  local mh = rank == 0 and m or m:get()
  for i = 1, 41 do
    local w = value("long", 0, i)
    for r = 1, size - 1 do w = math.max(w, value("long", r, i)) end
    check(mh[i] == w, "a host array beside pipelined buffers [%d]", i)
  end
  -- a vector type is staged whole, cut into the pipelining ranks' pieces of scalars
  local v = rank == 0 and dev:buffer("float4", 20, {host = data("float", 0, 80):totable()})
            or dev:buffer("float", 80, {host = data("float", rank, 80)})
  local vs = mpi.allreduce(v, "sum"):get()
  for i = 1, 80 do
    local w = 0
    for r = 0, size - 1 do w = w + value("float", r, i) end
    check(vs[i] == w, "float4 beside float buffers [%d]: %s, want %s", i, vs[i], w)
  end
  -- a lazy tensor, and a view of a buffer
  local lazy = dev:tensor("int", {40}, data("int", rank, 40)) * 2 + 1
  local lz = mpi.allreduce(lazy, "sum"):get()
  local view = mpi.allreduce(dev:buffer("int", 50, {host = data("int", rank, 50)}):sub(6, 45),
                             "min"):get()
  for i = 1, 40 do
    local w, m = 0, math.huge
    for r = 0, size - 1 do
      w = w + value("int", r, i) * 2 + 1
      m = math.min(m, value("int", r, i + 5))
    end
    check(lz[i] == w, "a lazy tensor's pipelined allreduce [%d]", i)
    check(view[i] == m, "a view's pipelined allreduce [%d]", i)
  end
  mpi.chunk_bytes = DEFAULT_CHUNK
end
-- pipelined bcast: in place, the root's pieces read, the others' written
for _, t in ipairs{"uchar", "int", "long", "float"} do
  for _, n in ipairs{37, 100} do
    for _, bytes in ipairs{24, 1} do
      mpi.chunk_bytes = bytes
      local root = (n + bytes) % size
      local b = dev:buffer(t, n, {host = data(t, rank, n)})
      local before = mpi.stats.pipelined
      check(mpi.bcast(b, root) == b, "bcast returns x")
      check(mpi.stats.pipelined == before + 1, "%s bcast of %d is pipelined", t, n)
      local got = b:get()
      for i = 1, n do
        check(got[i] == value(t, root, i), "%s pipelined bcast [%d]: %s", t, i, got[i])
      end
    end
  end
end
do
  mpi.chunk_bytes = 16
  local x = dev:tensor("float", {5, 7}, data("float", rank, 35))
  local xt = x:t()                                     -- a view, written in place
  mpi.bcast(xt, size - 1)
  local got = x:get()
  for i = 1, 35 do check(got[i] == value("float", size - 1, i), "tensor view bcast [%d]", i) end
  local f = dev:buffer("int", 40)
  f:fill(rank + 7)                                     -- not waited for
  local mixed = rank == 1 % size and gpu.array("int", 40):fill(rank + 7) or f
  mpi.bcast(mixed, 0)
  local fh = rank == 1 % size and size > 1 and mixed or f:get()
  for i = 1, 40 do check(fh[i] == 7, "bcast after a pending fill, beside a host array [%d]", i) end
  mpi.chunk_bytes = DEFAULT_CHUNK
end

-- a buffer that cannot be read raises before anything is sent
mpi.chunk_bytes = 16
raises('the buffer has access "in" (host to device only)', mpi.allreduce,
       dev:buffer("int", 64, {access = "in"}), "sum")
-- a bad setting raises before anything is sent (set alike on every rank)
mpi.chunk_bytes = -1
raises("mpi.allreduce: mpi.chunk_bytes: expected an integer >= 0 (0 or false: no pieces), got -1",
       mpi.allreduce, dev:buffer("int", 4), "sum")
mpi.chunk_bytes = "big"
raises("mpi.chunk_bytes: expected an integer >= 0 (0 or false: no pieces), got \"big\"",
       mpi.allreduce, 1, "sum")
mpi.chunk_bytes = DEFAULT_CHUNK

-- reduce_scatter: rank r gets the (r+1)-th share of the first dim, of x's kind
for _, t in ipairs(TYPES) do
  local rows = 2 * size
  local mine = data(t, rank, rows * 3)
  for _, o in ipairs(OPS) do
    local op, f = o[1], o[2]
    local got = mpi.reduce_scatter(gpu.array(t, mine:totable(), {shape = {rows, 3}}), op)
    check(got.shape[1] == 2 and got.shape[2] == 3, "%s reduce_scatter shape", t)
    for i = 1, 6 do
      local k = rank * 6 + i
      local want = value(t, 0, k)
      for r = 1, size - 1 do want = f(want, value(t, r, k)) end
      if op ~= "prod" or math.abs(want) < 100 then
        check(got[i] == want, "%s reduce_scatter %s [%d]: got %s, want %s", t, op, i, got[i], want)
      end
    end
  end
end
do
  local rb = mpi.reduce_scatter(dev:buffer("int", 3 * size, {host = data("int", rank, 3 * size)}),
                                "sum")
  check(gpu.type(rb) == "Buffer" and rb.count == 3, "a Buffer's share is a Buffer")
  local rt = mpi.reduce_scatter(dev:tensor("float", {size, 2}, rank + 1), "max")
  check(gpu.type(rt) ~= "Buffer" and rt.shape[1] == 1 and rt.shape[2] == 2 and rt:sum() == 2 * size,
        "a Tensor's share is a Tensor of {1, 2}")
  local rbh = rb:get()
  for i = 1, 3 do
    local k, want = rank * 3 + i, 0
    for r = 0, size - 1 do want = want + value("int", r, k) end
    check(rbh[i] == want, "buffer reduce_scatter [%d]", i)
  end
  if size == 1 then check(mpi.reduce_scatter(5, "sum") == 5, "number reduce_scatter") end
end
if size > 1 then
  raises("mpi.reduce_scatter: the first dim (" .. (2 * size + 1) .. ") does not divide by " ..
         "the " .. size .. " ranks: every rank gets an equal share (pad it to a multiple of " ..
         size .. ")", mpi.reduce_scatter, gpu.array("int", 2 * size + 1), "sum")
  raises("mpi.reduce_scatter: the first dim (1) does not divide by the " .. size .. " ranks",
         mpi.reduce_scatter, 7, "sum")
  raises("the ranks bring different first dims (" .. size .. " to " .. (2 * size) .. ")",
         mpi.reduce_scatter, dev:tensor("int", rank == 0 and {size, 2} or {2 * size, 1}), "sum")
  raises("the ranks bring different counts", mpi.reduce_scatter,
         gpu.array("int", size * (rank + 1)), "sum")
end
raises('mpi.reduce_scatter: argument #2: expected "sum", "prod", "min" or "max", got "avg"',
       mpi.reduce_scatter, gpu.array("int", size), "avg")

-- point to point: a ring
local right, left = (rank + 1) % size, (rank - 1) % size
if rank % 2 == 0 then
  mpi.send(data("int", rank, 5), right, 3)
  local got, src, tag = mpi.recv("int", left, 3)
  check(src == left and tag == 3 and #got == 5, "recv by type: source, tag, count")
  for i = 1, 5 do check(got[i] == value("int", left, i), "recv [%d]", i) end
else
  local into = gpu.array("int", 5)
  local got, src = mpi.recv(into, left, 3)
  check(got == into and src == left, "recv into an array returns it")
  for i = 1, 5 do check(into[i] == value("int", left, i), "recv into [%d]", i) end
  mpi.send(data("int", rank, 5), right, 3)
end
local dst = dev:buffer("double", 4)
if rank == 0 then
  mpi.send(dev:buffer("double", 4, {host = gpu.array("double", {1.5, 2.5, 3.5, 4.5})}), size - 1)
end
if rank == size - 1 then
  mpi.recv(dst, 0)
  local h = dst:get()
  check(h[1] == 1.5 and h[4] == 4.5, "a Buffer sent and received")
end

-- errors every rank raises together (with one rank, nothing differs)
if size > 1 then
  raises("the ranks bring different counts (3 to " .. (2 + size) .. " values)",
         mpi.allreduce, gpu.array("int", 3 + rank), "sum")
  raises("the ranks bring different element types", mpi.allgather,
         gpu.array(rank == 0 and "int" or "float", 2))
  raises("the ranks ask for different operations (sum to max)", mpi.allreduce, 1,
         rank == 0 and "sum" or "max")
  raises("the ranks name different roots (0 to 1)", mpi.reduce, 1, "sum", rank == 0 and 0 or 1)
  raises("the ranks name different roots (0 to 1)", mpi.gather, 1, rank == 0 and 0 or 1)
end
-- errors of one rank's own arguments
raises("root rank " .. size .. " is out of range (0 to " .. (size - 1) .. ")", mpi.bcast, 1, size)
raises('expected "sum", "prod", "min" or "max", got "avg"', mpi.allreduce, 1, "avg")
raises("expected a number, a host array, a Buffer or a Tensor, got table", mpi.allgather, {})
raises('expected a scalar type name ("float", "int", ...), got "floaty"', mpi.recv, "floaty")
raises("destination rank -1 is out of range", mpi.send, gpu.array("int", 1), -1)
raises("tag -2 is out of range", mpi.send, gpu.array("int", 1), 0, -2)
if rank == 0 then
  mpi.send(gpu.array("float", 3), size - 1, 9)
end
if rank == size - 1 then
  raises("rank 0 sent 3 values of float (tag 9), expected 4; the message is left unreceived",
         mpi.recv, gpu.array("float", 4), 0, 9)
  mpi.recv(gpu.array("float", 3), 0, 9)                 -- the message is still there
end
-- issue 27 item 32: a target that cannot take the message is refused before
-- the message is received; it stays for the next recv
if rank == 0 then
  mpi.send(data("int", 0, 4), size - 1, 10)
  mpi.send(data("int", 0, 4), size - 1, 11)
end
if rank == size - 1 then
  local out = dev:buffer("int", 4, {access = "out"})
  raises('mpi.recv: argument #1: the buffer has access "out" (device to host only): it cannot '
         .. "receive from the host", mpi.recv, out, 0, 10)
  raises("rank 0 sent 4 values of int (tag 10), expected 5; the message is left unreceived",
         mpi.recv, dev:buffer("int", 5), 0, 10)
  raises("rank 0 sent 4 values of int (tag 10), expected 6; the message is left unreceived",
         mpi.recv, dev:tensor("int", {2, 3}), 0, 10)
  raises("rank 0 sent 2 values of double (tag 10), expected 3; the message is left unreceived",
         mpi.recv, dev:buffer("double", 3), 0, 10)
  local into = dev:buffer("int", 4, {access = "in"})    -- never read: "in" receives
  mpi.recv(into, 0, 10)
  local t = dev:tensor("int", {2, 2})
  mpi.recv(t, 0, 11)
  local copy = dev:buffer("int", 4)
  into:copy_to(copy):wait()
  local got, tgot = copy:get(), t:get()
  for i = 1, 4 do
    check(got[i] == value("int", 0, i), "recv into an \"in\" buffer [%d]", i)
    check(tgot[i] == value("int", 0, i), "recv into a tensor [%d]", i)
  end
end
-- issue 27 item 34: every argument error is luagpu's, at the script's line
local function at_line(pattern, f, ...)
  local args = table.pack(...)
  local line = debug.getinfo(1, "l").currentline + 1
  local ok, err = pcall(function() f(table.unpack(args, 1, args.n)) end)
  check(not ok and tostring(err):find("mpi_check.lua:" .. line .. ": luagpu: " .. pattern, 1,
                                      true), "expected %q at line %d, got %s", pattern, line,
        tostring(err))
end
at_line("mpi.send: argument #2: expected a destination rank (an integer), got \"x\"", mpi.send,
        gpu.array("int", 1), "x")
at_line("mpi.send: argument #2: expected a destination rank (an integer), got nil", mpi.send,
        gpu.array("int", 1))
at_line("mpi.send: argument #3: expected a tag (an integer), got 1.5", mpi.send,
        gpu.array("int", 1), 0, 1.5)
at_line("mpi.send: argument #3: tag 9223372036854775807 is out of range (0 to ", mpi.send,
        gpu.array("int", 1), 0, math.maxinteger)
at_line("mpi.recv: argument #2: expected a source rank (an integer), got table", mpi.recv,
        "int", {})
at_line("mpi.recv: argument #2: source rank " .. size .. " is out of range", mpi.recv, "int",
        size)
at_line("mpi.recv: argument #3: tag -1 is out of range (0 or more)", mpi.recv, "int", 0, -1)
at_line("mpi.bcast: argument #2: expected a root rank (an integer), got 0.5", mpi.bcast, 1, 0.5)
at_line("mpi.gather: argument #2: root rank -1 is out of range", mpi.gather, 1, -1)
at_line("mpi.abort: argument #1: expected an exit code (an integer), got \"now\"", mpi.abort,
        "now")
-- the C half's own checks, for scripts that use it directly
raises("luagpu: mpi.send: argument #2: expected a rank (an integer), got string", core.send,
       gpu.array("int", 1), "x")
raises("luagpu: mpi.send: argument #3: expected a tag (an integer), got 1.5", core.send,
       gpu.array("int", 1), 0, 1.5)
raises("luagpu: mpi.recv: argument #1: expected a scalar type name (\"float\", \"int\", ...), "
       .. "got \"floaty\"", core.probe, "floaty")
raises("luagpu: mpi.allreduce: argument #2: expected \"sum\", \"prod\", \"min\" or \"max\", "
       .. "got no value", core.allreduce, gpu.array("int", 1))
raises("luagpu: mpi.abort: argument #1: expected an exit code (an integer), got table",
       core.abort, {})

local released = dev:buffer("float", 2)
released:release()
raises("attempt to use a released buffer", mpi.allreduce, released, "sum")

mpi.barrier()
if rank == 0 then print("checked " .. checked()) end
