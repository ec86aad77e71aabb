-- examples/reduce.lua: summing a buffer on the device, twice.
--
--   build/luagpu examples/reduce.lua [N]
--
-- First by hand: a kernel in this script folds the input into one partial
-- sum per work-group in local memory (pass 1), then runs again over the
-- partials with a single group (pass 2). Then with the helper,
-- luagpu.reduce, which does the same with vector loads, a fixed grid and
-- cached kernels, and also custom reductions such as a dot product. Both
-- are checked against a sum computed in Lua.
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"

local n = tonumber(arg and arg[1]) or 1000003
local dev = gpu.device()
print(tostring(dev))

-- data: n random integers 0..9 as floats, so every sum is exact
local host = gpu.array("float", n)
local ref = 0
for i = 1, n do
  local v = math.random(0, 9)
  host[i] = v
  ref = ref + v
end
local x = dev:buffer("float", n)
x:write(host):wait()

-- 1. By hand. Each work-item sums a strided share of the input, then the
-- group adds its work-items' sums in a tree in local memory; item 0 writes
-- the group's partial. The same kernel then sums the partials.
local prog = dev:build[[
__kernel void partial_sums(__global const float *in, uint n,
                           __global float *out, __local float *scratch) {
  size_t lid = get_local_id(0), lsz = get_local_size(0);
  float s = 0.0f;
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) s += in[i];
  scratch[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t h = lsz / 2; h > 0; h /= 2) {
    if (lid < h) scratch[lid] += scratch[lid + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = scratch[0];
}]]

local lsz, groups = 64, 128
local partials = dev:buffer("float", groups)
local total = dev:buffer("float", 1)
local scratch = gpu.localmem("float", lsz)
local pass1 = prog.partial_sums(x, n, partials, scratch):run({groups * lsz}, {lsz})
local pass2 = prog.partial_sums(partials, groups, total, scratch)
  :run({lsz}, {lsz}, {wait = {pass1}})
local by_hand = total:read({wait = {pass2}}):wait()[1]
print(("by hand:  %.1f  (pass 1 %.1f us, pass 2 %.1f us)")
      :format(by_hand, pass1.duration / 1e3, pass2.duration / 1e3))

-- 2. With the helper.
local s = reduce.sum(x)
print(("reduce:   %.1f   min %g  max %g"):format(s, reduce.min(x), reduce.max(x)))

-- the async form: the result's Event and the Events of its passes
local ev, passes = reduce.sum(x, {async = true})
local first, last = passes[1]:profile(), passes[#passes]:profile()
print(("async:    %.1f  (%d passes, %.1f us on the device)")
      :format(ev:wait(), #passes, (last["end"] - first.start) / 1e3))

-- custom reductions: a dot product (the map reads x and y), on views
local dot = reduce.new{type = "float", acc = dev.fp64 and "double" or "float",
                       map = "x * y", op = "a + b", neutral = "0"}
local d = dot(x:sub(1, 1000), x:sub(2, 1001))
local dref = 0
for i = 1, 1000 do dref = dref + host[i] * host[i + 1] end
print(("dot:      %.1f  (Lua: %.1f)"):format(d, dref))

print(("Lua:      %.1f"):format(ref))
assert(by_hand == ref, "the hand-written reduction is off")
assert(s == ref, "reduce.sum is off")
assert(d == dref, "the dot product is off")
print("ok")
