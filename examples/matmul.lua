-- examples/matmul.lua: C = A * B on a device several ways -- the naive
-- kernel, the local-memory tiled one, the register-blocked one, whatever
-- luagpu.matmul picks for the device, and its tensor-core precisions "tf32"
-- and "3xtf32" (NVIDIA GPUs; elsewhere they run the float kernels, and
-- matmul.path says so) -- each timed and checked against the same product
-- computed on the CPU in Lua.
--
--   build/luagpu examples/matmul.lua [N] [DEVICE]
--
-- N x N matrices (default 256; N need not be a multiple of anything).
-- "device ms" is OpenCL's profile of the kernels, from the first one's start
-- to the last one's end; "wall ms" is the whole call, from the Lua call to
-- the result being ready. Both are the best of three runs after a warm-up
-- run (which also builds the kernels).
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"

local n = tonumber(arg and arg[1]) or 256
local dev = gpu.device(arg and arg[2])
print(("%d x %d matrices of float on %s (%s)"):format(n, n, dev.name, dev.platform))

-- Random data in host arrays, copied to 2-D device buffers.
math.randomseed(1)
local a, b = gpu.array("float", n * n), gpu.array("float", n * n)
for i = 1, n * n do
  a[i] = math.random() * 2 - 1
  b[i] = math.random() * 2 - 1
end
local A = dev:buffer("float", {n, n}, {host = a, access = "in"})
local B = dev:buffer("float", {n, n}, {host = b, access = "in"})
local C = dev:buffer("float", {n, n})

-- The CPU's product, row by row (reading a row of B at a time keeps the
-- inner loop over contiguous memory).
local t0 = gpu.now()
local want = {}
do
  local av, bv = a:totable(), b:totable()
  for i = 0, n - 1 do
    local row = {}
    for j = 1, n do row[j] = 0 end
    for x = 0, n - 1 do
      local aix, boff = av[i * n + x + 1], x * n
      for j = 1, n do row[j] = row[j] + aix * bv[boff + j] end
    end
    for j = 1, n do want[i * n + j] = row[j] end
  end
end
local cpu_s = gpu.now() - t0

-- The largest difference from the CPU's result, relative to its largest value.
local function error_of(c)
  local diff, scale = 0, 0
  for i = 1, n * n do
    diff = math.max(diff, math.abs(c[i] - want[i]))
    scale = math.max(scale, math.abs(want[i]))
  end
  return diff / scale
end

local flops = 2.0 * n * n * n
print(("%-30s %10s %10s %10s %12s"):format("", "device ms", "wall ms", "GFLOP/s", "max rel err"))
print(("%-30s %10s %10.2f %10.2f %12s"):format("CPU (Lua)", "-", cpu_s * 1e3,
      flops / cpu_s * 1e-9, "reference"))
local runs = {
  {"naive", {variant = "naive"}},
  {"tiled (local memory)", {variant = "tiled"}},
  {"reg (register tiles)", {variant = "reg"}},
  {"matmul's own choice", {}},
  {"tf32", {precision = "tf32"}, 2e-3},
  {"3xtf32", {precision = "3xtf32"}},
}
for _, r in ipairs(runs) do
  local name, opts, tolerance = r[1], r[2], r[3] or 1e-4
  local best_dev, best_wall = math.huge, math.huge
  for run = 0, 3 do
    local w0 = gpu.now()
    local _, ev, events = matmul(A, B, C, opts)
    ev:wait()
    local wall = gpu.now() - w0
    local span = (events[#events]:profile()["end"] - events[1]:profile().start) * 1e-9
    if run > 0 then
      best_dev, best_wall = math.min(best_dev, span), math.min(best_wall, wall)
    end
  end
  local label = name
  if opts.precision then
    label = name .. (matmul.path(dev, opts.precision):find("tensor cores") and " (tensor cores)"
                     or " (float kernels)")
  elseif not opts.variant then
    label = name .. " (" .. matmul.plan(dev, n, n, n).variant .. ")"
  end
  local err = error_of(C:get())
  print(("%-30s %10.3f %10.3f %10.2f %12.1e"):format(label, best_dev * 1e3, best_wall * 1e3,
        flops / best_dev * 1e-9, err))
  assert(err < tolerance, name .. " gave a wrong product")
end
print(("3xtf32 here: %s"):format(matmul.path(dev, "3xtf32")))
print("ok")
