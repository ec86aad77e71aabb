-- spec/shard_fuzz.lua: a differential fuzzer of sharded tensors (gpu.shard,
-- gpu.replicate) against the same program on the whole tensor on one
-- device. Run with two devices (POCL_DEVICES="pthread pthread"):
--
--   luagpu spec/shard_fuzz.lua [seed [programs [verbose | quick | all [only]]]]
--
-- (quick: two types and a few ops, so that few kernels are compiled, for
-- spec/shard_fuzz_spec.lua on a fresh cache; verbose: each program too;
-- only: that program alone, as drawn in the run of them all)
--
-- Each program draws a tensor (1-4 dims of sizes 0..9, every element type,
-- NaN, inf, -0.0 and extremes among its values), shards it along a random
-- dim (negative too; cut by gpu.shard, or given as uneven parts), then
-- runs a random chain on both: operators and elementwise methods with
-- numbers, with operands sharded alike and with replicated ones of fewer
-- or more dims, astype, clamp, eval, then a random end (a reduction whole
-- or along any dim with keepdim and type, mm, to/gather, get/totable, #,
-- indexing, a tensor method sharded tensors lack, release and use after).
-- Every result must be the whole's (shape, type, values; NaN = NaN;
-- reductions within a tolerance); an error of one must be an error of the
-- other, and the sharded one a luagpu error naming the sharded call
-- ("sharded add", "sharded:sum"), never a Lua one. Prints one line per mismatch
-- and "programs N mismatches M" at the end (exit status 1 on a mismatch).
local gpu = require "luagpu"

local devs = gpu.devices()
assert(#devs >= 2, "two devices expected, got " .. #devs)
local d1, d2 = devs[1], devs[2]
local seed = tonumber(arg and arg[1]) or 1
local count = tonumber(arg and arg[2]) or 100
local mode = arg and arg[3]
local verbose, quick = mode == "verbose", mode == "quick"
local random = math.random

local TYPES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
               "double"}
local FLOATS = {float = true, double = true}
local LIMITS = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
                ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
                long = {math.mininteger, math.maxinteger}, ulong = {0, math.maxinteger}}
local UNARY, BINARY = {}, {}
for _, row in ipairs(require("luagpu.tensor.ops").list) do
  local names = {}
  if row.method then names[1] = row.name end
  for _, a in ipairs(row.aliases) do names[#names + 1] = a end
  for _, n in ipairs(names) do
    if row.arity == 1 then UNARY[#UNARY + 1] = n elseif row.arity == 2 then BINARY[#BINARY + 1] = n end
  end
end
local OPERATORS = {"+", "-", "*", "/", "%", "^", "//", "&", "|", "~", "<<", ">>"}
local APPLY = {
  ["+"] = function(a, b) return a + b end, ["-"] = function(a, b) return a - b end,
  ["*"] = function(a, b) return a * b end, ["/"] = function(a, b) return a / b end,
  ["%"] = function(a, b) return a % b end, ["^"] = function(a, b) return a ^ b end,
  ["//"] = function(a, b) return a // b end, ["&"] = function(a, b) return a & b end,
  ["|"] = function(a, b) return a | b end, ["~"] = function(a, b) return a ~ b end,
  ["<<"] = function(a, b) return a << b end, [">>"] = function(a, b) return a >> b end,
}
if quick then
  -- (few kernels, compiled once each: a spec's run on a fresh cache stays short)
  TYPES = {"float", "int"}
  UNARY, BINARY = {"neg", "abs", "floor", "isnan"}, {"sub", "lt", "hypot"}
  OPERATORS = {"+", "*", "/"}
end
local LACKING = {"argmax", "argmin", "sort", "cumsum", "reshape", "t", "slice", "any", "all",
                 "std", "var", "norm", "flip", "softmax", "unsqueeze", "squeeze", "permute",
                 "item", "set", "contiguous", "clone", "topk", "dot", "bmm", "index_select"}

local function pick(list) return list[random(#list)] end
local function is_sharded(v) return gpu.type(v) == "ShardedTensor" end
local function show(v)
  if type(v) == "number" then
    if v ~= v then return "0/0" end
    if v == math.huge then return "math.huge" elseif v == -math.huge then return "-math.huge" end
    if v == 0 and 1 / v < 0 then return "-0.0" end
    return math.type(v) == "integer" and string.format("%d", v) or string.format("%.17g", v)
  end
  return tostring(v)
end

------------------------------------------------------------------ drawing

local nan_share = 0.04                      -- (per program: some are mostly NaN)
local function value(t)
  local r = random()
  if FLOATS[t] then
    if r < nan_share then return 0 / 0 end
    if r < 0.04 then return 0 / 0 elseif r < 0.06 then return math.huge
    elseif r < 0.08 then return -math.huge elseif r < 0.11 then return -0.0
    elseif r < 0.13 then return random(-1000, 1000) * 1e6 end
    return random(-64, 64) / 8
  end
  local lo, hi = LIMITS[t][1], LIMITS[t][2]
  if r < 0.04 then return lo elseif r < 0.08 then return hi end
  if lo == 0 then return random(0, 40) end
  return random(-20, 20)
end

local function number()
  local r = random()
  if r < 0.05 then return 0 / 0 elseif r < 0.08 then return math.huge
  elseif r < 0.1 then return -math.huge elseif r < 0.13 then return -0.0
  elseif r < 0.16 then return 2 ^ 31 elseif r < 0.2 then return random(-3, 3) + 0.5
  elseif r < 0.22 then return 1 << 40 end
  return random(-4, 6)
end

local function numel(shape)
  local n = 1
  for _, k in ipairs(shape) do n = n * k end
  return n
end

local function size() local r = random() return r < 0.1 and 0 or r < 0.3 and 1 or random(2, 9) end

local function draw_shape()
  local nd = random() < 0.3 and 1 or random(1, 4)
  local shape
  repeat
    shape = {}
    for i = 1, nd do shape[i] = size() end
  until numel(shape) <= 600
  return shape
end

local function tensor(t, shape, dev)
  local v = {}
  for i = 1, numel(shape) do v[i] = value(t) end
  return (dev or d1):tensor(t, shape, v)
end

------------------------------------------------------------------ comparing

local mismatches, log, prog_id = 0, nil, 0
local function mismatch(fmt, ...)
  mismatches = mismatches + 1
  print(("MISMATCH seed %d program %d: " .. fmt):format(seed, prog_id, ...))
  print("  program: " .. table.concat(log, "; "))
  error("stop", 0)
end

local function flat(x)
  local v = x:get():totable()
  return v
end

local function close(a, b, tol, scale)
  if a == b then return true end
  if a ~= a and b ~= b then return true end
  if not tol or type(a) ~= "number" or type(b) ~= "number" then return false end
  if a ~= a or b ~= b then return false end
  if math.abs(b) == math.huge or math.abs(a) == math.huge then
    return tol and (scale or 0) == math.huge
  end
  return math.abs(a - b) <= tol * math.max(1, math.abs(b), scale or 0)
end

-- The sum of |x| over x's finite elements: how far a sum of them may
-- move with the order of its terms (nil when there is none to tell).
local function finite_scale(x)
  local ok, a = pcall(function()
    local v = x:astype("double")
    return gpu.where(v:isfinite(), v:abs(), 0):sum()
  end)
  return ok and a == a and a or nil
end

-- result w (the whole's) against s (the sharded program's)
local function compare(what, w, s, tol, scale)
  if is_sharded(s) then s = s:to(d1) end
  if type(w) == "number" or type(w) == "boolean" or w == nil then
    if math.type(w) ~= math.type(s) or not close(w, s, tol, scale) then
      mismatch("%s: %s (%s) against the whole's %s (%s)", what, show(s), math.type(s) or type(s),
               show(w), math.type(w) or type(w))
    end
    return
  end
  if gpu.type(s) ~= "Tensor" then
    mismatch("%s: got %s against the whole's tensor", what, tostring(s))
  end
  local ws, ss = table.concat(w.shape, ","), table.concat(s.shape, ",")
  if ws ~= ss or w.type ~= s.type then
    mismatch("%s: %s {%s} against the whole's %s {%s}", what, s.type, ss, w.type, ws)
  end
  local a, b = flat(s), flat(w)
  for i = 1, #b do
    if not close(a[i], b[i], tol, scale) then
      mismatch("%s: element %d is %s against the whole's %s", what, i, show(a[i]), show(b[i]))
    end
  end
end

-- Runs fw (the whole's) and fs (the sharded one's): both results, or both
-- errors (the sharded one a luagpu error); refusal: the sharded side may
-- raise a documented refusal where the whole works.
local function both(what, fw, fs, refusal)
  local okw, rw = pcall(fw)
  local oks, rs = pcall(fs)
  if okw and oks then return true, rw, rs end
  if not oks then
    local e = tostring(rs)
    if not e:find("luagpu: ", 1, true) or e:find("attempt to [a-z]+ a") and
       not e:find("attempt to use a released", 1, true) then
      mismatch("%s: the sharded one raised a Lua error: %s", what, e)
    end
    if not e:find("sharded", 1, true) and not e:find("gpu.", 1, true) then
      mismatch("%s: the sharded one's error does not name the sharded call: %s", what, e)
    end
    if okw then
      if refusal and e:find(refusal) then return false end
      mismatch("%s: the sharded one raised (%s), the whole gave %s", what, e, tostring(rw))
    end
    return false
  end
  mismatch("%s: the whole raised (%s), the sharded one gave %s", what, tostring(rw), tostring(rs))
end

------------------------------------------------------------------ layouts

-- The whole x sharded along dim (as given: negative too) over devs, cut
-- by gpu.shard or given as parts of random sizes.
local function shard(x, dim, list)
  local nd = #x.shape
  local d = dim < 0 and nd + 1 + dim or dim
  if random() < 0.5 then
    log[#log + 1] = ("xs = gpu.shard(x, {%s}, %d)"):format(#list == 1 and "one device" or
                                                           list[1] == d1 and "d1, d2" or
                                                           "d2, d1", dim)
    return gpu.shard(x, list, dim)
  end
  local n, parts, first, sizes = x.shape[d], {}, 1, {}
  for i = 1, #list do
    local k = i == #list and n - first + 1 or random(0, n - first + 1)
    sizes[i] = k
    parts[i] = x:slice(d, first, first + k - 1):to(list[i])
    first = first + k
  end
  log[#log + 1] = ("xs = gpu.shard({parts of %s along %d on %s}, %d)"):format(
    table.concat(sizes, "+"), d, list[1] == d1 and "d1, d2" or "d2, d1", dim)
  return gpu.shard(parts, dim)
end

-- y (a whole of fewer or the same dims as xs, aligned from the last)
-- sharded as xs is (the same devices and sizes along the aligned dim).
local function shard_like(y, xs)
  local k = xs.dim - (xs.ndim - #y.shape)
  local parts, first = {}, 1
  for i, p in ipairs(xs.shards) do
    local n = p.shape[xs.dim]
    parts[i] = y:slice(k, first, first + n - 1):to(p.device)
    first = first + n
  end
  return gpu.shard(parts, k)
end

-- A shape that broadcasts against shape (aligned from the last): fewer
-- dims or more, some of them 1; at dim d (of shape) the size is keep_d's
-- (the whole size) or 1 when allowed.
local function operand_shape(shape, d, fewer_only)
  local nd = #shape
  local drop = random() < 0.3 and random(0, nd - 1) or 0
  local out = {}
  for i = drop + 1, nd do
    local k = shape[i]
    if i ~= d and random() < 0.25 then k = 1 end
    out[#out + 1] = k
  end
  local more = 0
  if not fewer_only and random() < 0.2 and #out < 4 then
    more = random(1, 4 - #out)
    for _ = 1, more do table.insert(out, 1, random(1, 3)) end
  end
  return out, d - drop + more, d - drop
end

------------------------------------------------------------------ a program

local function program()
  log = {}
  local t = random() < 0.4 and pick{"float", "double"} or pick(TYPES)
  if quick then t = pick(TYPES) end
  local shape = draw_shape()
  local nd = #shape
  local d = random(nd)
  local dim = random() < 0.3 and d - nd - 1 or d
  nan_share = random() < 0.15 and 0.85 or 0.04
  local r0 = random()
  local list = r0 < 0.08 and {d1} or r0 < 0.08 and {d2} or r0 < 0.54 and {d1, d2} or {d2, d1}
  local x = tensor(t, shape)
  log[#log + 1] = ("x = %s {%s}"):format(t, table.concat(shape, ","))
  local r1 = random()
  if r1 < 0.1 and nd >= 2 then
    -- a view that is not contiguous: the transpose of the reversed shape's
    local rev, order = {}, {}
    for i = 1, nd do rev[i], order[i] = shape[nd + 1 - i], nd + 1 - i end
    x = tensor(t, rev):permute(order)
    log[#log + 1] = "x = a permuted view"
  elseif r1 < 0.18 then
    x = x * 1
    log[#log + 1] = "x = x * 1 (lazy)"
  end
  local W, S
  if random() < 0.12 then
    log[#log + 1] = "xs = gpu.replicate(x, devs)"
    W, S = x, gpu.replicate(x, list)
  else
    W, S = x, shard(x, dim, list)
  end
  compare("gpu.shard", W, S)
  for _ = 1, random(0, 4) do
    local r = random()
    local dd = S.dim
    if r < 0.2 then
      local op = pick(UNARY)
      log[#log + 1] = "xs:" .. op .. "()"
      local ok, w, s = both(op, function() return W[op](W) end, function() return S[op](S) end)
      if ok then W, S = w, s end
    elseif r < 0.45 then
      local v = number()
      local op = random() < 0.5 and pick(BINARY) or pick(OPERATORS)
      local left = APPLY[op] and random() < 0.5
      log[#log + 1] = ("xs %s %s%s"):format(op, show(v), left and " (number first)" or "")
      local ok, w, s = both(op, function()
        if APPLY[op] then return left and APPLY[op](v, W) or APPLY[op](W, v) end
        return W[op](W, v)
      end, function()
        if APPLY[op] then return left and APPLY[op](v, S) or APPLY[op](S, v) end
        return S[op](S, v)
      end)
      if ok then W, S = w, s end
    elseif r < 0.75 then
      -- another operand: sharded alike or replicated
      local op = random() < 0.5 and pick(BINARY) or pick(OPERATORS)
      if random() < 0.15 then op = pick{"min", "max"} end
      local ty = random() < 0.6 and W.type or pick(TYPES)
      local Y, YS, how
      if random() < 0.5 and dd then
        local ys = operand_shape(W.shape, dd, true)
        local k = dd - (#W.shape - #ys)
        if k < 1 then ys = {table.unpack(W.shape)} end
        if random() < 0.2 and #ys < 4 then table.insert(ys, 1, random(1, 3)) end
        Y = tensor(ty, ys)
        if #ys > #W.shape then
          -- sharded as xs is along the aligned dim
          local k2 = dd + 1
          local parts, first = {}, 1
          for i, p in ipairs(S.shards) do
            local n = p.shape[dd]
            parts[i] = Y:slice(k2, first, first + n - 1):to(p.device)
            first = first + n
          end
          YS = gpu.shard(parts, k2)
        else
          YS = shard_like(Y, S)
        end
        how = "sharded alike"
      else
        local ys, _, k = operand_shape(W.shape, dd or 1)
        if dd and k >= 1 and random() < 0.3 then
          local j = #ys - (#W.shape - dd)
          ys[j] = 1
        end
        if random() < 0.05 and #ys > 0 then ys[random(#ys)] = random(2, 4) end
        Y = tensor(ty, ys)
        YS = gpu.replicate(Y, S.devices)
        how = "replicated"
      end
      local left = random() < 0.4
      log[#log + 1] = ("xs %s (%s %s {%s})%s"):format(op, how, ty, table.concat(Y.shape, ","),
                                                     left and " (it first)" or "")
      local function f(a, b)
        if left then a, b = b, a end
        if APPLY[op] then return APPLY[op](a, b) end
        return a[op](a, b)
      end
      local ok, w, s = both(op .. " " .. how, function() return f(W, Y) end,
                            function() return f(S, YS) end)
      if ok then W, S = w, s end
    elseif r < 0.85 then
      local ty = pick(TYPES)
      log[#log + 1] = "xs:astype(" .. ty .. ")"
      local ok, w, s = both("astype", function() return W:astype(ty) end,
                            function() return S:astype(ty) end)
      if ok then W, S = w, s end
    elseif r < 0.93 then
      local lo, hi = number(), number()
      if random() < 0.2 then lo = nil elseif random() < 0.2 then hi = nil end
      log[#log + 1] = ("xs:clamp(%s, %s)"):format(show(lo), show(hi))
      local ok, w, s = both("clamp", function() return W:clamp(lo, hi) end,
                            function() return S:clamp(lo, hi) end)
      if ok then W, S = w, s end
    elseif r < 0.97 then
      log[#log + 1] = "xs:eval()"
      compare("eval", W:eval(), S:eval())
    else
      -- a reduction along a dim mid-chain: on with a sharded result
      local op = pick{"sum", "prod", "mean", "min", "max"}
      local k, keep = random(#W.shape), random() < 0.5
      log[#log + 1] = ("xs:%s(%d, %s)"):format(op, k, tostring(keep))
      local ok, w, s = both(op, function() return W[op](W, k, keep) end,
                            function() return S[op](S, k, keep) end)
      if ok then
        local rtol = (W.type == "float") and 1e-3 or 1e-9
        compare(op, w, s, rtol, finite_scale(W))
        if not is_sharded(s) then return end
        W, S = w, s
      end
    end
    if quick then W:eval(); S:eval() end
  end
  -- the end
  local r = random()
  local tol = W.type == "float" and 1e-4 or W.type == "double" and 1e-10 or nil
  if r < 0.45 then
    local op = pick{"sum", "prod", "mean", "min", "max"}
    local rdim, opts
    if random() < 0.35 then rdim = nil else rdim = random(#W.shape) end
    if rdim and random() < 0.3 then rdim = rdim - #W.shape - 1 end
    local o = random()
    local ty = random() < 0.25 and pick(TYPES) or nil
    if o < 0.3 then opts = random() < 0.5
    elseif o < 0.6 then opts = {keepdim = random() < 0.5 or nil, type = ty} end
    log[#log + 1] = ("xs:%s(%s, %s)"):format(op, tostring(rdim), type(opts) == "table" and
      ("{keepdim = %s, type = %s}"):format(tostring(opts.keepdim), tostring(opts.type)) or
      tostring(opts))
    local ok, w, s = both(op, function() return W[op](W, rdim, opts) end,
                          function() return S[op](S, rdim, opts) end)
    if ok then
      local rt = type(opts) == "table" and opts.type or W.type
      local rtol = (rt == "float" or W.type == "float") and 1e-3 or 1e-9
      local scale
      if op == "sum" or op == "mean" then
        scale = finite_scale(W)
      end
      if op == "prod" then rtol = rtol * 10 end
      compare(op, w, s, rtol, scale)
    end
  elseif r < 0.55 then
    -- mm: B replicated, a tensor on one device, or batches sharded alike
    local nd2 = #W.shape
    local kk = nd2 >= 2 and W.shape[nd2] or random(0, 4)
    local n = random(0, 4)
    local bshape
    local c = random()
    if nd2 == 3 and c < 0.3 then bshape = {W.shape[1], kk, n}
    elseif c < 0.45 then bshape = {random(1, 3), kk, n}
    else bshape = {kk, n} end
    local B = tensor(pick{W.type, "float", "double"}, bshape)
    local how = random()
    local BS, desc
    if #bshape == 3 and nd2 == 3 and bshape[1] == W.shape[1] and S.dim == 1 and how < 0.5 then
      BS, desc = shard_like(B, S), "batches sharded alike"
    elseif how < 0.75 then BS, desc = gpu.replicate(B, S.devices), "replicated"
    else BS, desc = B, "a tensor on d1" end
    log[#log + 1] = ("xs:mm(%s %s {%s})"):format(desc, B.type, table.concat(bshape, ","))
    local ok, w, s = both("mm", function() return W:mm(B) end, function() return S:mm(BS) end,
                          "expected a tensor sharded along dim 1")
    if ok then compare("mm", w, s, tol) end
  elseif r < 0.65 then
    local dev = random() < 0.5 and d1 or d2
    local how = pick{"to", "gather", "get", "totable"}
    log[#log + 1] = "xs:" .. how .. "(" .. (dev == d1 and "d1" or "d2") .. ")"
    if how == "get" or how == "totable" then
      local a, b = S[how](S), W[how](W)
      if how == "get" then a, b = a:totable(), b:totable() end
      local fa, fb = {}, {}
      local function walk(v, out)
        if type(v) == "table" then for _, e in ipairs(v) do walk(e, out) end
        else out[#out + 1] = v end
      end
      walk(a, fa); walk(b, fb)
      if #fa ~= #fb then mismatch("%s: %d values against %d", how, #fa, #fb) end
      for i = 1, #fb do
        if not close(fa[i], fb[i]) then
          mismatch("%s: value %d is %s against %s", how, i, show(fa[i]), show(fb[i]))
        end
      end
    else
      local g = S[how](S, dev)
      if g.device ~= dev then mismatch("%s: on the wrong device", how) end
      compare(how, W, g)
    end
  elseif r < 0.72 then
    log[#log + 1] = "#xs, xs.shape, xs.type, xs.ndim"
    local ok, w, s = both("#", function() return #W end, function() return #S end)
    if ok then compare("#", w, s) end
    if table.concat(W.shape, ",") ~= table.concat(S.shape, ",") or W.type ~= S.type or
       W.ndim ~= S.ndim then
      mismatch("fields: %s against the whole's %s", tostring(S), tostring(W))
    end
  elseif r < 0.8 then
    local name = pick(LACKING)
    log[#log + 1] = "xs:" .. name .. "()"
    local ok, e = pcall(function() return S[name](S) end)
    if ok or not tostring(e):find("sharded:" .. name .. ": not supported", 1, true) then
      mismatch("%s: expected a refusal, got %s", name, tostring(e))
    end
    local i = random(-2, 2)
    log[#log + 1] = "xs[" .. i .. "]"
    both("index", function() return W[i] end, function() return S[i] end,
         "not supported on a sharded tensor")
  else
    log[#log + 1] = "xs:release(); xs + 1"
    S:eval()
    W:eval()
    if random() < 0.5 then S:release() else
      local c <close> = S
    end
    W:release()
    both("after release", function() return W + 1 end, function() return S + 1 end)
    both("after release", function() return W:sum() end, function() return S:sum() end)
    both("after release", function() return W:to(d1) end, function() return S:to(d1) end)
  end
end

-- (SHARD_FUZZ_GC=1: the collector runs all the time, so that a part
-- collected while still in use shows)
if os.getenv("SHARD_FUZZ_GC") then collectgarbage("incremental", 1, 1000) end
math.randomseed(seed)
local ran = 0
local only = tonumber(arg and arg[4])
for i = only or 1, only or count do
  prog_id = i
  math.randomseed(seed, i)           -- (each program drawn from its own seed: run alone by its number)
  local t0 = gpu.now()
  local ok, e = pcall(program)
  if os.getenv("SHARD_FUZZ_TIME") then
    print(("%.3f s: %s"):format(gpu.now() - t0, table.concat(log, "; ")))
  end
  if not ok and e ~= "stop" then
    mismatches = mismatches + 1
    print(("ERROR seed %d program %d: %s"):format(seed, i, tostring(e)))
    print("  program: " .. table.concat(log, "; "))
  elseif verbose then
    print("ok: " .. table.concat(log, "; "))
  end
  ran = ran + 1
  if i % 25 == 0 then collectgarbage() end
end
print(("programs %d mismatches %d"):format(ran, mismatches))
os.exit(mismatches == 0 and 0 or 1)
