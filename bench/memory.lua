-- memory.lua: resident memory while a script creates and drops device
-- buffers. The collector cannot see device memory by itself: luagpu tells
-- it of every allocation, so dropped buffers go long before memory runs out.
--
--   build/luagpu bench/memory.lua [n] [mib]
--
-- Three loops, each dropping what it makes at once:
--   buffers   n buffers of mib MiB (default 100000 x 1 MiB)
--   mixed     n/10 rounds of a 256 KiB buffer, a view of it, a fill, a read
--             into a new host array, and the Events of those
--   past      3 x the device's global_mem_size in all, in buffers of
--             min(256 MiB, max_alloc_size): more than the device holds
-- Resident memory is sampled (Linux: /proc/self/status) before, during and
-- after. Each loop prints one line ending in "ok" or "FAILED"; the first two
-- fail when resident memory grows by 64 MiB or more, the third when it grows
-- by the device's global_mem_size or more (the dropped buffers piled up),
-- or when an allocation fails. Exits 1 if any failed.
local gpu = rawget(_G, "gpu") or require "luagpu"

local N = math.tointeger(tonumber(arg and arg[1])) or 100000
local MIB = math.tointeger(tonumber(arg and arg[2])) or 1
local LIMIT = 64

local function rss()   -- MiB
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  local s = f:read("a")
  f:close()
  return (tonumber(s:match("VmRSS:%s*(%d+)")) or 0) / 1024
end

local dev = gpu.device()
local failed = false

-- Runs body(i) n times, sampling resident memory every `every` rounds;
-- returns the memory before, the most seen, the memory after, and seconds.
local function measure(n, every, body)
  for i = 1, math.min(n, 50) do body(i) end   -- warm up: first allocations, code paths
  collectgarbage()
  collectgarbage()
  local before, most = rss(), 0
  local t0 = gpu.now()
  for i = 1, n do
    body(i)
    if i % every == 0 then most = math.max(most, rss()) end
  end
  local seconds = gpu.now() - t0
  local after = rss()
  return before, math.max(most, after), after, seconds
end

local function report(name, what, before, most, after, seconds, limit)
  local growth = most - before
  local ok = growth < limit
  failed = failed or not ok
  print(string.format("memory: %-7s %s: rss %.0f -> %.0f MiB (peak %.0f, growth %.0f MiB, "
                      .. "limit %.0f) in %.1f s: %s", name, what, before, after, most, growth,
                      limit, seconds, ok and "ok" or "FAILED"))
end

-- 1. plain buffers
do
  local bytes = MIB << 20
  local before, most, after, s = measure(N, 100, function()
    local b = dev:buffer("uchar", bytes)
    return b
  end)
  report("buffers", string.format("%d x %d MiB", N, MIB), before, most, after, s, LIMIT)
end

-- 2. buffers with views, events and host arrays
do
  local n = math.max(1, N // 10)
  local count = 1 << 16
  local before, most, after, s = measure(n, 20, function(i)
    local b = dev:buffer("float", count)
    local v = b:sub(1 + i % 100, count - i % 100)
    v:fill(i)
    local r = b:read()
    if i % 50 == 0 then r:wait() end
  end)
  report("mixed", string.format("%d x (256 KiB buffer, view, fill, read)", n), before, most,
         after, s, LIMIT)
end

-- 3. more than the device's memory, dropped as it goes
do
  local global = dev.global_mem_size
  local chunk = math.min(256 << 20, dev.max_alloc_size)
  local rounds = (3 * global + chunk - 1) // chunk
  collectgarbage()
  collectgarbage()
  local before = rss()
  local most = before
  local t0 = gpu.now()
  local ok, err = pcall(function()
    for _ = 1, rounds do
      local b = dev:buffer("uchar", chunk)
      most = math.max(most, rss())
      b = nil
    end
  end)
  local after = rss()
  report("past", string.format("%d x %d MiB = 3 x global_mem_size (%d MiB)", rounds,
                               chunk >> 20, global >> 20),
         before, most, after, gpu.now() - t0, global / (1 << 20))
  if not ok then
    failed = true
    print("memory: past: " .. tostring(err))
  end
end

if failed then os.exit(1) end
