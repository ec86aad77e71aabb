-- bench/gpu/index_rows_probe.lua: forms of the whole-row copy of
-- x:index_select(1, R) (issue 32), 4096 rows of 4096 floats by default,
-- against the copy of the same bytes (dev's copy_to) and against the
-- kernel the library runs today (lg_index_rows4). Device time by profiled
-- Events, medians of REPS; each form's result is checked against the
-- library's. A program, not a test:
--   build/luagpu bench/gpu/index_rows_probe.lua [REPS [ROWS [COLS]]]
local gpu = rawget(_G, "gpu") or require "luagpu"
local reps = tonumber(arg and arg[1]) or 51
local rows = tonumber(arg and arg[2]) or 4096
local cols = tonumber(arg and arg[3]) or 4096
local dev = gpu.device()
dev:set_profiling(true)
local function median(t) table.sort(t); return t[(#t + 1) // 2] end

local S = dev:rand("float", {rows, cols}, 1):eval()
local R = ((dev:rand("float", {rows}, 24) * rows):floor():astype("int") + 1):eval()
local ref = S:index_select(1, R):eval()
local out = dev:buffer("float", rows * cols)

local src = [[
#define B4 (b / 4)
#define LG_VIEWS __global float4 *out = (__global float4 *)out_; \
  __global const float4 *dat = (__global const float4 *)dat_;
/* a group per row, the row's float4s strided by the group's size */
__kernel void per_row(__global float *out_, __global const int *idx, __global const float *dat_,
                      uint b) {
  LG_VIEWS
  uint r = get_group_id(0), l = get_local_id(0), n = get_local_size(0);
  uint p = (uint)(idx[r] - 1);
  __global const float4 *s = dat + (size_t)p * B4;
  __global float4 *d = out + (size_t)r * B4;
  for (uint c = l; c < B4; c += n) d[c] = s[c];
}
/* the same, four loads in flight before the stores */
__kernel void per_row_x4(__global float *out_, __global const int *idx,
                         __global const float *dat_, uint b) {
  LG_VIEWS
  uint r = get_group_id(0), l = get_local_id(0), n = get_local_size(0);
  uint p = (uint)(idx[r] - 1);
  __global const float4 *s = dat + (size_t)p * B4;
  __global float4 *d = out + (size_t)r * B4;
  uint c = l;
  for (; c + 3 * n < B4; c += 4 * n) {
    float4 v0 = s[c], v1 = s[c + n], v2 = s[c + 2 * n], v3 = s[c + 3 * n];
    d[c] = v0; d[c + n] = v1; d[c + 2 * n] = v2; d[c + 3 * n] = v3;
  }
  for (; c < B4; c += n) d[c] = s[c];
}
/* a work-item a float4, 2-D: x along the row, y the row (today's shape) */
__kernel void flat2d(__global float *out_, __global const int *idx, __global const float *dat_,
                     uint b) {
  LG_VIEWS
  uint c = get_global_id(0), r = get_global_id(1);
  if (c >= B4) return;
  uint p = (uint)(idx[r] - 1);
  out[(size_t)r * B4 + c] = dat[(size_t)p * B4 + c];
}
/* two float4s a work-item, one group-width apart */
__kernel void flat2d_x2(__global float *out_, __global const int *idx,
                        __global const float *dat_, uint b) {
  LG_VIEWS
  uint c = get_group_id(0) * get_local_size(0) * 2 + get_local_id(0), r = get_global_id(1);
  uint n = get_local_size(0);
  uint p = (uint)(idx[r] - 1);
  __global const float4 *s = dat + (size_t)p * B4;
  __global float4 *d = out + (size_t)r * B4;
  if (c + n < B4) { float4 v0 = s[c], v1 = s[c + n]; d[c] = v0; d[c + n] = v1; }
  else if (c < B4) d[c] = s[c];
}
]]
local prog = dev:build(src)

local function timed(name, run)
  local t = {}
  for i = 1, reps + 3 do
    local ev = run()
    ev:wait()
    if i > 3 then t[#t + 1] = ev.duration / 1e9 end
  end
  return median(t)
end
local function check(name)
  local got = out:get()
  local want = ref:get()
  for i = 1, rows * cols, 997 do
    assert(got[i] == want[i], name .. ": element " .. i .. " differs")
  end
end

print(("device: %s; %d x %d floats; medians of %d, device us"):format(dev.name, rows, cols, reps))
local copy_src = S.buffer
local base = timed("copy", function() return copy_src:copy_to(out) end)
print(("%-34s %9.1f us  %6.0f GB/s"):format("copy_to of the same bytes", base * 1e6,
      2 * rows * cols * 4 / base / 1e9))
-- the library's call, its kernel's device time from a trace
local function lib_time()
  local t = {}
  for i = 1, reps + 3 do
    dev:finish()
    gpu.trace(true)
    local r = S:index_select(1, R)
    dev:finish()
    local rec = gpu.trace(false)
    local busy = 0
    for _, c in ipairs(rec) do
      if c.start and tostring(c.name):find("index_rows") then busy = busy + (c["end"] - c.start) end
    end
    if i > 3 then t[#t + 1] = busy / 1e9 end
    r = nil
  end
  return median(t)
end
local lib = lib_time()
print(("%-34s %9.1f us  %6.0f GB/s  %5.2f of copy_to"):format("library (lg_index_rows4)",
      lib * 1e6, 2 * rows * cols * 4 / lib / 1e9, lib / base))
local b4 = cols // 4
for _, form in ipairs{{"per_row", 256}, {"per_row", 512}, {"per_row", 1024},
                      {"per_row_x4", 256}, {"per_row_x4", 128}, {"flat2d", 256},
                      {"flat2d", 128}, {"flat2d_x2", 256}, {"flat2d_x2", 128}} do
  local name, lx = form[1], form[2]
  local k = prog[name]
  local g
  if name:find("per_row") then g, lx = {rows * lx}, {lx}
  elseif name == "flat2d" then g, lx = {((b4 + lx - 1) // lx) * lx, rows}, {lx, 1}
  else g, lx = {((b4 + 2 * lx - 1) // (2 * lx)) * lx, rows}, {lx, 1} end
  if form[2] > k.work_group_size then
    print(("%-34s skipped: groups of %d, the kernel's limit here %d"):format(
          name .. " " .. form[2], form[2], k.work_group_size))
    goto next
  end
  local d = timed(name, function() return k(out, R, S, cols):run(g, lx) end)
  check(name)
  print(("%-34s %9.1f us  %6.0f GB/s  %5.2f of copy_to, %5.2f of the library's"):format(
        name .. " " .. form[2], d * 1e6, 2 * rows * cols * 4 / d / 1e9, d / base, d / lib))
  ::next::
end
