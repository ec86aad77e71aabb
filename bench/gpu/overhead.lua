-- bench/gpu/overhead.lua: where a helper call's enqueue time goes. Each
-- helper call is timed up to its return (median of REPS, a wait after each
-- outside the time), then again with every kernel launch replaced by a Lua
-- function that returns at once (call:run, b:read and b:get stubbed through
-- the debug library): the second figure is Lua's own time per call, the
-- difference the driver's (enqueues, Events, reads).
--
--   build/luagpu bench/gpu/overhead.lua [REPS [DEVICE]]
--
-- Prints `LUAGPU key value us` lines (lua_* for the stubbed runs).
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"
local matmul = require "luagpu.matmul"

local reps = math.max(5, tonumber(arg and arg[1]) or 200)
local dev = gpu.device(arg and arg[2] ~= "" and arg[2] or nil)
local median = bench.median
local fill = bench.filler(dev, "float", 0)

local function report(key, seconds)
  print(string.format("LUAGPU %s %.2f us", key, seconds * 1e6))
end

local function enqueue_time(enqueue, settle)
  return median(bench.enqueue_times(reps, enqueue, settle))
end

local probe = dev:build"__kernel void nop(__global float *x) { }".nop
local x = dev:buffer("float", 4)
local bound = probe(x)
local call_methods = debug.getmetatable(bound).__index
local real_run = call_methods.run
local buffer_mt = debug.getmetatable(x)
local buffer_index = buffer_mt.__index
local done = dev:default_queue():marker()
done:wait()

local b = dev:buffer("float", 1 << 20)
fill(b, 7):wait()
local A, B, C = dev:buffer("float", {256, 256}), dev:buffer("float", {256, 256}),
                dev:buffer("float", {256, 256})
fill(A, 1):wait()
fill(B, 2):wait()

local ta, tb = dev:tensor("float", {16}, 1), dev:tensor("float", {16}, 2)
local tm = dev:tensor("float", {32, 32}, 3)
local tX, tY = dev:tensor("float", {4, 16, 16}, 4), dev:tensor("float", {4, 16, 16}, 5)
local trow = dev:tensor("float", {1, 32}, 6)
local tsel = dev:tensor("long", {8}, {1, 3, 5, 7, 2, 4, 6, 8})
local tpos = dev:tensor("long", {32, 32}, 1)
local cases = {
  {"tensor_index_select_32x32", function() return tm:index_select(1, tsel) end,
   function() dev:finish() end},
  {"tensor_gather2_32x32", function() return tm:gather(2, tpos) end, function() dev:finish() end},
  {"tensor_var2_32x32", function() return tm:var(2) end, function() dev:finish() end},
  {"tensor_bmm_4x16", function() return tX:mm(tY) end, function() dev:finish() end},
  {"tensor_row_32x32", function() return (tm + trow):eval() end, function() dev:finish() end},
  {"tensor_argmax2_32x32", function() return tm:argmax(2) end, function() dev:finish() end},
  {"tensor_add_16", function() return (ta + tb):eval() end, function() dev:finish() end},
  {"tensor_fused_sum_32x32", function() return ((tm * 2 + 1):exp()):sum(2) end,
   function() dev:finish() end},
  {"sum_async_2^20", function() return reduce.sum(b, {async = true}) end,
   function(ev) ev:wait() end},
  {"sum_2^20", function() return reduce.sum(b) end, function() end},
  {"mm_256", function() return matmul(A, B, C) end, function() dev:finish() end},
  {"run", function() return bound:run({64}) end, function() dev:finish() end},
}
print("LUAGPU device " .. dev.name:gsub(" ", "_") .. " name")
for _, profiling in ipairs {true, false} do
  dev:set_profiling(profiling)
  local suffix = profiling and "" or "_noprof"
  for _, c in ipairs(cases) do
    c[2](); c[3](c[2]())                         -- builds, memo
    report(c[1] .. suffix, enqueue_time(c[2], c[3]))
    call_methods.run = function(call, g, l, o)
      if o and o.event == false then return nil end
      return done
    end
    local function read() return done end
    local function get() return {0, 0} end     -- a number, or a flag of no bad position
    buffer_mt.__index = function(b, k)
      if k == "read" then return read elseif k == "get" then return get end
      return buffer_index(b, k)
    end
    local ok, t = pcall(enqueue_time, c[2], c[3])
    call_methods.run, buffer_mt.__index = real_run, buffer_index
    if ok then report("lua_" .. c[1] .. suffix, t) else print("# " .. c[1] .. ": " .. t) end
  end
end
dev:set_profiling(true)
