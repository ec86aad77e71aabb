-- bench/gpu/sort_check.lua: the sorts' results on a GPU (where no busted
-- runs) against Lua's table.sort: every key type, both paths
-- (sort_onesweep on and off), keys alone, with values, argsort (stable),
-- descending, sizes around the tiles and large ones, keys of narrow ranges, rows of the
-- radix sort (64 x 65536 floats among them). Prints "sort_check:
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

-- rl: rows of rl keys, each sorted on its own (nil: one row)
local function check(t, n, desc, seed, narrow, rl)
  local v = keys(t, n, seed, narrow)
  local b = dev:buffer(t, n, {host = v})
  rl = rl or n
  local idx, row = {}, {}
  local function before(a, c)                 -- stable: ties by position
    if v[a] ~= v[c] then if desc then return v[a] > v[c] end return v[a] < v[c] end
    return a < c
  end
  for r0 = 0, n - 1, rl do
    for j = 1, rl do row[j] = r0 + j end
    table.sort(row, before)
    for j = 1, rl do idx[r0 + j] = row[j] end
  end
  local what = ("%s n=%d rows of %d desc=%s onesweep=%s"):format(t, n, rl, tostring(desc),
                                                                 tostring(cls.sort_onesweep))
  local ro = rl < n and rl or nil
  -- argsort (positions in their row)
  local pos = algo.argsort(b, {descending = desc, row_length = ro})
  local got = pos:get():totable()
  for i = 1, n do
    local want = (idx[i] - 1) % rl + 1
    if got[i] ~= want then
      fail("argsort %s: [%d] = %s, want %d", what, i, tostring(got[i]), want)
    end
  end
  -- keys with values (the positions as values)
  local vals = dev:buffer("uint", n, {host = (function() local p = {} for i = 1, n do p[i] = i end return p end)()})
  local _, ev = algo.sort(b, {values = vals, descending = desc, row_length = ro})
  ev:wait()
  local gk, gv = b:get():totable(), vals:get():totable()
  for i = 1, n do
    if gk[i] ~= v[idx[i]] or gv[i] ~= idx[i] then
      fail("sort %s: [%d] = %s/%s, want %s/%d", what, i, tostring(gk[i]), tostring(gv[i]),
           tostring(v[idx[i]]), idx[i])
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
  -- rows the radix sort takes (one to three row passes), both ways
  local rows_max = cls.sort_rows_max
  cls.sort_rows_max = 0
  for _, shape in ipairs{{3, 100003}, {300, 1001}, {70000, 3}, {1000, 1}} do
    for _, t in ipairs{"float", "int", "long"} do
      check(t, shape[1] * shape[2], t == "int", shape[1] + #t, nil, shape[2])
    end
  end
  cls.sort_rows_max = rows_max
  check("float", 64 * 65536, false, 64, nil, 65536)
  check("float", 64 * 65536, true, 65, nil, 65536)
end
cls.sort_onesweep = saved
print(("sort_check: %d cases, all equal"):format(cases))
