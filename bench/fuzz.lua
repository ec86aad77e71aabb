-- fuzz.lua: calls luagpu's API in random orders with random, mostly invalid
-- arguments (wrong types, nil, negative and huge sizes, released objects,
-- views out of range, events of other queues, option tables whose fields
-- raise, collect garbage or release objects while being read), then checks
-- that a normal kernel still computes the right answer.
--
--   build/luagpu bench/fuzz.lua [calls] [seed] [-v]
--   lua5.4 -e 'package.cpath="build/?.so;"..package.cpath' bench/fuzz.lua 1000000 7
--
-- calls defaults to 100000, seed to the clock; -v lists the distinct error
-- messages (numbers masked) with their counts. The last line reads
--   fuzz: N calls, seed S: R raised (L by luagpu, A bad argument, E by the fuzzer's own
--   tables, O other), C left suspended in a coroutine; final kernel ok; T s,
--   resident memory M MiB at the start, P at most
-- and the exit status is 0, or 1 when the final check fails, an error was not
-- a string, or resident memory passed $LUAGPU_FUZZ_MAX_RSS_MB (default 4096).
-- A crash, a sanitizer report or a hang is the failure this looks for: run it
-- under `make asan`'s build (make fuzz; spec/safety_spec.lua does too).
--
-- What it stays clear of, because it would be valid use that merely costs a
-- lot: host arrays and buffers between 1 MiB and 1 TiB (a huge size here is
-- one that no allocation can satisfy), global sizes above 2^16 work-items
-- (a launch of 2^32 work-groups or more also aborts PoCL 3.1 itself), and
-- kernels that index memory with their arguments (a kernel writing out of
-- bounds is beyond what luagpu can check; see docs/EMBEDDING.md).
local gpu = rawget(_G, "gpu") or require "luagpu"

local args = {}
local verbose = false
for _, a in ipairs(arg or {}) do
  if a == "-v" then verbose = true else args[#args + 1] = a end
end
local CALLS = math.tointeger(tonumber(args[1])) or 100000
local SEED = math.tointeger(tonumber(args[2])) or os.time()
math.randomseed(SEED)
local R = math.random

local dev = gpu.device()
local REG = debug.getregistry()   -- only to list each class's methods
local M = {}
for _, cls in ipairs {"Buffer", "Event", "Queue", "Array", "Program", "Device", "Call"} do
  M[cls] = REG["luagpu." .. cls].__methods
end

-- ------------------------------------------------------------- pools

local CAP = 48
local KINDS = {"Buffer", "Event", "Queue", "Array", "Program", "Kernel", "Call", "LocalMem",
               "Device"}
local P = {}
for _, k in ipairs(KINDS) do P[k] = {} end
P.Device[1] = dev

local function add(kind, obj)
  local p = P[kind]
  if obj == nil then return end
  if #p < CAP then p[#p + 1] = obj else p[R(#p)] = obj end
  return obj
end

local function pick(kind)
  local p = P[kind]
  if #p == 0 then return nil end
  return p[R(#p)]
end

local function any_object()
  return pick(KINDS[R(#KINDS)])
end

local function release(o)
  pcall(function() o:release() end)
end

-- ------------------------------------------------------------- values

local JUNK = {
  false, true, 0, -1, 1, 2, 3, 1.5, -0.0, 0 / 0, math.huge, -math.huge, math.maxinteger,
  math.mininteger, 2 ^ 31, 2 ^ 32, 2 ^ 53, 2 ^ 63, 1e300, -2 ^ 31, "", "float", "flaot",
  "int4", "float3", "double16", "uchar", "in", "out", "mixed", "gpu", "cpu", "x", "1",
  string.rep("z", 1000), "a\0b", {}, {1, 2, 3}, {-1}, {0}, {1e300}, {{}}, {"a"},
  {n = 1, 2}, math.abs, coroutine.create(print), gpu, io.stderr,
}
local NJUNK = #JUNK + 1   -- the last index is nil

local function junk() return JUNK[R(NJUNK)] end

local evil
local any

-- A table whose every read, length and tostring runs code that may raise,
-- collect garbage, release a random object, or try to yield.
function evil()
  local action = R(5)
  local function act()
    if action == 1 then error("fuzz: evil table")
    elseif action == 2 then local o = any_object(); if o then release(o) end; collectgarbage()
    elseif action == 3 then collectgarbage()
    elseif action == 4 then coroutine.yield()
    end
  end
  local len = ({3, 0, -1, -5, 1.5, 65537, 1 << 40, math.mininteger, "2"})[R(9)]
  return setmetatable({}, {
    __index = function() act(); return nil end,
    __len = function() act(); return len end,
    __tostring = function() act(); return "evil" end,
    __name = action == 5 and "evil.Name" or nil,
  })
end

function any()
  local r = R()
  if r < 0.4 then return junk() end
  if r < 0.85 then return any_object() end
  if r < 0.95 then return evil() end
  return {wait = {pick("Event")}}
end

local function maybe(gen, ...)   -- gen's value 85% of the time, else anything
  if R() < 0.85 then return gen(...) end
  return any()
end

local TYPES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
               "double", "float2", "float3", "float4", "int4", "uchar16", "double16", "short8",
               "half", "float5", "", "int32", "unsigned int", "FLOAT"}
local function gtype() return maybe(function() return TYPES[R(#TYPES)] end) end

local SMALL = {1, 2, 3, 4, 7, 8, 16, 31, 63, 64, 100, 256, 1000, 1024, 4096}
local HUGE = {1 << 40, 1 << 50, 1 << 62, math.maxinteger, 2 ^ 63, 1e300, 2 ^ 40 + 0.5}
local BAD = {0, -1, -4096, math.mininteger, 1.5, 0 / 0, math.huge, -math.huge, "10", "x",
             true, -2 ^ 63}

-- v, unless it is a size that a host array or buffer could really take
-- between 1 M and 1 T elements (then -v): the fuzzer allocates nothing large
local function not_large(v)
  if type(v) == "number" and v == v and math.abs(v) > (1 << 20) and math.abs(v) < 2 ^ 41 then
    return -math.abs(v)
  end
  return v
end

local function gcount()
  local r = R()
  if r < 0.6 then return SMALL[R(#SMALL)] end
  if r < 0.75 then return HUGE[R(#HUGE)] end
  if r < 0.95 then return BAD[R(#BAD)] end
  return not_large(any())
end

-- a count or a shape; a real allocation stays under 1 MiB elements
local function gshape()
  if R() < 0.5 then return gcount() end
  local t, n, prod = {}, R(0, 9), 1
  for i = 1, n do
    local d = ({1, 2, 3, 4, 8, 16})[R(6)]
    if R() < 0.1 then d = R() < 0.5 and HUGE[R(#HUGE)] or BAD[R(#BAD)] end
    if math.type(d) == "integer" and d > 0 and prod * d > (1 << 16) then d = 1 << 62 end
    if math.type(d) == "integer" and d > 0 and d < (1 << 20) then prod = prod * d end
    t[i] = d
  end
  return t
end

local function width_of(tname)
  if type(tname) ~= "string" then return 1 end
  return tonumber(tname:match("(%d+)$")) or 1
end

local NUMS = {0, 1, -1, 127, 128, 255, 256, -129, 65535, 2 ^ 31, -2 ^ 31, 2 ^ 32, 1.5, -2.5,
              0 / 0, math.huge, math.maxinteger, math.mininteger, 3.0, 1e-300, 1e300}
local function gnum()
  local r = R()
  if r < 0.7 then return R(-100, 100) end
  if r < 0.95 then return NUMS[R(#NUMS)] end
  return any()
end

local function gtable(n)
  local t = {}
  for i = 1, n do t[i] = R() < 0.97 and R(-100, 100) or gnum() end
  return t
end

local function live_count(b)
  local ok, n = pcall(function() return #b end)
  return ok and math.type(n) == "integer" and n >= 0 and n <= (1 << 20) and n or R(0, 16)
end

local function buffer_type(b)
  local ok, t = pcall(function() return b.type end)
  return ok and t or "float"
end

-- data for b:write and friends: mostly the right size, sometimes not
local function gdata(b)
  local n, t = live_count(b), buffer_type(b)
  local w = width_of(t)
  if t:match("3$") then w = 3 end
  local r = R()
  if r < 0.35 then return gtable(n * w) end
  if r < 0.45 then return gtable(math.max(0, n * w + R(-2, 2))) end
  if r < 0.65 then
    local ok, a = pcall(gpu.array, t, n)
    return ok and a or nil
  end
  if r < 0.72 then
    local ok, a = pcall(gpu.array, TYPES[R(12)], n)
    return ok and a or nil
  end
  if r < 0.8 then return pick("Array") end
  if r < 0.9 then return gnum() end
  return any()
end

local function gwait()
  local r = R()
  if r < 0.45 then
    local t = {}
    for i = 1, R(0, 4) do t[i] = R() < 0.85 and pick("Event") or any() end
    return t
  end
  if r < 0.65 then return pick("Event") end
  if r < 0.7 then return {} end
  return any()
end

local function gsizes(max)
  local r = R()
  max = max or 1024
  if r < 0.35 then return R(1, max) end
  if r < 0.55 then return {R(1, max)} end
  if r < 0.65 then return {R(1, 32), R(1, 32)} end
  if r < 0.72 then return {R(1, 16), R(1, 16), R(1, 8)} end
  if r < 0.76 then return {1, 1, 1, 1} end
  if r < 0.9 then return BAD[R(#BAD)] end
  if r < 0.93 then return {BAD[R(#BAD)]} end
  local v = any()   -- not a huge valid size: PoCL 3.1 aborts at 2^32 work-groups
  if math.type(v) == "float" and v == math.floor(v) and v > -2 ^ 63 and v < 2 ^ 63 then
    v = math.tointeger(v)
  end
  if math.type(v) == "integer" and v > max then v = -v end
  return v
end

local function glocal()
  local r = R()
  if r < 0.4 then return nil end
  if r < 0.7 then return ({1, 2, 4, 8, 16, 32, 64, 3, 7})[R(9)] end
  if r < 0.8 then return {({1, 2, 4, 8})[R(4)], ({1, 2, 4})[R(3)]} end
  if r < 0.9 then return ({1024, 4096, 1 << 20, 0, -1, 1.5})[R(6)] end
  return any()
end

local function gopts(extra)
  local r = R()
  if r < 0.35 then return nil end
  if r < 0.55 then return {wait = gwait()} end
  if r < 0.7 then return {queue = maybe(pick, "Queue")} end
  if r < 0.8 then return {wait = gwait(), queue = pick("Queue")} end
  if r < 0.85 and extra then return extra() end
  if r < 0.87 then return {wiat = 1} end
  if r < 0.88 then return {[evil()] = 1, [any_object() or 1] = 2} end
  if r < 0.93 then return evil() end
  return any()
end

local function goffset()
  local o = ({{0}, {1}, {1 << 62}, {-1}, {0, 0}, 5, "x"})[R(7)]
  local t = {offset = o}
  if R() < 0.5 then t.wait = gwait() end
  return t
end

local function gindex(n)
  local r = R()
  if r < 0.7 then return R(-n - 2, n + 2) end
  if r < 0.9 then return NUMS[R(#NUMS)] end
  return any()
end

-- ----------------------------------------------------- temporary files

local base = os.tmpname()
os.remove(base)
local PATHS = {base .. "_a.npy", base .. "_b.npy", base .. "_bad1.npy", base .. "_bad2.npy",
               base .. "_bad3.npy", "/nonexistent/dir/x.npy", "", "/", base .. "_none.npy",
               base .. "_p.png"}
do
  local bad = {
    "\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'fortran_order': False, 'shape': (999999999999,), }",
    "\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'",
    "\x93NUMPY\x02\x00\x10\x00\x00\x00{'descr': '|O', 'fortran_order': True, 'shape': (-1, 3), }\n",
  }
  for i, text in ipairs(bad) do
    local f = io.open(base .. "_bad" .. i .. ".npy", "wb")
    if f then f:write(text, string.rep("\0", R(0, 64))) f:close() end
  end
end

-- ------------------------------------------------------------ programs

local SOURCE = [[
kernel void touch(global float *x) { if (get_global_id(0) == 0) x[0] += 1.0f; }
kernel void set_first(global int *x, int v) { if (get_global_id(0) == 0) x[0] = v; }
kernel void with_local(global float *x, local float *t) {
  if (get_local_id(0) == 0) t[0] = 2.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_global_id(0) == 0) x[0] = t[0];
}
kernel void vec(global float4 *x, float4 v, uchar c, ulong u) {
  if (get_global_id(0) == 0) x[0] = v + (float)c + (float)u;
}
kernel void nothing(void) {}
kernel void with_const(constant int *c, global int *x) { if (get_global_id(0) == 0) x[0] = c[0]; }
]]
local BAD_SOURCES = {"kernel void broken(global float *x) { x[0] = ; }", "", "not C at all",
                     "kernel void twice(){} kernel void twice(){}"}
local KNAMES = {"touch", "set_first", "with_local", "vec", "nothing", "with_const", "absent",
                "kernels", "release", ""}

local function build_main()
  local p = dev:build(SOURCE)
  add("Program", p)
  for _, name in ipairs {"touch", "set_first", "with_local", "vec", "nothing", "with_const"} do
    add("Kernel", p:kernel(name))
  end
  return p
end
build_main()

-- arguments for kernel k: mostly of the kinds its parameters take
local function gkargs(k)
  local ok, params = pcall(function() return k.args end)
  local t = {}
  if not ok or type(params) ~= "table" then
    for i = 1, R(0, 4) do t[i] = any() end
    return t, R(0, 4)
  end
  local n = #params
  if R() < 0.1 then n = math.max(0, n + R(-1, 1)) end
  for i = 1, n do
    local p = params[i] or {}
    local r = R()
    if r < 0.1 then t[i] = any()
    elseif p.address == "global" or p.address == "constant" then t[i] = pick("Buffer")
    elseif p.address == "local" then t[i] = pick("LocalMem")
    elseif type(p.type) == "string" and p.type:match("%d$") then t[i] = gtable(width_of(p.type))
    else t[i] = gnum() end
  end
  return t, n
end

-- ----------------------------------------------------------- the calls

local FIELDS = {"type", "shape", "count", "bytes", "device", "access", "parent", "offset",
                "status", "duration", "command", "profiling", "out_of_order", "default",
                "kernels", "log", "name", "args", "nargs", "program", "work_group_size",
                "local_mem_size", "private_mem_size", "kernel", "data", "global_mem_size",
                "max_work_item_sizes", "extensions", 1, 0, -1, 2.5, true}

local ops = {
  -- creating
  {8, function() add("Buffer", M.Device.buffer(maybe(pick, "Device"), gtype(), gshape(),
      (R() < 0.25 and function(f) return f() end or gopts)(function()
        local t = ({"in", "out", "mixed", "inout", 1})[R(5)]
        if R() < 0.5 then t = nil end
        -- pinned (CL_MEM_ALLOC_HOST_PTR) now and then, with host or init = false too
        local pinned = R() < 0.4 and (R() < 0.9 or junk()) or nil
        local r = R()
        return {access = t, host = r < 0.3 and gtable(R(0, 8)) or r < 0.6 and pick("Array") or nil,
                pinned = pinned, init = R() < 0.1 and (R() < 0.8 and false or junk()) or nil}
      end))) end},
  {2, function() add("Buffer", M.Device.scalar(maybe(pick, "Device"), gtype(),
      R() < 0.7 and gnum() or gtable(R(0, 5)))) end},
  {6, function()
    local b = maybe(pick, "Buffer")
    local n = live_count(b)
    add("Buffer", M.Buffer.sub(b, gindex(n), R() < 0.2 and nil or gindex(n)))
  end},
  {4, function()
    local t = gtype()
    if R() < 0.5 then add("Array", gpu.array(t, gcount()))
    else add("Array", gpu.array(t, R() < 0.8 and gtable(R(0, 64)) or gshape())) end
  end},
  {2, function() add("Queue", M.Device.queue(maybe(pick, "Device"), R() < 0.6 and
      {out_of_order = R() < 0.5, profiling = R() < 0.5} or any())) end},
  {2, function() add("LocalMem", gpu.localmem(gtype(), gcount())) end},
  {0.05, function() add("Program", M.Device.build(dev, BAD_SOURCES[R(#BAD_SOURCES)])) end},
  {0.3, function()                     -- cached after the first build: cheap
    if R() < 0.5 then build_main()
    else add("Program", M.Device.build(maybe(pick, "Device"), maybe(function() return SOURCE end),
      ({nil, {options = 5}, {defines = {["1x"] = 1}}, {defines = {N = 0 / 0}}, {bogus = 1},
        any()})[R(6)])) end
  end},
  {0.3, function() M.Device.build_file(dev, PATHS[R(#PATHS)], gopts()) end},
  {3, function()
    local p = maybe(pick, "Program")
    local name = KNAMES[R(#KNAMES)]
    if R() < 0.5 then add("Kernel", M.Program.kernel(p, R() < 0.9 and name or any()))
    else add("Kernel", p[name]) end
  end},
  {6, function()
    local k = maybe(pick, "Kernel")
    local t, n = gkargs(k)
    add("Call", k(table.unpack(t, 1, n)))
  end},
  -- enqueueing
  {6, function() local b = maybe(pick, "Buffer"); add("Event", M.Buffer.write(b, gdata(b), gopts())) end},
  {5, function()
    local b = maybe(pick, "Buffer")
    local r = R()
    if r < 0.5 then add("Event", M.Buffer.read(b, gopts()))
    elseif r < 0.8 then add("Event", M.Buffer.read(b, gdata(b), gopts()))
    else M.Buffer.get(b, gopts()) end
  end},
  {5, function() add("Event", M.Buffer.fill(maybe(pick, "Buffer"), R() < 0.8 and gnum() or
      gtable(R(0, 17)), gopts())) end},
  {5, function() add("Event", M.Buffer.copy_to(maybe(pick, "Buffer"), maybe(pick, "Buffer"),
      gopts())) end},
  {8, function() add("Event", M.Call.run(maybe(pick, "Call"), gsizes(), glocal(),
      gopts(goffset))) end},
  {4, function()
    local t = {}
    for i = 1, R(0, 3) do t[i] = R() < 0.8 and pick("Event") or any() end
    if R() < 0.5 then t[#t + 1] = gopts(goffset) end
    add("Event", M.Device.run(maybe(pick, "Device"), maybe(pick, "Call"), gsizes(), glocal(),
                              table.unpack(t)))
  end},
  {3, function()
    local q = maybe(pick, "Queue")
    local w = R() < 0.6 and {wait = gwait()} or gwait()
    if R() < 0.5 then add("Event", M.Queue.marker(q, w)) else add("Event", M.Queue.barrier(q, w)) end
  end},
  -- waiting and syncing
  {4, function() M.Event.wait(maybe(pick, "Event")) end},
  {2, function() M.Event.profile(maybe(pick, "Event")) end},
  {2, function()
    local t = {}
    for i = 1, R(0, 4) do t[i] = R() < 0.85 and pick("Event") or any() end
    if R() < 0.5 then gpu.wait(table.unpack(t)) else gpu.wait(t) end
  end},
  {2, function() local q = maybe(pick, "Queue"); if R() < 0.5 then M.Queue.finish(q) else M.Queue.flush(q) end end},
  {1, function() local d = maybe(pick, "Device"); if R() < 0.5 then M.Device.finish(d) else M.Device.flush(d) end end},
  -- releasing
  {3, function() release(maybe(pick, "Buffer")) end},
  {2, function() release(maybe(pick, "Event")) end},
  {1, function() release(maybe(pick, "Queue")) end},
  {0.1, function() release(maybe(pick, "Program")) end},
  {1, function() local x <close> = maybe(any_object) end},
  -- fields, metamethods, host arrays
  {6, function()
    local o = R() < 0.9 and any_object() or any()
    local k = R() < 0.9 and FIELDS[R(#FIELDS)] or any()
    local _ = o[k]
  end},
  {1, function() local o = any_object(); o[FIELDS[R(#FIELDS)]] = any() end},
  {2, function() local _ = #(R() < 0.9 and any_object() or any()) end},
  {2, function() local _ = tostring(any_object()) end},
  {1, function() local _ = any_object() == any_object() end},
  {4, function()
    local a = maybe(pick, "Array")
    local n = live_count(a)
    if R() < 0.5 then local _ = a[gindex(n)] else a[gindex(n)] = gnum() end
  end},
  {2, function()
    local a = maybe(pick, "Array")
    local r = R()
    if r < 0.3 then M.Array.fill(a, gnum())
    elseif r < 0.6 then add("Array", M.Array.copy(a, R() < 0.5 and nil or gtype()))
    elseif r < 0.8 then M.Array.totable(a)
    else M.Array.save(a, PATHS[R(#PATHS)]) end
  end},
  {1, function() add("Array", gpu.load(R() < 0.9 and PATHS[R(#PATHS)] or any())) end},
  {0.5, function()                     -- PNG bytes of random sizes, written over anything
    local w, h, c = R(-1, 9), R(-1, 9), R(0, 5)
    local n = R() < 0.8 and math.max(0, w * h * c) or R(0, 100)
    gpu.write_file(PATHS[R(#PATHS)], gpu.encode_png(w, h, c, string.rep("\7", n)))
  end},
  {0.5, function()                     -- a saved array, its bytes mutated, loaded again
    local a = pick("Array")
    if not a then return end
    M.Array.save(a, PATHS[1])
    local f = assert(io.open(PATHS[1], "rb"))
    local bytes = f:read("a")
    f:close()
    local t = {}
    for i = 1, #bytes do t[i] = bytes:sub(i, i) end
    for _ = 1, R(1, 4) do
      local i = R(1, math.max(1, math.min(#t, 140)))
      t[i] = string.char(R(0, 255))
    end
    if R() < 0.3 then for i = R(1, #t + 1), #t do t[i] = nil end end
    f = assert(io.open(PATHS[2], "wb"))
    f:write(table.concat(t))
    f:close()
    add("Array", gpu.load(PATHS[2]))
  end},
  {0.5, function() add("Queue", M.Device.default_queue(maybe(pick, "Device"))) end},
  {1, function()
    local r = R()
    if r < 0.4 then gpu.device(R() < 0.5 and ({1, 0, 2, "cpu", "gpu", "pthread", "nothing"})[R(7)]
                                or any())
    elseif r < 0.7 then gpu.devices(R() < 0.5 and ({"all", "cpu", "gpu", "x"})[R(4)] or any())
    elseif r < 0.8 then gpu.kernel_source(R() < 0.5 and "reduce.cl" or any())
    elseif r < 0.85 then gpu.platforms()
    else M.Device.summary(maybe(pick, "Device")) end
  end},
  {1, function() if R() < 0.1 then collectgarbage() else collectgarbage("step", R(0, 64)) end end},
}

local total = 0
for _, op in ipairs(ops) do total = total + op[1] end

local function choose()
  local x = R() * total
  for _, op in ipairs(ops) do
    x = x - op[1]
    if x <= 0 then return op[2] end
  end
  return ops[#ops][2]
end

-- -------------------------------------------------------------- the run

-- Resident memory in MiB (Linux), sampled as the run goes: a run that grows
-- past MAX_RSS stops (a leak, or an allocation the generators let through).
local MAX_RSS = tonumber(os.getenv("LUAGPU_FUZZ_MAX_RSS_MB")) or 4096
local function rss()
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  local s = f:read("a")
  f:close()
  return (tonumber(s:match("VmRSS:%s*(%d+)")) or 0) // 1024
end
local rss_start, rss_peak = rss(), 0

local raised, by_luagpu, bad_arg, own, other, nonstring, crossed = 0, 0, 0, 0, 0, 0, 0
local messages = {}
local co_fn = function(f) return f() end
local t0 = gpu.now()
for i = 1, CALLS do
  local f = choose()
  local ok, err
  if R() < 0.05 then               -- inside a coroutine: yields from evil tables work there
    local co = coroutine.create(co_fn)
    ok, err = coroutine.resume(co, f)
    if ok and coroutine.status(co) == "suspended" then crossed = crossed + 1 end
  else
    ok, err = pcall(f)
  end
  if not ok then
    raised = raised + 1
    if type(err) ~= "string" then
      nonstring = nonstring + 1
      err = "(a " .. type(err) .. ")"
    end
    if err:find("luagpu: ", 1, true) then by_luagpu = by_luagpu + 1
    elseif err:find("bad argument", 1, true) then bad_arg = bad_arg + 1
    elseif err:find("fuzz: evil", 1, true) or err:find("yield", 1, true) then own = own + 1
    else other = other + 1 end
    if verbose then
      local key = err:gsub("^[^:]*:%d+: ", ""):gsub("0x%x+", "0x?"):gsub("%-?%d+", "N")
      messages[key] = (messages[key] or 0) + 1
    end
  end
  if i % 500 == 0 then
    local r = rss()
    rss_peak = math.max(rss_peak, r)
    if r > MAX_RSS then
      print(string.format("fuzz: resident memory %d MiB after %d calls (seed %d), past the "
                          .. "limit of %d MiB (LUAGPU_FUZZ_MAX_RSS_MB)", r, i, SEED, MAX_RSS))
      os.exit(1)
    end
  end
  if i % 20000 == 0 and verbose then
    io.stderr:write(string.format("fuzz: %d calls, %.1f s, %d MiB resident\n", i,
                                  gpu.now() - t0, rss()))
  end
end

if verbose then
  local list = {}
  for k, v in pairs(messages) do list[#list + 1] = {k, v} end
  table.sort(list, function(a, b) return a[2] > b[2] end)
  for _, e in ipairs(list) do print(string.format("%7d  %s", e[2], e[1]:sub(1, 200))) end
end

-- ------------------------------------------------------ the final check

for _, p in ipairs(PATHS) do if p:sub(1, #base) == base then os.remove(p) end end
for k in pairs(P) do P[k] = {} end
collectgarbage()
collectgarbage()
dev:finish()
local n = 1 << 16
local x, y, want = gpu.array("float", n), gpu.array("float", n), {}
for i = 1, n do
  x[i] = R(-1000, 1000) / 8
  y[i] = R(-1000, 1000) / 8
  want[i] = 2.5 * x[i] + y[i]
end
local prog = dev:build [[
  kernel void saxpy(global const float *x, global float *y, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
  }]]
local bx = dev:buffer("float", n, {host = x})
local by = dev:buffer("float", n, {host = y})
prog.saxpy(bx, by, 2.5):run({n}, {64})
local got = by:get()
local bad = 0
for i = 1, n do if got[i] ~= want[i] then bad = bad + 1 end end
print(string.format("fuzz: %d calls, seed %d: %d raised (%d by luagpu, %d bad argument, %d by "
                    .. "the fuzzer's own tables, %d other), %d left suspended in a coroutine; final "
                    .. "kernel %s; %.1f s, resident memory %d MiB at the start, %d at most",
                    CALLS, SEED, raised, by_luagpu, bad_arg, own, other, crossed,
                    bad == 0 and "ok" or bad .. " wrong", gpu.now() - t0, rss_start,
                    math.max(rss_peak, rss())))
if bad ~= 0 or nonstring ~= 0 then os.exit(1) end
