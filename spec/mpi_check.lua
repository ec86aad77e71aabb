-- spec/mpi_check.lua: run by spec/mpi_spec.lua under mpirun. Every rank
-- checks every call of luagpu.mpi against references computed from the
-- data every rank can make (rank r's values are a formula of r), and the
-- errors that ranks must all raise together. Rank 0 prints "checked N".
local gpu = require "luagpu"
local mpi = require "luagpu.mpi"
local dev = gpu.devices()[mpi.rank % #gpu.devices() + 1]
local size, rank = mpi.size, mpi.rank
local checked = 0

local function check(cond, fmt, ...)
  if not cond then error(("rank %d: " .. fmt):format(rank, ...), 2) end
  checked = checked + 1
end

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
local function raises(pattern, f, ...)
  local ok, err = pcall(f, ...)
  check(not ok and tostring(err):find(pattern, 1, true), "expected an error with %q, got %s",
        pattern, tostring(err))
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
local core = require "luagpu_mpi"
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
if rank == 0 then print("checked " .. checked) end
