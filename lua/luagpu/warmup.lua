-- luagpu.warmup: gpu.warmup(dev [, types]) builds ahead of time the
-- programs the helpers use most, so that a script's or a REPL's first call
-- of them is fast: it runs each operation once on a few elements, through
-- the helpers' own paths (so the programs land under the keys a later call
-- looks up, in the process and in the on-disk program cache).
--
--   M.warmup(dev [, types])   types: a type name or a list of them (default
--                             {"float", "int"}); returns the number of
--                             programs built (or loaded from the disk
--                             cache) and the seconds it took
--   M.OPS                     what is run, per kind of type (listed by help)

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local TY = require "luagpu.core.types"

local type, ipairs = type, ipairs
local fail = H.fail

local M = {}

-- Each operation once, on x and y (1000 elements), big (100000) and the
-- square matrices m (64 x 64) and odd (100 x 100) of the type; `float`
-- only for floating types. Sorts and matrix products pick their program by
-- size too: these sizes cover short rows, long ones, and tiles whole and
-- cut. The names are what help and the docs show.
M.OPS = {
  {"x + y, x - y, x * y, x / y", function(x, y) return {x + y, x - y, x * y, x / y} end},
  {"x + 1, x * 2, -x", function(x) return {x + 1, x * 2, -x} end},
  {"x:abs(), x:max(y), x:min(y)", function(x, y) return {x:abs(), x:max(y), x:min(y)} end},
  {"x:sqrt(), x:exp(), x:log()", function(x) return {x:sqrt(), x:exp(), x:log()} end,
   float = true},
  {"x:sum(), x:min(), x:max(), m:sum(1), m:sum(2)",
   function(x, _, m) return {x:sum(), x:min(), x:max(), m:sum(1), m:sum(2)} end},
  {"x:mean()", function(x) return {x:mean()} end, float = true},
  {"x:cumsum(), x:sort(), x:argsort() (and on 100000 elements)", function(x, _, _, big)
     return {x:cumsum(), (x:sort()), x:argsort(), big:cumsum(), (big:sort()), big:argsort()}
   end},
  {"gpu.reduce.sum(b), .min(b), .max(b)", function(x)
     local b = x.buffer
     return {gpu.reduce.sum(b), gpu.reduce.min(b), gpu.reduce.max(b)}
   end},
  {"m:mm(m) (fp32 matmul, 64 x 64 and 100 x 100)",
   function(_, _, m, _, odd) return {m:mm(m), odd:mm(odd)} end, only = "float"},
}

-- gpu.warmup(dev [, types])
function M.warmup(dev, types)
  local fn = "gpu.warmup"
  H.check_object(fn, "argument #1", dev, "Device")
  if types == nil then types = {"float", "int"} end
  if type(types) == "string" then types = {types} end
  if type(types) ~= "table" then
    fail(fn, "argument #2: expected a type name or a list of them, got %s", H.typename(types))
  end
  for i, t in ipairs(types) do
    if TY.SIZES[t] == nil then
      fail(fn, "argument #2: type #%d: expected one of %s, got %s", i,
           table.concat(TY.NAMES, " "), H.show(t))
    end
    if t == "double" and not dev.fp64 then
      fail(fn, "argument #2: %s has no double precision (fp64)", dev.name)
    end
  end
  local before, t0 = P.built(), gpu.now()
  for _, t in ipairs(types) do
    local floating = TY.FLOATS[t] ~= nil
    local x, y = dev:tensor(t, {1000}, 3), dev:tensor(t, {1000}, 2)
    local big = dev:tensor(t, {100000}, 1)
    local m, odd = dev:tensor(t, {64, 64}, 1), dev:tensor(t, {100, 100}, 1)
    for _, op in ipairs(M.OPS) do
      if (not op.float or floating) and (not op.only or op.only == t) then
        for _, r in ipairs(op[2](x, y, m, big, odd)) do
          if type(r) == "table" and r.eval then r:eval() end
        end
      end
    end
  end
  dev:finish()
  return P.built() - before, gpu.now() - t0
end

return M
