-- bench/build_cache.lua: what the on-disk program cache saves. Runs a small
-- script that builds a program (three kernels) and launches one kernel, as
-- separate processes with a fresh, private cache folder (XDG_CACHE_HOME,
-- which PoCL's own kernel cache also follows): the first run builds from
-- source, the later ones load the cached binary. Prints the time of the
-- build alone and of the whole process, first run against later runs (the
-- median of RUNS), and the same with luagpu's cache off (LUAGPU_NO_CACHE=1),
-- where only the driver's own cache, if any, helps, and with the driver's
-- cache off (POCL_KERNEL_CACHE=0, CUDA_CACHE_DISABLE=1), where only luagpu's
-- does. Each series starts with empty caches (CUDA_CACHE_PATH is private too).
--   build/luagpu bench/build_cache.lua [RUNS]
local build = os.getenv("LUAGPU_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
local gpu = rawget(_G, "gpu") or require "luagpu"
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")
local sh_quote = bench.sh_quote

local runs = tonumber(arg and arg[1]) or 5

local CHILD = [[
package.cpath = os.getenv("LUAGPU_BUILD") .. "/?.so;" .. package.cpath
local gpu = require "luagpu"
local dev = gpu.device()
local t0 = gpu.now()
local prog = dev:build[==[
__kernel void saxpy(float a, __global const float *x, __global float *y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] += a * x[i];
}
__kernel void blur(__global const uchar *in, __global uchar *out, int w, int h,
                   __local uchar *tile) {
  int lx = get_local_id(0), ly = get_local_id(1);
  int x0 = get_group_id(0) * 16 - 2, y0 = get_group_id(1) * 16 - 2;
  for (int ty = ly; ty < 20; ty += 16)
    for (int tx = lx; tx < 20; tx += 16)
      tile[ty * 20 + tx] = in[clamp(y0 + ty, 0, h - 1) * w + clamp(x0 + tx, 0, w - 1)];
  barrier(CLK_LOCAL_MEM_FENCE);
  int x = get_global_id(0), y = get_global_id(1), sum = 0;
  if (x >= w || y >= h) return;
  for (int dy = 0; dy < 5; dy++)
    for (int dx = 0; dx < 5; dx++) sum += tile[(ly + dy) * 20 + lx + dx];
  out[y * w + x] = (uchar)((sum + 12) / 25);
}
__kernel void fib(__global const int *k, __global long *out) {
  long a = 0, b = 1;
  for (int i = k[get_global_id(0)]; i > 0; i--) { long s = a + b; a = b; b = s; }
  out[get_global_id(0)] = a;
}]==]
local t1 = gpu.now()
local x, y = dev:buffer("float", 1024), dev:buffer("float", 1024)
prog.saxpy(2, x, y, 1024):run({1024}):wait()
print(string.format("build %.6f cached %s", t1 - t0, tostring(prog.cached)))
]]

local script = os.tmpname()
local f = assert(io.open(script, "wb"))
f:write(CHILD)
f:close()

-- One run: returns the build's seconds, the process's seconds, and whether
-- the program came from luagpu's cache.
local interpreter = bench.interpreter(build)
local function run(home, env)
  local cmd = string.format("LUAGPU_BUILD=%s XDG_CACHE_HOME=%s CUDA_CACHE_PATH=%s %s %s %s 2>&1",
                            sh_quote(build), sh_quote(home), sh_quote(home .. "/nv"), env or "",
                            interpreter, sh_quote(script))
  local t0 = gpu.now()
  local out = bench.capture(cmd)
  local wall = gpu.now() - t0
  local b, cached = out:match("build ([%d.]+) cached (%a+)")
  assert(b, "the child script failed:\n" .. out)
  return tonumber(b), wall, cached == "true"
end

-- first run in a fresh cache folder, then `runs` more
local function series(env)
  local home = os.tmpname()
  os.remove(home)
  assert(os.execute("mkdir -p " .. sh_quote(home)))
  local b1, w1, c1 = run(home, env)
  local bs, ws, cs = {}, {}, true
  for i = 1, runs do
    local b, w, c = run(home, env)
    bs[i], ws[i], cs = b, w, cs and c
  end
  os.execute("rm -rf " .. sh_quote(home))
  return {b1 = b1, w1 = w1, c1 = c1, b = bench.median(bs), w = bench.median(ws), c = cs}
end

local on = series("")
local off = series("LUAGPU_NO_CACHE=1")
-- the driver's own cache off (PoCL's kernel cache, NVIDIA's compute cache):
-- what luagpu's cache alone gives
local alone = series("POCL_KERNEL_CACHE=0 CUDA_CACHE_DISABLE=1")
os.remove(script)

local dev = gpu.device()
print(string.format("program build, first run against later runs (median of %d), on %s (%s)",
                    runs, dev.name, dev.platform))
local rows = {}   -- what, first and later in ms, speed-up
for _, s in ipairs{{"luagpu cache on", on}, {"luagpu cache off", off},
                   {"driver's cache off", alone}} do
  local what, r = s[1], s[2]
  rows[#rows + 1] = {"build, " .. what, r.b1 * 1e3, r.b * 1e3, r.b1 / r.b}
  rows[#rows + 1] = {"whole process, " .. what, r.w1 * 1e3, r.w * 1e3, r.w1 / r.w}
end
bench.print_table("%-36s %10s %10s %9s", {"", "first", "later", "speed-up"},
                  "%-36s %8.1f ms %7.1f ms %8.1fx", rows)
assert(not on.c1 and on.c, "the later runs did not load the program from the cache")
assert(not off.c, "LUAGPU_NO_CACHE=1 did not turn the cache off")
