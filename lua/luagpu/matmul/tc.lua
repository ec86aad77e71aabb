-- luagpu.matmul.tc: what matmul's two tensor-core backends share
-- (luagpu.matmul.mma: mma.sync; luagpu.matmul.wgmma: Hopper's wgmma): which
-- calls they take, the probes' operands, the lists of programs built, the
-- packed operands' scratch buffers, the pack kernels' work-group size.
--
--   T.wants(c), T.NOT_WANTED               the calls they take
--   T.probe_data(m, n, k), T.probe_mismatch(got, want)
--   T.key_of(defines), T.record(seen, dev, key, prog), T.programs_in(seen, dev)
--   T.packed_operands(sc, c, bm, bn, bk, three), T.pack_group(n)
--   T.probed(memo, dev, run)               a device's probe, run once

local ST = require "luagpu.core.steps"

local tostring, pairs, type = tostring, pairs, type
local concat, sort = table.concat, table.sort

local T = {}

-- Whether call c is one the tensor-core backends take: precision "tf32"
-- or "3xtf32", float operands, one product (not a batch), neither M nor N
-- 1 (a matrix-vector product is bound by memory, not arithmetic: the fp32
-- gemv kernels are as fast, and exact to float). T.NOT_WANTED: their
-- probes' answer to other calls.
function T.wants(c)
  local pr = c.opts.precision
  return (pr == "tf32" or pr == "3xtf32") and c.t == "float" and not c.batch
         and c.m ~= 1 and c.n ~= 1
end
T.NOT_WANTED = {ok = false, why = "not a tf32 or 3xtf32 product of float matrices"}

-- An m x k A and a k x n B (row-major) of small integers, exact in TF32,
-- and their product computed here.
function T.probe_data(m, n, k)
  local a, b, c = {}, {}, {}
  for i = 1, m * k do a[i] = (i * 7) % 11 - 5 end
  for i = 1, k * n do b[i] = (i * 5) % 9 - 4 end
  for r = 0, m - 1 do
    for col = 0, n - 1 do
      local s = 0
      for l = 0, k - 1 do s = s + a[r * k + l + 1] * b[l * n + col + 1] end
      c[r * n + col + 1] = s
    end
  end
  return a, b, c
end

-- nil when the probe's product got equals want, element by element; else
-- why not.
function T.probe_mismatch(got, want)
  for i = 1, #want do
    if got[i] ~= want[i] then
      return ("the probe's product is wrong (element %d: %s, expected %s)"):format(i,
             tostring(got[i]), tostring(want[i]))
    end
  end
end

-- The cache key of a program built with defines: "NAME=value ..." sorted.
function T.key_of(defines)
  local keys = {}
  for k, v in pairs(defines) do keys[#keys + 1] = k .. "=" .. tostring(v) end
  sort(keys)
  return concat(keys, " ")
end

-- Records prog, built with defines on dev, in seen (ST.device_cache), for
-- programs_in.
function T.record(seen, dev, key, prog)
  ST.device_entries(seen, dev)[key] = prog
end

-- The programs of dev in seen (ST.device_cache), by key.
function T.programs_in(cache, dev)
  local list = {}
  for k, v in pairs(ST.device_entries(cache, dev)) do
    if type(k) == "string" then list[k] = v end
  end
  return list
end

-- The packed operands of call c (m x k times k x n) for tiles bm x bn with
-- step bk: float4 scratch buffers in sc.entries, padded to whole tiles and
-- named in sc ("a", "b"; "a small", "b small" for 3xTF32). Returns Ap, As,
-- Bp, Bs (As, Bs the same as Ap, Bp without three), their counts na, nb,
-- and the steps along K.
function T.packed_operands(sc, c, bm, bn, bk, three)
  local mp, np = (c.m + bm - 1) // bm * bm, (c.n + bn - 1) // bn * bn
  local kp = (c.k + bk - 1) // bk * bk
  local na, nb = mp * kp // 4, kp * np // 4
  local function scratch(name, count)
    local b = ST.scratch_buffer(sc.entries, c.dev, name, "float4", count)
    sc[name] = b
    return b
  end
  local Ap, Bp = scratch("a", na), scratch("b", nb)
  local As, Bs = Ap, Bp
  if three then As, Bs = scratch("a small", na), scratch("b small", nb) end
  return Ap, As, Bp, Bs, na, nb, kp // bk
end

-- Work-items per group of a pack kernel over n float4s.
function T.pack_group(n)
  local l = 256
  while n % l ~= 0 do l = l // 2 end
  return l
end

-- The probe of dev, from memo (a table by device) or made once: {ok =
-- false, why =} on anything but an NVIDIA GPU, else run(dev)'s.
function T.probed(memo, dev, run)
  local p = memo[dev]
  if p then return p end
  if dev.type ~= "gpu" or not tostring(dev.vendor):find("NVIDIA") then
    p = {ok = false, why = "not an NVIDIA GPU"}
  else
    p = run(dev)
  end
  memo[dev] = p
  return p
end

return T
