-- bench/gpu/algo_check.lua: luagpu.algo's results on random data against
-- plain Lua, on whatever device is chosen (a GPU, where the specs cannot
-- run): scans by each path (look-back and three passes), with rows, flags
-- and a custom operator; sorts of several key types, descending, with
-- values, argsort and rows; compaction; histograms. Prints one line per
-- failure and "algo_check: N failures".
--
--   build/luagpu bench/gpu/algo_check.lua [DEVICE [SETTING=VALUE ...]]
--
-- SETTING=VALUE sets algo.classes' settings of the device's class first
-- (sort_ptx_local=128 sort_ptx_items=16 scan_ptx_ticket=true; a DEVICE of ""
-- takes the default device).
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"
local dev = gpu.device(arg and arg[1] ~= "" and arg[1] or nil)
for i = 2, arg and #arg or 0 do
  local name, value = arg[i]:match("^([%w_]+)=(.*)$")
  assert(name, "expected SETTING=VALUE, got " .. arg[i])
  local v = math.tointeger(tonumber(value))
  if value == "true" then v = true elseif value == "false" then v = false end
  if v == nil then v = value end
  ;(algo.classes[dev.type] or algo.classes.gpu)[name] = v
  print(("algo_check: %s = %s"):format(name, tostring(v)))
end
local failures = 0
local function check(ok, ...)
  if not ok then failures = failures + 1; print("FAIL", ...) end
end

local function buffer(t, vals)
  local b = dev:buffer(t, #vals)
  if #vals > 0 then b:write(vals):wait() end
  return b
end
local function get(b) return #b > 0 and b:get():totable() or {} end

math.randomseed(14)
for _, n in ipairs {0, 1, 100, 4095, 4097, 65536 + 3, 1000003} do
  local v = {}
  for i = 1, n do v[i] = math.random(-1000, 1000) end
  local b = buffer("int", v)
  local f = {}
  for i = 1, n do f[i] = math.random(1, 50) == 1 and 1 or 0 end
  local fb = buffer("uchar", f)
  local rl = n % 5 == 0 and 5 or n % 3 == 0 and 3 or n
  local cls = algo.classes[dev.type] or algo.classes.gpu
  for _, path in ipairs {{false, false}, {true, false}, {true, true}} do
    local lb = path[1]
    cls.scan_ptx = path[2]
    for _, ex in ipairs {false, true} do
      for _, mode in ipairs {"plain", "rows", "flags", "max"} do
        local opts = {exclusive = ex, lookback = lb}
        if mode == "rows" then opts.row_length = rl end
        if mode == "flags" then opts.flags = fb end
        if mode == "max" then opts.op = "max" end
        local got = get((algo.scan(b, opts)))
        local run, bad = nil, 0
        for i = 1, n do
          local head = (mode == "rows" and (i - 1) % rl == 0) or (mode == "flags" and f[i] == 1)
          local neutral = mode == "max" and -2147483648 or 0
          if run == nil or head then run = neutral end
          local before = run
          run = mode == "max" and math.max(run, v[i]) or run + v[i]
          if got[i] ~= (ex and before or run) then bad = bad + 1 end
        end
        check(bad == 0, "scan", n, lb, path[2], ex, mode, bad)
      end
    end
    -- from an element not aligned to 4 (the PTX path takes aligned ones
    -- only), and a custom scan of floats whose map uses the index
    if n > 1 then
      local got = get((algo.scan(b:sub(2, n), {lookback = lb})))
      local run, bad = 0, 0
      for i = 2, n do run = run + v[i]; if got[i - 1] ~= run then bad = bad + 1 end end
      check(bad == 0, "scan from element 2", n, lb, path[2], bad)
      local fv = {}
      for i = 1, n do fv[i] = v[i] / 4 end
      local s = algo.scanner{type = "float", map = "x + (float)(i % 3)", op = "a + b",
                             neutral = 0}
      local got2 = get((s(buffer("float", fv), {exclusive = true, lookback = lb})))
      run, bad = 0, 0
      for i = 1, n do
        if math.abs(got2[i] - run) > 1e-3 * (1 + math.abs(run)) then bad = bad + 1 end
        run = run + fv[i] + (i - 1) % 3
      end
      check(bad == 0, "custom float scan", n, lb, path[2], bad)
    end
  end
  cls.scan_ptx = true
end

for _, kt in ipairs {"uint", "int", "float", "double", "char", "long", "ushort"} do
  if kt ~= "double" or dev.fp64 then
    for _, n in ipairs {2, 1000, 300001} do
      local v = {}
      for i = 1, n do
        if kt == "float" or kt == "double" then v[i] = math.random(-1000, 1000) / 8
        elseif kt == "char" then v[i] = math.random(-128, 127)
        elseif kt == "ushort" then v[i] = math.random(0, 65535)
        elseif kt == "uint" then v[i] = math.random(0, 4294967295)
        else v[i] = math.random(-1e9, 1e9) end
      end
      if kt == "float" and n > 3 then v[1], v[2], v[3] = 0 / 0, -0.0, 0.0 end
      for _, desc in ipairs {false, true} do
        local rl = (n % 2 == 0 and n > 2) and n // 2 or n
        local k = buffer(kt, v)
        local idx = {}
        for i = 1, n do idx[i] = i end
        local vals = buffer("int", idx)
        algo.sort(k, {values = vals, descending = desc, row_length = rl})
        local pos = get((algo.argsort(buffer(kt, v), {descending = desc, row_length = rl})))
        local ref = {}
        for i = 1, n do ref[i] = i end
        local function key(a)
          local x = v[a]
          -- (NaNs last, first when descending; -0.0 and 0.0 equal: input order)
          if x ~= x then return desc and -math.huge or math.huge, 1 end
          return desc and -x or x, 0
        end
        table.sort(ref, function(a, c)
          local ra, rc = (a - 1) // rl, (c - 1) // rl
          if ra ~= rc then return ra < rc end
          local ka, ta = key(a)
          local kc, tc = key(c)
          if ka ~= kc then return ka < kc end
          if ta ~= tc then return ta < tc end
          return a < c
        end)
        local gk, gv, bad = get(k), get(vals), 0
        for i = 1, n do
          local want = v[ref[i]]
          local same = gk[i] == want or (want ~= want and gk[i] ~= gk[i])
          if not same or gv[i] ~= ref[i] or pos[i] ~= (ref[i] - 1) % rl + 1 then bad = bad + 1 end
        end
        check(bad == 0, "sort", kt, n, desc, rl, bad)
      end
    end
  end
end

for _, n in ipairs {0, 7, 100003} do
  local v = {}
  for i = 1, n do v[i] = math.random(-3, 3) end
  local b = buffer("int", v)
  local out, c = algo.copy_if(b, "x > 0")
  local got, k, bad = get(out), 0, 0
  for i = 1, n do if v[i] > 0 then k = k + 1; if got[k] ~= v[i] then bad = bad + 1 end end end
  check(bad == 0 and c == k, "copy_if", n, c, k, bad)
  local h = get((algo.histogram(b, {bins = 4})))
  local ref = {0, 0, 0, 0}
  for i = 1, n do if v[i] >= 0 then ref[v[i] + 1] = ref[v[i] + 1] + 1 end end
  for i = 1, 4 do check(h[i] == ref[i], "histogram", n, i, h[i], ref[i]) end
end
print(("algo_check: %d failures on %s"):format(failures, dev.name))
