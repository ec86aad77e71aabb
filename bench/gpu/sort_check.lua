-- bench/gpu/sort_check.lua: the sorts' results on a GPU (where no busted
-- runs) against Lua's table.sort: every key type, both paths
-- (sort_onesweep on and off), keys alone, with values, argsort (stable),
-- descending, sizes around the tiles and large ones, keys of narrow ranges. Prints "sort_check:
-- N cases, all equal" or the first difference, and exits 1 on one.
--   build/luagpu bench/gpu/sort_check.lua [LARGEST_LOG2 (default 22)]
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"
local dev = gpu.device()
local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
local top = tonumber(arg and arg[1]) or 22
local cases = 0

local function fail(fmt, ...)
  io.stderr:write(("sort_check: " .. fmt .. "\n"):format(...))
  os.exit(1)
end

local RANGE = {char = 127, uchar = 255, short = 32767, ushort = 65535, int = 1 << 30,
               uint = 1 << 31, long = 1 << 40, ulong = 1 << 40}
local function keys(t, n, seed, narrow)
  math.randomseed(seed)
  local v = {}
  local r = narrow or RANGE[t]
  for i = 1, n do
    if r then
      v[i] = math.random(0, r)
      if t:sub(1, 1) ~= "u" and math.random() < 0.5 then v[i] = -v[i] end
      if i % 7 == 0 then v[i] = v[i - 1] end                 -- ties
    else
      v[i] = (math.random() - 0.5) * 1000
      if t == "float" then v[i] = string.unpack("f", string.pack("f", v[i])) end
      if i % 7 == 0 then v[i] = v[i - 1] end
    end
  end
  return v
end

local function check(t, n, desc, seed, narrow)
  local v = keys(t, n, seed, narrow)
  local b = dev:buffer(t, n, {host = v})
  local idx = {}
  for i = 1, n do idx[i] = i end
  table.sort(idx, function(a, c)              -- stable: ties by position
    if v[a] ~= v[c] then if desc then return v[a] > v[c] end return v[a] < v[c] end
    return a < c
  end)
  -- argsort
  local pos = algo.argsort(b, {descending = desc})
  local got = pos:get():totable()
  for i = 1, n do
    if got[i] ~= idx[i] then
      fail("argsort %s n=%d desc=%s onesweep=%s: [%d] = %s, want %d", t, n, tostring(desc),
           tostring(cls.sort_onesweep), i, tostring(got[i]), idx[i])
    end
  end
  -- keys with values (the positions as values)
  local vals = dev:buffer("uint", n, {host = (function() local p = {} for i = 1, n do p[i] = i end return p end)()})
  local _, ev = algo.sort(b, {values = vals, descending = desc})
  ev:wait()
  local gk, gv = b:get():totable(), vals:get():totable()
  for i = 1, n do
    if gk[i] ~= v[idx[i]] or gv[i] ~= idx[i] then
      fail("sort %s n=%d desc=%s onesweep=%s: [%d] = %s/%s, want %s/%d", t, n, tostring(desc),
           tostring(cls.sort_onesweep), i, tostring(gk[i]), tostring(gv[i]), tostring(v[idx[i]]),
           idx[i])
    end
  end
  cases = cases + 1
end

local TYPES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float"}
if dev.fp64 then TYPES[#TYPES + 1] = "double" end
local saved = cls.sort_onesweep
for _, onesweep in ipairs{true, false} do
  cls.sort_onesweep = onesweep
  for _, t in ipairs(TYPES) do
    for _, n in ipairs{1, 2, 1000, 3071, 3072, 3073, 12289, 100003} do
      check(t, n, false, n + #t)
      check(t, n, true, n + 2 * #t)
    end
  end
  for _, t in ipairs{"float", "uint", "long"} do
    for e = 18, top, 2 do check(t, (1 << e) + 5, e % 4 == 0, e) end
  end
  -- keys of a narrow range (trivial passes left out: algo.classes'
  -- sort_skip_from), and all equal
  for _, t in ipairs{"int", "ushort", "long", "ulong"} do
    for _, narrow in ipairs{999, 70000, 0} do
      if RANGE[t] >= narrow then check(t, (1 << 18) + 9, narrow % 2 == 1, narrow + #t, narrow) end
    end
  end
end
cls.sort_onesweep = saved
print(("sort_check: %d cases, all equal"):format(cases))
