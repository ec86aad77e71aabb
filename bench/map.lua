-- bench/map.lua: reading a buffer's contents on the host by mapping it
-- (b:map, no copy where the device shares host memory) against a copy
-- (b:get into a reused host array, the same clEnqueueReadBuffer a C host
-- makes), in the same run: issue 18's bar on PoCL is a mapped read of 256 MiB
-- at least 5x faster than the copy.
--
--   build/luagpu bench/map.lua [MIB [REPEATS]]
--
-- Medians of REPEATS (default 9) after a warm-up, wall clock until the data
-- is in the host's hands: for the copy, b:get(a) returning; for the map,
-- b:map("read") returning plus the element sum read through it (so the
-- pages are really touched), then b:unmap(a):wait(). The copy row also sums
-- its array, so both do the same host work. use_host: the same on a buffer
-- made over a host array (`{host = a, use_host = true}`).
local build = os.getenv("LUAGPU_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
local gpu = rawget(_G, "gpu") or require "luagpu"
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")

local mib = tonumber(arg and arg[1]) or 256
local reps = tonumber(arg and arg[2]) or 9
local n = (mib << 20) // 4
local dev = gpu.device()

-- every 1024th element: touches every page (4 KiB) of the array
local function touch(a)
  local s = 0
  for i = 1, #a, 1024 do s = s + a[i] end
  return s
end

local function median_of(f) return bench.median_wall(reps, f) end

local b = dev:buffer("float", n)
b:fill(1):wait()
local a = gpu.array("float", n)
local copy = median_of(function()
  b:get(a)
  assert(touch(a) == (n + 1023) // 1024)
end)
local map = median_of(function()
  local m = b:map("read")
  assert(touch(m) == (n + 1023) // 1024)
  b:unmap(m):wait()
end)
local h = gpu.array("float", n)
local u = dev:buffer("float", n, {host = h, use_host = true})
u:fill(1):wait()
local map_host = median_of(function()
  local m = u:map("read")
  assert(touch(m) == (n + 1023) // 1024)
  u:unmap(m):wait()
end)

print(("%s: %d MiB, medians of %d"):format(dev.name, mib, reps))
print("| read to the host | ms | MB/s | against the copy |")
print("| --- | --- | --- | --- |")
local bytes = n * 4
local function row(what, s)
  print(("| %s | %.3f | %.0f | %.1fx |"):format(what, s * 1e3, bytes / s / 1e6, copy / s))
end
row("b:get(a) (a copy)", copy)
row("b:map(\"read\") ... b:unmap(m):wait()", map)
row("the same, use_host buffer", map_host)
