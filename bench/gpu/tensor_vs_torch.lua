-- bench/gpu/tensor_vs_torch.lua: what a user waits for, op by op, beside
-- PyTorch on the same card (bench/gpu/tensor_vs_torch.py, run first, its
-- `BASELINE key us` lines in the file TORCH).
--
--   python3 bench/gpu/tensor_vs_torch.py [REPS [SET]] > torch.txt
--   build/luagpu bench/gpu/tensor_vs_torch.lua torch.txt [REPS [SET]]
--
-- SET: table29 (issue 29's table, the default), array (issue 32's
-- gathers, scatters, masks, joins, topk, unique, softmax, var, einsum) or
-- topk (x:topk's radix select: each way, and the sort it replaces).
--
-- For each op: luagpu's wall clock from the call until the result is in
-- hand (the op, then dev:finish(); a Lua number for sum), median of REPS
-- after 3 warm-up calls, written as users write it (no release, so the
-- pool's collections count); luagpu's device time (the busy time of the
-- commands one call enqueues, from gpu.trace's timestamps); torch's wall
-- clock the same way; the ratio luagpu wall / torch wall (above 1:
-- luagpu is slower); and, over the timed calls, the OpenCL buffers the pool
-- made and the full collections it ran (dev:memory()'s made, collections).
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"

local torch_file = arg and arg[1]
local reps = tonumber(arg and arg[2]) or 20
local set = arg and arg[3] or "table29"     -- "array": issue 32's operations
local dev = gpu.device()
local now, median = gpu.now, bench.median
dev:set_profiling(true)

local baseline = {}
if torch_file and torch_file ~= "" then
  for line in io.lines(torch_file) do
    local k, v = line:match("^BASELINE (%S+) (%S+)")
    if k then baseline[k] = tonumber(v) end
    if line:match("^# torch") then print(line) end
  end
end

local function wall(f)
  for _ = 1, 3 do f() end
  dev:finish()
  local t = {}
  local m0 = dev:memory()
  for r = 1, reps do
    local t0 = now()
    local res = f()
    dev:finish()
    t[r] = now() - t0
    res = nil
  end
  local m1 = dev:memory()
  return median(t) * 1e6, m1.made - m0.made, m1.collections - m0.collections
end

-- The device's busy time (us) of the commands one call of f enqueues.
local function device_time(f)
  f(); dev:finish()
  gpu.trace(true)
  f(); dev:finish()
  local rec = gpu.trace(false)
  local spans = {}
  for _, c in ipairs(rec) do
    if c.start and c["end"] then spans[#spans + 1] = {c.start, c["end"]} end
  end
  table.sort(spans, function(a, b) return a[1] < b[1] end)
  local busy, till = 0, -math.huge
  for _, s in ipairs(spans) do          -- the union of the spans
    local a, b = math.max(s[1], till), s[2]
    if b > a then busy = busy + (b - a) end
    if b > till then till = b end
  end
  return busy / 1e3, #spans
end

local n26, n24 = 1 << 26, 1 << 24
local x26, y26 = dev:rand("float", {n26}, 1), dev:rand("float", {n26}, 2)
local x1k, y1k = dev:rand("float", {1024}, 3), dev:rand("float", {1024}, 4)
local M, row = dev:rand("float", {8192, 8192}, 5), dev:rand("float", {1, 8192}, 6)
local x24 = dev:rand("float", {n24}, 7)
local u24 = (dev:rand("float", {n24}, 8) * 2147483647):astype("uint"):eval()
local X, Y = dev:rand("float", {64, 256, 256}, 9), dev:rand("float", {64, 256, 256}, 10)
local S = dev:rand("float", {4096, 4096}, 11)
local S64 = dev:rand("float", {65536, 64}, 26)
local x24buf = x24.buffer

local function chain(x, y) return ((x * 1.5 + 0.25):exp() * 0.5 - y):eval() end
local function softmax_by_hand(s)
  local e = (s - s:max(2, true)):exp():eval()
  return (e / e:sum(2, true)):eval()
end

local table29 = {
  {"chain_2^26", function() return chain(x26, y26) end},
  {"M+row_8192^2", function() return (M + row):eval() end},
  {"M.t.contiguous_8192^2", function() return M:t():contiguous() end},
  {"M.sum1_8192^2", function() return M:sum(1) end},
  {"M.sum2_8192^2", function() return M:sum(2) end},
  {"cumsum_2^24", function() return x24:cumsum() end},
  {"sort_uint_2^24", function() return u24:sort() end},
  {"sort_float_2^24", function() return x24:sort() end},
  {"argsort_2^24", function() return x24:argsort() end},
  {"bmm_64x256^3", function() return X:mm(Y) end},
  {"chain_1024", function() return chain(x1k, y1k) end},
  {"rand_2^26", function() return dev:rand("float", {n26}) end},
  {"randn_2^26", function() return dev:randn("float", {n26}) end},
  {"argmax2_4096^2", function() return S:argmax(2) end},
  {"argmax1_4096^2", function() return S:argmax(1) end},
  {"softmax_by_hand_4096^2", function() return softmax_by_hand(S) end},
  {"histogram_2^24", function() return (algo.histogram(x24buf, {bins = 256, range = {0, 1}})) end},
  {"sum_item_2^24", function() return x24:sum() end},
}

-- The array API of issue 32 (set "array"): positions drawn once, as torch's.
local array = {}
if set == "array" then
  local function positions(n, hi, seed)
    return ((dev:rand("float", {n}, seed) * hi):floor():astype("long") + 1):eval()
  end
  local P24, P20 = positions(n24, n24, 21), positions(n24, 1 << 20, 22)
  local G = ((dev:rand("float", {4096, 4096}, 23) * 4096):floor():astype("long") + 1):eval()
  local R = positions(4096, 4096, 24)
  local u20 = (dev:rand("float", {1 << 20}, 25) * 1000):floor():astype("int"):eval()
  local zeros20 = dev:tensor("float", {1 << 20})
  array = {
    {"gather2_4096^2", function() return S:gather(2, G) end},
    {"take_2^24", function() return x24:take(P24) end},
    {"index_select1_4096^2", function() return S:index_select(1, R) end},
    {"scatter_add_2^24_into_2^20", function() return zeros20:scatter_add(1, P20, x24) end},
    {"masked_select_2^24", function() return x24:masked_select(x24:gt(0.5)) end},
    {"cat_3x2^24", function() return gpu.cat({x24, x24, x24}) end},
    {"flip2_contiguous_8192^2", function() return M:flip(2):contiguous() end},
    {"topk100_2^24", function() return (x24:topk(100)) end},
    {"topk16_rows_4096^2", function() return (S:topk(16, 2)) end},
    {"topk8_rows_65536x64", function() return (S64:topk(8, 2)) end},
    {"unique_2^20", function() return (u20:unique()) end},
    {"softmax2_4096^2", function() return S:softmax(2) end},
    {"var2_8192^2", function() return M:var(2) end},
    {"einsum_bmm_64x256^3", function() return gpu.einsum("bij,bjk->bik", X, Y) end},
  }
end
-- x:topk's radix select (set "topk"): rows in local memory (4096^2 and
-- 65536 x 64 along dim 2), the long way (2^24; 64 rows of 2^16), along
-- dim 1 (a copy first), and the sort it replaces (luagpu only).
local topk = {}
if set == "topk" then
  local R16 = dev:rand("float", {64, 1 << 16}, 27)
  topk = {
    {"topk100_2^24", function() return (x24:topk(100)) end},
    {"topk1000_2^24", function() return (x24:topk(1000)) end},
    {"topk1_2^24", function() return (x24:topk(1)) end},
    {"topk16_rows_4096^2", function() return (S:topk(16, 2)) end},
    {"topk128_rows_4096^2", function() return (S:topk(128, 2)) end},
    {"topk8_rows_65536x64", function() return (S64:topk(8, 2)) end},
    {"topk16_dim1_4096^2", function() return (S:topk(16, 1)) end},
    {"topk32_rows_64x2^16", function() return (R16:topk(32, 2)) end},
    {"topk100_2^24_by_sort", function()
      return x24:gather(1, x24:argsort(1, {descending = true}):slice(1, 1, 100)) end},
  }
end
local rows = set == "array" and array or set == "topk" and topk or table29

print(string.format("device: %s", dev.name))
print(string.format("%-24s %12s %12s %8s %12s %9s %9s", "op", "luagpu wall", "device", "cmds",
                    "torch wall", "lg/torch", "new/GCs"))
for _, r in ipairs(rows) do
  local key, f = r[1], r[2]
  local ok, w, made, gcs = pcall(wall, f)
  if not ok then
    print(string.format("%-24s failed: %s", key, tostring(w):match("[^\n]*")))
  else
    local d, cmds = device_time(f)
    local b = baseline[key]
    print(string.format("%-24s %10.1f us %10.1f us %8d %10s us %9s %5d/%d", key, w, d, cmds,
                        b and string.format("%.1f", b) or "-",
                        b and string.format("%.2f", w / b) or "-", made, gcs))
    print(string.format("LUAGPU %s wall %.1f device %.1f", key, w, d))
  end
end
for _, k in ipairs {"softmax_4096^2", "chain_2^26_compiled"} do
  if baseline[k] then print(string.format("torch only: %-22s %10.1f us", k, baseline[k])) end
end
