-- luagpu.core.pool: the per-device pool of device buffers that tensors
-- live in (internal to luagpu.tensor).
--
--   M.storage(fn, dev, t, n)   a storage of at least n elements of type t:
--                              {buf = a root Buffer, dev, n, ...};
--                              its buffer goes back to the pool when the
--                              storage is collected
--   M.shared(buf)              the storage of a Buffer given by the user
--                              (never pooled; one per root buffer, the
--                              storage of an exposed tensor for its own)
--   M.expose(s)                storage s is reachable from the script (its
--                              Buffer was handed out): its block leaves the
--                              pool for good
--   M.memory(dev)              {used =, pooled =, buffers =, made =, limit =,
--                              collections = full collections the pool ran,
--                              budget = bytes a class hands out between two}
--   M.give_back(s)             storage s's block back to the pool now
--   M.trim(dev)                releases every pooled buffer of dev; returns
--                              their bytes (dev:empty_cache())
--   M.set_limit(dev, bytes), M.set_budget(dev, bytes)   (below)
--
-- Blocks are kept per element type and size class (4 classes per power of
-- two, so a block is at most 25% larger than asked), up to a quarter of the
-- device's memory free: past that, free blocks of the classes asked for
-- least recently are released first. The pool holds every
-- buffer it made strongly, so a buffer is never finalized while a storage
-- that dies in the same collection hands it back. Lua cannot see device
-- memory, so the pool counts the blocks it hands out per class since the
-- last full collection (each may be dead by now; the live ones handed out
-- before it are not counted): a miss runs a full collection first when
-- many were (256, or a 32nd of the device's memory), so a loop of
-- `y = a*x + b` settles on reused blocks; a miss also collects first once
-- the blocks of its class made since the last collection took longer to
-- make than a collection takes (large blocks: 0.7 ms to make 192 MiB on an
-- H100, 0.1 ms to collect). Under Lua's generational collector a miss
-- runs a minor collection first (step_for, below), and a loop settles on
-- reused blocks within a few calls. New blocks are not zero-filled (their
-- producer writes them), nor do they step the generational collector
-- (BLOCK); an allocation that fails for lack of memory empties the pool,
-- runs a full collection and tries once more.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"

local setmetatable, pcall, error, tostring = setmetatable, pcall, error, tostring
local collectgarbage, next = collectgarbage, next
local now = gpu.now
local min, max, mtype = math.min, math.max, math.type
local fail = H.fail
local SIZES = TY.SIZES

local M = {}

-- Blocks, or bytes, of one class handed out since the last full collection
-- past which a miss collects first. A full collection costs about as much
-- as a hundred small operations (0.1 ms on an H100's host), so a class may
-- hand out that many blocks before one runs: 256 blocks (was 64: about 2.4
-- us of each 1024-float op went to full collections on the CI machine), or
-- a 32nd of the device's memory (at least 4 MiB, at most 2 GiB): a loop
-- over 256 MiB tensors on an 80 GB card collects once per 10 calls, and
-- holds at most 2.5 GB of dead blocks. (Counting the blocks out, the live
-- ones included, collected on every call of a loop over 1 GiB results
-- whose inputs were of their class: 0.2-0.3 ms of a 1.1 ms op on an H100.)
local COLLECT_BLOCKS, COLLECT_MIN, COLLECT_MAX = 256, 4 << 20, 2 << 30

local pools = ST.device_cache()

-- Whether the program runs Lua's generational collector (the luagpu
-- program does: host/main.c; so does Lua's own interpreter, lua5.4, from
-- the start, which is asked below; a program that requires luagpu and
-- switches to it later sets this too). Then a miss that would collect runs a minor
-- collection (a step, a 20th of a full collection's time) first, which
-- finds dead the results a loop made two calls ago, provided they were
-- made after a step: a lazy result's tensor is made before its block, so
-- for DUE_RESULTS lazy results after such a miss of large blocks (the
-- byte budget's) the device's lazy results run the step before they are
-- made (M.step_first, from O.lazy).
-- (A result that outlives two steps is old: only a full collection finds
-- it dead.)
M.generational = false
do
  -- (the mode is known by switching: back to generational is a full
  -- collection, once, here)
  if collectgarbage("incremental") == "generational" then
    collectgarbage("generational")
    M.generational = true
  end
end
local DUE_RESULTS = 64
local due = setmetatable({}, {__mode = "k"})     -- dev -> lazy results still to step first
M.due = due

local function pool_of(dev)
  local p = pools[dev]
  if not p then
    local mem = dev.global_mem_size
    p = {free = {}, out = {}, owned = {}, used = 0, pooled = 0, made = 0, buffers = 0,
         spent = {}, futile = {}, since = {}, collect_cost = nil, tick = 0, last = {},
         after_full = {}, live = {}, stepped = false, handed = 0, stepped_at = 0,
         gap = 1, handed_bytes = 0, stepped_bytes = 0,        -- (gap: MIN_GAP)
         cap = mem // 4, full = 0, steps = 0, max_alloc = dev.max_alloc_size,
         collect_bytes = max(COLLECT_MIN, min(mem // 32, COLLECT_MAX))}
    pools[dev] = p
  end
  return p
end

-- The size class of n elements: n rounded up to 64, or to a quarter of its
-- power of two.
local function class_size(n)
  if n <= 64 then return 64 end
  if n <= 4096 and n & (n - 1) == 0 then return n end
  local p = 1
  while p <= n // 2 do p = p * 2 end      -- (p * 2 <= n wraps at 2^62)
  local q = max(p // 4, 1)
  return (n + q - 1) // q * q
end
M.class_size = class_size

local function release_block(p, buf, bytes)
  p.owned[buf] = nil
  p.buffers = p.buffers - 1
  buf:release()
  return bytes
end

-- Releases free blocks of classes other than key, those used least
-- recently first, until bytes more fit under the pool's limit; returns
-- whether they do. (A loop that moved on to other sizes leaves blocks of
-- classes it no longer asks for: they go before a block of a class in use.)
local function make_room(p, key, bytes)
  local order = {}
  for k, list in next, p.free do
    if k ~= key and #list > 0 then order[#order + 1] = k end
  end
  local last = p.last
  table.sort(order, function(a, b) return (last[a] or 0) < (last[b] or 0) end)
  for _, k in ipairs(order) do
    local list = p.free[k]
    for i = #list, 1, -1 do
      if p.pooled + bytes <= p.cap then return true end
      local buf = list[i]
      list[i] = nil
      p.pooled = p.pooled - release_block(p, buf, #buf * SIZES[buf.type])
    end
    if #list == 0 then p.free[k] = nil end
  end
  return p.pooled + bytes <= p.cap
end

-- Hands a storage's buffer back (the storage's __gc).
local function give_back(s)
  local p, buf = s.pool, s.buf
  if not p or not p.owned[buf] then return end
  local key = s.key
  p.out[key] = (p.out[key] or 1) - 1
  p.used = p.used - s.bytes
  if gpu.type(buf) ~= "Buffer" then p.owned[buf] = nil; return end
  if p.pooled + s.bytes > p.cap and not make_room(p, key, s.bytes) then
    release_block(p, buf, s.bytes)
    return
  end
  local list = p.free[key]
  if not list then list = {}; p.free[key] = list end
  list[#list + 1] = buf
  p.pooled = p.pooled + s.bytes
end

-- The storage's __gc: its block back to the pool, and the storage
-- marked gone (a tensor a finalizer of the script's brings back to life
-- after its storage's __gc ran must not read a block another tensor owns
-- now: Lua runs finalizers newest first, so the storage's runs before its
-- holder's). O.check_bounds refuses such a tensor.
local STORAGE = {__gc = function(s)
  local p = s.pool
  if p and p.owned[s.buf] then
    give_back(s)
    s.buf, s.view, s.gone = false, false, true
  end
end}

-- Hands storage s's block back now (x:release of its only tensor): its
-- collection later does nothing more.
function M.give_back(s)
  give_back(s)
  s.pool = nil
end
local WEAK_KEYS = {__mode = "k"}

function M.trim(dev)
  local p = pools[dev]
  if not p then return 0 end
  local before = p.pooled
  for key, list in next, p.free do
    for i = 1, #list do
      local buf = list[i]
      p.pooled = p.pooled - #buf * SIZES[buf.type]
      release_block(p, buf, 0)
    end
    p.free[key] = nil
  end
  return before - p.pooled
end

local function out_of_memory(e)
  e = tostring(e)
  return e:find("ALLOCATION_FAILURE", 1, true) or e:find("OUT_OF_RESOURCES", 1, true)
    or e:find("OUT_OF_HOST_MEMORY", 1, true)
end

-- A new buffer of cap elements of t on dev; on lack of memory: the pool
-- emptied, a full collection, one more try.
-- A block's options: no zero-fill (its producer writes it), and under
-- the generational collector its bytes do not step Lua's collector: the
-- pool runs minor collections itself, and one in the middle of an op (the
-- C side's, for a new buffer of 128 KiB and more on PoCL's host) sees the
-- loop's last result alive a second time, makes it old, and only a full
-- collection finds it dead then: every call of `z = (M + row):eval()`
-- made a new block. (Under the incremental collector those steps are what
-- finishes a cycle between the pool's full collections.)
local BLOCK = {init = false, collect = false}
local BLOCK_PACED = ST.NO_INIT

local function new_buffer(fn, p, dev, t, cap)
  local opts = M.generational and BLOCK or BLOCK_PACED
  local ok, buf = pcall(dev.buffer, dev, t, cap, opts)
  if not ok then
    if not out_of_memory(buf) then error(buf, 0) end
    M.trim(dev)
    collectgarbage()
    ok, buf = pcall(dev.buffer, dev, t, cap, opts)
    if not ok then
      fail(fn, "no memory on the device for %d elements of %s (%d bytes), even after " ..
           "emptying the tensor pool: %s", cap, t, cap * SIZES[t], tostring(buf))
    end
  end
  p.made = p.made + 1
  p.buffers = p.buffers + 1
  p.owned[buf] = true
  return buf
end

local function take(p, key)
  local list = p.free[key]
  local n = list and #list or 0
  if n == 0 then return nil end
  local buf = list[n]
  list[n] = nil
  return buf
end

-- The pool keys ("float1024") by type and class size, made once.
local KEYS = setmetatable({}, {__index = function(keys, t)
  local k = setmetatable({}, {__index = function(ks, cap)
    local key = t .. cap
    ks[cap] = key
    return key
  end})
  keys[t] = k
  return k
end})

-- The size class of n elements of t (most: the elements one buffer of t
-- holds, n at most that): its element count and its key.
local function class_of(t, n, most)
  local cap = class_size(n)
  if cap > most then cap = n end         -- the class's rounding would not fit
  return cap, KEYS[t][cap]
end

-- Whether a miss in class key with out blocks handed out since the last
-- collection should run a full
-- collection first: the blocks of that class made since the last
-- collection took longer to make than a collection takes (rent or buy: on
-- an H100 a 192 MiB buffer takes about 0.7 ms to make, a 32 KiB one 11 us,
-- a collection of a small heap 0.05-0.1 ms). Making is paid once per block,
-- a collection each time: so the pool grows while blocks are cheap to make
-- and collects once they are not, and a loop settles on reused blocks
-- with at most as much time spent making as collecting. A collection that
-- gave the class nothing back holds the next off until twice as many
-- blocks are out.
local function cheaper_to_collect(p, key, out)
  local spent = p.spent[key]
  if not spent then return false end
  local futile = p.futile[key]
  if futile and out < 2 * futile then return false end
  -- (before the first: about 0.15 us per KB of Lua heap, as measured on
  -- an H100's host and the CI machine)
  local c = p.collect_cost or collectgarbage("count") * 1.5e-7
  return spent >= c
end

-- Under the generational collector a miss runs a minor collection first
-- (a step: 2-7 us on PoCL's host, where making a small block costs 1.7,
-- on an H100 11 us for 32 KiB): a loop's results settle on a few blocks
-- after a few calls. A step's own cost is its fixed part; the rest is the
-- work on the objects made since the last one, which Lua's own pace would
-- do anyway. But not more often than once per p.gap blocks handed out
-- (misses in between make blocks): a result that sees two steps alive is
-- old, and only a full collection finds it dead then. The result a loop
-- holds sees every step of the loop's next pass, so a body making many
-- results needs one step per pass at most: the gap doubles after each step
-- that gave the class wanted nothing back (also where a loop keeps its
-- results: steps get rarer), and shrinks by one, to MIN_GAP, after each
-- that gave more than one block back. (A MIN_GAP of 8 steps once per 8
-- blocks, not about once per 2, but settles only after 20-30 calls, making
-- blocks meanwhile; on the H200 the two ran issue 29's table in the same
-- time: 1 keeps the fewest blocks.)
local MIN_GAP, MAX_GAP = 1, 256
-- (or once per STEP_BYTES handed out, or a quarter of the budget where
-- that is less, whatever the gap: a loop over large results keeps a few
-- of them, not MIN_GAP, and a step is little beside the op that makes one)
local STEP_BYTES = 256 << 20

local function step(p)
  collectgarbage("step", 0)
  p.steps, p.stepped, p.stepped_at, p.stepped_bytes = p.steps + 1, true, p.handed,
                                                      p.handed_bytes
end

-- A step for a miss in class key, where one is due: not right after
-- another, at least two blocks of the class out (a loop holds one: with
-- one out, a step finds nothing, and would only age the held result), and
-- the gap past. Returns whether a block of the class is free after it; it
-- moves the gap.
local function step_for(p, key)
  if p.stepped or (p.out[key] or 0) < 2 or
     p.handed - p.stepped_at < p.gap and
     p.handed_bytes - p.stepped_bytes < min(STEP_BYTES, p.collect_bytes // 4) then
    return false
  end
  step(p)
  local list = p.free[key]
  if list and list[1] then
    -- (more than one back: steps may come closer again)
    if list[2] and p.gap > MIN_GAP then p.gap = p.gap - 1 end
    return true
  end
  p.gap = min(2 * p.gap, MAX_GAP)
  return false
end

-- Whether class key holds more blocks than the block more after a full
-- collection is for: that block lets the results a loop holds die young
-- (a few of them); a class already holding more than twice its live
-- blocks at the last full collection, and a few, collects in full again
-- instead. (A loop whose lazy readers of a written tensor live several
-- calls leaves most of its dead blocks old, found by full collections
-- only: a block more per full collection grew its pool without end.)
local OUTGROWN_SLACK = 4
local function outgrown(p, key)
  local free = p.free[key]
  local blocks = (p.out[key] or 0) + (free and #free or 0)
  return blocks > 2 * (p.live[key] or 0) + OUTGROWN_SLACK
end

-- Whether Lua may collect now: inside a finalizer (a __gc, an on_complete
-- callback drained by a wait in one, lua_close's) it runs no collection,
-- and collectgarbage answers fail (nil) to "count", "step" and a full one
-- alike. There a miss makes its block: no step, and no full collection
-- (timed at nothing, it would skew the pool's cost of one; its test did
-- arithmetic on the nil count and raised).
local function collecting()
  return collectgarbage("count") ~= nil
end

function M.storage(fn, dev, t, n)
  local p = pools[dev] or pool_of(dev)
  local size = SIZES[t]
  local most = p.max_alloc // size
  if n > most then
    fail(fn, "%d elements of %s do not fit one buffer (the device's max_alloc_size is %d " ..
         "bytes)", n, t, p.max_alloc)
  end
  local cap, key = class_of(t, n, most)
  local bytes = cap * size
  local tick = p.tick + 1
  p.tick, p.last[key] = tick, tick
  local buf = take(p, key)
  local since = p.since[key] or 0
  local may = buf == nil and collecting()   -- a miss where Lua may collect
  if not buf and may and M.generational and not p.stepped then
    -- (a lazy result's tensor is made before its block, so one a loop
    -- dropped has outlived two steps when no block came back: the next
    -- ones step first, before they are made)
    if step_for(p, key) then buf = take(p, key)
    elseif p.stepped then due[dev] = DUE_RESULTS end
  end
  if not buf and may and since >= 1 and
     (since >= COLLECT_BLOCKS or since * bytes >= p.collect_bytes
      or cheaper_to_collect(p, key, since)) then
    local full = true
    if M.generational then
      -- a minor collection (unless one ran just before this result was
      -- made); a full one only where it gave nothing back, and not twice
      -- in a row: a full collection makes the live results old, so the
      -- one a loop holds dies old; one more block instead lets the next
      -- ones die young
      if not p.stepped then step(p) end
      -- (large blocks only: the byte budget's misses; a small op's
      -- result does not wait for a step)
      if since * bytes >= p.collect_bytes then due[dev] = DUE_RESULTS end
      buf = take(p, key)
      full = not buf and not (p.after_full[key] and not outgrown(p, key))
      p.after_full[key] = full or nil
    end
    if full then
      local t0 = now()
      collectgarbage()
      p.collect_cost = now() - t0
      p.full = p.full + 1
      p.spent, p.since = {}, {}
      p.gap = MIN_GAP                     -- (every live result is old now)
      p.live[key] = p.out[key] or 0
      buf = take(p, key)
      p.futile[key] = not buf and since or nil
      since = 0
    end
  end
  p.stepped = false
  if buf then
    p.pooled = p.pooled - bytes
  else
    local t0 = now()
    buf = new_buffer(fn, p, dev, t, cap)
    p.spent[key] = (p.spent[key] or 0) + (now() - t0)
  end
  p.since[key] = since + 1
  p.handed, p.handed_bytes = p.handed + 1, p.handed_bytes + bytes
  p.out[key] = (p.out[key] or 0) + 1
  p.used = p.used + bytes
  -- n: the elements asked for (x.buffer gives a view of them)
  -- readers: the lazy tensors reading it (a weak set, made on first use)
  -- count: the buffer's elements
  return setmetatable({buf = buf, n = n, count = cap, dev = dev, pool = p, key = key,
                       bytes = bytes}, STORAGE)
end

-- Per root Buffer (weak keys): the one storage over it. Tensors over the
-- same OpenCL buffer share a storage, so that writing one while reading
-- another is seen as aliasing (tensor:set copies through a temporary).
local shared = setmetatable({}, WEAK_KEYS)

-- Takes the block of storage s out of the pool when the script can reach
-- its Buffer (x.buffer, a kernel argument, reduce, algo): the block is
-- never handed to another tensor, and is released by the Buffer's own
-- collection once neither the script nor a tensor holds it. A Buffer over
-- it given to dev:tensor finds s again (M.shared).
function M.expose(s)
  local p, buf = s.pool, s.buf
  if p and p.owned[buf] then
    p.owned[buf] = nil
    p.buffers = p.buffers - 1
    p.out[s.key] = (p.out[s.key] or 1) - 1
    p.used = p.used - s.bytes
  end
  s.pool = nil
  if not shared[buf] then shared[buf] = s end
end

function M.shared(buf)
  local root = buf.root
  local s = shared[root]
  if not s then
    s = {buf = root, count = #root, dev = root.device, exposed = true}
    shared[root] = s
  end
  return s
end

-- Runs the minor collection due before dev's next lazy result is made
-- (O.lazy calls it while due[dev] is set): one per block taken, before the
-- first node of the expression it holds (a step per node would make the
-- result a loop holds outlive two steps).
function M.step_first(dev, t, n)
  local p = pool_of(dev)
  if p.stepped then return end
  -- (none where a block of its class is free: a step for every result
  -- would make the one a loop holds see two where its body makes several)
  local size = SIZES[t]
  -- (n from a shape a script wrote: the launch's checks refuse it later)
  if not size or mtype(n) ~= "integer" or n < 0 or n > p.max_alloc // size then return end
  local _, key = class_of(t, n, p.max_alloc // size)
  local list = p.free[key]
  if list and list[1] then return end
  local d = due[dev]
  due[dev] = d > 1 and d - 1 or nil
  step_for(p, key)
end

function M.memory(dev)
  local p = pool_of(dev)
  return {used = p.used, pooled = p.pooled, buffers = p.buffers, made = p.made,
          limit = p.cap, collections = p.full, steps = p.steps, budget = p.collect_bytes}
end

-- Checks the arguments of set_budget and set_limit (fn): a live Device
-- and bytes, an integer >= 0 (an integral float too); returns bytes.
local function check_bytes(fn, dev, bytes, ...)
  H.check_object(fn, "argument #1", dev, "Device")
  if select("#", ...) > 0 then
    H.fail(fn, "argument #3: expected no more arguments, got %s", H.typename((...)))
  end
  local n = H.integer(bytes)
  if n == nil or n < 0 then
    H.fail(fn, "argument #2: expected a number of bytes (an integer >= 0), got %s",
           H.show(bytes))
  end
  return n
end

-- Sets the bytes a class of dev's pool hands out between two collections
-- before a miss collects (the default: a 32nd of the device's memory, at
-- least 4 MiB, at most 2 GiB).
function M.set_budget(dev, bytes, ...)
  bytes = check_bytes("pool.set_budget", dev, bytes, ...)
  pool_of(dev).collect_bytes = bytes
end

-- Sets the most bytes the pool of dev keeps for reuse (0: none).
function M.set_limit(dev, bytes, ...)
  bytes = check_bytes("pool.set_limit", dev, bytes, ...)
  local p = pool_of(dev)
  p.cap = bytes
  -- free blocks past the new limit: released, the largest first
  if p.pooled > bytes then
    local blocks = {}
    for key, list in next, p.free do
      for i = 1, #list do blocks[#blocks + 1] = {key = key, buf = list[i]} end
    end
    local function bytes_of(b) return #b.buf * SIZES[b.buf.type] end
    table.sort(blocks, function(a, b) return bytes_of(a) > bytes_of(b) end)
    local drop = {}
    for _, b in ipairs(blocks) do
      if p.pooled <= bytes then break end
      drop[b.buf] = true
      p.pooled = p.pooled - release_block(p, b.buf, bytes_of(b))
    end
    for key, list in next, p.free do
      local kept = {}
      for i = 1, #list do if not drop[list[i]] then kept[#kept + 1] = list[i] end end
      p.free[key] = kept[1] and kept or nil
    end
  end
end

return M
