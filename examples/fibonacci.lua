-- fibonacci.lua: async_work_group_copy with look-ahead (double buffering).
-- Each work-group walks its chunk of the input a tile at a time. While it
-- computes on tile t from local memory, the copy of tile t + 1 into the
-- other half of its local buffer is already in flight; a barrier at the end
-- of each step keeps the copy after next from overwriting a tile still read.
-- The work: fib(k) for every k of the input (0 <= k <= 92, so fib(k) fits a
-- long), checked against Lua.
--   build/luagpu examples/fibonacci.lua [GROUPS]
local gpu = gpu or require "luagpu"

local TILE, TILES = 64, 16            -- work-items per group, tiles per group
local groups = tonumber(arg and arg[1]) or 32
local n = groups * TILES * TILE
local dev = gpu.device()
print("device: " .. dev.name)

local prog = dev:build([[
__kernel void fib(__global const int *k, __global long *out, __local int *buf) {
  const size_t base = get_group_id(0) * (TILES * TILE);
  const int l = get_local_id(0);
  event_t copy = async_work_group_copy(buf, k + base, TILE, 0);
  for (int t = 0; t < TILES; t++) {
    __local int *cur = buf + (t & 1) * TILE;
    wait_group_events(1, &copy);                  /* tile t is in */
    if (t + 1 < TILES)                            /* look ahead: fetch tile t + 1 */
      copy = async_work_group_copy(buf + ((t + 1) & 1) * TILE,
                                   k + base + (t + 1) * TILE, TILE, 0);
    long a = 0, b = 1;
    for (int i = cur[l]; i > 0; i--) {
      long s = a + b;
      a = b;
      b = s;
    }
    out[base + t * TILE + l] = a;
    barrier(CLK_LOCAL_MEM_FENCE);                 /* cur is free for the copy after next */
  }
}]], {defines = {TILE = TILE, TILES = TILES}})

local ks = gpu.array("int", n)
for i = 1, n do ks[i] = math.random(0, 92) end
local k = dev:buffer("int", n, {access = "in"})
local out = dev:buffer("long", n, {access = "out"})
k:write(ks)
local ev = prog.fib(k, out, gpu.localmem("int", 2 * TILE)):run({groups * TILE}, {TILE})
local r = out:read():wait()
print(string.format("%d values in %d groups of %d work-items, %d tiles each: %.3f ms",
                    n, groups, TILE, TILES, ev.duration * 1e-6))

local fib = {[0] = 0, 1}
for i = 2, 92 do fib[i] = fib[i - 1] + fib[i - 2] end
for i = 1, n do
  assert(r[i] == fib[ks[i]], string.format("fib(%d): got %d, want %d", ks[i], r[i], fib[ks[i]]))
end
print(string.format("checked against Lua: all %d match (fib(92) = %d)", n, fib[92]))
print("ok")
