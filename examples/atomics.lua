-- atomics.lua: counting with many work-items at once. A naive counter
-- (read, add, write) loses updates when work-items race; atomic_inc does
-- not, and a per-group counter in local memory with one global atomic per
-- group does the same work with far fewer global atomics. Each kernel's
-- time comes from its event's profile.
--   build/luagpu examples/atomics.lua [N]
local gpu = gpu or require "luagpu"

local n = tonumber(arg and arg[1]) or 1 << 20
local group = 64
n = (n + group - 1) // group * group
local dev = gpu.device()
print("device: " .. dev.name)

local prog = dev:build[[
/* every work-item whose value is odd counts one */
__kernel void naive(__global const int *x, __global int *count) {
  if (x[get_global_id(0)] & 1) count[0] = count[0] + 1;   /* races */
}
__kernel void atomic_count(__global const int *x, __global int *count) {
  if (x[get_global_id(0)] & 1) atomic_inc(count);
}
__kernel void grouped(__global const int *x, __global int *count, __local int *local_count) {
  if (get_local_id(0) == 0) local_count[0] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (x[get_global_id(0)] & 1) atomic_inc(local_count);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) atomic_add(count, local_count[0]);
}]]

-- random input, and the count Lua expects
local xs = gpu.array("int", n)
local want = 0
for i = 1, n do
  local v = math.random(0, 1 << 30)
  xs[i] = v
  if v & 1 == 1 then want = want + 1 end
end
local x = dev:buffer("int", n, {access = "in"})
x:write(xs)
local count = dev:scalar("int")

local function run(name, ...)
  count:write(0)
  local ev = prog[name](x, count, ...):run({n}, {group})
  local got = count:read():wait()
  print(string.format("%-12s counted %9d of %9d odd values  %8.3f ms", name, got, want,
                      ev:profile().duration * 1e-6))
  return got
end

local naive = run("naive")
assert(naive <= want, "the naive counter cannot count more than there is")
assert(run("atomic_count") == want, "atomic_inc lost updates")
assert(run("grouped", gpu.localmem("int", 1)) == want, "the grouped count is wrong")
if naive < want then
  print(string.format("the naive counter lost %d updates to races", want - naive))
else
  print("the naive counter lost nothing this time (the device ran the racing work-items one "
        .. "after another)")
end
print("ok")
