-- luagpu.tensor.transpose: the contiguous copy of a view whose last two
-- dims are those of a contiguous layout swapped (M:t(), X:transpose(-1,
-- -2), batches of them), by tiles through local memory
-- (kernels/tensor_transpose.cl): reads and writes both coalesced, where the
-- elementwise copy reads one of them with a stride. Internal to
-- luagpu.tensor: E.clone calls it.
--
--   TR.copy(fn, x, out)   copies x into out (new, contiguous, x's shape)
--                         and returns true where x is such a view; false
--                         (nothing enqueued) otherwise
local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local H = require "luagpu.core.check"

local pcall, tostring = pcall, tostring
local fail = H.fail
local ceil_div, NO_EVENT = ST.ceil_div, ST.NO_EVENT

local TR = {}

local TILE, ROWS = 32, 8
local kernels = ST.device_cache()     -- dev -> "type idx" -> Kernel

local function kernel(fn, dev, t, idx)
  local c = kernels[dev]
  if not c then c = {}; kernels[dev] = c end
  local key = t .. " " .. idx
  local k = c[key]
  if k then return k end
  local ok, prog = pcall(P.get, dev, {family = "tensor", file = "tensor_transpose.cl",
                                      defines = {{"T", t}, {"IDX", idx}, {"TILE", TILE},
                                                 {"ROWS", ROWS}}})
  if not ok then fail(fn, "the transpose kernel does not compile for %s: %s", t, tostring(prog)) end
  k = prog.lg_transpose
  c[key] = k
  return k
end

-- Whether x (realized) reads a contiguous layout with its last two dims
-- swapped: strides ..., 1, shape[nd - 1] over batches that are contiguous
-- above them (a dim of size 1 takes any stride). Returns the matrices'
-- rows and cols as stored, and their count.
local function swapped(x)
  local shape, st = x._shape, x._strides
  local nd = #shape
  if nd < 2 then return nil end
  local rows, cols = shape[nd], shape[nd - 1]     -- stored: rows of cols elements
  if rows < 2 or cols < 2 or st[nd - 1] ~= 1 or st[nd] ~= cols then return nil end
  local want, batches = rows * cols, 1
  for d = nd - 2, 1, -1 do
    local n = shape[d]
    if n ~= 1 then
      if st[d] ~= want then return nil end
      want, batches = want * n, batches * n
    end
  end
  return rows, cols, batches
end

function TR.copy(fn, x, out)
  local rows, cols, batches = swapped(x)
  if not rows then return false end
  local dev = out._dev
  local big = x._off + rows * cols * batches >= 1 << 32 or out._off + out._n >= 1 << 32
  local k = kernel(fn, dev, x._type, big and "ulong" or "uint")
  k(out._st.buf, out._off, x._st.buf, x._off, rows, cols):run(
    {ceil_div(cols, TILE) * TILE, ceil_div(rows, TILE) * ROWS, batches}, {TILE, ROWS, 1}, NO_EVENT)
  return true
end

return TR
