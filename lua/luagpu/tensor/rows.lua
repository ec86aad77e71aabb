-- luagpu.tensor.rows: softmax, log_softmax and logsumexp along one dim, in
-- one fused kernel per call (kernels/rows.cl), and the one-dim var and std
-- of luagpu.tensor.stats. Internal to luagpu.tensor.
--
-- The dim is made the last of a contiguous tensor (no copy when it is
-- already: a permuted copy otherwise, the result permuted back), whose
-- rows the kernel reads once and writes once: a row of up to
-- tpr * ITEMS * VW elements stays in the registers of its work-items
-- (tpr of them, a power of two; short rows share a group), longer ones
-- are read twice. Integer tensors compute in their floating type
-- (core/types floating: float for those of up to 4 bytes, double beyond),
-- converted first.
--
--   RW.methods       softmax, log_softmax, logsumexp (luagpu.tensor makes
--                    them methods)
--   RW.spread(fn, x, d, div, keepdim, std)
--                    var (std: its square root) of floating x along dim
--                    d: sum((a - mean)^2) / div, NaN where div <= 0
--   RW.sizes         per device class: LS (work-items per group), ITEMS
--                    (at most this many chunks per work-item held in
--                    registers) and MIN_ITEMS (at least this many where a
--                    row has enough, at most ITEMS; optional: 1); a script
--                    may change them (benchmarks)
--   RW.warp          false: a row's work-items combine through local
--                    memory even where warp shuffles (inline PTX) build

local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local PTX = require "luagpu.core.ptx"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"

local type, tostring, pcall, ipairs = type, tostring, pcall, ipairs
local mtype = math.type
local min, huge = math.min, math.huge
local fail, show = H.fail, H.show
local FLOATS, floating = TY.FLOATS, TY.floating
local check_bounds, empty, check = O.check_bounds, O.empty, X.check
local ceil_div, floor_pow2, NO_EVENT = ST.ceil_div, ST.floor_pow2, ST.NO_EVENT

local RW = {methods = {}}

-- (gpu: bench/gpu/rows_sweep.lua on an H100 put groups of 256 with up to
-- 16 chunks a work-item first or within 2% of the best form for rows of
-- 4096 to 16384 floats: softmax 0.70-0.85 of the time of 512 and 8 before.
-- MIN_ITEMS: a row of at least that many chunks is held that many chunks
-- a work-item, not spread over more work-items (a short row shares a
-- warp with others); on an H200, rows of 4096 floats ran 0.90 of the time
-- on 128 work-items of 8 chunks as on 256 of 4)
RW.sizes = {gpu = {LS = 256, ITEMS = 16, MIN_ITEMS = 8}, cpu = {LS = 64, ITEMS = 8, MIN_ITEMS = 1}}

local MODES = {softmax = 0, log_softmax = 1, logsumexp = 2, var = 3, std = 4}
local ONE_PER_ROW = {logsumexp = true, var = true, std = true}

local function ceil_pow2(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end

local function pow2(fn, cls, name, v, hi)
  if mtype(v) ~= "integer" or v < 1 or v > hi or v & (v - 1) ~= 0 then
    fail(fn, "rows.sizes.%s.%s: expected a power of two from 1 to %d, got %s", cls, name, hi,
         show(v))
  end
end

-- The sizes last found good: a call with the same three values skips the
-- checks (a script may change RW.sizes at any time).
local good_ls, good_items, good_least
local function check_sizes(fn, cls, sz)
  local ls, items, least = sz.LS, sz.ITEMS, sz.MIN_ITEMS
  if ls == good_ls and items == good_items and least == good_least and
     mtype(ls) == "integer" and mtype(items) == "integer" and
     (least == nil or mtype(least) == "integer") then
    return                                -- (256.0 == 256: the types are checked too)
  end
  pow2(fn, cls, "LS", ls, 1024)
  pow2(fn, cls, "ITEMS", items, 32)
  if least ~= nil then pow2(fn, cls, "MIN_ITEMS", least, 32) end
  good_ls, good_items, good_least = ls, items, least
end

local cache = ST.device_cache()   -- device -> type -> key (kernel_key) -> {k, LS}

-- RW.warp = false: no warp shuffles (luagpu.core.ptx.warp_keyword), to
-- compare with the local-memory form.
RW.warp = true

-- The kernel of mode for t with items chunks of vw per work-item on dev,
-- and its group size. Its key within t's entries is a number made of the
-- mode, items (at most 32), vw (1 or 4), LS (at most 1024, checked) and
-- the warp switch: no string made per call.
local function kernel(fn, dev, t, mode, items, vw, LS)
  local c = cache[dev]
  if not c then c = {}; cache[dev] = c end
  local e = c[t]
  if not e then e = {}; c[t] = e end
  local key = (((MODES[mode] * 64 + items) * 8 + vw) * 2048 + LS) * 2 + (RW.warp and 1 or 0)
  local p = e[key]
  if p then return p end
  local ls = min(LS, floor_pow2(dev.max_work_group_size))
  local asm = t == "float" and PTX.warp_keyword(dev, RW.warp)
  while true do
    local defines = {{"T", t}, {"MODE", MODES[mode]}, {"LS", ls}, {"ITEMS", items}, {"VW", vw}}
    if asm and ls >= 32 then
      defines[6], defines[7] = {"WARP_PTX", 1}, {"LG_ASM", asm}
    end
    local ok, prog = pcall(P.get, dev, {family = "tensor", file = "rows.cl", defines = defines})
    if not ok then fail(fn, "the %s kernel does not compile for %s: %s", mode, t, tostring(prog)) end
    local k = MODES[mode] >= 3 and prog.rows_var or prog.rows_softmax
    if k.work_group_size >= ls then p = {k = k, LS = ls}; break end
    if ls == 1 then fail(fn, "the %s kernel allows no work-group on %s", mode, dev.name) end
    ls = floor_pow2(k.work_group_size)
  end
  e[key] = p
  return p
end

-- Runs mode over the rows of L elements of contiguous x (nrows of them)
-- into contiguous y (rows of L, or one element per row for logsumexp, var
-- and std; div: var's divisor).
local function run_rows(fn, mode, x, y, nrows, L, div)
  check_bounds(fn, x); check_bounds(fn, y)
  local dev, t = x._dev, x._type
  local cls = dev.type == "cpu" and "cpu" or "gpu"
  local sz = RW.sizes[cls]
  check_sizes(fn, cls, sz)
  local vw = (L % 4 == 0 and x._off % 4 == 0 and (ONE_PER_ROW[mode] or y._off % 4 == 0))
             and 4 or 1
  local chunks = L // vw
  local LS = min(sz.LS, floor_pow2(dev.max_work_group_size))
  local items = min(sz.ITEMS, ceil_pow2(ceil_div(chunks, LS)))
  local least = min(sz.MIN_ITEMS or 1, sz.ITEMS)          -- (powers of two)
  if items < least then items = chunks >= least and least or ceil_pow2(chunks) end
  local p = kernel(fn, dev, t, mode, items, vw, LS)
  LS = p.LS
  local tpr = min(LS, ceil_pow2(ceil_div(chunks, items)))
  local groups = ceil_div(nrows, LS // tpr)
  if div then
    p.k(x._st.buf, x._off, y._st.buf, y._off, L, nrows, tpr, div):run({groups * LS}, {LS},
                                                                    NO_EVENT)
  else
    p.k(x._st.buf, x._off, y._st.buf, y._off, L, nrows, tpr):run({groups * LS}, {LS}, NO_EVENT)
  end
end

-- The floating tensor the kernel reads for x (integers converted).
local function as_floating(fn, x)
  local t = x._type
  if not FLOATS[t] then
    t = floating(t)
    x = x:astype(t)
  end
  if t == "double" then O.check_device_type(fn, x._dev, "double") end
  return x
end

local dim_last, check_dim_arg = O.dim_last, O.check_one_dim

-- x:softmax([dim]) and x:log_softmax([dim]): a new tensor of x's shape
-- (default dim: the last).
local function normalizer(mode)
  local fn = "tensor:" .. mode
  return function(x, dim, ...)
    check(fn, 0, x)
    O.no_more(fn, 2, ...)
    local d = check_dim_arg(fn, x, dim)
    x = as_floating(fn, x)
    if x._n == 0 then return empty(fn, x._dev, x._type, x._shape) end
    local src, back = dim_last(fn, x, d)
    local shape = src._shape
    local L = shape[#shape]
    local out = empty(fn, x._dev, x._type, shape)
    run_rows(fn, mode, src, out, x._n // L, L)
    return back and out:permute(back) or out
  end
end

RW.methods.softmax = normalizer("softmax")
RW.methods.log_softmax = normalizer("log_softmax")

-- x:logsumexp([dim [, keepdim]]): log(sum(exp(x))) along dim, a tensor
-- (keepdim: the dim kept with size 1); without dim, of all elements, a
-- Lua number.
function RW.methods.logsumexp(x, dim, keepdim, ...)
  local fn = "tensor:logsumexp"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  if type(keepdim) == "table" then
    local o = H.check_options(fn, 2, keepdim, H.option_names({"keepdim"}, "option "))
    keepdim = o.keepdim
    if keepdim ~= nil and type(keepdim) ~= "boolean" then
      fail(fn, "argument #2: option keepdim: expected a boolean, got %s", show(keepdim))
    end
  elseif keepdim ~= nil and type(keepdim) ~= "boolean" then
    fail(fn, "argument #2: keepdim: expected a boolean, got %s", show(keepdim))
  end
  O.check_keepdim(fn, dim, keepdim)
  if type(dim) == "table" then
    fail(fn, "argument #1: expected an integer dim, got a table (reducing several dims " ..
         "at once is not supported yet)")
  end
  local d = dim ~= nil and O.check_dim(fn, "argument #1", x, dim)
  x = as_floating(fn, x)
  local t, dev = x._type, x._dev
  if not d then                                   -- every element: a number
    if x._n == 0 then return -huge end
    local res = empty(fn, dev, t, {1})
    run_rows(fn, "logsumexp", x:contiguous(), res, 1, x._n)
    return res:get()[1]
  end
  local shape, rshape = x._shape, {}
  for i = 1, #shape do
    if i ~= d then rshape[#rshape + 1] = shape[i]
    elseif keepdim then rshape[#rshape + 1] = 1 end
  end
  local res = empty(fn, dev, t, rshape)
  if res._n == 0 then return res end
  local L = shape[d]
  if L == 0 then return res:set(-huge) end        -- the sum of nothing is 0
  local src = dim_last(fn, x, d)
  run_rows(fn, "logsumexp", src, res, res._n, L)
  return res
end

-- var along dim d of floating x (std: its square root) with divisor div,
-- one kernel: a tensor of x's shape without d (keepdim: d kept with size
-- 1). x has elements and d a size above 0 (luagpu.tensor.stats checks).
function RW.spread(fn, x, d, div, keepdim, std)
  if x._type == "double" then O.check_device_type(fn, x._dev, "double") end
  local shape, rshape = x._shape, {}
  for i = 1, #shape do
    if i ~= d then rshape[#rshape + 1] = shape[i]
    elseif keepdim then rshape[#rshape + 1] = 1 end
  end
  local res = empty(fn, x._dev, x._type, rshape)
  run_rows(fn, std and "std" or "var", dim_last(fn, x, d), res, res._n, shape[d], div)
  return res
end

return RW
