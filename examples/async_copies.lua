-- async_copies.lua: a pipeline of asynchronous transfers gated on each
-- other's events, over two queues. Nothing blocks until the final waits.
--   build/luagpu examples/async_copies.lua [N]
--
-- The stages ("<-" reads "waits for"):
--   write a (queue 1); write b and fill c (queue 2)
--   copy a's first half into c's first half     <- write a, fill c
--   copy b's second half into c's second half   <- write b, fill c
--   read c (queue 2) and a marker (queue 1)     <- both copies
local gpu = gpu or require "luagpu"

local n = tonumber(arg and arg[1]) or 1000000
local half = n // 2
local dev = gpu.device()
print("device: " .. dev.name)

-- two queues: the device's default one (in-order) and an out-of-order one
local q1 = dev:default_queue()
local q2 = dev:queue{out_of_order = true}

-- host data: a[i] = i, b[i] = -i
local ha, hb = gpu.array("int", n), gpu.array("int", n)
for i = 1, n do ha[i], hb[i] = i, -i end

local a = dev:buffer("int", n, {access = "in"})
local b = dev:buffer("int", n, {access = "in"})
local c = dev:buffer("int", n)

-- stage 1: the uploads, on two queues at once
local wa = a:write(ha, {queue = q1})
local wb = b:write(hb, {queue = q2})
local fc = c:fill(0, {queue = q2})

-- stage 2: c gets a's first half and b's second half; each copy waits
-- for the upload it reads and for the fill it overwrites
local c1 = a:sub(1, half):copy_to(c:sub(1, half), {queue = q2, wait = {wa, fc}})
local c2 = b:sub(half + 1, n):copy_to(c:sub(half + 1, n), {queue = q2, wait = {wb, fc}})

-- stage 3: read c back once both copies are done; on q2, which is out of
-- order, only the wait list orders it after them
local rc = c:read({queue = q2, wait = {c1, c2}})
-- and, on q1, a marker that completes with both copies
local done = q1:marker{wait = {c1, c2}}

print("enqueued; events now:")
for _, e in ipairs({wa, wb, fc, c1, c2, rc, done}) do print("  " .. tostring(e)) end

local result = gpu.wait(rc, done)      -- the first result: the host array
for i = 1, n do
  local want = i <= half and i or -i
  if result[i] ~= want then
    error(("c[%d] = %d, expected %d"):format(i, result[i], want))
  end
end

-- the default queue profiles: how long each stage took on the device
local function ms(ev) return ("%.3f ms"):format(ev.duration / 1e6) end
print(("write a %s, copy 1 %s, copy 2 %s, read c %s"):format(ms(wa), ms(c1), ms(c2), ms(rc)))
print(("ok: %d elements, c = a[1..%d] .. b[%d..%d]"):format(n, half, half + 1, n))
