-- bench/gpu/shard.lua: sharded tensors (gpu.shard) on two GPUs of one host
-- against the same op on one GPU, in the same run: an elementwise chain
-- and a whole sum at several sizes (2^LOG2 floats: the host's fixed cost
-- of a call weighs less as the work grows), a sum along the rows, and
-- matmul (rows of A sharded, B replicated). Wall clock until every device
-- is done (median of REPS after two warm-up calls); the ratio is one GPU's
-- time / two GPUs' (above 1: the two are faster).
--
--   build/luagpu bench/gpu/shard.lua [REPS [DEVICE TYPE [small | LOG2,LOG2,...]]]
-- (small: sizes for a try on two PoCL devices; default sizes 26,28,30)
local gpu = rawget(_G, "gpu") or require "luagpu"
local reps = tonumber(arg and arg[1]) or 10
local devs = gpu.devices(arg and arg[2] or "gpu")
assert(#devs >= 2, "two devices expected, got " .. #devs)
devs = {devs[1], devs[2]}
local d1, d2 = devs[1], devs[2]
local now = gpu.now

local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function once(f)
  local t0 = now()
  local keep = f()
  d1:finish(); d2:finish()
  return now() - t0, keep
end
-- one and two GPUs' calls taking turns (so that a slow spell of the shared
-- host falls on both), after two warm-up calls of each: their medians
local function walls(one, two)
  for _ = 1, 2 do once(one); once(two) end
  local a, b = {}, {}
  for r = 1, reps do
    a[r] = once(one)
    b[r] = once(two)
  end
  return median(a), median(b)
end

local small = arg and arg[3] == "small"
local logs = {}
for v in ((not small and arg and arg[3]) or (small and "16" or "26,28,30")):gmatch("%d+") do
  logs[#logs + 1] = tonumber(v)
end
local R, K = small and 256 or 16384, small and 128 or 8192
local function chain(a, b) return ((a * 1.5 + 0.25):exp() * 0.5 - b):eval() end
print(("device: %s x2"):format(d1.name))
print(("%-22s %12s %12s %8s"):format("op", "one GPU", "two GPUs", "speedup"))
local function report(name, one, two)
  print(("%-22s %9.1f us %9.1f us %7.2fx"):format(name, one * 1e6, two * 1e6, one / two))
  print(("LUAGPU shard_%s one %.1f two %.1f us"):format(name, one * 1e6, two * 1e6))
end
for _, e in ipairs(logs) do
  local n = 1 << e
  local x, y = d1:rand("float", {n}, 1):eval(), d1:rand("float", {n}, 2):eval()
  local xs, ys = gpu.shard(x, devs), gpu.shard(y, devs)
  report(("chain_2^%d"):format(e), walls(function() return chain(x, y) end,
                                         function() return chain(xs, ys) end))
  report(("sum_2^%d"):format(e), walls(function() return x:sum() end,
                                       function() return xs:sum() end))
  x:release(); y:release(); xs:release(); ys:release()
  collectgarbage()
end
local M = d1:rand("float", {R, K}, 3):eval()
local Ms = gpu.shard(M, devs)
local A, B = d1:rand("float", {R, K}, 4):eval(), d1:rand("float", {K, K}, 5):eval()
local As, Bs = gpu.shard(A, devs), gpu.replicate(B, devs)
local rows = {
  {("sum_rows_%dx%d"):format(R, K), function() return M:sum(2) end, function() return Ms:sum(2) end},
  {("mm_%dx%dx%d"):format(R, K, K), function() return A:mm(B) end, function() return As:mm(Bs) end},
}
for _, r in ipairs(rows) do report(r[1], walls(r[2], r[3])) end
