-- luagpu.matmul.plan: how luagpu.matmul's fp32 kernels run a product.
-- From the sizes, the element type, the device (its class's and its own
-- parameters, in matmul.params) and the variant, plan() picks the
-- parameter set, has the variant (variant_*.lua, listed below) check it and
-- work out the build defines, launches and launcher. The fp32 backend
-- (fp32.lua) builds the plan's program (recipe) and runs its launcher.
--
--   P.plan(dev, m, n, k, t, offsets, variant, override, split_edges [, batch])
--   P.recipe(pl)                the program recipe of plan pl (core/programs)
--   P.source(variant)           the OpenCL C source of a variant
--   P.param_set(dev, name, t)   the parameters of one set for dev
--   P.launcher(pl)              the launcher of plan pl: function(pl, prog, c)
--   P.fits(pl, prog)            whether prog's kernels take pl's work-groups
--   P.snapshot(dev, pl, t), P.unchanged(s)      what a plan read of matmul.params
--   P.params, P.variants, P.variant_list, P.variant_words, P.param_names
--
-- Errors name "matmul" (H.fail raises at the script's line).

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local T = require "luagpu.matmul.params"
local ST = require "luagpu.core.steps"
local B = require "luagpu.matmul.common"

local type, pairs, next, ipairs = type, pairs, next, ipairs
local getmetatable, setmetatable, rawset = getmetatable, setmetatable, rawset
local format, concat, sort, unpack = string.format, table.concat, table.sort, table.unpack
local load, assert = load, assert
local integer, show, typename = H.integer, H.show, H.typename

local FN = "matmul"
local function fail(fmt, ...) H.fail(FN, fmt, ...) end

-- The variants, one row each (the order of matmul.variants and messages).
local LIST = {
  require "luagpu.matmul.variant_naive",
  require "luagpu.matmul.variant_tiled",
  require "luagpu.matmul.variant_reg",
  (require "luagpu.matmul.variant_packed"),   -- (): the first value only
}

local PARAMS, SIZES = T.fp32, B.SIZES
local CLASSES = {gpu = true, cpu = true, accelerator = true, other = true}
local VARIANTS, NAMES, LAUNCHERS = {}, {}, {}
for i, v in ipairs(LIST) do
  VARIANTS[v.name], NAMES[i] = v, v.name
  for name, f in pairs(v.launchers) do LAUNCHERS[name] = f end
end
local VARIANT_WORDS = '"' .. concat(NAMES, '", "', 1, #NAMES - 1) .. '" or "' ..
                      NAMES[#NAMES] .. '"'   -- '"naive", "tiled", "reg" or "packed"'

local ceil_div = ST.ceil_div

------------------------------------------------------------------ parameters

-- The table t[key] of the parameters (where: its name in messages), or an
-- empty one.
local function subtable(t, key, where)
  local v = t[key]
  if v == nil then return {} end
  if type(v) ~= "table" then fail("%s: expected a table, got %s", where, typename(v)) end
  return v
end

-- A new table: the fields of base, then those of over.
local function overlay(base, over)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(over) do t[k] = v end
  return t
end

-- The keys of PARAMS that are device entries matching dev's name, shortest
-- first (so that the longest is laid over last and wins).
local function device_keys(dev)
  local name, hits = dev.name:lower(), {}
  for key in pairs(PARAMS) do
    if not CLASSES[key] and type(key) == "string" and name:find(key:lower(), 1, true) then
      hits[#hits + 1] = key
    end
  end
  sort(hits, function(a, b) return #a < #b end)
  return hits
end

-- The variant tables of dev's class with those of the device entries that
-- match its name laid over them, field by field (their double tables too).
local function device_params(dev)
  local cname = PARAMS[dev.type] ~= nil and dev.type or "gpu"
  local cls = subtable(PARAMS, cname, "matmul.params." .. cname)
  local hits = device_keys(dev)
  if #hits == 0 then return cls end
  local merged = overlay(cls, {})
  for _, key in ipairs(hits) do
    for k, v in pairs(subtable(PARAMS, key, format("matmul.params[%q]", key))) do
      local base = merged[k]
      if type(v) == "table" and type(base) == "table" then
        local double = type(base.double) == "table" and type(v.double) == "table"
                       and overlay(base.double, v.double)
        v = overlay(base, v)
        if double then v.double = double end
      end
      merged[k] = v
    end
  end
  return merged
end

-- The parameters of one set for element type t: the table's, the `double`
-- overrides, then override (opts.params, checked), in a new table.
local function variant_params(set, name, t, override)
  local p = {}
  local vt = subtable(set, name, name .. " parameters")
  for k, v in pairs(vt) do
    if k ~= "double" then p[k] = v end
  end
  if t == "double" and vt.double ~= nil then
    local dt = subtable(vt, "double", name .. " parameters: double")
    -- the occupancy found for float does not hold for other tiles
    if dt.groups_per_cu == nil then p.groups_per_cu = nil end
    for k, v in pairs(dt) do p[k] = v end
  end
  for k, v in next, override or {} do p[k] = v end
  return p
end

------------------------------------------------------------------ checks

-- Checks the parameters of a variant against each other and the device;
-- returns the build defines and the work-group size. Every integer is
-- bounded first, so that no product below overflows.
local function check_params(variant, p, dev, size)
  local need = B.need
  local d = {}
  if p.unroll ~= nil then d.UNROLLK = B.int(p, variant, "unroll") end
  need(p.fma == nil or type(p.fma) == "boolean", variant, "fma: expected true or false, got %s",
       show(p.fma))
  if p.fma then d.FMA = 1 end
  need(p.options == nil or type(p.options) == "string", variant,
       "options: expected a string of build options, got %s", show(p.options))
  local bad = p.options and H.not_cl_option(p.options)
  need(not bad, variant, "options: expected OpenCL compiler options (-cl-...), got %s",
       bad and show(bad))
  local lsz, lmem = VARIANTS[variant].check(p, d, size)
  local wg, most = lsz[1] * lsz[2], dev.max_work_item_sizes
  need(wg <= dev.max_work_group_size, variant,
       "work-groups of %d x %d = %d work-items, the device allows %d",
       lsz[1], lsz[2], wg, dev.max_work_group_size)
  need(lsz[1] <= most[1] and lsz[2] <= most[2], variant,
       "work-groups of %d x %d, the device allows at most %d x %d", lsz[1], lsz[2],
       most[1], most[2])
  need(lmem <= dev.local_mem_size, variant,
       "the tiles need %d bytes of local memory, the device has %d", lmem, dev.local_mem_size)
  return d, lsz
end

------------------------------------------------------------------ choices

-- The variant to run when opts.variant does not say: naive for tiny
-- products, else the class's choice.
local function pick_variant(set, m, n, k)
  local tiny, auto = set.tiny or 0, set.auto or "reg"
  local most = integer(tiny)
  if not (most and most >= 0) then
    fail("parameter tiny: expected an integer >= 0, got %s", show(tiny))
  end
  if not VARIANTS[auto] then
    fail("parameter auto: expected %s, got %s", VARIANT_WORDS, show(auto))
  end
  -- m * n * k <= tiny, without the product (which could overflow)
  if k == 0 or m * n <= most // k then return "naive" end
  return auto
end

-- The number of m x n tiles of the set name of set (nil when its BM or BN
-- is not a positive integer).
local function tiles(set, name, t, m, n)
  local p = variant_params(set, name, t)
  local bm, bn = integer(p.BM), integer(p.BN)
  if bm and bn and bm > 0 and bn > 0 then return ceil_div(m, bm) * ceil_div(n, bn) end
end

-- A batch of products: the first of reg, small and smaller (those the
-- device has) whose work-groups, over the whole batch, fill the waves they
-- take to at least T.choice.batch_fill (groups over waves x slots, slots =
-- compute units x the set's groups_per_cu, default 1), else the one that
-- fills them best.
local function batch_set(set, dev, m, n, t, batch)
  local best, best_fill
  for _, name in ipairs{"reg", "small", "smaller"} do
    local groups = set[name] and tiles(set, name, t, m, n)
    if groups then
      groups = groups * batch
      local occ = integer(variant_params(set, name, t).groups_per_cu) or 1
      local slots = dev.compute_units * math.max(occ, 1)
      local fill = groups / (ceil_div(groups, slots) * slots)
      if fill >= T.choice.batch_fill then return name end
      if not best or fill > best_fill then best, best_fill = name, fill end
    end
  end
  return best or "reg"
end

-- The parameter set the variant runs with, unless the variant was forced:
-- reg's "small" one when the large tiles would make fewer work-groups than
-- the device has compute units, and "smaller" when even the small ones would
-- make fewer than T.choice.smaller_share of them.
local function set_name(set, variant, forced, dev, m, n, t, batch)
  if variant ~= "reg" or forced or not set.small then return variant end
  if batch then return batch_set(set, dev, m, n, t, batch) end
  local large = tiles(set, "reg", t, m, n)
  if not (large and large < dev.compute_units) then return variant end
  local small = tiles(set, "small", t, m, n)
  if set.smaller and small and small < dev.compute_units * T.choice.smaller_share then
    return "smaller"
  end
  return "small"
end

------------------------------------------------------------------ plans

-- How an m x k by k x n product of t on dev runs, operands at element
-- offsets off = {A, B, C}: {variant, set (the name of the parameter set
-- used), params, defines, local_size, options, slices, slice_k, edges
-- ({m0, n0}: the core's rows and columns, where a core and edges run
-- apart), launcher, launches (kernel role -> {global, local_size}),
-- scratch (name -> the elements of each scratch buffer it needs)}.
-- variant and override: opts.variant and opts.params (checked);
-- split_edges: matmul.split_edges. batch: the number of products of a
-- batched call (one launch, the grid's third dimension; "naive" or "reg"
-- only, the device's "packed" choice runs "reg"; neither split K nor edges;
-- launcher "naive_batch" or "reg_batch"), nil for one product.
local function plan(dev, m, n, k, t, off, variant, override, split_edges, batch)
  local set = device_params(dev)
  local forced = variant
  variant = variant or pick_variant(set, m, n, k)
  if batch and variant ~= "naive" then variant = "reg" end
  local name = set_name(set, variant, forced, dev, m, n, t, batch)
  local p = variant_params(set, name, t, override)
  local d, lsz = check_params(variant, p, dev, SIZES[t])
  d.REAL = t
  local pl = {variant = variant, set = name, params = p, defines = d, local_size = lsz,
              options = "-cl-mad-enable" .. (p.options and " " .. p.options or ""),
              slices = 1, slice_k = k, launcher = variant}
  VARIANTS[variant].shape(pl, m, n, k, off, dev, split_edges, batch)
  return pl
end

-- The OpenCL C source of variant: its prefix, then its kernel files one
-- after another (each from its own line 1).
local function source(variant)
  local v = VARIANTS[variant]
  local parts = {}
  for i, file in ipairs(v.files) do parts[i] = "#line 1\n" .. gpu.kernel_source(file) end
  return (v.prefix or "") .. concat(parts, "\n")
end

-- The program recipe of plan pl (luagpu.core.programs), family "matmul".
local function recipe(pl)
  local v = VARIANTS[pl.variant]
  return {family = "matmul", files = v.files, prefix = v.prefix, defines = pl.defines,
          options = pl.options}
end

-- Whether prog, the program of plan pl, takes the work-groups of pl's
-- launches (reg's edge kernels may take fewer than the device allows).
local function fits(pl, prog)
  local v = VARIANTS[pl.variant]
  return not (pl.edges and v.fits) or v.fits(prog)
end

------------------------------------------------------------------ snapshots

-- Keys added to the tables of matmul.params are counted: a snapshot gives
-- each table it reads (one without a metatable of its own) this metatable,
-- whose __newindex runs only for a key the table does not hold. A changed
-- or removed value is seen by reading the known keys, so a call whose
-- tables gained no key compares values only, without walking the tables
-- (a walk calls next per entry: about 3 us a call on the H200's host).
local added = 0
local WATCH = {__newindex = function(t, k, v)
  added = added + 1
  rawset(t, k, v)
end}

local LITERAL = {number = true, string = true, boolean = true}

-- A function telling whether tabs[i][keys[i]] == vals[i] for every i: one
-- expression with the keys and values written in as constants (about 3
-- instructions a value where a loop over the lists takes 8). Tables and
-- other values that no literal writes (NaN too) are upvalues; nil when
-- there would be too many of them for one function.
local function compare_function(tabs, keys, vals)
  local names, up = {}, {}
  local function slot(v)
    local name = names[v]
    if not name then
      up[#up + 1] = v
      name = "u" .. #up
      names[v] = name
    end
    return name
  end
  local function literal(v)
    if LITERAL[type(v)] and v == v then return format("%q", v) end
    return slot(v)
  end
  local terms = {"true"}
  for i = 1, #tabs do
    terms[i + 1] = format("%s[%s] == %s", slot(tabs[i]), literal(keys[i]), literal(vals[i]))
  end
  if #up > 180 then return nil end
  local head = {}
  for i = 1, #up do head[i] = "u" .. i end
  local src = (#up > 0 and "local " .. concat(head, ", ") .. " = ...\n" or "") ..
              "return function() return " ..
              concat(terms, "\n  and ") .. " end"
  return assert(load(src, "=(matmul.params snapshot)", "t"))(unpack(up, 1, #up))
end

-- What of matmul.params the plan pl for dev, of element type t, read, as
-- it is now, for telling later whether a script changed it (the plan then
-- no longer holds): the top-level entries; in the tables of dev's class and
-- of the device entries matching its name, their entries and the whole of
-- the parameter sets a plan reads (auto's variant, reg and small, the set
-- used; their double tables for t "double"). A table {tables = list of
-- {table, count of keys, copy of its entries}, read raw; tabs, keys, vals:
-- every entry flat, for unchanged's loop; same: their compare_function;
-- added: the count of added keys
-- then; walk: whether a table is not watched (it has a metatable of its
-- own), so that every call walks them all}.
local function snapshot(dev, pl, t)
  local list, seen, walk = {}, {}, false
  local tabs, keys, vals = {}, {}, {}
  local function take(tab, deep)
    if seen[tab] then return end
    seen[tab] = true
    local mt = getmetatable(tab)
    if mt == nil then setmetatable(tab, WATCH) elseif mt ~= WATCH then walk = true end
    local n, copy = 0, {}
    for k, v in next, tab do
      n = n + 1
      copy[k] = v
      tabs[#tabs + 1], keys[#keys + 1], vals[#vals + 1] = tab, k, v
      if deep and k == "double" and type(v) == "table" then take(v, false) end
    end
    list[#list + 1] = {tab, n, copy}
  end
  take(PARAMS, false)
  local cname = PARAMS[dev.type] ~= nil and dev.type or "gpu"
  local roots = device_keys(dev)
  roots[#roots + 1] = cname
  local sets = {pl.variant, pl.set, "reg", "small", "smaller"}
  for _, key in ipairs(roots) do
    local root = PARAMS[key]
    if type(root) == "table" then
      take(root, false)
      for _, name in ipairs(sets) do
        local set = root[name]
        if type(set) == "table" then take(set, t == "double") end
      end
    end
  end
  return {tables = list, tabs = tabs, keys = keys, vals = vals, added = added, walk = walk,
          same = compare_function(tabs, keys, vals)}
end

-- Whether the tables of snapshot s hold the same entries as then, walked
-- (their counts too).
local function same_tables(s)
  local list = s.tables
  for i = 1, #list do
    local e = list[i]
    local copy, n = e[3], 0
    for k, v in next, e[1] do
      if copy[k] ~= v then return false end
      n = n + 1
    end
    if n ~= e[2] then return false end
  end
  return true
end

-- Whether matmul.params still holds what snapshot s saw: the known keys'
-- values; the tables walked only when keys were added since (anywhere in
-- matmul.params) or a table is not watched.
local function unchanged(s)
  local same = s.same
  if same then
    if not same() then return false end
  else
    local tabs, keys, vals = s.tabs, s.keys, s.vals
    for i = 1, #tabs do
      if tabs[i][keys[i]] ~= vals[i] then return false end   -- no __index on watched tables
    end
  end
  if s.added ~= added or s.walk then
    if not same_tables(s) then return false end
    s.added = added
  end
  return true
end

-- Per device (weak keys): the last snapshot per variant, set and type. A
-- plan that reads the same tables as one before takes that snapshot while
-- it still holds (unchanged is a compiled comparison; making a snapshot
-- compiles one: a call whose output buffer is new each time, as a tensor
-- product's pool block is, no longer pays that per call).
local snapshots = setmetatable({}, {__mode = "k"})

local function shared_snapshot(dev, pl, t)
  local by_key = snapshots[dev]
  if not by_key then by_key = {}; snapshots[dev] = by_key end
  local key = pl.variant .. " " .. pl.set .. " " .. t
  local s = by_key[key]
  if s and unchanged(s) then return s end
  s = snapshot(dev, pl, t)
  by_key[key] = s
  return s
end

return {
  plan = plan,
  recipe = recipe,
  fits = fits,
  launcher = function(pl) return LAUNCHERS[pl.launcher] end,
  snapshot = shared_snapshot,
  unchanged = unchanged,
  source = source,
  param_set = function(dev, name, t) return variant_params(device_params(dev), name, t) end,
  params = PARAMS,
  variants = VARIANTS,
  variant_list = NAMES,
  variant_words = VARIANT_WORDS,
  param_names = B.PARAM_NAMES,
}
