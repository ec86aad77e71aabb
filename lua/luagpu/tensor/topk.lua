-- luagpu.tensor.topk: x:topk(k) for k up to MAX_K without sorting
-- (kernels/topk.cl; internal to luagpu.tensor, stats.lua's topk calls it).
--
-- The dim is moved last (a copy unless it is already); each row is cut
-- into chunks, a work-group keeps the best K (k rounded up to a power of
-- two) of its chunk; passes repeat over the chunks' candidates until one
-- chunk is left per row, whose best k are the result.
--
--   TK.MAX_K                 the largest k it takes (larger: a sort)
--   TK.run(fn, x, d, k, largest) -> values, positions (1-based, long)

local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"

local min, max = math.min, math.max
local fail = require("luagpu.core.check").fail
local floor_pow2, ceil_div, NO_EVENT = ST.floor_pow2, ST.ceil_div, ST.NO_EVENT

local TK = {MAX_K = 128}

local ENTRY = 16             -- bytes of an entry in local memory (a value, a long)
local ENTRIES = 2048         -- entries a group merges (LS * K), at most
local PER_ITEM = 32          -- elements each work-item reads per chunk

local cache = ST.device_cache()   -- dev -> key -> {k = kernel, LS =}

local function pow2_at_least(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end

-- The pass kernel for type t and K on dev, and its group size; nil when
-- no group of it fits the device.
local function kernel(fn, dev, t, K)
  local c = cache[dev]
  if not c then c = {}; cache[dev] = c end
  local key = t .. " " .. K
  local e = c[key]
  if e ~= nil then return e or nil end
  local ls = floor_pow2(min(ENTRIES // K, dev.local_mem_size // (ENTRY * K),
                            dev.max_work_group_size))
  while ls >= 1 do
    local ok, prog = pcall(P.get, dev, {family = "tensor", file = "topk.cl", defines = {
      {"T", t}, {"K", K}, {"LS", ls}, {"IS_FLOAT", TY.FLOATS[t] and 1 or 0}}})
    if not ok then fail(fn, "the topk kernel does not compile for %s: %s", t, tostring(prog)) end
    local k = prog.topk_pass
    if k.work_group_size >= ls then e = {k = k, LS = ls}; break end
    ls = floor_pow2(k.work_group_size)
  end
  c[key] = e or false
  return e
end

-- The k best elements of each row of contiguous x's last dim and their
-- 1-based positions (rows of k); nil when the device takes no kernel.
local function rows_topk(fn, x, k, largest)
  local dev, t = x._dev, x._type
  local shape = x._shape
  local L = shape[#shape]
  local rows = x._n // L
  local K = pow2_at_least(k)
  local pass = kernel(fn, dev, t, K)
  if not pass then return nil end
  O.check_bounds(fn, x)
  local vals, voff, vpos, poff, len = x._st.buf, x._off, nil, 0, L
  local out_v, out_p
  while true do
    local chunk = max(pass.LS * PER_ITEM, K)
    local nchunks = ceil_div(len, chunk)
    local final = nchunks == 1
    local kout = final and k or K
    out_v = O.empty(fn, dev, t, {rows * nchunks * kout})
    out_p = O.empty(fn, dev, "long", {rows * nchunks * kout})
    pass.k(vals, voff, vpos or out_p._st.buf, poff, len, chunk, nchunks, out_v._st.buf,
           out_v._off, out_p._st.buf, out_p._off, kout, final and 1 or 0, largest and 1 or 0,
           vpos and 1 or 0):run(
      {rows * nchunks * pass.LS}, {pass.LS}, NO_EVENT)
    if final then break end
    -- the next pass reads this one's candidates (kept alive by the locals)
    vals, voff, vpos, poff = out_v._st.buf, out_v._off, out_p._st.buf, out_p._off
    len = nchunks * K
  end
  local rshape = {table.unpack(shape)}
  rshape[#rshape] = k
  return out_v:reshape(rshape), out_p:reshape(rshape)
end

-- x:topk(k, d) for 1 <= k <= MAX_K and x with elements: values and positions
-- along d; nil when the device takes no kernel (the caller sorts).
function TK.run(fn, x, d, k, largest)
  local src, back = O.dim_last(x, d)
  local v, p = rows_topk(fn, src, k, largest)
  if not v then return nil end
  if back then return v:permute(back):contiguous(), p:permute(back):contiguous() end
  return v, p
end

return TK
