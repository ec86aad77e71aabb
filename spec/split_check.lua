-- spec/split_check.lua: run by spec/split_spec.lua with two PoCL devices
-- (POCL_DEVICES="pthread pthread"). matmul and reduce over a device list
-- and over lists of buffers, against one device's results and plain Lua;
-- prints "checked N" at the end, or raises.
local gpu = require "luagpu"
local reduce = require "luagpu.reduce"
local matmul = require "luagpu.matmul"

local devs = gpu.devices()
assert(#devs >= 2, "two devices expected, got " .. #devs)
local d1, d2 = devs[1], devs[2]
local checked = 0
local function check(cond, fmt, ...)
  if not cond then error((fmt):format(...), 2) end
  checked = checked + 1
end
local function raises(pattern, f, ...)
  local ok, err = pcall(f, ...)
  check(not ok and tostring(err):find(pattern, 1, true), "expected %q, got %s", pattern,
        tostring(err))
end

math.randomseed(20261123)

-- reduce: sizes from 0 up, every builtin, both forms, ints exact
for _, n in ipairs{0, 1, 2, 7, 1000, 100003} do
  local h, sum, lo, hi = gpu.array("int", n), 0, math.huge, -math.huge
  for i = 1, n do
    local v = math.random(-1000, 1000)
    h[i], sum = v, sum + v
    lo, hi = math.min(lo, v), math.max(hi, v)
  end
  local b = d1:buffer("int", n, {host = h})
  check(reduce.sum(b, {devices = devs}) == sum, "sum of %d over devices", n)
  check(reduce.sum(b, {devices = devs, shares = {3, 1}}) == sum, "sum of %d with shares", n)
  check(reduce.sum(b, {devices = {d2}}) == sum, "sum of %d on the second device alone", n)
  if n > 0 then
    check(reduce.min(b, {devices = devs}) == lo, "min of %d", n)
    check(reduce.max(b, {devices = devs, shares = {0, 1}}) == hi, "max of %d, one share 0", n)
    local b2 = d2:buffer("int", n, {host = h})
    check(reduce.sum({b, b2}) == 2 * sum, "sum of a list of %d", n)
    check(reduce.sum({b, b, b2}) == 3 * sum, "a list with a device twice, in turn")
    check(reduce.max({b2, b:sub(1, math.max(1, n // 2))}) == hi or n == 1, "max of a list")
  end
end
-- floats: equal to one device's result up to the final additions' rounding
local n = 1 << 18
local h = gpu.array("float", n)
for i = 1, n do h[i] = math.random() end
local fb = d1:buffer("float", n, {host = h})
local one, split = reduce.sum(fb), reduce.sum(fb, {devices = devs, acc = "double"})
check(math.abs(one - split) <= 1e-5 * math.abs(one), "float sum %g vs %g", one, split)

-- matmul over devices: the same as one device's, bit for bit on small integers
local function ints(rows, cols)
  local a = gpu.array("float", {shape = {rows, cols}})
  for i = 1, rows * cols do a[i] = math.random(-4, 4) end
  return a
end
for _, s in ipairs{{37, 23, 29}, {1, 5, 3}, {130, 64, 70}, {3, 3, 3}} do
  local m, k, nn = s[1], s[2], s[3]
  local A = d1:buffer("float", {m, k}, {host = ints(m, k)})
  local B = d1:buffer("float", {k, nn}, {host = ints(k, nn)})
  local want = matmul(A, B):get()
  for _, shares in ipairs{false, {1, 1}, {1, 0}, {0, 1}, {5, 1}} do
    local C, ev, evs = matmul(A, B, {devices = devs, shares = shares or nil})
    ev:wait()
    check(C.shape[1] == m and C.shape[2] == nn and C.device == d1, "C made on A's device")
    local got = C:get()
    for i = 1, m * nn do check(got[i] == want[i], "%dx%dx%d [%d]", m, k, nn, i) end
    check(#evs >= 1, "events")
  end
  -- into a given C on the second device: C's device puts it together
  local C2 = d2:buffer("float", {m, nn})
  local got, ev = matmul(A, B, C2, {devices = devs})
  ev:wait()
  check(got == C2, "the given C is returned")
  local g = C2:get()
  for i = 1, m * nn do check(g[i] == want[i], "into C on device 2 [%d]", i) end
  -- from host arrays into a host array: each device's rows straight from the host
  local hA, hB = A:get(), B:get()
  for _, shares in ipairs{false, {1, 3}, {0, 1}} do
    local hC, hev = matmul(hA, hB, {devices = devs, shares = shares or nil})
    hev:wait()
    check(gpu.type(hC) == "Array" and hC.shape[1] == m and hC.shape[2] == nn, "a host C")
    for i = 1, m * nn do check(hC[i] == want[i], "from host arrays [%d]", i) end
  end
  local into = gpu.array("float", {shape = {m, nn}})
  local same, iev = matmul(hA, hB, into, {devices = devs})
  iev:wait()
  check(same == into and into[m * nn] == want[m * nn], "into a given host C")
  -- the list form: each product on its A's device
  local A2 = d2:buffer("float", {m, k}, {host = A:get()})
  local B2 = d2:buffer("float", {k, nn}, {host = B:get()})
  local Cs, all, evs = matmul({A, A2}, {B, B2})
  all:wait()
  check(#Cs == 2 and #evs == 2 and Cs[2].device == d2, "a list of products")
  for j = 1, 2 do
    local r = Cs[j]:get()
    for i = 1, m * nn do check(r[i] == want[i], "list product %d [%d]", j, i) end
  end
end

-- operands that live on one of the devices, no shares: that device alone
-- (a split would move them to the other through the driver)
do
  local function queues_used(f)
    gpu.trace(true)
    local ok, err = pcall(f)
    local rec = gpu.trace(false)
    assert(ok, err)
    local q = {}
    for _, c in ipairs(rec) do q[c.queue] = true end
    local n = 0
    for _ in pairs(q) do n = n + 1 end
    return n
  end
  local A = d1:buffer("float", {40, 30}, {host = ints(40, 30)})
  local B = d1:buffer("float", {30, 20}, {host = ints(30, 20)})
  local want = matmul(A, B):get()
  local C
  check(queues_used(function()
    local ev
    C, ev = matmul(A, B, {devices = devs})
    ev:wait()
  end) == 1, "a product whose operands live on device 1 runs there alone")
  check(C.device == d1, "C on device 1")
  local got = C:get()
  for i = 1, 40 * 20 do check(got[i] == want[i], "one-device product [%d]", i) end
  check(queues_used(function()
    local _ = matmul(A, B, {devices = devs, shares = {1, 1}})
    d1:finish(); d2:finish()
  end) == 2, "shares force the split")
  local b = d1:buffer("int", 1000, {host = gpu.array("int", 1000):fill(3)})
  local s
  check(queues_used(function() s = reduce.sum(b, {devices = devs}) end) == 1,
        "a sum of a buffer on device 1 runs there alone")
  check(s == 3000, "its value")
  check(queues_used(function() s = reduce.sum(b, {devices = {d2, d1}, shares = {1, 1}}) end) == 2,
        "shares force the split of a sum")
  check(s == 3000, "its value, split")
end

-- x:to(dev): a copy on another device, of any layout; itself on its own
do
  for _, t in ipairs {"float", "int", "uchar"} do
    local x = d1:rand("float", {5, 7}, 3) * 100
    if t ~= "float" then x = x:astype(t) end
    x = x:eval()
    local hx = x:totable()
    for _, v in ipairs {x, x:t(), x:slice(2, 2, 7, 2), x * 2 + 1} do
      local y = v:to(d2)
      check(y.device == d2 and y.type == v.type, "x:to: on device 2, type %s", t)
      check(#y.shape == #v.shape and y.shape[1] == v.shape[1], "x:to: the shape")
      local a, b = v:totable(), y:totable()
      for i = 1, #a do for j = 1, #a[i] do check(a[i][j] == b[i][j], "x:to [%d][%d]", i, j) end end
      local back = y:to(d1)
      check(back.device == d1 and back[1][1] == a[1][1], "x:to and back")
    end
    check(x:to(d1) == x, "x:to its own device: x itself")
    check(hx[5][7] == x:to(d2)[5][7], "x:to: the last element")
  end
  local e = d1:tensor("int", {0, 3}):to(d2)
  check(#e == 0 and e.device == d2, "an empty tensor")
  raises("tensor:to: argument #1: expected a luagpu.Device, got number", function()
    return d1:tensor("int", {2}):to(3)
  end)
end

-- host arrays: sizes and types
local hA = gpu.array("float", {shape = {4, 3}})
raises("argument #2: B has 4 rows, A 3 columns", matmul, hA, hA, {devices = devs})
raises("argument #2: expected a host array of float, got one of int", matmul, hA,
       gpu.array("int", {shape = {3, 3}}), {devices = devs})
raises("argument #1: expected a 2-D host array (as A), got a 1-D one", matmul,
       gpu.array("float", 9), hA, {devices = devs})
raises("argument #3: expected a host array of {4, 4}, got {4, 3}", matmul, hA,
       gpu.array("float", {shape = {3, 4}}), hA, {devices = devs})

-- 2-D tensors (contiguous or not) as A, B and C, as one device multiplies them
do
  local TA = d1:tensor("float", {5, 3}, (function() local v = {} for i = 1, 15 do v[i] = i % 7 - 3 end return v end)())
  local TB = d1:tensor("float", {2, 3}, {1, 0, 2, -1, 1, 3}):t()
  local want = TA:mm(TB):totable()
  local TC = d2:tensor("float", {5, 2})
  local got = matmul(TA, TB, TC, {devices = devs, shares = {2, 1}})
  check(got == TC, "matmul over devices returns C")
  local flat, wflat = TC:totable(), want
  for i = 1, 5 do
    for j = 1, 2 do check(flat[i][j] == wflat[i][j], "tensor product [%d][%d]", i, j) end
  end
  raises("argument #3: the tensor is not contiguous", matmul, TA, TB, d1:tensor("float", {2, 5}):t(),
         {devices = devs, shares = {1, 1}})
end

-- bad input
local A = d1:buffer("float", {4, 4})
raises("option devices: expected a list of devices, got number", matmul, A, A, {devices = 3})
raises("option devices[2]: expected a luagpu.Device, got string", matmul, A, A,
       {devices = {d1, "gpu"}})
raises("is listed twice", matmul, A, A, {devices = {d1, d1}})
raises("option shares: expected a list of 2 numbers (one per device)", matmul, A, A,
       {devices = devs, shares = {1}})
raises("option shares[2]: expected a finite number >= 0, got -1", reduce.sum, A,
       {devices = devs, shares = {1, -1}})
raises("option shares: they add up to 0", reduce.sum, A, {devices = devs, shares = {0, 0}})
raises("unknown option 'queue'", matmul, A, A, {devices = devs, queue = d1:default_queue()})
raises("argument #1: with option devices, expected a 2-D buffer or tensor, got a 1-D one",
       matmul, d1:buffer("float", 16), A, {devices = devs})
-- holes, an empty list, shares past a double's range, shapes that do not match
raises("option devices[2]: expected a luagpu.Device, got nil", reduce.sum, A,
       {devices = {d1, nil, d2}})
raises("option devices[2]: expected a luagpu.Device, got nil", matmul, A, A,
       {devices = {d1, nil, d2}})
raises("option devices: expected a list of devices, got an empty one", matmul, A, A,
       {devices = {}})
raises("option shares: they add up to more than a double holds", matmul, A, A,
       {devices = devs, shares = {1e308, 1e308}})
check(reduce.sum(d1:buffer("int", 5, {host = gpu.array("int", 5):fill(2)}),
                 {devices = devs, shares = {math.maxinteger, 1}}) == 10,
      "integer shares past 2^63 in all")
raises("argument #3: C has 3 rows, but A has 4 rows", matmul, A, A, d1:buffer("float", {3, 4}),
       {devices = devs, shares = {1, 1}})
raises("argument #3: C has 5 columns, but B has 4 columns", matmul, A, A,
       d1:buffer("float", {4, 5}), {devices = devs, shares = {1, 1}})
raises("argument #2: B has 3 rows, but A has 4 columns", matmul, A, d1:buffer("float", {3, 4}),
       {devices = devs, shares = {1, 1}})
raises("argument #3: unknown option 'm' (expected devices, shares, variant, params, wait)",
       matmul, A, A, {devices = devs, m = 4})
raises("argument #2: expected a list of 2 buffers (one B per A), got a list of 1", matmul,
       {A, A}, {A})
raises("argument #2[1]: expected a live buffer, got number", matmul, {A}, {1})
raises("option devices takes no async, queue or wait", reduce.sum, A,
       {devices = devs, async = true})
raises("a list of buffers takes only option acc", reduce.sum, {A}, {async = true})
raises("option acc: expected \"float\" or \"double\" for float buffers, got double for a int " ..
       "buffer", reduce.sum, {d1:buffer("int", 3), d2:buffer("int", 3)}, {acc = "double"})
check(reduce.sum({d1:buffer("float", 5, {host = gpu.array("float", 5):fill(0.5)}),
                  d2:buffer("float", 3, {host = gpu.array("float", 3):fill(0.25)})},
                 {acc = "double"}) == 3.25, "a list with acc")
raises("argument #1[2]: expected a buffer of float (as the first), got one of int",
       reduce.max, {A, d1:buffer("int", 3)})
raises("unknown option 'devices'", reduce.new{type = "float", op = "a + b", neutral = "0"}, A,
       {devices = devs})

print("checked " .. checked)
