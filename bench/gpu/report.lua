-- bench/gpu/report.lua: the one table of bench/gpu/run.sh. Reads the log of
-- a run, whose pieces print `SOURCE key value unit` lines (SOURCE: LUAGPU,
-- BASELINE for PyTorch/cuBLAS, CLBLAST, CHOST for the C OpenCL host), and
-- prints luagpu's figure beside each baseline measured in the same run, with
-- the ratio (> 1 means luagpu is faster, for times and rates alike).
--   build/luagpu bench/gpu/report.lua bench.log
local path = assert(arg and arg[1], "usage: report.lua LOG")
local v = { LUAGPU = {}, BASELINE = {}, CLBLAST = {}, CHOST = {} }
local device
for line in io.lines(path) do
  local src, key, val = line:match("^(%u+) (%S+) (%S+)")
  if src and v[src] then
    if key == "device" then device = val:gsub("_", " ") else v[src][key] = tonumber(val) end
  end
end

local rows = {}
local function row(what, ours, base, basename, unit, lower_is_better)
  if not ours or not base then return end
  local ratio = lower_is_better and base / ours or ours / base
  rows[#rows + 1] = ("| %s | %.2f %s | %.2f %s (%s) | %.2f |"):format(what, ours, unit, base,
    unit, basename, ratio)
end

local L, B, C, H = v.LUAGPU, v.BASELINE, v.CLBLAST, v.CHOST
row("copy, OpenCL copy kernel", L.copy_kernel_gbs, B.copy_gbs, "torch copy_", "GB/s")
row("copy, clEnqueueCopyBuffer", L.copy_buffer_gbs, B.copy_gbs, "torch copy_", "GB/s")
for _, e in ipairs { 20, 28 } do
  row(("reduce.sum 2^%d floats"):format(e), L[("sum_2^%d_gbs"):format(e)],
    B[("sum_2^%d_gbs"):format(e)], "torch.sum", "GB/s")
  row(("reduce.sum 2^%d floats, time"):format(e), L[("sum_2^%d_us"):format(e)],
    B[("sum_2^%d_us"):format(e)], "torch.sum", "us", true)
end
local sizes = {}
for key in pairs(L) do
  local m, n, k = key:match("^sgemm_(%d+)x(%d+)x(%d+)_tflops$")
  if m then sizes[#sizes + 1] = { tonumber(m), tonumber(n), tonumber(k), key } end
end
table.sort(sizes, function(a, b) return a[1] * a[2] * a[3] < b[1] * b[2] * b[3] end)
for _, s in ipairs(sizes) do
  local what = ("matmul float %dx%dx%d"):format(s[1], s[2], s[3])
  row(what, L[s[4]], B[s[4]], "cuBLAS, TF32 off", "TFLOP/s")
  row(what, L[s[4]], C[s[4]], "CLBlast SGEMM", "TFLOP/s")
end
row("launch, enqueue only", L.launch_enqueue_us, H.launch_enqueue_us, "C host", "us", true)
row("launch, enqueue + wait", L.launch_wait_us, H.launch_wait_us, "C host", "us", true)

-- What users wait for, on the wall clock (bench/gpu/wallclock.lua against
-- torch_baseline.py's .item() and synchronize(), and the C host's variants).
for _, e in ipairs { 20, 28 } do
  row(("wall: reduce.sum 2^%d floats to a number"):format(e), L[("wall_sum_2^%d_us"):format(e)],
    B[("wall_sum_2^%d_us"):format(e)], "x.sum().item()", "us", true)
  row(("enqueue: reduce.sum 2^%d, async"):format(e), L[("enqueue_sum_2^%d_us"):format(e)],
    B[("enqueue_sum_2^%d_us"):format(e)], "x.sum()", "us", true)
end
for _, n in ipairs { 256, 1024, 4096 } do
  row(("wall: matmul %d, then finish"):format(n), L[("wall_mm_%d_us"):format(n)],
    B[("wall_mm_%d_us"):format(n)], "A @ B; synchronize()", "us", true)
  row(("enqueue: matmul %d"):format(n), L[("enqueue_mm_%d_us"):format(n)],
    B[("enqueue_mm_%d_us"):format(n)], "A @ B", "us", true)
end
-- The same with profiling off (dev:set_profiling(false)): beside the same
-- PyTorch figures.
for _, e in ipairs { 20, 28 } do
  row(("wall, profiling off: reduce.sum 2^%d"):format(e), L[("wall_sum_2^%d_noprof_us"):format(e)],
    B[("wall_sum_2^%d_us"):format(e)], "x.sum().item()", "us", true)
  row(("enqueue, profiling off: reduce.sum 2^%d, async"):format(e),
    L[("enqueue_sum_2^%d_noprof_us"):format(e)], B[("enqueue_sum_2^%d_us"):format(e)], "x.sum()",
    "us", true)
end
for _, n in ipairs { 256, 1024, 4096 } do
  row(("wall, profiling off: matmul %d, then finish"):format(n),
    L[("wall_mm_%d_noprof_us"):format(n)], B[("wall_mm_%d_us"):format(n)],
    "A @ B; synchronize()", "us", true)
  row(("enqueue, profiling off: matmul %d"):format(n), L[("enqueue_mm_%d_noprof_us"):format(n)],
    B[("enqueue_mm_%d_us"):format(n)], "A @ B", "us", true)
end
for _, v in ipairs { {"prof_event", "profiling queue, event"}, {"prof_noevent", "profiling, no event"},
                     {"noprof_event", "no profiling, event"}, {"noprof_noevent", "no profiling, no event"} } do
  row("launch, k(...):run, default queue", L.launch_prof_us, H[v[1] .. "_us"], "C host: " .. v[2],
    "us", true)
end
row("launch, k(...):run, queue without profiling", L.launch_noprof_us, H.noprof_event_us,
  "C host: no profiling, event", "us", true)
-- Where a helper's enqueue goes (bench/gpu/overhead.lua): the whole call
-- beside the same call with every launch and read stubbed out (Lua's own
-- time), and what the C host pays for the commands the helper enqueues.
for _, p in ipairs { {"", "profiling on"}, {"_noprof", "profiling off"} } do
  for _, c in ipairs { {"sum_async_2^20", "reduce.sum 2^20, async", "kernel_read4" .. (p[1] == "" and "_prof" or ""),
                        "C host: kernel, then 4-byte read with event"},
                       {"mm_256", "matmul 256", p[1] == "" and "prof_event" or "noprof_event",
                        "C host: kernel with event"} } do
    row(("enqueue split, %s: %s, whole call"):format(p[2], c[2]), L[c[1] .. p[1]],
      H[c[3] .. "_us"], c[4], "us", true)
    row(("enqueue split, %s: %s, Lua's own time"):format(p[2], c[2]), L["lua_" .. c[1] .. p[1]],
      L[c[1] .. p[1]], "the whole call", "us", true)
  end
end

print(("luagpu on %s: medians of >= 10 timed runs after warm-up, baselines in the same run")
  :format(device or "the GPU"))
print()
print("| measurement | luagpu | baseline | ratio (luagpu / baseline speed) |")
print("| --- | --- | --- | --- |")
for _, r in ipairs(rows) do print(r) end
