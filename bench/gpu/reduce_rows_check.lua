-- bench/gpu/reduce_rows_check.lua: tensor reductions along the last dim
-- (the rows kernels of kernels/tensor_reduce.cl) on a GPU, where no busted
-- runs and where their warp-shuffle form (inline PTX, NVIDIA's) builds:
-- each result against the same reduction with R.warp = false (the
-- local-memory form the specs check on PoCL), exactly for positions,
-- min, max and integers, within rounding for floating sums; over row
-- lengths that give one group a row, several (a second pass), and rows
-- shorter than a warp, with ties and NaNs.
--   build/luagpu bench/gpu/reduce_rows_check.lua
local gpu = require "luagpu"
local R = require "luagpu.tensor.reduce"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))

local function flat(v)
  if type(v) == "number" then return {v} end
  local out = {}
  for _, r in ipairs(v) do
    if type(r) == "table" then for _, a in ipairs(r) do out[#out + 1] = a end
    else out[#out + 1] = r end
  end
  return out
end

local bad, checked = 0, 0
local TYPES = {"float", "int", "long", "uchar", "short", dev.fp64 and "double" or nil}
local OPS = {"sum", "max", "min", "argmax", "argmin", "mean", "any", "prod"}
local SHAPES = {{64, 1}, {64, 3}, {40, 31}, {40, 33}, {17, 100}, {9, 1000}, {4096, 64},
                {8, 4096}, {3, 5000}, {2, 70000}, {1, 1 << 20}}
for ti, t in ipairs(TYPES) do
  for si, sh in ipairs(SHAPES) do
    local rows, L = sh[1], sh[2]
    -- few distinct values: ties everywhere; NaNs in floating rows
    local x = (dev:rand("float", {rows, L}, ti * 100 + si) * 7):floor()
    if t == "float" or t == "double" then
      local mask = dev:rand("float", {rows, L}, ti * 100 + si + 50):lt(0.01)
      x = gpu.where(mask, 0 / 0, x - 3)
    end
    x = x:astype(t):eval()
    for _, op in ipairs(OPS) do
      if not ((op == "mean") and not (t == "float" or t == "double")) then
        R.warp = true
        local a = flat(x[op](x, 2):totable())
        R.warp = false
        local b = flat(x[op](x, 2):totable())
        R.warp = true
        local exact = not (op == "sum" or op == "mean" or op == "prod") or
                      not (t == "float" or t == "double")
        for i = 1, #b do
          checked = checked + 1
          local u, v = a[i], b[i]
          local same = u == v or (u ~= u and v ~= v) or
                       (not exact and math.abs(u - v) <= 1e-4 * (1 + math.abs(v)))
          if not same then
            bad = bad + 1
            if bad <= 20 then
              print(("%s %s %dx%d row %d: warp %s, local memory %s"):format(op, t, rows, L, i,
                    tostring(u), tostring(v)))
            end
            break
          end
        end
      end
    end
  end
end
print(("reduce_rows_check on %s: %d values checked, %s"):format(dev.name, checked,
      bad == 0 and "all agree" or bad .. " differ"))
