-- luagpu.core.steps: enqueueing a helper's commands. The one runner of
-- steps (a list of bound kernel calls with their launch sizes, run in
-- order after the caller's waits), the choice of which commands need
-- Events, the per-device caches of scratch buffers and the Event of their
-- last user, and launch-size arithmetic.
--
--   S.run(steps, dev, q, waits)    enqueues steps; the last Event, all
--   S.scratch_current(steps)       whether steps' scratch buffers are the
--                                  cached ones still
--   S.in_order, S.events_wanted, S.after            (enqueueing)
--   S.device_cache, S.device_entries, S.scratch_buffer,
--   S.wait_for_last_user, S.set_last_user           (caches)
--   S.floor_pow2, S.ceil_div, S.round_up            (sizes)
--   S.NO_EVENT, S.NO_INIT, S.same_arg(a, b), S.same_args(a, b)
--                                                   (launches kept and buffers made)
--
-- A step is {call, {global =, local_size =}, after}: after nil, the step
-- waits for the caller's waits; else a list of the steps (indexes) it
-- follows, on an out-of-order queue. steps.scratch, when present, is
-- {entries = a device_entries table, name = buffer...}: the buffers the
-- steps use, whose last user the runner records.

local setmetatable, next, ipairs = setmetatable, next, ipairs
local max, mathtype = math.max, math.type

local S = {}
local NO_EVENT

------------------------------------------------------------------ enqueueing

-- Whether commands on q (nil: the device's default queue) run in order.
function S.in_order(q)
  return q == nil or not q.out_of_order
end

-- Whether a helper's internal commands on q (nil: dev's default queue) need
-- Events of their own: on an in-order queue without profiling an Event
-- tells only that its command is done, which the helper's last Event tells
-- too, so they enqueue without (an Event costs more than the enqueue).
function S.events_wanted(q, dev)
  local queue = q or dev:default_queue()
  return queue.out_of_order or queue.profiling
end

-- The options of a command on q that must follow the Events given: an
-- in-order queue orders it by itself (an explicit wait can cost a round
-- trip through the driver); on an out-of-order one it waits for them. For
-- the default queue (q nil), nil: no options table for the C side to read.
function S.after(q, ...)
  if q == nil then return nil end
  if not q.out_of_order then return {queue = q} end
  return {wait = {...}, queue = q}
end

------------------------------------------------------------------ caches

-- A cache of what a helper makes per device (programs, scratch buffers):
-- device -> its entries. Weak keys: the entries go with the device.
function S.device_cache()
  return setmetatable({}, {__mode = "k"})
end

local VERSION, LAST_USER, LAST_QUEUE = {}, {}, {}

-- The entries of dev in cache: a new table on first use, and again when
-- version (a signature of settings a script may change) differs from the
-- one they were made for.
function S.device_entries(cache, dev, version)
  local e = cache[dev]
  if e == nil or e[VERSION] ~= version then
    e = {[VERSION] = version}
    cache[dev] = e
  end
  return e
end

-- A buffer of at least n elements of type t on dev, kept in entries under
-- key and made again (the old one released) when too small.
function S.scratch_buffer(entries, dev, key, t, n)
  local b = entries[key]
  if not b or #b < n then
    if b then b:release() end
    b = dev:buffer(t, max(n, 1))
    entries[key] = b
  end
  return b
end

-- Appends to waits the Event of the last call that used the scratch
-- buffers of holder, unless q orders the two by itself (the same in-order
-- queue; q nil: dev's default queue). A last call recorded without an
-- Event (false: its commands asked for none, on an in-order queue) is
-- waited for through a marker enqueued on its queue now.
function S.wait_for_last_user(holder, q, dev, waits)
  local last = holder[LAST_USER]
  if last == nil then return end
  local lq = holder[LAST_QUEUE]
  if not S.in_order(q) or lq ~= (q or dev) then
    if last == false then
      local mq = lq.default_queue and lq:default_queue() or lq
      last = mq:marker()
    end
    waits[#waits + 1] = last
  end
end

-- Records ev, on q (nil: dev's default queue), as the last user of the
-- scratch buffers of holder.
function S.set_last_user(holder, ev, q, dev)
  holder[LAST_USER], holder[LAST_QUEUE] = ev, q or dev
end

------------------------------------------------------------------ running

-- Whether the scratch buffers of steps are still the cached ones (a larger
-- product may have replaced them since).
function S.scratch_current(steps)
  local sc = steps.scratch
  if sc == nil then return true end
  local entries = sc.entries
  for key, b in next, sc do
    if key ~= "entries" and entries[key] ~= b then return false end
  end
  return true
end

-- Enqueues steps on q (nil: dev's default queue), the first after the
-- Events in waits (a list it may append to); returns the last Event and
-- the list of all of them (only the last where S.events_wanted says the
-- others need none). no_event: on an in-order queue, the caller wants no
-- Event either (nothing is returned) unless a scratch buffer's next user
-- must wait for it.
function S.run(steps, dev, q, waits, no_event)
  local sc = steps.scratch
  if sc then S.wait_for_last_user(sc.entries, q, dev, waits) end
  local events, ordered = {}, S.in_order(q)
  local last = #steps
  if no_event and ordered and not sc then
    for i = 1, last do
      local launch = steps[i][2]
      local o = q and {queue = q, event = false, wait = i == 1 and waits or nil}
                or (i == 1 and waits and waits[1]) and {wait = waits, event = false} or NO_EVENT
      steps[i][1]:run(launch.global, launch.local_size, o)
    end
    return nil, nil
  end
  if last > 1 and not S.events_wanted(q, dev) then   -- only the last step's Event
    for i = 1, last - 1 do
      local o = {queue = q, event = false}
      if i == 1 then o.wait = waits end
      steps[i][1]:run(steps[i][2].global, steps[i][2].local_size, o)
    end
    local ev = steps[last][1]:run(steps[last][2].global, steps[last][2].local_size,
                                  q and {queue = q} or nil)
    if sc then S.set_last_user(sc.entries, ev, q, dev) end
    return ev, {ev}
  end
  for i = 1, last do
    local s = steps[i]
    local o
    if s[3] == nil then
      o = (q or waits[1]) and {wait = waits, queue = q} or nil  -- nil: call:run's fast path
    elseif ordered then
      o = q and {queue = q} or nil
    else
      local after = {}
      for j, d in ipairs(s[3]) do after[j] = events[d] end
      o = {wait = after, queue = q}
    end
    local launch = s[2]
    events[i] = s[1]:run(launch.global, launch.local_size, o)
  end
  local ev = events[#events]
  if sc then S.set_last_user(sc.entries, ev, q, dev) end
  return ev, events
end

------------------------------------------------------------------ sizes

-- The largest power of two not above n (n >= 1).
function S.floor_pow2(n)
  local p = 1
  while p * 2 <= n do p = p * 2 end
  return p
end

function S.ceil_div(x, m) return (x + m - 1) // m end

function S.round_up(x, m) return (x + m - 1) // m * m end

------------------------------------------------------------------ launches

-- The options of a launch whose Event nobody needs (call:run's fast path),
-- and of a buffer its producer writes whole (no zero-fill). Never written.
NO_EVENT = {event = false}
S.NO_EVENT = NO_EVENT
S.NO_INIT = {init = false}

-- Whether kernel argument b binds as a did, so that a call bound with a
-- can run again for b: the same value of the same Lua number type, and for
-- zeros the same sign (0.0 == -0.0, yet 1 / x tells them apart); NaN is
-- never the same. Buffers and other objects: the same one.
function S.same_arg(a, b)
  return a == b and mathtype(a) == mathtype(b) and (a ~= 0 or 1 / a == 1 / b)
end

-- Whether lists a and b hold the same arguments (S.same_arg), each.
function S.same_args(a, b)
  local n = #a
  if n ~= #b then return false end
  for i = 1, n do
    local x, y = a[i], b[i]
    if x ~= y or mathtype(x) ~= mathtype(y) or (x == 0 and 1 / x ~= 1 / y) then return false end
  end
  return true
end

return S
