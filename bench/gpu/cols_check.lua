-- bench/gpu/cols_check.lua: column reductions (kernels/tensor_reduce.cl's
-- cols4) on a GPU, where no busted runs and where many groups finish at
-- once: with tensor.reduce.cols4_fold (the last group of a column tile
-- folds the split parts in the same launch) against the second launch
-- (cols2), exactly for integers, positions, min and max, within rounding
-- for floating sums and means; each case run 20 times (a race of the
-- folding groups would show as a differing run). Prints "cols_check: N
-- cases, all equal" or the first difference, and exits 1 on one.
--   build/luagpu bench/gpu/cols_check.lua
local gpu = require "luagpu"
local R = require "luagpu.tensor.reduce"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local cases = 0
local function fail(fmt, ...)
  io.stderr:write(("cols_check: " .. fmt .. "\n"):format(...))
  os.exit(1)
end
local function flat(t, acc)
  acc = acc or {}
  for _, v in ipairs(t) do
    if type(v) == "table" then flat(v, acc) else acc[#acc + 1] = v end
  end
  return acc
end
local OPS = {float = {"sum", "mean", "max", "argmax", "min"}, int = {"sum", "max", "argmin"}}
for _, t in ipairs {"float", "int"} do
  for _, shape in ipairs {{4096, 1024}, {65536, 64}, {3, 5000, 36}, {100000, 4}, {8192, 8192}} do
    local x = t == "float" and dev:randn("float", shape, 7):eval()
              or (dev:rand("float", shape, 8) * 100):floor():astype("int"):eval()
    local d = #shape - 1
    for _, op in ipairs(OPS[t]) do
      R.cols4_fold = false
      local want = flat(x[op](x, d):totable())
      R.cols4_fold = true
      for run = 1, 20 do
        local got = flat(x[op](x, d):totable())
        for i = 1, #want do
          local a, b = want[i], got[i]
          local ok = a == b or (a ~= a and b ~= b)
          if not ok and (op == "sum" or op == "mean") and t == "float" then
            ok = math.abs(a - b) <= 1e-5 * math.max(1, math.abs(a))
          end
          if not ok then
            fail("%s %s of {%s} run %d: [%d] = %s, want %s", t, op, table.concat(shape, ", "),
                 run, i, tostring(b), tostring(a))
          end
        end
      end
      cases = cases + 1
    end
  end
end
print(("cols_check: %d cases, all equal"):format(cases))
