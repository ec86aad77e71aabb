-- luagpu.matmul: C = A * B on a device, row-major, float or double.
--
--   local C, ev = matmul(A, B [, C] [, opts])
--
-- A is M x K, B is K x N, C is M x N: 2-D buffers, or 1-D buffers and views
-- with their sizes in opts {m =, n =, k =}. Without C a new M x N buffer is
-- made. opts: {variant =, params =, m =, n =, k =, wait =, queue =}. Returns
-- C at once, the Event of the last kernel (ev:wait() returns nothing) and the
-- list of the Events of every command it enqueued, in order.
--
-- Four kernels (kernels/matmul_*.cl): "naive" (one work-item per element),
-- "tiled" (the textbook local-memory tiles), "reg" (work-group tiles in
-- local memory and a register tile per work-item: GPUs) and "packed" (A and B
-- copied into panels that each work-item streams through with a register
-- tile and no barriers: CPUs). Their parameters live in one table,
-- matmul.params: per device class, then per device (by name), as found by
-- bench/gpu/tune_matmul.lua. Programs are built once per device, element
-- type, parameters and edge case, and kept while the device lives.

local gpu = require "luagpu"

local type, pairs, ipairs, tostring, error = type, pairs, ipairs, tostring, error
local getmetatable, setmetatable = getmetatable, setmetatable
local format, concat, sort = string.format, table.concat, table.sort
local max, tointeger = math.max, math.tointeger

-- split_edges: false turns the core-and-edges split off (for comparisons).
local M = {programs_built = 0, split_edges = true}

local FN = "matmul"
local SIZES = {float = 4, double = 8}

-- Parameters per device class ("gpu", "cpu", "accelerator", "other") and per
-- device: a key that is not a class is matched against the device name
-- (case-insensitive substring; the longest match wins) and its fields
-- replace the class's, field by field within each variant. Within a
-- variant, a `double` table replaces fields for double precision. `auto`
-- picks the variant when opts.variant does not; `small` is the reg
-- parameters used when the large tiles would make fewer work-groups than
-- there are compute units; products of at most `tiny` (M*N*K) go naive.
--
--   naive:  lx, ly             work-group size
--   tiled:  TS                 tile size (TS x TS work-items)
--   reg:    BM BN BK           work-group tile;  TM TN  work-item tile
--           VWM VWN            local-memory vector widths;  VLA VLB  global
--           PADA PADB          local padding;  DB  0, 1, 2 (see matmul_reg.cl)
--           groups_per_cu      work-groups resident per compute unit (enables
--                              splitting K, see split_k);  splitk  forces it
--           edge               thin edges: when M and N are at most `edge` past
--                              multiples of BM and BN, the tile-aligned core
--                              runs alone and the edges in matmul_rows and
--                              matmul_cols (see edge_split); 0 or nil: never
--   packed: TM TN VW           register tile and vector width; lx ly group
--   all:    unroll             steps of the K loop unrolled (reg: of BK)
--           fma                fma() rather than mad() (CPUs)
--           options            extra build options
local PARAMS = {
  cpu = {
    auto = "packed", tiny = 32 * 32 * 32,
    naive = {lx = 16, ly = 4},
    tiled = {TS = 16},
    reg = {BM = 16, BN = 16, BK = 8, TM = 4, TN = 4, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 0, PADB = 0, DB = 0, fma = true},
    packed = {TM = 8, TN = 32, VW = 16, lx = 2, ly = 2, fma = true,
              double = {TN = 16, VW = 8}},
  },
  gpu = {
    auto = "reg", tiny = 16 * 16 * 16,
    naive = {lx = 16, ly = 16},
    tiled = {TS = 16},
    reg = {BM = 128, BN = 128, BK = 16, TM = 8, TN = 8, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 4, PADB = 0, DB = 1, edge = 8,
           double = {BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, VWM = 2, VWN = 2,
                     VLA = 2, VLB = 2, PADA = 2, DB = 1}},
    small = {BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
             PADA = 4, PADB = 0, DB = 1,
             double = {VWM = 2, VWN = 2, VLA = 2, VLB = 2, PADA = 2}},
    packed = {TM = 4, TN = 8, VW = 4, lx = 16, ly = 8, unroll = 1},
  },
}
-- Device entries, found by bench/gpu/tune_matmul.lua on each device
-- (groups_per_cu from the build log's register count; see docs/PERFORMANCE.md).
PARAMS["NVIDIA H200"] = {   -- NVIDIA CUDA, driver 580.159.04: 50.1 TFLOP/s at 4096
  reg = {BM = 128, BN = 256, BK = 16, TM = 8, TN = 16, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
         PADA = 4, PADB = 0, DB = 1, groups_per_cu = 1},
  small = {BM = 64, BN = 128, BK = 16, TM = 8, TN = 8, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 4, PADB = 0, DB = 1, groups_per_cu = 3},
}
PARAMS.accelerator = PARAMS.gpu
PARAMS.other = PARAMS.gpu
local CLASSES = {gpu = true, cpu = true, accelerator = true, other = true}

local VARIANTS = {naive = true, tiled = true, reg = true, packed = true}
local FILES = {naive = "matmul_naive.cl", tiled = "matmul_tiled.cl", reg = "matmul_reg.cl",
               packed = "matmul_packed.cl"}

local function fail(fmt, ...)
  error("luagpu: " .. FN .. ": " .. format(fmt, ...), 0)
end

-- The class of a luagpu object ("luagpu.Buffer"); other values: their Lua type.
local function typename(v)
  local t = gpu.type(v)
  return t and "luagpu." .. t or type(v)
end

------------------------------------------------------------------ parameters

-- The variant tables of dev's class with those of the device entries that
-- match its name laid over them (longest key last, so it wins).
local function device_params(dev)
  local cls = PARAMS[dev.type] or PARAMS.gpu
  local name, hits = dev.name:lower(), {}
  for key in pairs(PARAMS) do
    if not CLASSES[key] and type(key) == "string" and name:find(key:lower(), 1, true) then
      hits[#hits + 1] = key
    end
  end
  if #hits == 0 then return cls end
  sort(hits, function(a, b) return #a < #b end)
  local merged = {}
  for k, v in pairs(cls) do merged[k] = v end
  for _, key in ipairs(hits) do
    for k, v in pairs(PARAMS[key]) do
      local base = merged[k]
      if type(v) == "table" and type(base) == "table" then
        -- a variant table: the device's fields over the class's (their
        -- double tables likewise)
        local t = {}
        for f, x in pairs(base) do t[f] = x end
        for f, x in pairs(v) do t[f] = x end
        if type(base.double) == "table" and type(v.double) == "table" then
          t.double = {}
          for f, x in pairs(base.double) do t.double[f] = x end
          for f, x in pairs(v.double) do t.double[f] = x end
        end
        v = t
      end
      merged[k] = v
    end
  end
  return merged
end

-- The parameters of one variant for element type t: the table's, the
-- `double` overrides, then opts.params.
local function variant_params(set, variant, t, override)
  local p = {}
  for k, v in pairs(set[variant] or {}) do
    if k ~= "double" then p[k] = v end
  end
  if t == "double" and set[variant] and set[variant].double then
    -- the occupancy found for float does not hold for other tiles
    if set[variant].double.groups_per_cu == nil then p.groups_per_cu = nil end
    for k, v in pairs(set[variant].double) do p[k] = v end
  end
  if override then
    for k, v in pairs(override) do p[k] = v end
  end
  return p
end

local function need(cond, variant, fmt, ...)
  if not cond then fail("%s parameters: " .. fmt, variant, ...) end
end

local function int_param(p, variant, name)
  local v = p[name]
  need(tointeger(v) and v >= 1, variant, "%s: expected a positive integer, got %s",
       name, tostring(v))
  return tointeger(v)
end

local WIDTHS = {[1] = true, [2] = true, [4] = true, [8] = true, [16] = true}

local function width_param(p, variant, name)
  local v = int_param(p, variant, name)
  need(WIDTHS[v], variant, "%s: expected a vector width (1, 2, 4, 8 or 16), got %d", name, v)
  return v
end

-- Checks the parameters of a variant against each other and the device;
-- returns the build defines, the work-group size and the local memory used.
local function check_params(variant, p, dev, size)
  local d, lsz, lmem = {}, nil, 0
  if variant == "naive" then
    lsz = {int_param(p, variant, "lx"), int_param(p, variant, "ly")}
  elseif variant == "tiled" then
    local ts = int_param(p, variant, "TS")
    d.TS, lsz, lmem = ts, {ts, ts}, (2 * ts * ts + ts) * size
  elseif variant == "reg" then
    for _, k in ipairs{"BM", "BN", "BK", "TM", "TN"} do d[k] = int_param(p, variant, k) end
    for _, k in ipairs{"VWM", "VWN", "VLA", "VLB"} do d[k] = width_param(p, variant, k) end
    d.PADA, d.PADB, d.DB = p.PADA or 0, p.PADB or 0, p.DB or 0
    need(tointeger(d.PADA) and d.PADA >= 0 and tointeger(d.PADB) and d.PADB >= 0, variant,
         "PADA, PADB: expected integers >= 0")
    need(d.DB == 0 or d.DB == 1 or d.DB == 2, variant, "DB: expected 0, 1 or 2, got %s",
         tostring(d.DB))
    need(d.BM % d.TM == 0 and d.BN % d.TN == 0, variant,
         "BM (%d) and BN (%d) must be multiples of TM (%d) and TN (%d)", d.BM, d.BN, d.TM, d.TN)
    need(d.TM % d.VWM == 0 and d.TN % d.VWN == 0, variant,
         "TM (%d) and TN (%d) must be multiples of VWM (%d) and VWN (%d)",
         d.TM, d.TN, d.VWM, d.VWN)
    need((d.PADA % d.VWM == 0) and (d.PADB % d.VWN == 0), variant,
         "PADA (%d) and PADB (%d) must be multiples of VWM (%d) and VWN (%d)",
         d.PADA, d.PADB, d.VWM, d.VWN)
    local nt = (d.BM // d.TM) * (d.BN // d.TN)
    need(d.BK % d.VLA == 0 and (d.BM * d.BK) % (d.VLA * nt) == 0, variant,
         "the A tile (BM*BK = %d) must split into VLA-vectors (%d) over the %d work-items",
         d.BM * d.BK, d.VLA, nt)
    need(d.BN % d.VLB == 0 and (d.BK * d.BN) % (d.VLB * nt) == 0, variant,
         "the B tile (BK*BN = %d) must split into VLB-vectors (%d) over the %d work-items",
         d.BK * d.BN, d.VLB, nt)
    lsz = {d.BN // d.TN, d.BM // d.TM}
    lmem = (d.DB == 2 and 2 or 1) * d.BK * (d.BM + d.PADA + d.BN + d.PADB) * size
  else -- packed
    for _, k in ipairs{"TM", "TN"} do d[k] = int_param(p, variant, k) end
    d.VW = width_param(p, variant, "VW")
    need(d.TN % d.VW == 0, variant, "TN (%d) must be a multiple of VW (%d)", d.TN, d.VW)
    lsz = {int_param(p, variant, "lx"), int_param(p, variant, "ly")}
  end
  if p.unroll ~= nil then d.UNROLLK = int_param(p, variant, "unroll") end
  if p.fma then d.FMA = 1 end
  local wg = lsz[1] * lsz[2]
  need(wg <= dev.max_work_group_size, variant,
       "work-groups of %d x %d = %d work-items, the device allows %d",
       lsz[1], lsz[2], wg, dev.max_work_group_size)
  need(lmem <= dev.local_mem_size, variant,
       "the tiles need %d bytes of local memory, the device has %d", lmem, dev.local_mem_size)
  return d, lsz
end

------------------------------------------------------------------ programs

-- Built programs per device (weak keys: they go with the device) and key.
local programs = setmetatable({}, {__mode = "k"})
-- Packing buffers per device and element type, grown as needed.
local scratch = setmetatable({}, {__mode = "k"})

local function define_string(defines)
  local keys = {}
  for k in pairs(defines) do keys[#keys + 1] = k end
  sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. tostring(defines[k]) end
  return concat(parts, " ")
end

-- The program for variant on dev with the given defines and options.
local function program(dev, variant, defines, options)
  local key = variant .. " " .. define_string(defines) .. " " .. options
  local per_dev = programs[dev]
  if not per_dev then
    per_dev = {}
    programs[dev] = per_dev
  end
  local prog = per_dev[key]
  if not prog then
    prog = dev:build(gpu.kernel_source(FILES[variant]), {defines = defines, options = options})
    M.programs_built = M.programs_built + 1
    per_dev[key] = prog
  end
  return prog
end

local function round_up(x, m)
  return (x + m - 1) // m * m
end

local function ceil_div(x, m)
  return (x + m - 1) // m
end

-- A buffer of at least n elements of t on dev for packing (slot 1 or 2).
local function scratch_buffer(dev, t, slot, n)
  local per_dev = scratch[dev]
  if not per_dev then
    per_dev = {}
    scratch[dev] = per_dev
  end
  local key = t .. slot
  local b = per_dev[key]
  if not b or #b < n then
    if b then b:release() end
    b = dev:buffer(t, max(n, 1))
    per_dev[key] = b
  end
  return b
end

------------------------------------------------------------------ arguments

-- Checks argument #arg to be a live buffer of float or double; returns its
-- type, its root buffer and its offset (elements) in the root.
local function check_operand(arg, b)
  if typename(b) ~= "luagpu.Buffer" then
    fail("argument #%d: expected a buffer, got %s", arg, typename(b))
  end
  if tostring(b):find("(released)", 1, true) then
    fail("argument #%d: attempt to use a released buffer", arg)
  end
  local t = b.type
  if not SIZES[t] then
    fail("argument #%d: expected a buffer of float or double, got one of %s", arg, t)
  end
  local root = b
  while root.parent do root = root.parent end
  return t, root, b.offset
end

local OPTION_NAMES = {variant = true, params = true, m = true, n = true, k = true,
                      wait = true, queue = true}

local function check_opts(arg, opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    fail("argument #%d: expected an options table, got %s", arg, typename(opts))
  end
  for k in pairs(opts) do
    if not OPTION_NAMES[k] then
      fail("argument #%d: unknown option '%s' (expected variant, params, m, n, k, wait, queue)",
           arg, tostring(k))
    end
  end
  for _, k in ipairs{"m", "n", "k"} do
    local v = opts[k]
    if v ~= nil and not (tointeger(v) and v >= 0) then
      fail("argument #%d: option %s: expected an integer >= 0, got %s", arg, k, tostring(v))
    end
  end
  if opts.variant ~= nil and not VARIANTS[opts.variant] then
    fail("argument #%d: option variant: expected \"naive\", \"tiled\", \"reg\" or " ..
         "\"packed\", got %s", arg, type(opts.variant) == "string" and
         "\"" .. opts.variant .. "\"" or typename(opts.variant))
  end
  if opts.params ~= nil and type(opts.params) ~= "table" then
    fail("argument #%d: option params: expected a table, got %s", arg, typename(opts.params))
  end
  if opts.queue ~= nil and typename(opts.queue) ~= "luagpu.Queue" then
    fail("argument #%d: option queue: expected a luagpu.Queue, got %s", arg,
         typename(opts.queue))
  end
  return opts
end

local NAMES = {"A", "B", "C"}
local DIMS = {{"m", "k"}, {"k", "n"}, {"m", "n"}}

-- Works out M, N, K from the operands' shapes and opts.m/n/k; raises on
-- any mismatch. ops[i] is the buffer of argument #i (C may be nil).
local function sizes(ops, opts)
  local size, said = {}, {}
  for _, d in ipairs{"m", "n", "k"} do
    if opts[d] then size[d], said[d] = opts[d], "option " .. d .. " is " .. opts[d] end
  end
  local function set(d, v, arg, what)
    if size[d] == nil then
      size[d], said[d] = v, what
    elseif size[d] ~= v then
      fail("argument #%d: %s, but %s", arg, what, said[d])
    end
  end
  -- 2-D operands first: their shapes say everything
  for i = 1, 3 do
    local b = ops[i]
    if b then
      local shape = b.shape
      if #shape > 2 then
        fail("argument #%d: expected a 2-D buffer (or a 1-D one with sizes in opts), got a " ..
             "%d-D one", i, #shape)
      elseif #shape == 2 then
        set(DIMS[i][1], shape[1], i, format("%s has %d rows", NAMES[i], shape[1]))
        set(DIMS[i][2], shape[2], i, format("%s has %d columns", NAMES[i], shape[2]))
      end
    end
  end
  -- then 1-D operands (and views): their length fixes one size from the other
  for _ = 1, 2 do
    for i = 1, 3 do
      local b = ops[i]
      if b and #b.shape == 1 then
        local r, c = DIMS[i][1], DIMS[i][2]
        local n = #b
        if size[r] and size[c] then
          if size[r] * size[c] ~= n then
            fail("argument #%d: expected %d elements (%s is %d x %d), got %d", i,
                 size[r] * size[c], NAMES[i], size[r], size[c], n)
          end
        elseif size[r] and size[r] > 0 then
          if n % size[r] ~= 0 then
            fail("argument #%d: %d elements do not make %d rows (%s)", i, n, size[r], said[r])
          end
          set(c, n // size[r], i, format("%s has %d columns", NAMES[i], n // size[r]))
        elseif size[c] and size[c] > 0 then
          if n % size[c] ~= 0 then
            fail("argument #%d: %d elements do not make rows of %d (%s)", i, n, size[c], said[c])
          end
          set(r, n // size[c], i, format("%s has %d rows", NAMES[i], n // size[c]))
        end
      end
    end
  end
  for i = 1, 3 do
    local b = ops[i]
    if b and not (size[DIMS[i][1]] and size[DIMS[i][2]]) then
      fail("argument #%d: a 1-D buffer needs its sizes: give opts.%s and opts.%s, or a " ..
           "2-D buffer", i, DIMS[i][1], DIMS[i][2])
    end
  end
  for _, d in ipairs{"m", "n", "k"} do
    if size[d] >= 2 ^ 31 then
      fail("%s = %d is too large (sizes must be below 2^31)", d:upper(), size[d])
    end
  end
  return size.m, size.n, size.k
end

local function wait_list(opts)
  local w = {}
  if opts.wait ~= nil then
    if type(opts.wait) ~= "table" then w[1] = opts.wait
    else for i, ev in ipairs(opts.wait) do w[i] = ev end end
  end
  return w
end

------------------------------------------------------------------ matmul

-- The variant to run when opts.variant does not say: naive for tiny
-- products, else the class's choice.
local function pick_variant(set, m, n, k)
  if m * n * k <= (set.tiny or 0) then return "naive" end
  return set.auto or "reg"
end

-- How many slices of K the reg kernel splits an m x n x k product into,
-- and the length of each (a multiple of BK). The tiles are handed out to
-- the compute units in waves of groups_per_cu x compute units; when the
-- last wave would be mostly idle (M or N just past a multiple of the tile:
-- 4097 takes 5 waves where 4096 takes 4), cutting K into S slices makes
-- S times as many groups, S times shorter, so the waves fit better; the
-- slices are then added (matmul_sum), which costs a pass over S+1 copies of
-- C, weighed against the product at 12.5 flops per byte moved. Needs
-- groups_per_cu in the parameters (found by the tuning sweep); `splitk`
-- forces a count.
local function split_k(p, d, dev, m, n, k, size)
  local s = p.splitk
  if s == nil then
    local occ = p.groups_per_cu
    -- only past a multiple of the tile: at 2048 on the H200 (small set, 3
    -- groups per compute unit) splitting was slower although the model
    -- favoured it; at 2047 and 4097 it was faster
    if not occ or (m % d.BM == 0 and n % d.BN == 0) then return 1, k end
    local slots = dev.compute_units * occ
    local w = ceil_div(m, d.BM) * ceil_div(n, d.BN)
    if w < slots then return 1, k end   -- less than a wave: the small set's job
    local best_cost = ceil_div(w, slots)
    s = 1
    for try = 2, 4 do
      local ks = round_up(ceil_div(k, try), d.BK)
      local sl = ceil_div(k, ks)
      if ks >= 16 * d.BK and sl > 1 then
        local cost = ceil_div(sl * w, slots) / sl + w / slots * (sl + 1) * size * 12.5 / (2 * k)
        if cost < best_cost * 0.97 then s, best_cost = sl, cost end
      end
    end
  end
  need(tointeger(s) and s >= 1, "reg", "splitk: expected a positive integer, got %s", tostring(s))
  local ks = round_up(ceil_div(k, s), d.BK)
  return ceil_div(k, ks), ks
end

-- How an m x k by k x n product of t on dev runs, operands at the given
-- offsets: {variant, set (the name of the parameter table used), params,
-- defines, local_size, options}. variant and override: opts.variant and
-- opts.params.
-- Whether an m x n product with reg's tiles d splits into a tile-aligned
-- core and thin edges (see matmul_rows in matmul_reg.cl): M and N at most
-- p.edge past multiples of BM and BN, the core at least a wave of work-
-- groups, and no forced split of K. Returns the core's rows and columns.
local function edge_split(p, d, dev, m, n)
  local edge = p.edge
  if not M.split_edges or not edge or edge == 0 or p.splitk then return nil end
  need(tointeger(edge) and edge >= 0, "reg", "edge: expected an integer >= 0, got %s",
       tostring(edge))
  local em, en = m % d.BM, n % d.BN
  local m0, n0 = m - em, n - en
  if (em == 0 and en == 0) or em > edge or en > edge or m0 == 0 or n0 == 0
     or (m0 // d.BM) * (n0 // d.BN) < dev.compute_units
     or dev.max_work_group_size < 256 then
    return nil
  end
  return m0, n0
end

local function plan(dev, m, n, k, t, offA, offB, offC, variant, override)
  local set = device_params(dev)
  local forced = variant
  variant = variant or pick_variant(set, m, n, k)
  local pset = variant
  if variant == "reg" and not forced and set.small then
    local p = variant_params(set, "reg", t)
    if tointeger(p.BM) and tointeger(p.BN) and p.BM > 0 and p.BN > 0
       and ceil_div(m, p.BM) * ceil_div(n, p.BN) < dev.compute_units then
      pset = "small"
    end
  end
  local p = variant_params(set, pset, t, override)
  local d, lsz = check_params(variant, p, dev, SIZES[t])
  d.REAL = t
  local slices, slice_k, edges = 1, k, nil
  if variant == "reg" then
    local m0, n0 = edge_split(p, d, dev, m, n)
    if m0 then
      -- the core: m0 x n0, not split (matmul_reg with M = m0 and N = n,
      -- as the row length of B and C, on a grid of n0 columns)
      edges = {m0 = m0, n0 = n0}
    else
      slices, slice_k = split_k(p, d, dev, m, n, k, SIZES[t])
    end
    local mc, nc = m0 or m, n0 or n
    if slices > 1 then d.SPLITK = 1 end
    if k % d.VLA == 0 and offA % d.VLA == 0 then d.ALIGNA = 1 end
    if n % d.VLB == 0 and offB % d.VLB == 0 then d.ALIGNB = 1 end
    d.VSC = (n % d.VWN == 0 and offC % d.VWN == 0) and 1 or 0
    if mc % d.BM == 0 and nc % d.BN == 0 and k % d.BK == 0 then d.EVEN = 1 end
    if k % d.BK ~= 0 then d.KTAIL = 1 end
  elseif variant == "packed" then
    d.VSC = (n % d.VW == 0 and offC % d.VW == 0) and 1 or 0
  end
  return {variant = variant, set = pset, params = p, defines = d, local_size = lsz,
          options = "-cl-mad-enable" .. (p.options and " " .. p.options or ""),
          slices = slices, slice_k = slice_k, edges = edges}
end

local function matmul(A, B, C, opts)
  local optarg = 4
  if opts == nil and type(C) == "table" then C, opts, optarg = nil, C, 3 end
  opts = check_opts(optarg, opts)
  local ta, rootA, offA = check_operand(1, A)
  local tb, rootB, offB = check_operand(2, B)
  if tb ~= ta then fail("argument #2: expected a buffer of %s (as A), got one of %s", ta, tb) end
  local rootC, offC
  if C ~= nil then
    local tc
    tc, rootC, offC = check_operand(3, C)
    if tc ~= ta then fail("argument #3: expected a buffer of %s (as A), got one of %s", ta, tc) end
  end
  local m, n, k = sizes({A, B, C}, opts)
  local t, q = ta, opts.queue
  local dev = q and q.device or A.device
  for i, b in ipairs{A, B, C} do
    local bd = b.device
    if bd ~= dev and bd.platform ~= dev.platform then
      fail("argument #%d: the buffer is on %s, not on %s's platform", i, bd.name, dev.name)
    end
  end
  if t == "double" and not dev.fp64 then
    fail("%s has no double precision (fp64)", dev.name)
  end
  if C ~= nil then
    for i, r in ipairs{rootA, rootB} do
      local off, len = i == 1 and offA or offB, i == 1 and #A or #B
      if r == rootC and off < offC + #C and offC < off + len then
        fail("argument #3: C overlaps %s (they share memory)", NAMES[i])
      end
    end
  else
    C = dev:buffer(t, {m, n})
    rootC, offC = C, 0
  end
  if m == 0 or n == 0 or k == 0 then
    local ev = C:fill(0, {wait = opts.wait, queue = q})
    return C, ev, {ev}
  end

  local pl = plan(dev, m, n, k, t, offA, offB, offC, opts.variant, opts.params)
  local prog = program(dev, pl.variant, pl.defines, pl.options)
  if pl.edges and (prog.matmul_rows.work_group_size < 256
                   or prog.matmul_cols.work_group_size < 256) then
    -- the edge kernels' work-groups do not fit: one kernel after all
    local override = {edge = 0}
    for f, v in pairs(opts.params or {}) do
      if f ~= "edge" then override[f] = v end
    end
    pl = plan(dev, m, n, k, t, offA, offB, offC, opts.variant, override)
    prog = program(dev, pl.variant, pl.defines, pl.options)
  end
  local variant, d, lsz = pl.variant, pl.defines, pl.local_size
  local waits = wait_list(opts)
  local run_opts = {wait = waits, queue = q}
  local ev
  if variant == "naive" or variant == "tiled" then
    local kern = variant == "naive" and prog.matmul_naive or prog.matmul_tiled
    ev = kern(m, n, k, rootA, offA, rootB, offB, rootC, offC)
      :run({round_up(n, lsz[1]), round_up(m, lsz[2])}, lsz, run_opts)
    return C, ev, {ev}
  end
  local inorder = q == nil or not q.out_of_order
  if pl.edges then
    -- the tile-aligned core, then the edge rows (all columns) and the edge
    -- columns (the core's rows), one after another (on an out-of-order
    -- queue each waits for the one before, so that ev ends them all)
    local m0, n0 = pl.edges.m0, pl.edges.n0
    local events = {}
    events[1] = prog.matmul_reg(m0, n, k, k, rootA, offA, rootB, offB, rootC, offC)
      :run({n0 // d.BN * lsz[1], m0 // d.BM * lsz[2]}, lsz, run_opts)
    if m > m0 then
      events[#events + 1] = prog.matmul_rows(m - m0, n, k, rootA, offA + m0 * k, k,
                                             rootB, offB, n, rootC, offC + m0 * n, n)
        :run({round_up(n, 16), ceil_div(m - m0, 4) * 16}, {16, 16},
             {wait = not inorder and {events[#events]} or nil, queue = q})
    end
    if n > n0 then
      events[#events + 1] = prog.matmul_cols(m0, n - n0, k, rootA, offA, k,
                                             rootB, offB + n0, n, rootC, offC + n0, n)
        :run({ceil_div(n - n0, 4) * 64, round_up(m0, 4)}, {64, 4},
             {wait = not inorder and {events[#events]} or nil, queue = q})
    end
    return C, events[#events], events
  end
  local grid = variant == "reg" and {ceil_div(n, d.BN) * lsz[1], ceil_div(m, d.BM) * lsz[2]}
  if variant == "reg" and pl.slices == 1 then
    ev = prog.matmul_reg(m, n, k, k, rootA, offA, rootB, offB, rootC, offC)
      :run(grid, lsz, run_opts)
    return C, ev, {ev}
  end
  -- reg with a split K and packed use the device's scratch buffers: wait
  -- for their last user when it ran on another queue (or out of order)
  local per_dev = scratch[dev]
  local last = per_dev and per_dev.last
  if last and (not inorder or per_dev.last_queue ~= (q or dev)) then
    waits[#waits + 1] = last
  end
  local events
  if variant == "reg" then -- split K: the slices into scratch, then their sum
    local slices, ks = pl.slices, pl.slice_k
    local P = scratch_buffer(dev, t, 3, slices * m * n)
    local e1 = prog.matmul_reg(m, n, k, ks, rootA, offA, rootB, offB, P, 0)
      :run({grid[1], grid[2], slices}, {lsz[1], lsz[2], 1}, run_opts)
    ev = prog.matmul_sum(slices, m * n, P, rootC, offC)
      :run({round_up(m * n, 256)}, {256}, {wait = not inorder and {e1} or nil, queue = q})
    events = {e1, ev}
  else -- packed: A and B into panels, then the product
    local pm, pn = ceil_div(m, d.TM), ceil_div(n, d.TN)
    local Ap = scratch_buffer(dev, t, 1, pm * d.TM * k)
    local Bp = scratch_buffer(dev, t, 2, pn * d.TN * k)
    local ea = prog.pack_a(m, k, rootA, offA, Ap):run({round_up(k, 16), pm}, {16, 1}, run_opts)
    local eb = prog.pack_b(k, n, rootB, offB, Bp):run({pn, round_up(k, 16)}, {1, 16}, run_opts)
    ev = prog.matmul_packed(m, n, k, Ap, Bp, rootC, offC)
      :run({round_up(pn, lsz[1]), round_up(pm, lsz[2])}, lsz,
           {wait = not inorder and {ea, eb} or nil, queue = q})
    events = {ea, eb, ev}
  end
  per_dev = scratch[dev]
  per_dev.last, per_dev.last_queue = ev, q or dev
  return C, ev, events
end

M.params = PARAMS
M.variants = {"naive", "tiled", "reg", "packed"}

-- M.plan(dev, m, n, k [, type [, variant [, params]]]): how matmul would run
-- that product on dev (operands at offset 0): {variant =, set =, params =,
-- defines =, local_size =, options =, slices =, slice_k =, edges =}, edges
-- {m0 =, n0 =} where a tile-aligned core runs apart from thin edges. For
-- scripts that report or tune.
function M.plan(dev, m, n, k, t, variant, override)
  return plan(dev, m, n, k, t or "float", 0, 0, 0, variant, override)
end

-- M.param_set(dev, name [, type]): the parameters of set name ("naive",
-- "tiled", "reg", "small", "packed") for dev, after the device entries and
-- the double overrides (a new table).
function M.param_set(dev, name, t)
  return variant_params(device_params(dev), name, t or "float")
end

return setmetatable(M, {__call = function(_, ...) return matmul(...) end})
