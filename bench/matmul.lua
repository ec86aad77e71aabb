-- bench/matmul.lua: luagpu.matmul against CLBlast's SGEMM (or DGEMM) on the
-- same device, measured in the same run.
--
--   build/luagpu bench/matmul.lua [ROUNDS] [DEVICE] [SIZE ...] [--double]
--
-- Sizes default to 512 and 1024 (square; MxNxK also works). ROUNDS (default
-- 3) alternate the two: each round times REPS = 5 luagpu calls per size,
-- then runs build/bench_clblast_sgemm (bench/c/clblast_sgemm.c; built here
-- if missing) for 5 calls per size, so load on a shared machine hits both
-- alike. Every time is wall-clock, from the call to the end of the work
-- (luagpu: matmul(A, B, C) and ev:wait(), packing kernels included;
-- CLBlast: its Sgemm call and clFinish), after warm-up that builds the
-- kernels. Figures are medians over all rounds. GFLOP/s = 2*M*N*K / time.
-- Both results are checked against a CPU dot product on sampled entries.
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")

local rounds, devspec, sizes, dbl = nil, nil, {}, false
for _, a in ipairs(arg or {}) do
  if a == "--double" then dbl = true
  elseif not rounds and a:match("^%d+$") and #sizes == 0 and devspec == nil then rounds = tonumber(a)
  elseif a:match("^%d+$") or a:match("^%d+x%d+x%d+$") then sizes[#sizes + 1] = a
  elseif devspec == nil then devspec = a
  else error("usage: bench/matmul.lua [ROUNDS] [DEVICE] [SIZE ...] [--double]") end
end
rounds = rounds or 3
if #sizes == 0 then sizes = {"512", "1024"} end
local REPS = 5
local dev = gpu.device(devspec)
local t = dbl and "double" or "float"

local root = gpu.root or "."
local exe = root .. "/build/bench_clblast_sgemm"
if not io.open(exe) then
  os.execute("make -s -C '" .. root .. "' build/bench_clblast_sgemm >&2")
  assert(io.open(exe), "no " .. exe .. " (make deps-bench installs libclblast-dev)")
end

-- Random operands on the device, and a check of C on 64 sampled entries.
local cases = {}
math.randomseed(42)
for i, s in ipairs(sizes) do
  local m, n, k = bench.dims(s)
  local a, b = gpu.array(t, m * k), gpu.array(t, k * n)
  for j = 1, m * k do a[j] = math.random() * 2 - 1 end
  for j = 1, k * n do b[j] = math.random() * 2 - 1 end
  local A = dev:buffer(t, {m, k}, {host = a})
  local B = dev:buffer(t, {k, n}, {host = b})
  local C = dev:buffer(t, {m, n})
  cases[i] = {name = s, m = m, n = n, k = k, a = a, b = b, A = A, B = B, C = C,
              ours = {}, theirs = {}}
end

local function check(c)
  local got = c.C:get()
  local worst = 0
  for _ = 1, 64 do
    local i, j = math.random(0, c.m - 1), math.random(0, c.n - 1)
    local want, scale = 0, 0
    for x = 0, c.k - 1 do
      local p = c.a[i * c.k + x + 1] * c.b[x * c.n + j + 1]
      want, scale = want + p, scale + math.abs(p)
    end
    worst = math.max(worst, math.abs(got[i * c.n + j + 1] - want) / math.max(scale, 1e-30))
  end
  return worst
end

local function run_ours(c, reps)
  bench.walls(reps, function()
    local _, ev = matmul(c.A, c.B, c.C)
    ev:wait()
  end, c.ours)
end

local function run_theirs()
  local cmd = ("'%s' --device '%s / %s' --reps %d%s %s 2>/dev/null"):format(exe,
    dev.platform:gsub("'", ""), dev.name:gsub("'", ""), REPS, dbl and " --double" or "",
    table.concat(sizes, " "))
  local p = assert(io.popen(cmd))
  for line in p:lines() do
    local m, n, k, med, _, _, err = line:match("^clblast (%d+) (%d+) (%d+) (%S+) (%S+) (%S+) (%S+)")
    if m then
      for _, c in ipairs(cases) do
        if c.m == tonumber(m) and c.n == tonumber(n) and c.k == tonumber(k) then
          -- each run reports its median of REPS: count it REPS times
          for _ = 1, REPS do c.theirs[#c.theirs + 1] = tonumber(med) / 1e3 end
          c.their_err = tonumber(err)
        end
      end
    end
  end
  p:close()
end

for _, c in ipairs(cases) do
  run_ours(c, 2)
  c.our_err = check(c)
  c.ours = {}
  local plan = matmul.plan(dev, c.m, c.n, c.k, t)
  local keys = {}
  for k2, v in pairs(plan.params) do keys[#keys + 1] = k2 .. "=" .. tostring(v) end
  table.sort(keys)
  c.how = plan.variant .. " {" .. table.concat(keys, ", ") .. "}"
end
for _ = 1, rounds do
  for _, c in ipairs(cases) do run_ours(c, REPS) end
  run_theirs()
end

print(("luagpu.matmul vs CLBlast %s on %s / %s, %d rounds x %d calls, medians")
      :format(dbl and "DGEMM" or "SGEMM", dev.platform, dev.name, rounds, REPS))
print("| size | luagpu ms | luagpu GFLOP/s | CLBlast ms | CLBlast GFLOP/s | ratio |")
print("| --- | --- | --- | --- | --- | --- |")
for _, c in ipairs(cases) do
  local flops = 2.0 * c.m * c.n * c.k
  local ours = bench.median(c.ours)
  local theirs = #c.theirs > 0 and bench.median(c.theirs) or nil
  print(("| %s | %.2f | %.1f | %s | %s | %s |"):format(c.name, ours * 1e3, flops / ours * 1e-9,
    theirs and ("%.2f"):format(theirs * 1e3) or "-",
    theirs and ("%.1f"):format(flops / theirs * 1e-9) or "-",
    theirs and ("%.2f"):format(theirs / ours) or "-"))
end
print()
for _, c in ipairs(cases) do
  print(("%s: luagpu %s, max error %.1e (relative to sum |a*b|); CLBlast %.1e")
        :format(c.name, c.how, c.our_err, c.their_err or -1))
end
