-- spec/shard_check.lua: run by spec/shard_spec.lua with two PoCL devices
-- (POCL_DEVICES="pthread pthread"). Sharded tensors (gpu.shard,
-- gpu.replicate) against the same ops on one device: elementwise chains,
-- operators with numbers, broadcasting a replicated row, reductions whole
-- and along every dim, mm, gathering; and every bad input's message.
-- Prints "checked N" at the end, or raises.
local gpu = require "luagpu"

local devs = gpu.devices()
assert(#devs >= 2, "two devices expected, got " .. #devs)
local d1, d2 = devs[1], devs[2]
local checked = 0
local function check(cond, fmt, ...)
  if not cond then error((fmt):format(...), 2) end
  checked = checked + 1
end
local function raises(text, f, ...)
  local ok, err = pcall(f, ...)
  check(not ok and tostring(err):find(text, 1, true), "expected %q, got %s", text, tostring(err))
end

math.randomseed(20261126)

-- the values of tensors a and b (on any devices) agree: exactly, or
-- within tol relative
local function same(a, b, tol, what)
  local sa, sb = table.concat(a.shape, ","), table.concat(b.shape, ",")
  check(sa == sb, "%s: shape {%s} against {%s}", what, sa, sb)
  check(a.type == b.type, "%s: type %s against %s", what, a.type, b.type)
  local x, y = a:get():totable(), b:get():totable()
  for i = 1, #x do
    local ok = x[i] == y[i] or (x[i] ~= x[i] and y[i] ~= y[i]) or
               (tol and math.abs(x[i] - y[i]) <= tol * math.max(1, math.abs(y[i])))
    check(ok, "%s: element %d is %s against %s", what, i, tostring(x[i]), tostring(y[i]))
  end
end
local function near(a, b, tol, what)
  check(a == b or (a ~= a and b ~= b) or math.abs(a - b) <= tol * math.max(1, math.abs(b)),
        "%s: %s against %s", what, tostring(a), tostring(b))
end

local function random(t, shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local v = {}
  for i = 1, n do
    v[i] = (t == "float" or t == "double") and math.random(-400, 400) / 16 or math.random(-50, 50)
  end
  return d1:tensor(t, shape, v)
end

-- shapes of 1 to 3 dims, sharded along each dim, sizes not a multiple of 2
for _, case in ipairs{{"float", {7}}, {"int", {5, 3}}, {"double", {4, 5}},
                      {"float", {3, 2, 5}}, {"long", {1, 6}}} do
  local t, shape = case[1], case[2]
  for dim = 1, #shape do
    local x, y = random(t, shape), random(t, shape)
    local xs, ys = gpu.shard(x, devs, dim), gpu.shard(y, {d1, d2}, -#shape + dim - 1)
    check(gpu.type(xs) == "ShardedTensor", "gpu.type %s", tostring(gpu.type(xs)))
    check(xs.dim == dim and ys.dim == dim, "dim of a shard")
    check(table.concat(xs.shape, ",") == table.concat(shape, ","), "whole shape")
    check(xs.shards[1].device == d1 and xs.shards[2].device == d2, "shards' devices")
    check(xs.shards[1].shape[dim] == (shape[dim] + 1) // 2, "first shard's size")
    local what = ("%s %s dim %d"):format(t, table.concat(shape, "x"), dim)
    same(xs:to(d1), x, nil, what .. " to")
    same(xs:gather(d2), x, nil, what .. " gather")
    -- elementwise: operators, numbers either side, methods, a fused chain
    same(((xs + ys) * 2 - 1):to(d1), (x + y) * 2 - 1, 1e-12, what .. " chain")
    same((3 - xs):to(d1), 3 - x, nil, what .. " number first")
    same(xs:max(ys):to(d1), x:max(y), nil, what .. " elementwise max")
    same(xs:lt(ys):to(d2), x:lt(y), nil, what .. " lt")
    same((-xs):abs():astype("double"):to(d1), (-x):abs():astype("double"), nil, what .. " neg")
    if t == "float" or t == "double" then
      same(xs:exp():sqrt():to(d1), x:exp():sqrt(), 1e-6, what .. " exp sqrt")
    end
    -- reductions: whole and along every dim
    for _, op in ipairs{"sum", "mean", "min", "max", "prod"} do
      local tol = (t == "float") and 1e-4 or 1e-12
      near(xs[op](xs), x[op](x), tol, what .. " whole " .. op)
      for k = 1, #shape do
        local got = xs[op](xs, k)
        got = gpu.type(got) == "ShardedTensor" and got:to(d1) or got:to(d1)
        same(got, x[op](x, k), tol, ("%s %s along %d"):format(what, op, k))
        local kept = xs[op](xs, k, {keepdim = true})
        kept = gpu.type(kept) == "ShardedTensor" and kept:to(d1) or kept:to(d1)
        same(kept, x[op](x, k, true), tol, ("%s %s along %d kept"):format(what, op, k))
      end
    end
  end
end

-- a replicated row broadcast over sharded rows
local M, row = random("float", {9, 4}), random("float", {1, 4})
local Ms, rows = gpu.shard(M, devs), gpu.replicate(row, devs)
check(rows.dim == nil, "replicated dim")
same((Ms + rows):to(d1), M + row, nil, "M + row")
same((Ms * rows - Ms):to(d2), M * row - M, 1e-6, "M * row - M")
check(rows:sum() == row:sum(), "replicated sum")

-- a replicated operand spanning the sharded dim is cut as the shards are;
-- one of more dims moves the sharded dim (dims align from the last)
local v, W = random("float", {7}), random("float", {3, 7})
local vs = gpu.shard(v, devs)
local vW = vs + gpu.replicate(W, devs)
check(vW.dim == 2 and vW.shape[1] == 3 and vW.shape[2] == 7, "dim after broadcasting")
same(vW:to(d1), v + W, nil, "sharded {7} + replicated {3, 7}")
local col, R7 = random("float", {7, 1}), random("float", {7, 4})
same((gpu.shard(R7, devs) * gpu.replicate(col, devs)):to(d2), R7 * col, nil,
     "rows times a replicated column")
same((gpu.replicate(col, devs) - gpu.shard(R7, devs)):to(d1), col - R7, nil,
     "a replicated column minus rows")
raises("sharded add: argument #2: a replicated tensor of size 4 along the sharded dim 2: " ..
       "give the whole (7) or 1 (broadcast)",
       function() return vs + gpu.replicate(random("float", {3, 4}), devs) end)
local V2 = random("float", {2, 7})
same((vs * gpu.shard(V2, devs, 2)):to(d1), v * V2, nil, "{7} along 1 times {2, 7} along 2")
raises("sharded add: the tensors are sharded along dims 1 and 1 (of 1 and 2 dims)",
       function() return vs + gpu.shard(random("float", {7, 7}), devs) end)

-- mm: rows of A sharded, B replicated or on one device; batches sharded alike
local A, B = random("float", {10, 6}), random("float", {6, 3})
local As = gpu.shard(A, devs)
same(As:mm(gpu.replicate(B, devs)):to(d1), A:mm(B), 1e-5, "mm replicated")
same(As:mm(B):to(d1), A:mm(B), 1e-5, "mm with B on one device")
local X, Y = random("float", {5, 3, 4}), random("float", {5, 4, 2})
same(gpu.shard(X, devs):mm(gpu.shard(Y, devs)):to(d1), X:mm(Y), 1e-5, "bmm sharded alike")
raises("sharded:mm: shard 1 holds 3 and 2 batches: shard both alike", function()
  return gpu.shard(X, devs):mm(gpu.shard({Y:slice(1, 1, 2):to(d1), Y:slice(1, 3, 5):to(d2)}))
end)

-- shards given as they are: no copy
local p1, p2 = random("int", {2, 3}):to(d1), random("int", {4, 3}):to(d2)
local given = gpu.shard({p1, p2})
check(given.shards[2] == p2 and given.shape[1] == 6, "shards given")
same((given * 2):to(d1), gpu.cat({p1, p2:to(d1)}) * 2, nil, "given times 2")
-- more devices than rows: an empty shard
local one = gpu.shard(random("float", {1, 3}), devs)
check(one.shards[2].shape[1] == 0, "empty shard")
same(one:sum(1):to(d1), one:to(d1):sum(1), nil, "empty shard's sum along 1")
check(one:max() == one:to(d1):max(), "empty shard's max")

-- bad input
local x = random("float", {4, 2})
raises("gpu.shard: argument #2: expected a list of devices, got nil", gpu.shard, x)
raises("gpu.shard: argument #2: device 1 and 2 are the same", gpu.shard, x, {d1, d1})
raises("gpu.shard: argument #2: entry 2: expected a luagpu.Device, got number",
       gpu.shard, x, {d1, 5})
raises("gpu.shard: argument #3: dim 3 is out of range", gpu.shard, x, devs, 3)
raises("gpu.shard: argument #1: expected a tensor or a list of tensors, got string",
       gpu.shard, "x", devs)
raises("gpu.shard: argument #1: the sharded tensor's shards 1 and 2 share a device",
       gpu.shard, {x, x})
raises("gpu.shard: argument #1: the sharded tensor's shard 2 (int {4, 3}) does not match " ..
       "shard 1 (float {4, 2})", gpu.shard, {x, random("int", {4, 3}):to(d2)})
local xs, other = gpu.shard(x, devs), gpu.shard(random("float", {4, 2}), devs, 2)
raises("the tensors are sharded along dims 1 and 2", function() return xs + other end)
raises("sharded add: a sharded tensor with a tensor on one device", function() return xs + x end)
raises("tensor:min: argument #1: expected a dim, a list of dims or a tensor, got " ..
       "luagpu.ShardedTensor", function() return x:min(xs) end)
raises("tensor:max: argument #1: expected a dim, a list of dims or a tensor, got " ..
       "luagpu.ShardedTensor", function() return x:max(xs) end)
raises(("shard 1 of the sharded tensors is on two devices (gpu.device(1) '%s' and " ..
        "gpu.device(2) '%s')"):format(d1.name, d2.name),
       function() return xs + gpu.shard(x, {d2, d1}) end)
-- two PoCL devices share a name: each is named by its place too
raises(("tensor:add: argument #2: the tensors are on different devices (gpu.device(2) '%s' " ..
        "and gpu.device(1) '%s')"):format(d2.name, d1.name),
       function() return x:to(d2) + x end)
do
  local b1, b2 = d1:buffer("float", 8), d2:buffer("float", 8)
  local dot = gpu.reduce.new{type = "float", inputs = 2, map = "x * y", op = "a + b",
                             neutral = 0}
  raises(("argument #2: the buffers are on different devices (gpu.device(1) " ..
          "'%s' and gpu.device(2) '%s')"):format(d1.name, d2.name), dot, b1, b2)
end
local uneven = gpu.shard({random("float", {1, 2}):to(d1), random("float", {3, 2}):to(d2)})
raises("shard 1 holds 2 and 1 along dim 1: shard both alike", function() return xs + uneven end)
-- a tensor on one device with a sharded one, either way round
raises("tensor:add: argument #2: a sharded tensor with a tensor on one device: shard the tensor " ..
       "alike (gpu.shard)", function() return x + xs end)
raises("a sharded tensor with a tensor on one device: shard it alike", function() return xs + x end)
raises("sharded:argmax: not supported on a sharded tensor", function() return xs:argmax() end)
raises("sharded:mm: expected a tensor sharded along dim 1", function() return other:mm(x) end)
raises("sharded:sum: argument #2: unknown option 'typ' (expected keepdim, type)", function() return xs:sum(1, {typ = "double"}) end)
-- keepdim without a dim: a whole reduction is a Lua number, which keeps no dims
for _, op in ipairs{"sum", "prod", "mean", "min", "max"} do
  raises("sharded:" .. op .. ": argument #2: keepdim needs a dim or a list of dims",
         function() return xs[op](xs, nil, {keepdim = true}) end)
  raises("sharded:" .. op .. ": argument #2: keepdim needs a dim or a list of dims",
         function() return xs[op](xs, nil, true) end)
end
raises("sharded tensor: its fields are read-only", function() xs.dim = 2 end)
rawset(rawget(xs, "_shards"), 2, 5)
raises("sharded:to: argument #0: the sharded tensor's shard 2 is number, not a tensor",
       function() return xs:to(d1) end)
rawset(xs, "_shards", {x, x:to(d2)})
raises("sharded:to: argument #0: the sharded tensor's fields were changed",
       function() return xs:to(d1) end)

-- found by spec/shard_fuzz.lua (each wrong or a Lua error before its fix)
do
  -- whole min and max skip NaNs when a shard is all NaN
  local n = d1:tensor("float", {4}, {0 / 0, 0 / 0, 1, 2})
  check(gpu.shard(n, devs):min() == 1 and gpu.shard(n, devs):max() == 2, "min/max of NaN shard")
  -- ulong values from 2^63 (negative Lua integers) compare as ulong across
  -- the shards (the max of 2^63 + 4096 and 9 was 9)
  local u = d1:tensor("ulong", {4}, {9, 7, 2.0^63 + 4096, 5})
  local us = gpu.shard(u, devs)
  check(us:max() == u:max() and us:min() == u:min() and us:min() == 5,
        "ulong shard min %s max %s", tostring(us:min()), tostring(us:max()))
  -- a mean along the sharded dim sums in double (long sums wrap)
  local big = d1:tensor("long", {2, 1}, {math.maxinteger, math.maxinteger})
  same(gpu.shard(big, devs):mean(1), big:mean(1), 1e-12, "mean of long along the sharded dim")
  -- type = converts the result, as one tensor's reduction does
  local c = d1:tensor("char", {4, 2}, {100, 100, 100, 100, 100, 100, 100, 100})
  local cs = gpu.shard(c, devs)
  check(cs:sum(nil, {type = "char"}) == c:sum(nil, {type = "char"}), "sum type char")
  same(cs:sum(1, {type = "char"}), c:sum(1, {type = "char"}), nil, "sum along 1 type char")
  same(cs:sum(2, {type = "char"}):to(d1), c:sum(2, {type = "char"}), nil, "sum along 2 type char")
  same(cs:mean(1, {type = "int"}), c:mean(1, {type = "int"}), nil, "mean type int")
  raises("sharded:sum: argument #2: option type: expected an element type",
         function() return cs:sum(1, {type = "half"}) end)
  -- #xs, xs[i] and unknown keys as a tensor's
  check(#cs == 8, "#xs is %s", tostring(#cs))
  raises("sharded[i]: not supported on a sharded tensor", function() return cs[1] end)
  raises("sharded tensor: no field or method 'foo'", function() return cs.foo end)
  -- batches times a whole b of batches; rows times batches move the rows
  local A3, B3 = random("float", {2, 2, 3}), random("float", {2, 3, 2})
  same(gpu.shard(A3, devs):mm(B3):to(d1), A3:mm(B3), 1e-5, "batches times whole batches")
  same(gpu.shard(A3, devs):mm(gpu.replicate(B3, devs)):to(d1), A3:mm(B3), 1e-5,
       "batches times replicated batches")
  local A2 = random("float", {2, 3})
  local r = gpu.shard(A2, devs):mm(gpu.replicate(random("float", {4, 3, 2}), devs))
  check(r.dim == 2 and table.concat(r.shape, ",") == "4,2,2", "rows times batches")
  -- an empty shard of batches (one device's x:mm of 0 batches raised)
  local one3, W = random("double", {1, 7, 7}), random("double", {7, 4})
  same(gpu.shard(one3, devs):mm(W):to(d1), one3:mm(W), 1e-12, "empty shard of batches")
  -- hostile input
  raises("gpu.shard: argument #2: expected a list of devices, got a table with key 3",
         gpu.shard, x, {[1] = d1, [3] = d2})
  raises("gpu.shard: argument #1: expected a list of tensors, got a table with key 3",
         gpu.shard, {[1] = x, [3] = x:to(d2)})
  local moved = gpu.shard(c, devs)
  rawset(moved, "_dim", nil)
  raises("sharded:sum: argument #0: the sharded tensor's fields were changed",
         function() return moved:sum() end)
  raises("sharded:clamp: argument #1: expected a number or nil, got luagpu.Tensor",
         function() return cs:clamp(c, 1) end)
  raises("sharded:min: the min of an empty tensor is undefined",
         function() return gpu.shard(d1:tensor("float", {0}), devs):min() end)
  -- a whole of size 1 along the sharded dim broadcasts against a replicated one
  local r1, R3 = random("float", {1, 4}), random("float", {3, 4})
  same((gpu.shard(r1, devs) + gpu.replicate(R3, devs)):to(d1), r1 + R3, nil,
       "size 1 along the sharded dim broadcast")
  -- a shard's tensor error names the sharded call
  local u = gpu.shard(d1:tensor("uchar", {4, 3}), devs)
  raises("luagpu: sharded add: argument #2: -4 does not fit uchar", function() return u + -4 end)
  raises("luagpu: sharded:mm: expected two tensors of float", function() return u:mm(x) end)
  raises("luagpu: sharded:min: argument #1: dim 5 is out of range", function() return u:min(5) end)
end
-- xs:to(dev) and xs:gather(dev) give a tensor of the caller's own: a copy
-- even where a shard already is the whole on dev (a replicated tensor, one
-- shard, a shard and empty ones), so that writing it leaves xs as it was
-- (they gave the shard itself)
do
  local w = random("float", {1, 3})
  local want = w:totable()
  for _, case in ipairs{{"replicated", gpu.replicate(w, devs)}, {"one shard", gpu.shard(w, {d1})},
                        {"one shard elsewhere", gpu.shard(w, {d2})},
                        {"a shard and an empty one", gpu.shard(w, devs, 1)},
                        {"replicated, lazy", gpu.replicate(w, devs) * 1}} do
    local what, ws = case[1], case[2]
    for _, dev in ipairs{d1, d2} do
      for _, m in ipairs{"to", "gather"} do
        local r = ws[m](ws, dev)
        check(r.device == dev, "%s: %s: on another device", what, m)
        for _, sh in ipairs(ws.shards) do
          check(not rawequal(r, sh), "%s: %s: a shard itself", what, m)
        end
        r:set(7)
        local got = ws:totable()
        for i = 1, 3 do
          check(got[1][i] == want[1][i], "%s: %s(dev): writing the result wrote the shard (%s)",
                what, m, tostring(got[1][i]))
        end
      end
    end
  end
  raises("luagpu: sharded:to: argument #1: expected a luagpu.Device, got nil",
         function() return gpu.replicate(w, devs):to() end)
end
-- a second release, or <close> after an explicit one, does nothing
do
  local r = gpu.shard(random("float", {4, 2}), devs)
  do
    local c <close> = gpu.shard(random("float", {4, 2}), devs)
    c:release()
  end
  r:release()
  r:release()
  checked = checked + 1
end
-- an argument past a call's last raises, naming the call and the argument
-- (issue 32), and trailing nils are no arguments
do
  local m = random("float", {4, 2})
  local ms, rs = gpu.shard(m, devs), gpu.replicate(m, devs)
  local ys = gpu.shard(random("float", {4, 2}), devs)
  local cases = {
    {"sharded:add", 2, function() return ms:add(ys, 1) end},
    {"sharded:mul", 2, function() return ms:mul(2, ys) end},
    {"sharded:exp", 1, function() return ms:exp(1) end},
    {"sharded:neg", 1, function() return ms:neg(ms) end},
    {"sharded:astype", 2, function() return ms:astype("double", 1) end},
    {"sharded:clamp", 3, function() return ms:clamp(0, 1, 1) end},
    {"sharded:eval", 1, function() return ms:eval(1) end},
    {"sharded:sum", 3, function() return ms:sum(1, false, 1) end},
    {"sharded:sum", 3, function() return rs:sum(nil, nil, 1) end},
    {"sharded:prod", 3, function() return ms:prod(nil, nil, {}) end},
    {"sharded:mean", 3, function() return ms:mean(2, true, 1) end},
    {"sharded:min", 3, function() return ms:min(1, false, 1) end},
    {"sharded:min", 2, function() return ms:min(ys, 1) end},
    {"sharded:max", 3, function() return ms:max(nil, nil, 1) end},
    {"sharded:max", 3, function() return ms:max(ys, nil, 1) end},
    {"sharded:mm", 2, function() return ms:mm(random("float", {2, 3}), 1) end},
    {"sharded:to", 2, function() return ms:to(d1, 1) end},
    {"sharded:to", 2, function() return ms:gather(d2, true) end},
    {"sharded:get", 1, function() return ms:get(1) end},
    {"sharded:totable", 1, function() return ms:totable(1) end},
    {"sharded:release", 1, function() return ms:release(1) end},
  }
  for _, c in ipairs(cases) do
    raises(("luagpu: %s: argument #%d: expected no more arguments, got "):format(c[1], c[2]), c[3])
  end
  -- none of those released ms or changed it
  same(ms:to(d1), m, nil, "after the refused calls")
  same((ms:add(ys, nil):exp(nil):clamp(nil, 2, nil)):to(d1, nil),
       (m:add(ys:to(d1)):exp():clamp(nil, 2)), 1e-6, "trailing nils")
  near(ms:sum(nil, nil, nil), m:sum(), 1e-6, "sum with trailing nils")
  ms:release(nil)
  raises("luagpu: sharded:to: attempt to use a released tensor", function() return ms:to(d1) end)
end
-- x:to(dev), gpu.shard and gpu.replicate read x on the other device's
-- queue: a write of x right after (on x's queue) waits for those reads
-- (it did not: the copies got the new values now and then)
do
  local n = 1 << 16
  local copies = {
    to = function(x) return x:to(d2) end,
    shard = function(x) return gpu.shard(x, {d1, d2}) end,
    replicate = function(x) return gpu.replicate(x, {d2, d1}) end}
  for what, copy in pairs(copies) do
    for round = 1, 10 do
      local x = d1:tensor("int", {n}, round)
      local y = copy(x)
      x:set(-1)
      local got = y:to(d1):sum()
      check(got == round * n, "%s of x, then x:set: a sum of %s, not %s", what, tostring(got),
            tostring(round * n))
    end
  end
end
-- tostring: a header naming each device, then the whole's values as one
-- tensor prints them; past 1000 elements each shard's own summary
do
  local label = ("gpu.device(1) '%s', gpu.device(2) '%s'"):format(d1.name, d2.name)
  local function body(t) return (tostring(t):gsub("^[^\n]*\n", "")) end
  local x = random("float", {5, 3})
  for _, case in ipairs{{gpu.shard(x, devs), "along dim 1"}, {gpu.shard(x, devs, 2), "along dim 2"},
                        {gpu.replicate(x, devs), "replicated"}} do
    local text = tostring(case[1] * 2)
    check(text == ("luagpu.ShardedTensor<float>{5, 3} %s over 2 devices (%s):\n%s")
                  :format(case[2], label, body(x * 2)), "tostring: %s", text)
  end
  local big = random("int", {1001})
  local text = tostring(gpu.shard(big, devs))
  local first, second = big:slice(1, 1, 501), big:slice(1, 502, 1001)
  check(text == ("luagpu.ShardedTensor<int>{1001} along dim 1 over 2 devices (%s):\n" ..
                 "shard 1, on gpu.device(1) '%s': %s\nshard 2, on gpu.device(2) '%s': %s")
                :format(label, d1.name, tostring(first), d2.name, tostring(second)),
        "tostring of 1001: %s", text)
end

print("checked " .. checked)
