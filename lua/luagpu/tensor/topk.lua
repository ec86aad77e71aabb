-- luagpu.tensor.topk: x:topk's radix select (kernels/topk.cl), for
-- luagpu.tensor.stats. Internal to luagpu.tensor.
--
-- Which way a call takes (TK.plan says; k, L: the row length along dim):
--   k = 0 or no rows          empty results, no kernel
--   k > TK.K_MAX (1024), 2k > L, or L >= 2^32
--                             nil: the caller sorts (x:argsort and a gather)
--   a row's keys fit a group's local memory (from dev.local_mem_size) and
--   L <= sizes.rows_max       "rows": one kernel, RPG rows per group, each
--                             selected and its k sorted in local memory
--                             (rows of up to 128: sorted whole, no select)
--   else                      "long": per digit a histogram kernel over G
--                             groups per row and a one-group-per-row kernel
--                             that picks the digit, then a gather of the k
--                             positions and a sort of them: no host round
--                             trip
-- Either way the result is the stable order of a sort: values in order,
-- ties by position, NaN largest.
--
--   TK.topk(fn, x, d, k, largest)   values, positions (1-based long), or nil
--   TK.plan(dev, t, L, k)   the way rows of L keys of type t take for k:
--                "sort", "empty", "rows" or "long" (the rows kernel may
--                still fall back to the long way where the device allows
--                fewer work-items per group than planned)
--   TK.sizes     per device class: LS (work-items per group, a power of
--                two up to 1024; cut to what the device allows), rows_max,
--                groups_per_cu (the long way's groups); a script or spec may
--                change them (rows_max = 0: always the long way)

local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"

local tostring, pcall, ipairs, type = tostring, pcall, ipairs, type
local min, max = math.min, math.max
local H = require "luagpu.core.check"
local fail, show = H.fail, H.show
local SIZES, FLOATS, SIGNED = TY.SIZES, TY.FLOATS, TY.SIGNED
local ceil_div, floor_pow2, round_up, NO_EVENT = ST.ceil_div, ST.floor_pow2, ST.round_up,
                                                 ST.NO_EVENT
local empty, check_bounds = O.empty, O.check_bounds

local TK = {}

TK.K_MAX = 1024
TK.sizes = {gpu = {LS = 256, rows_max = 1 << 16, groups_per_cu = 8},
            cpu = {LS = 64, rows_max = 1 << 16, groups_per_cu = 4}}

local BINS, CH = 256, 16
local WHOLE_MAX = 128    -- rows of up to this many slots are sorted whole in local memory
local SEGE = 16          -- elements each work-item walks in order in topk_gather
local RESERVE = 1024     -- bytes of local memory left to the implementation

local function ceil_pow2(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end

local cache = ST.device_cache()   -- dev -> key -> program

-- The program of key type t with the extra defines on dev.
local function program(fn, dev, t, extra)
  local c = cache[dev]
  if not c then c = {}; cache[dev] = c end
  local size = SIZES[t]
  local defines = {{"K", t}, {"U", size == 8 and "ulong" or "uint"},
                   {"KIND", FLOATS[t] and 2 or SIGNED[t] and 1 or 0}, {"BITS", size * 8}}
  local key = {t}
  for _, d in ipairs(extra) do
    defines[#defines + 1] = d
    key[#key + 1] = d[1] .. "=" .. d[2]
  end
  key = table.concat(key, " ")
  local p = c[key]
  if p then return p end
  local ok, prog = pcall(P.get, dev, {family = "tensor", files = {"sort_keys.cl", "topk.cl"},
                                      defines = defines})
  if not ok then fail(fn, "the topk kernels do not compile for %s: %s", t, tostring(prog)) end
  c[key] = prog
  return prog
end

-- Local memory (bytes) of the rows kernel for rpg rows of lcap slots,
-- tpr work-items each, k2 sorted slots, keys of ksize bytes.
local function rows_bytes(rpg, tpr, lcap, k2, ksize)
  local u = ksize == 8 and 8 or 4
  return rpg * (lcap * u + BINS * 4 + (BINS // CH) * 4 + tpr * 4 + u + 8
                + k2 * (u == 8 and 12 or 8))
end

-- The rows kernel's shape for rows of L keys of type t, k of them, or nil
-- where a row does not fit: {LS, TPR, RPG, LCAP, K2}.
local function rows_plan(dev, sz, t, L, k)
  if L > sz.rows_max then return nil end
  local LS = min(sz.LS, floor_pow2(dev.max_work_group_size))
  if LS < CH then return nil end
  local lcap = L <= 1024 and ceil_pow2(L) or round_up(L, 1024)
  local room = dev.local_mem_size - RESERVE
  if lcap <= WHOLE_MAX then
    -- short rows: sorted whole (fewer steps than the select's passes)
    local slot = SIZES[t] == 8 and 12 or 8
    local tpr = min(LS, max(1, lcap // 2))
    while (LS // tpr) * lcap * slot > room do
      if tpr == LS then return nil end
      tpr = tpr * 2
    end
    return {LS = LS, TPR = tpr, RPG = LS // tpr, LCAP = lcap, K2 = max(lcap, 2), WHOLE = true}
  end
  local k2 = max(ceil_pow2(k), 2)
  local tpr = min(LS, max(CH, ceil_pow2(ceil_div(L, 8))))
  while rows_bytes(LS // tpr, tpr, lcap, k2, SIZES[t]) > room do
    if tpr == LS then return nil end
    tpr = tpr * 2
  end
  return {LS = LS, TPR = tpr, RPG = LS // tpr, LCAP = lcap, K2 = k2}
end

local function class_sizes(fn, dev)
  local cls = dev.type == "cpu" and "cpu" or "gpu"
  local sz = TK.sizes[cls]
  if type(sz) ~= "table" then
    fail(fn, "topk.sizes.%s: expected a table of sizes, got %s", cls, show(sz))
  end
  -- LS: a power of two (the rows kernel's groups are RPG rows of TPR
  -- work-items, powers of two that must make LS: another LS left
  -- work-items past the last row, writing outside the group's local memory)
  local ls = sz.LS
  if math.type(ls) ~= "integer" or ls < 1 or ls > 1024 or ls & (ls - 1) ~= 0 then
    fail(fn, "topk.sizes.%s.LS: expected a power of two from 1 to 1024, got %s", cls, show(ls))
  end
  for _, name in ipairs {"rows_max", "groups_per_cu"} do
    local v = sz[name]
    if math.type(v) ~= "integer" or v < 1 and not (name == "rows_max" and v == 0) then
      fail(fn, "topk.sizes.%s.%s: expected a positive integer, got %s", cls, name,
           show(v))
    end
  end
  return sz
end

-- Runs the rows kernel over src (contiguous, rows of L) into vals, pos.
local function run_rows(fn, dev, src, L, nrows, k, largest, vals, pos, plan)
  local t = src._type
  local prog, LS
  while true do
    local defines = {{"LS", plan.LS}, {"K2", plan.K2}, {"TPR", plan.TPR}, {"RPG", plan.RPG},
                     {"LCAP", plan.LCAP}}
    if plan.WHOLE then defines[#defines + 1] = {"WHOLE", 1} end
    prog = program(fn, dev, t, defines)
    LS = prog.topk_rows.work_group_size
    if LS >= plan.LS then break end
    -- fewer work-items allowed: fewer rows per group (or none fits)
    if plan.RPG == 1 then return false end
    plan.RPG = plan.RPG // 2
    plan.LS = plan.RPG * plan.TPR
  end
  local groups = ceil_div(nrows, plan.RPG)
  prog.topk_rows(src._st.buf, src._off, L, nrows, k, largest and 1 or 0, vals._st.buf,
                 vals._off, pos._st.buf, pos._off):run({groups * plan.LS}, {plan.LS}, NO_EVENT)
  return true
end

-- Runs the long-row kernels over src into vals, pos.
local function run_long(fn, dev, sz, src, L, nrows, k, largest, vals, pos)
  local t = src._type
  local LS = min(sz.LS, floor_pow2(dev.max_work_group_size))
  local k2 = max(ceil_pow2(k), 2)
  local prog
  while true do
    prog = program(fn, dev, t, {{"LS", LS}, {"K2", k2}, {"SEGE", SEGE}})
    local least = math.huge
    for _, name in ipairs {"topk_hist", "topk_find", "topk_gather", "topk_sort"} do
      least = min(least, prog[name].work_group_size)
    end
    if least >= LS then break end
    if least < CH then fail(fn, "the topk kernels allow no work-group on %s", dev.name) end
    LS = floor_pow2(least)
  end
  local tile = LS * SEGE
  local want = max(1, ceil_div(dev.compute_units * sz.groups_per_cu, nrows))
  local chunk = round_up(ceil_div(L, min(want, ceil_div(L, tile))), tile)
  local G = ceil_div(L, chunk)
  local ki = largest and 1 or 0
  local st = empty(fn, dev, "uint", {nrows * 4})
  local hist = empty(fn, dev, "uint", {nrows * BINS})
  local eqc = empty(fn, dev, "uint", {nrows * G * BINS})   -- each chunk's last digits
  local cand = empty(fn, dev, "uint", {nrows * k})
  local xb, xo = src._st.buf, src._off
  local stb, hb = st._st.buf, hist._st.buf
  prog.topk_init(stb, hb, nrows, k):run({round_up(nrows * BINS, LS)}, {LS}, NO_EVENT)
  local grid, lsz = {nrows * LS, G}, {LS, 1}     -- group (row, g)
  for s = SIZES[t] * 8 - 8, 0, -8 do
    prog.topk_hist(xb, xo, L, ki, stb, hb, s, chunk, eqc._st.buf):run(grid, lsz, NO_EVENT)
    prog.topk_find(stb, hb, s):run({nrows * LS}, {LS}, NO_EVENT)
  end
  prog.topk_gather(xb, xo, L, ki, stb, eqc._st.buf, cand._st.buf, k, chunk):run(grid, lsz,
                                                                                 NO_EVENT)
  prog.topk_sort(xb, xo, L, ki, cand._st.buf, k, vals._st.buf, vals._off, pos._st.buf,
                 pos._off):run({nrows * LS}, {LS}, NO_EVENT)
  O.drop(st); O.drop(hist); O.drop(eqc); O.drop(cand)   -- back to the pool now
end

function TK.plan(dev, t, L, k)
  if k > TK.K_MAX or 2 * k > L or L >= 1 << 32 then return "sort" end
  if k == 0 then return "empty" end
  local sz = class_sizes("topk.plan", dev)
  return rows_plan(dev, sz, t, L, k) and "rows" or "long"
end

-- x's k smallest keys along dim d (largest: the k largest) by the radix
-- select: values and 1-based positions, both contiguous with k in dim d;
-- nil where the caller's sort should run (see the top).
function TK.topk(fn, x, d, k, largest)
  local L = x._shape[d]
  if k > TK.K_MAX or 2 * k > L or L >= 1 << 32 then return nil end
  local dev, t = x._dev, x._type
  local sz = class_sizes(fn, dev)
  local shape = {}
  for i, n in ipairs(x._shape) do shape[i] = n end
  shape[d] = k
  if k == 0 or x._n == 0 then
    return empty(fn, dev, t, shape), empty(fn, dev, "long", shape)
  end
  if t == "double" then O.check_device_type(fn, dev, "double") end
  local src, back = O.dim_last(fn, x, d)
  check_bounds(fn, src)
  local nrows = x._n // L
  local rshape = {}
  for i, n in ipairs(src._shape) do rshape[i] = n end
  rshape[#rshape] = k
  local vals, pos = empty(fn, dev, t, rshape), empty(fn, dev, "long", rshape)
  local plan = rows_plan(dev, sz, t, L, k)
  if not (plan and run_rows(fn, dev, src, L, nrows, k, largest, vals, pos, plan)) then
    run_long(fn, dev, sz, src, L, nrows, k, largest, vals, pos)
  end
  if src ~= x then O.drop(src) end            -- a copy with d last, made here
  if back then
    return vals:permute(back):contiguous(), pos:permute(back):contiguous()
  end
  return vals, pos
end

return TK
