-- luagpu.algo sorts: keys of every scalar type with their edge values
-- (minimum and maximum integers, NaN, -0.0, infinities) against
-- table.sort, stability, values, argsort, descending, rows, and the error
-- messages. The first blocks run three times: with rows that fit a group's
-- local memory sorted there (algo/sort_rows.lua), with the radix sort only
-- (algo.classes' sort_rows_max = 0), and with the radix sort in one sweep
-- a pass (sort_onesweep, on tiles ranked warp by warp: emulated).
local gpu = require "luagpu"
local algo = require "luagpu.algo"
local support = require "support"
local has_error = support.has_error
local numpy = require "algo_numpy"

local dev = gpu.device()
local CLS = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]

-- Runs the blocks of describe_both three times: rows in local memory where
-- they fit (the default), then the radix sort only, then the radix sort in
-- one sweep a pass.
local HOW = {["local"] = "rows in local memory where they fit", radix = "radix sort only",
             onesweep = "radix sort only, one sweep a pass"}
local function describe_both(name, body)
  for _, how in ipairs {"local", "radix", "onesweep"} do
    describe(name .. " (" .. HOW[how] .. ")", function()
      local saved
      before_each(function()
        saved = {CLS.sort_rows_max, CLS.sort_onesweep, CLS.sort_ptx}
        if how ~= "local" then CLS.sort_rows_max = 0 end
        if how == "onesweep" then CLS.sort_onesweep, CLS.sort_ptx = true, "emulated"
        elseif how == "radix" then CLS.sort_onesweep = false end
      end)
      after_each(function()
        CLS.sort_rows_max, CLS.sort_onesweep, CLS.sort_ptx = saved[1], saved[2], saved[3]
      end)
      body()
    end)
  end
end

local SCALARS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                 "float", "double"}
local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
               ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
               long = {math.mininteger, math.maxinteger}}
local FLOAT = {float = true, double = true}

-- n random keys of type t, with the type's edge values among them. ulong
-- keys above 2^63 read back as negative Lua integers, so the ulong keys
-- here stay in [0, 2^63). Floats: multiples of 1/8 (exact in float).
local function random_keys(t, n)
  local v = {}
  for i = 1, n do
    if FLOAT[t] then v[i] = math.random(-4000, 4000) / 8
    elseif t == "ulong" then v[i] = math.random(0, math.maxinteger)
    else v[i] = math.random(RANGE[t][1], RANGE[t][2]) end
  end
  local edges
  if FLOAT[t] then edges = {0 / 0, -0.0, 0.0, 1 / 0, -1 / 0, 0 / 0, -0.0}
  elseif t == "ulong" then edges = {0, math.maxinteger, 0}
  else edges = {RANGE[t][1], RANGE[t][2], RANGE[t][1], 0} end
  for k, e in ipairs(edges) do
    if n >= 2 * #edges then v[math.random(1, n)] = e elseif k <= n then v[k] = e end
  end
  return v
end

local function buffer(t, v)
  local b = dev:buffer(t, #v)
  if #v > 0 then b:write(v):wait() end
  return b
end

local function get(b) return #b > 0 and b:get():totable() or {} end

-- The order of x: class 1 for NaN (above everything), else class 0 and
-- the value (-0.0 and +0.0 equal, as NumPy compares them).
local function order(x)
  if x ~= x then return 1, 0 end
  return 0, x
end

-- The 1-based positions of v in stable sorted order (descending: the
-- order reversed, NaNs first, equal keys still in their first order), each
-- row of rl sorted on its own.
local function reference(v, desc, rl)
  rl = rl or #v
  local cls, val = {}, {}
  for i = 1, #v do cls[i], val[i] = order(v[i]) end
  local p = {}
  for i = 1, #v do p[i] = i end
  local function less(a, c)
    if cls[a] ~= cls[c] then return cls[a] < cls[c] end
    return val[a] < val[c]
  end
  table.sort(p, function(a, c)
    local ra, rc = (a - 1) // rl, (c - 1) // rl
    if ra ~= rc then return ra < rc end
    if desc then
      if less(c, a) then return true end
      if less(a, c) then return false end
    else
      if less(a, c) then return true end
      if less(c, a) then return false end
    end
    return a < c
  end)
  return p
end

-- Asserts that keys got are v in the order p (NaN matching NaN, and the
-- sign of zeros kept).
local function same_keys(v, p, got, what)
  assert.equal(#p, #got, what .. ": length")
  for i = 1, #p do
    local want, g = v[p[i]], got[i]
    local ok = want == g and (want ~= 0 or 1 / want == 1 / g) or (want ~= want and g ~= g)
    if not ok then
      error(("%s: key %d is %s, expected %s"):format(what, i, tostring(g), tostring(want)), 2)
    end
  end
end

-- Asserts that keys (sorted) and pos (the 1-based positions their values
-- came from) are v stably sorted: pos a permutation, keys[i] = v[pos[i]],
-- each key in order after the one before, equal keys in their first order.
-- Linear, unlike a reference sort.
local function check_sorted(v, keys, pos, desc, what)
  local n = #v
  assert.equal(n, #keys, what .. ": length")
  assert.equal(n, #pos, what .. ": values' length")
  local seen = {}
  local cls, val = {}, {}
  for i = 1, n do
    local p = pos[i]
    if math.type(p) ~= "integer" or p < 1 or p > n or seen[p] then
      error(("%s: value %d is %s: not a permutation"):format(what, i, tostring(p)), 2)
    end
    seen[p] = true
    local want, g = v[p], keys[i]
    local ok = want == g and (want ~= 0 or 1 / want == 1 / g) or (want ~= want and g ~= g)
    if not ok then error(("%s: key %d is %s, expected %s"):format(what, i, tostring(g),
                                                               tostring(want)), 2) end
    cls[i], val[i] = order(g)
  end
  for i = 2, n do
    local a, c = i - 1, i
    if desc then a, c = c, a end
    local lt = cls[a] < cls[c] or cls[a] == cls[c] and val[a] < val[c]
    local eq = cls[a] == cls[c] and val[a] == val[c]
    if not (lt or eq and pos[i - 1] < pos[i]) then
      error(("%s: keys %d and %d (%s, %s) out of order"):format(what, i - 1, i,
            tostring(keys[i - 1]), tostring(keys[i])), 2)
    end
  end
end

local function same(want, got, what)
  assert.equal(#want, #got, what .. ": length")
  for i = 1, #want do
    if want[i] ~= got[i] then
      error(("%s: element %d is %s, expected %s"):format(what, i, tostring(got[i]),
                                                       tostring(want[i])), 2)
    end
  end
end

-- Sorts keys v of type t with values 1 .. n (descending or not; extra:
-- more options, or nil) and checks the result; returns what algo.sort
-- returned, the keys' and the values' buffers, and the case's name.
local function sort_checked(t, v, desc, extra)
  local n = #v
  local what = ("%s n=%d descending=%s"):format(t, n, desc)
  local keys = buffer(t, v)
  local idx = {}
  for i = 1, n do idx[i] = i end
  local vals = buffer("int", idx)
  local opts = {values = vals, descending = desc}
  for k, x in pairs(extra or {}) do opts[k] = x end
  local got, ev = algo.sort(keys, opts)
  check_sorted(v, get(keys), get(vals), desc, what)
  return got, ev, keys, vals, what
end

-- Six sorts at once, the even ones on a second in-order queue, all in
-- flight before the first is waited for (a sort's kernels ask for no
-- Events on an in-order queue; the next sort on another queue shares its
-- scratch buffers and must wait for it all): sort i of count(i) random
-- keys of type kind(i), with the options opts(i, q2). Each must come back
-- with its own keys sorted, and an Event.
local function six_sorts(kind, count, opts)
  local q2 = dev:queue()
  local keys, bufs, evs = {}, {}, {}
  for i = 1, 6 do
    keys[i] = random_keys(kind(i), count(i))
    bufs[i] = buffer(kind(i), keys[i])
  end
  for i = 1, 6 do
    local _, ev = algo.sort(bufs[i], opts(i, q2))
    assert.equal("luagpu.Event", tostring(ev):match("^luagpu%.Event"))
    evs[i] = ev
  end
  for i = 6, 1, -1 do
    evs[i]:wait()
    same_keys(keys[i], reference(keys[i], false), get(bufs[i]), "sort " .. i)
  end
end

-- Runs f with the settings of CLS in set (name = value) in place, and puts
-- the old ones back after, also when f raises (then raising its error).
local function with_settings(set, f)
  local saved = {}
  for k, x in pairs(set) do saved[k], CLS[k] = CLS[k], x end
  local ok, err = pcall(f)
  for k in pairs(set) do CLS[k] = saved[k] end
  assert(ok, err)
end

describe_both("algo.sort", function()
  for _, t in ipairs(SCALARS) do
    it("sorts " .. t .. " keys with their edge values, both ways, with values", function()
      if t == "double" and not dev.fp64 then return pending("no fp64 on " .. dev.name .. ": double not checked") end
      local sizes = {0, 1, 2, 3, 100, math.random(2000, 40000)}
      if t == "float" or t == "uint" then sizes[#sizes + 1] = math.random(200000, 1 << 20) end
      for _, n in ipairs(sizes) do
        local v = random_keys(t, n)
        for _, desc in ipairs {false, true} do
          local got, ev, keys = sort_checked(t, v, desc)
          assert.equal(keys, got)
          assert.equal("Event", gpu.type(ev))
        end
      end
    end)
  end

  it("is stable on many equal keys, without values too", function()
    local n = 100000
    local v = {}
    for i = 1, n do v[i] = math.random(1, 5) end
    local keys = buffer("short", v)
    algo.sort(keys)
    same_keys(v, reference(v, false), get(keys), "keys only")
    local pos = get((algo.argsort(buffer("short", v))))
    same(reference(v, false), pos, "argsort")
    same(reference(v, true), get((algo.argsort(buffer("short", v), {descending = true}))),
         "argsort descending")
  end)

  it("sorts rows on their own", function()
    for _, shape in ipairs {{1000, 3}, {7, 1000}, {300, 257}, {1, 5000}} do
      local rows, rl = shape[1], shape[2]
      local v = random_keys("float", rows * rl)
      for _, desc in ipairs {false, true} do
        local what = ("%d rows of %d, descending=%s"):format(rows, rl, desc)
        local p = reference(v, desc, rl)
        local keys = buffer("float", v)
        local tens = {}
        for i = 1, #v do tens[i] = i * 10 end
        local vals = buffer("long", tens)
        algo.sort(keys, {values = vals, row_length = rl, descending = desc})
        same_keys(v, p, get(keys), what)
        local want = {}
        for i = 1, #p do want[i] = p[i] * 10 end
        same(want, get(vals), what .. " values")
        local pos = get((algo.argsort(buffer("float", v), {row_length = rl, descending = desc,
                                                           base = 0, type = "int"})))
        for i = 1, #p do want[i] = (p[i] - 1) % rl end
        same(want, pos, what .. " argsort")
      end
    end
  end)

  it("sorts into out, the keys left as they were, with values and rows too", function()
    for _, t in ipairs {"float", "int", "ushort", "long", "uchar"} do
      for _, case in ipairs {{3000, 0}, {1, 0}, {2, 0}, {1200, 300}, {5000, 1000}} do
        local n, rl = case[1], case[2]
        local v = random_keys(t, n)
        for _, desc in ipairs {false, true} do
          local what = ("%s, %d keys, rows of %d, descending=%s"):format(t, n, rl, desc)
          local keys, out = buffer(t, v), dev:buffer(t, n)
          local opts = {descending = desc, out = out}
          if rl > 0 then opts.row_length = rl end
          local tens = {}
          for i = 1, n do tens[i] = i * 10 end
          local vals = buffer("long", tens)
          opts.values = vals
          do
            local r = algo.sort(keys, opts)
            assert.equal(out, r, what .. ": returns out")
            local p = reference(v, desc, rl > 0 and rl or nil)
            same_keys(v, p, get(out), what)
            local orig = {}
            for i = 1, n do orig[i] = i end
            same_keys(v, orig, get(keys), what .. ": the keys untouched")
            local want = {}
            for i = 1, #p do want[i] = p[i] * 10 end
            same(want, get(vals), what .. ": values")
          end
        end
      end
    end
    -- out may be the keys themselves (in place); overlapping, mistyped or
    -- short outs raise
    local keys = buffer("int", {3, 1, 2, 5, 4})
    algo.sort(keys, {out = keys})
    same({1, 2, 3, 4, 5}, get(keys), "out = keys")
    local big = dev:buffer("int", 10)
    has_error("luagpu: algo.sort: argument #2: option out: the output overlaps the keys",
              algo.sort, big:sub(1, 5), {out = big:sub(3, 7)})
    has_error("luagpu: algo.sort: argument #2: option out: expected a buffer of int (the " ..
              "keys' type), got one of float", algo.sort, keys, {out = dev:buffer("float", 5)})
    has_error("luagpu: algo.sort: argument #2: option out: expected 5 elements, got 4",
              algo.sort, keys, {out = dev:buffer("int", 4)})
    has_error("luagpu: algo.sort: argument #2: option out: the output overlaps the values",
              algo.sort, keys, {values = big:sub(1, 5), out = big:sub(4, 8)})
    -- rows sorted from a view straight into a view of another buffer at an
    -- offset: the elements around both views left as they were
    local n, rl = 7 * 45, 45
    local v = random_keys("float", n + 20)
    local src = buffer("float", v)
    local dst_v = {}
    for i = 1, n + 20 do dst_v[i] = -i end
    local dst = buffer("float", dst_v)
    algo.sort(src:sub(8, 7 + n), {row_length = rl, out = dst:sub(12, 11 + n)})
    local body = {}
    for i = 1, n do body[i] = v[7 + i] end
    local order = {}
    for i = 1, #v do order[i] = i end
    same_keys(body, reference(body, false, rl), {table.unpack(get(dst), 12, 11 + n)},
              "rows into a view")
    same_keys(v, order, get(src), "rows into a view: the keys untouched")
    local around = get(dst)
    for i = 1, n + 20 do
      if i < 12 or i > 11 + n then assert.equal(-i, around[i], "outside out, element " .. i) end
    end
  end)

  it("sorts views and values of another type, on other queues", function()
    local v = random_keys("int", 30000)
    local big = buffer("int", v)
    local sub = {}
    for i = 1, 20000 do sub[i] = v[i + 4] end
    local p = reference(sub, false)
    local view = big:sub(5, 20004)
    local dv = {}
    for i = 1, 20000 do dv[i] = i / 4 end
    if not dev.fp64 then return pending("no fp64 on " .. dev.name .. ": double views not checked") end
    local dbuf = dev:buffer("double", 25000)
    dbuf:sub(3, 20002):write(dv):wait()
    local ooo = dev:queue{out_of_order = true}
    local _, ev = algo.sort(view, {values = dbuf:sub(3, 20002), queue = ooo})
    ev:wait()
    same_keys(sub, p, get(view), "view")
    local want = {}
    for i = 1, #p do want[i] = p[i] / 4 end
    same(want, get(dbuf:sub(3, 20002)), "double values in a view")
    assert.equal(v[1], big:get()[1])
    assert.equal(v[20005], big:get()[20005])
    local out = dev:buffer("uint", 20000)
    local got = algo.argsort(view, {out = out, descending = true})
    assert.equal(out, got)
    same(reference(get(view), true), get(out), "argsort into out")
    local tensorish = setmetatable({}, {__tobuffer = function() return buffer("int", sub) end})
    same(reference(sub, false), get((algo.argsort(tensorish))), "a value with __tobuffer")
  end)
end)

describe_both("algo.sort on two in-order queues at once", function()
  it("gives each sort its own keys, the last of each in flight", function()
    six_sorts(function(i) return i % 2 == 0 and "uint" or "int" end,
              function(i) return 20000 + 37 * i end,
              function(i, q2) return i % 2 == 0 and {queue = q2} or nil end)
  end)
end)

describe_both("algo.sort of equal floats", function()
  -- keys drawn from -0.0, +0.0, NaNs of either sign and other payloads,
  -- infinities and a few numbers: -0.0 and +0.0 compare equal and NaNs
  -- go last, so each keeps its input order, as numpy.argsort(kind =
  -- "stable"); the keys themselves move bit for bit (-0.0 stays -0.0, a
  -- NaN keeps its payload)
  local GEN = [[
import sys, numpy as np
d, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
for t, ut in (("float32", "uint32"), ("float64", "uint64")):
    nan = np.array([np.nan] * 3, t).view(ut)
    sign = np.array([-0.0], t).view(ut)[0]
    pool = np.array([0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, 1.5, -1.5, 2.0, np.nan, -np.nan],
                    t)
    pool = np.concatenate([pool, (nan | np.array([1, 5, 12345], ut) | np.array([0, sign, 0], ut)).view(t)])
    for case, (rows, rl) in enumerate(((1, 4), (1, 3000), (37, 41), (300, 7))):
        np.save(f"{d}/{t}_{case}.npy", pool[rng.integers(0, len(pool), rows * rl)])
        open(f"{d}/{t}_{case}.rl", "w").write(str(rl))
]]
  local CHECK = [[
import sys, glob, numpy as np
d = sys.argv[1]
bad = []
for f in sorted(glob.glob(d + "/*.rl")):
    name = f[:-3]
    if not glob.glob(name + "_arg0.npy"): continue
    rl = int(open(f).read())
    x = np.load(name + ".npy").reshape(-1, rl)
    ut = "uint32" if x.dtype == np.float32 else "uint64"
    for desc in (0, 1):
        if desc:   # NaNs first, then the greatest; stable (lexsort is)
            want = np.array([np.lexsort((-np.nan_to_num(r, nan=0), ~np.isnan(r))) for r in x])
        else:
            want = np.argsort(x, axis=1, kind="stable")
        got = np.load(f"{name}_arg{desc}.npy").reshape(-1, rl) - 1
        if not (got == want).all(): bad.append(f"{name} argsort descending={desc}")
        keys = np.load(f"{name}_keys{desc}.npy").reshape(-1, rl)
        vals = np.load(f"{name}_vals{desc}.npy").reshape(-1, rl)
        wantv = want + np.arange(x.shape[0])[:, None] * rl
        if not (vals == wantv).all(): bad.append(f"{name} sort values descending={desc}")
        if not (keys.view(ut) == np.take_along_axis(x, want, 1).view(ut)).all():
            bad.append(f"{name} sorted keys (bits) descending={desc}")
print("\n".join(bad) if bad else "ok")
]]

  it("keeps -0.0 and +0.0, and NaNs, in their input order (argsort and sort, rows, " ..
     "descending), as numpy.argsort(kind = 'stable')", function()
    if not numpy.python() then
      pending("python3 with numpy not found: not checked against NumPy")
      return
    end
    local dir = numpy.tmpdir(finally)
    numpy.run(GEN, dir, tostring(math.random(1, 1 << 30)))
    for _, t in ipairs(dev.fp64 and {"float", "double"} or {"float"}) do
      for case = 0, 3 do
        local name = ("%s/%s_%d"):format(dir, t == "float" and "float32" or "float64", case)
        local x = gpu.load(name .. ".npy")
        local rl = tonumber(support.read_file(name .. ".rl"))
        local n = #x
        for desc = 0, 1 do
          local keys = dev:buffer(t, n)
          keys:write(x):wait()
          local pos = algo.argsort(keys, {row_length = rl, descending = desc == 1})
          pos:get():save(("%s_arg%d.npy"):format(name, desc))
          local idx = {}
          for i = 1, n do idx[i] = i - 1 end
          local vals = buffer("int", idx)
          local _, ev = algo.sort(keys, {values = vals, row_length = rl, descending = desc == 1})
          ev:wait()
          keys:get():save(("%s_keys%d.npy"):format(name, desc))
          vals:get():save(("%s_vals%d.npy"):format(name, desc))
        end
      end
    end
    assert.equal("ok\n", numpy.run(CHECK, dir))
    if not dev.fp64 then pending("no fp64 on " .. dev.name .. ": double keys not checked") end
  end)

  it("keeps -0.0 and +0.0 in order in the documented example", function()
    local keys = buffer("float", {0.0, -0.0, 0.0, -0.0})
    same({1, 2, 3, 4}, get((algo.argsort(keys))), "argsort")
    same({1, 2, 3, 4}, get((algo.argsort(keys, {descending = true}))), "argsort descending")
    local vals = buffer("int", {1, 2, 3, 4})
    algo.sort(keys, {values = vals})
    same({1, 2, 3, 4}, get(vals), "values")
    same_keys({0.0, -0.0, 0.0, -0.0}, {1, 2, 3, 4}, get(keys), "keys")
  end)
end)

describe("algo.sort with tiles ranked warp by warp", function()
  -- sort_scatter_ptx (NVIDIA) with its warp instructions emulated in local
  -- memory: the same ranking, warps' counts and placing, on PoCL
  for _, shape in ipairs {{64, 5, {"uint", "float", "long", "char"}}, {32, 8, {"float"}},
                          {128, 3, {"long"}}} do
    local L, ipt, types = shape[1], shape[2], shape[3]
    it(("sorts keys, values, rows and argsort in tiles of %d x %d"):format(L, ipt), function()
      -- (sort_rows_max 0: the radix sort even for rows that would fit)
      with_settings({sort_ptx_local = L, sort_ptx_items = ipt, sort_ptx = "emulated",
                     sort_rows_max = 0}, function()
        for _, t in ipairs(types) do
          for _, n in ipairs {0, 1, 100, math.random(1000, 30000)} do
            local v = random_keys(t, n)
            for _, desc in ipairs {false, true} do sort_checked(t, v, desc) end
          end
        end
        local v = random_keys("float", 37 * 41)
        local pos = get((algo.argsort(buffer("float", v), {row_length = 41, type = "int"})))
        local want = {}
        for i, p in ipairs(reference(v, false, 41)) do want[i] = (p - 1) % 41 + 1 end
        same(want, pos, "argsort of rows (places within each row)")
      end)
    end)
  end
end)

describe("algo.sort in one sweep a pass (option onesweep = true)", function()
  -- sort_histograms and one sort_onesweep per key pass (the warp
  -- instructions emulated where the device has none), forced by the
  -- option; sizes around the tile (sort_ptx_local x sort_ptx_items keys)
  local saved
  before_each(function() saved = CLS.sort_rows_max; CLS.sort_rows_max = 0 end)
  after_each(function() CLS.sort_rows_max = saved end)

  -- Runs f with tracing on; returns how many sort_onesweep kernels it ran.
  local function sweeps(f)
    gpu.trace(true)
    local ok, err = pcall(f)
    local rec = gpu.trace(false)
    assert(ok, err)
    local c = 0
    for _, r in ipairs(rec) do if r.name == "sort_onesweep" then c = c + 1 end end
    return c
  end

  local tile = CLS.sort_ptx_local * CLS.sort_ptx_items
  local KEYS_ONLY = {char = true, uint = true, float = true, double = true}
  local SIZE = {char = 1, uchar = 1, short = 2, ushort = 2, int = 4, uint = 4, float = 4,
                long = 8, ulong = 8, double = 8}
  for _, t in ipairs(SCALARS) do
    it(("sorts %s keys, with values and without, both ways, and argsorts them"):format(t),
       function()
      if t == "double" and not dev.fp64 then return pending("no fp64: double not checked") end
      local sizes = {1, 2, tile - 1, tile, tile + 1, 3 * tile + 7}
      if t == "float" or t == "uint" or t == "long" or t == "short" then
        sizes[#sizes + 1] = math.random(300000, 400000)
      end
      for _, n in ipairs(sizes) do
        local v = random_keys(t, n)
        -- ties: a tenth of the keys repeat the key before them
        for i = 2, n, 10 do v[i] = v[i - 1] end
        for _, desc in ipairs {false, true} do
          local keys, vals, what
          local c = sweeps(function()
            keys, vals, what = select(3, sort_checked(t, v, desc, {onesweep = true}))
          end)
          assert.equal(n > 1 and SIZE[t] or 0, c, what .. ": one-sweep passes")
          local gv = get(vals)
          if KEYS_ONLY[t] then     -- (a build of its own per type: a few types)
            local k2 = buffer(t, v)
            algo.sort(k2, {descending = desc, onesweep = true})
            same_keys(v, gv, get(k2), what .. ": keys only")   -- the keys sorted with values
          end
          local pos = get((algo.argsort(buffer(t, v), {descending = desc, onesweep = true,
                                                      type = "int"})))
          same(gv, pos, what .. ": argsort")
        end
      end
    end)
  end

  it("moves values of several types with the keys, and matches the passes of five kernels",
     function()
    local n = 2 * tile + 333
    local v = random_keys("int", n)
    for i = 2, n, 7 do v[i] = v[i - 1] end
    local p = reference(v, false)
    for _, vt in ipairs {"char", "ushort", "float", "ulong", "double"} do
      if vt == "double" and not dev.fp64 then goto next end
      local vals = {}
      for i = 1, n do vals[i] = FLOAT[vt] and i / 2 or i % (RANGE[vt] and RANGE[vt][2] or 100) end
      local want = {}
      for i = 1, n do want[i] = vals[p[i]] end
      for _, os in ipairs {true, false} do
        local keys, vb = buffer("int", v), buffer(vt, vals)
        algo.sort(keys, {values = vb, onesweep = os})
        same_keys(v, p, get(keys), vt .. " values, onesweep=" .. tostring(os))
        same(want, get(vb), vt .. " values, onesweep=" .. tostring(os))
      end
      ::next::
    end
    local a1 = get((algo.argsort(buffer("int", v), {onesweep = true})))
    local a0 = get((algo.argsort(buffer("int", v), {onesweep = false})))
    same(a0, a1, "argsort both ways")
    same(p, a1, "argsort against table.sort")
  end)

  -- From algo.classes.X.sort_skip_from keys, integer and double sorts on
  -- the default queue read the passes' digit counts back and leave out each
  -- pass whose digit every key shares (one pass stays when all keys are
  -- equal); floats run every pass. (Set to 4000 here: 2^18 keys take
  -- minutes on a CPU.)
  it("leaves out the passes whose digit every key shares, from sort_skip_from keys", function()
    local n = 3 * tile + 77
    local saved_from = CLS.sort_skip_from
    CLS.sort_skip_from = 4000
    finally(function() CLS.sort_skip_from = saved_from end)
    -- the passes a sort of v (type t) runs: bytes not shared by every key
    local function passes_of(t, v)
      local size = SIZE[t]
      if t == "float" then return 4 end
      local first, differ = {}, 0
      local function bytes(x)
        return t == "double" and string.pack("<d", x) or string.pack("<i8", x):sub(1, size)
      end
      local b1 = bytes(v[1])
      for i = 2, #v do
        local bi = bytes(v[i])
        for j = 1, size do
          if not first[j] and bi:byte(j) ~= b1:byte(j) then first[j] = true; differ = differ + 1 end
        end
        if differ == size then break end
      end
      return math.max(differ, 1)
    end
    local cases = {{"int", 0, 999}, {"long", 0, 69999}, {"int", 5, 5}, {"int", -3, 3},
                   {"ushort", 0, 255}, {"double", 0, 1000}, {"float", 0, 999},
                   {"ulong", 0, 1}}
    for ci, case in ipairs(cases) do
      local t, lo, hi = case[1], case[2], case[3]
      if t == "double" and not dev.fp64 then goto next end
      local v = {}
      for i = 1, n do v[i] = math.random(lo, hi) end
      if FLOAT[t] then for i = 1, n do v[i] = v[i] + 0.0 end end
      local desc = ci % 2 == 0
      local want = passes_of(t, v)
      if t == "int" and lo == 0 then            -- below sort_skip_from: every pass
        CLS.sort_skip_from = n + 1
        assert.equal(4, sweeps(function() algo.argsort(buffer(t, v), {onesweep = true}) end))
        CLS.sort_skip_from = 4000
      end
      local p = reference(v, desc)
      local what = ("%s keys %d..%d descending=%s"):format(t, lo, hi, desc)
      local keys, vals, pos
      local tens = {}
      for i = 1, n do tens[i] = i * 10 end
      local c = sweeps(function()
        keys, vals = buffer(t, v), buffer("long", tens)
        algo.sort(keys, {values = vals, descending = desc, onesweep = true})
      end)
      assert.equal(want, c, what .. ": one-sweep passes")
      same_keys(v, p, get(keys), what)
      local wv = {}
      for i = 1, n do wv[i] = p[i] * 10 end
      same(wv, get(vals), what .. ": values")
      c = sweeps(function()
        pos = algo.argsort(buffer(t, v), {descending = desc, onesweep = true})
      end)
      assert.equal(want, c, what .. ": argsort's one-sweep passes")
      same(p, get(pos), what .. ": argsort")
      ::next::
    end
  end)

  it("sorts rows (a sweep a row pass too) and views on other queues", function()
    local v = random_keys("float", 37 * 1000)
    local p = reference(v, true, 1000)
    local keys = buffer("float", v)
    local tens = {}
    for i = 1, #v do tens[i] = i * 10 end
    local vals = buffer("long", tens)
    local c = sweeps(function()
      algo.sort(keys, {values = vals, row_length = 1000, descending = true, onesweep = true})
    end)
    assert.equal(5, c)                       -- four key passes, one of the 37 rows
    same_keys(v, p, get(keys), "rows")
    local want = {}
    for i = 1, #p do want[i] = p[i] * 10 end
    same(want, get(vals), "rows' values")
    local big = buffer("uint", random_keys("uint", tile * 3))
    local sub = big:sub(11, tile * 2 + 10)
    local sv = get(sub)
    local q = dev:queue{out_of_order = true}
    local _, ev = algo.sort(sub, {onesweep = true, queue = q})
    ev:wait()
    same_keys(sv, reference(sv, false), get(sub), "a view on an out-of-order queue")
  end)

  it("sorts more rows than a row pass's byte holds (row passes of 0, 8 and 16 bits)", function()
    -- 2 x 65537 + 5 rows of 2 keys: three row passes, whose digit counts
    -- (lg_pass_count) repeat every 256 << shift rows, the last period cut
    local rows, rl = 2 * 65537 + 5, 2
    local v = random_keys("int", rows * rl)
    local want = reference(v, false, rl)
    local c = sweeps(function()
      local pos = get((algo.argsort(buffer("int", v), {row_length = rl, onesweep = true,
                                                         base = 0, type = "int"})))
      local w = {}
      for i = 1, #want do w[i] = (want[i] - 1) % rl end
      same(w, pos, "argsort of 131079 rows")
    end)
    assert.equal(4 + 3, c)
    local keys = buffer("int", v)
    algo.sort(keys, {row_length = rl, descending = true, onesweep = true})
    same_keys(v, reference(v, true, rl), get(keys), "131079 rows, descending")
  end)

  it("looks back over thousands of tiles (tiles of 32 x 1 and 64 x 3 keys)", function()
    for _, shape in ipairs {{32, 1}, {64, 3}} do
      with_settings({sort_ptx_local = shape[1], sort_ptx_items = shape[2]}, function()
        local n = math.random(60000, 80000)
        local v = random_keys("int", n)
        for _, desc in ipairs {false, true} do
          local pos = get((algo.argsort(buffer("int", v), {descending = desc, onesweep = true})))
          same(reference(v, desc), pos, ("tiles of %d x %d, descending=%s"):format(shape[1],
               shape[2], desc))
        end
      end)
    end
  end)

  it("counts the digits with as many groups as sort_hist_items leaves (one to many)",
     function()
    -- 3 and 1000 keys a work-item at least: many groups adding their
    -- counts, and one group taking every key; the places must not change
    local v = random_keys("uint", math.random(20000, 30000))
    for i = 2, #v, 9 do v[i] = v[i - 1] end
    for _, items in ipairs {3, 1000} do
      with_settings({sort_hist_items = items}, function()
        local pos = get((algo.argsort(buffer("uint", v), {onesweep = true})))
        same(reference(v, false), pos, ("sort_hist_items = %d"):format(items))
      end)
    end
    local saved_items = CLS.sort_hist_items
    CLS.sort_hist_items = 0
    local ok, err = pcall(algo.sort, buffer("uint", v))
    CLS.sort_hist_items = saved_items
    assert.is_false(ok)
    assert.matches(("luagpu: algo.sort: algo.classes.%s.sort_hist_items: expected an integer " ..
                    "from 1 to 65536, got 0"):format(algo.classes[dev.type] and dev.type or "gpu"),
                   err, 1, true)
  end)

  it("fits its tiles into sort_ptx_local_bytes where that is set", function()
    -- 3000 bytes: far below the default tile's (256 x 24 keys and their
    -- indices), so the tile halves until it fits, and still sorts
    local saved2 = {CLS.sort_ptx_local, CLS.sort_ptx_items, CLS.sort_ptx_local_bytes}
    local ok, err = pcall(function()
      CLS.sort_ptx_local, CLS.sort_ptx_items, CLS.sort_ptx_local_bytes = 256, 24, 3000
      local v = random_keys("float", math.random(5000, 9000))
      local pos = get((algo.argsort(buffer("float", v), {onesweep = true})))
      same(reference(v, false), pos, "argsort in tiles that fit 3000 bytes")
    end)
    CLS.sort_ptx_local, CLS.sort_ptx_items, CLS.sort_ptx_local_bytes = saved2[1], saved2[2],
                                                                       saved2[3]
    assert(ok, err)
  end)

  it("runs sorts in a row and on two queues, each with its own keys", function()
    six_sorts(function() return "float" end,
              function(i) return tile * (i % 3 + 1) + 37 * i end,
              function(i, q2) return {onesweep = true, queue = i % 2 == 0 and q2 or nil} end)
  end)
end)

describe("algo.sort of rows in local memory", function()
  local RS = require "luagpu.algo.sort_rows"

  -- The longest row algo/sort_rows.lua sorts in a group for keys of size
  -- bytes: a power of two of slots (8 bytes, 12 for 8-byte keys) in the
  -- device's local memory less 1024 bytes, and at most sort_rows_max.
  local function limit(size)
    local room = (dev.local_mem_size - 1024) // (size <= 4 and 8 or 12)
    local p = 1
    while p * 2 <= room do p = p * 2 end
    return math.min(p, CLS.sort_rows_max)
  end

  -- How many times f enqueued the local sort.
  local function local_runs(f)
    local n, run = 0, RS.run
    RS.run = function(...) n = n + 1; return run(...) end
    local ok, e = pcall(f)
    RS.run = run
    assert(ok, e)
    return n
  end

  -- Checks keys and vals (1-based positions in v) row by row.
  local function check_rows(v, keys, vals, rl, desc, what)
    for r = 0, #v // rl - 1 do
      local rv, rk, rp = {}, {}, {}
      for j = 1, rl do
        rv[j], rk[j], rp[j] = v[r * rl + j], keys[r * rl + j], vals[r * rl + j] - r * rl
      end
      check_sorted(rv, rk, rp, desc, what .. " row " .. (r + 1))
    end
  end

  local SIZE = {short = 2, float = 4, int = 4, double = 8, long = 8}
  for _, t in ipairs {"float", "double", "short", "long"} do
    it(("sorts %s rows of many lengths up to the device's limit in local memory, longer ones " ..
        "by the radix sort; key-value and argsort, both ways"):format(t), function()
      if t == "double" and not dev.fp64 then return pending("no fp64: double not checked") end
      local lim = limit(SIZE[t])
      local lengths = {1, 2, 3, 5, 7, 8, 31, 64, 100, 127, 128, 1000, 1024, lim - 1, lim, lim + 1}
      if t == "short" or t == "long" then lengths = {3, 64, 1000, lim, lim + 1} end
      for _, rl in ipairs(lengths) do
        local rows = math.max(2, math.min(50, 4000 // rl))
        local v = random_keys(t, rows * rl)
        -- ties: a tenth of the keys repeat the key before them
        for i = 2, #v, 10 do v[i] = v[i - 1] end
        for _, desc in ipairs {false, true} do
          local what = ("%s rows of %d, descending=%s"):format(t, rl, desc)
          local keys = buffer(t, v)
          local idx = {}
          for i = 1, #v do idx[i] = i end
          local vals = buffer("int", idx)
          local n = local_runs(function()
            algo.sort(keys, {values = vals, row_length = rl, descending = desc})
          end)
          assert.equal(rl <= lim and 1 or 0, n, what .. ": local sorts")
          local gv = get(vals)
          check_rows(v, get(keys), gv, rl, desc, what)
          local pos
          n = local_runs(function()
            pos = get((algo.argsort(buffer(t, v), {row_length = rl, descending = desc,
                                                  type = "int"})))
          end)
          assert.equal(rl <= lim and 1 or 0, n, what .. ": local argsorts")
          for i = 1, #v do
            if pos[i] ~= (gv[i] - 1) % rl + 1 then
              error(("%s: argsort position %d is %d, expected %d"):format(what, i, pos[i],
                    (gv[i] - 1) % rl + 1))
            end
          end
          -- keys only, and argsort into its own keys (out may be the keys)
          local k2 = buffer(t, v)
          algo.sort(k2, {row_length = rl, descending = desc})
          same_keys(get(keys), idx, get(k2), what .. ": keys only")
          if t == "long" then
            local k3 = buffer("long", v)
            algo.argsort(k3, {row_length = rl, descending = desc, out = k3})
            same(pos, get(k3), what .. ": argsort into its keys")
          end
        end
      end
    end)
  end

  it("takes the work-group sizes and slots of algo.classes, checked", function()
    for _, s in ipairs {{1, 2}, {2, 4}, {4, 1024}, {64, 64}} do
      with_settings({sort_rows_local = s[1], sort_rows_group = s[2]}, function()
        for _, rl in ipairs {1, 3, 17, 64, 100} do
          local v = random_keys("float", 7 * rl)
          local keys = buffer("float", v)
          local idx = {}
          for i = 1, #v do idx[i] = i end
          local vals = buffer("int", idx)
          assert.equal(1, local_runs(function()
            algo.sort(keys, {values = vals, row_length = rl})
          end))
          check_rows(v, get(keys), get(vals), rl, false,
                     ("%d work-items, %d slots, rows of %d"):format(s[1], s[2], rl))
        end
      end)
    end
    with_settings({sort_rows_local = 3}, function()
      local ok, e = pcall(algo.sort, buffer("float", {2, 1}))
      assert.is_false(ok)
      assert.matches("algo.classes.%a+.sort_rows_local: expected a power of two from 1 to " ..
                     "1024, got 3", tostring(e))
    end)
  end)
end)

describe("algo.sort errors", function()
  local k = dev:buffer("float", 10)
  it("names what was expected and what was given", function()
    has_error("luagpu: algo.sort: argument #1: expected a buffer, got nil", algo.sort)
    has_error("luagpu: algo.sort: argument #1: expected a buffer of scalars, got int2 elements",
              algo.sort, dev:buffer("int2", 4))
    has_error("argument #2: option values: expected 10 elements (as many as the keys), got 9",
              algo.sort, k, {values = dev:buffer("int", 9)})
    has_error("argument #2: option values: expected a buffer, got table", algo.sort, k,
              {values = {1, 2}})
    has_error("argument #2: option values: the values are the keys", algo.sort, k,
              {values = k})
    has_error("argument #2: option values: the values overlap the keys", algo.sort,
              k:sub(1, 5), {values = k:sub(3, 7)})
    has_error("argument #2: option descending: expected a boolean, got \"yes\"", algo.sort, k,
              {descending = "yes"})
    has_error("argument #2: option row_length: 4 does not divide the 10 elements", algo.sort,
              k, {row_length = 4})
    has_error("argument #2: option row_length: expected an integer from 1 to 2^40, got",
              algo.sort, k, {row_length = 0 / 0})
    has_error("argument #2: unknown option 'value'", algo.sort, k, {value = k})
    has_error("luagpu: algo.sort: argument #2: option onesweep: expected a boolean, got 1",
              algo.sort, k, {onesweep = 1})
    has_error("luagpu: algo.argsort: argument #2: option onesweep: expected a boolean, got " ..
              "\"no\"", algo.argsort, k, {onesweep = "no"})
    with_settings({sort_onesweep = "yes"}, function()
      local ok, e = pcall(algo.sort, k)
      assert.is_false(ok)
      assert.matches("algo.classes.%a+.sort_onesweep: expected true or false, got \"yes\"",
                     tostring(e))
    end)
    has_error("luagpu: algo.argsort: argument #2: option base: expected 0 or 1, got 2",
              algo.argsort, k, {base = 2})
    has_error("luagpu: algo.argsort: argument #2: option type: expected an integer element " ..
              "type, got \"float\"", algo.argsort, k, {type = "float"})
    has_error("luagpu: algo.argsort: argument #2: option out: expected a buffer of int, got long",
              algo.argsort, k, {type = "int", out = dev:buffer("long", 10)})
    has_error("luagpu: algo.argsort: argument #2: option out: expected 10 elements, got 3",
              algo.argsort, k, {out = dev:buffer("long", 3)})
    -- an out of floats names out, not the type option the call did not give
    has_error("luagpu: algo.argsort: argument #2: option out: expected a buffer of integers, " ..
              "got float elements", algo.argsort, k, {out = dev:buffer("float", 10)})
    has_error("luagpu: algo.argsort: argument #2: option type: char cannot hold positions up to 300",
              algo.argsort, dev:buffer("int", 300), {type = "char"})
  end)
end)
