-- bench/transfer.lua: host<->device transfer speed of luagpu against a plain
-- C OpenCL host (bench/c/transfer.c, built as build/bench_transfer) doing the
-- same clEnqueueWriteBuffer / ReadBuffer / CopyBuffer / FillBuffer calls on
-- the same device, in the same run.
--
--   build/luagpu bench/transfer.lua [MIB] [REPEATS]      (or lua5.4 bench/transfer.lua)
--
-- Each figure is the median of REPEATS transfers of MIB MiB (default 64 MiB,
-- 10 repeats, after one warm-up), each enqueued and then waited on, in MB/s
-- (10^6 bytes per second). luagpu's extra rows have no C counterpart and
-- are compared with the C write or read: reading into a new host array
-- (b:get()), and writing from a Lua table (converted once in C), which also
-- shows as elements per second.
local build = os.getenv("LUAGPU_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
local gpu = rawget(_G, "gpu") or require "luagpu"
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")

local mib = tonumber(arg and arg[1]) or 64
local reps = tonumber(arg and arg[2]) or 10
local bytes = mib << 20
local n = bytes // 4

local baseline = bench.baseline(build .. "/bench_transfer")

-- The C host first, before this process makes an OpenCL context (gpu.device
-- does): a GPU in exclusive-process mode admits one process at a time. It
-- picks as gpu.device() does by default (the first GPU, else the first
-- device), or the device named exactly by LUAGPU_DEVICE; the names are
-- compared below.
local want = os.getenv("LUAGPU_DEVICE")
if want and (want:match("^%d+$") or want == "gpu" or want == "cpu") then want = nil end
local out = bench.capture(string.format("%s %d %d%s", baseline, mib, reps,
                                        want and " " .. bench.sh_quote(want) or ""))
local c = {}
for op, v in out:gmatch("(%a+)_mbps ([%d.]+)") do c[op] = tonumber(v) end
local c_dev = out:match("device ([^\n]*)")
assert(c.write and c.read and c.copy and c.fill, "bench_transfer printed:\n" .. out)
local dev = gpu.device()
assert(c_dev == dev.name, "the C host ran on " .. tostring(c_dev) .. ", not " .. dev.name)

local now = gpu.now
-- median MB/s of reps runs of f (after a warm-up run), and the median
-- seconds; f returns an Event
local function measure(f, size)
  local times = {}
  for r = 0, reps do
    collectgarbage()
    local t0 = now()
    f():wait()
    local t = now() - t0
    if r > 0 then times[#times + 1] = t end
  end
  local median = bench.median(times)
  return (size or bytes) / median / 1e6, median
end

local a = dev:buffer("float", n)
local b = dev:buffer("float", n)
local host = gpu.array("float", n):fill(1)
local l = {}
l.write = measure(function() return a:write(host) end)
l.read = measure(function() return a:read(host) end)
l.copy = measure(function() return a:copy_to(b) end)
l.fill = measure(function() return b:fill(0) end)
l.get = measure(function() return a:read() end)

-- a Lua table of up to 4M floats (64 MiB of Lua memory), into a view of that size
local tn = math.min(n, 1 << 22)
local t = {}
for i = 1, tn do t[i] = i * 0.5 end
local view = tn == n and a or a:sub(1, tn)
local table_mbps, table_s = measure(function() return view:write(t) end, tn * 4)
t = nil
collectgarbage()

print(string.format("transfers on %s (%s), %d MiB, median of %d", dev.name, dev.platform,
                    mib, reps))
local rows = {   -- op, C, luagpu
  {"write (host array -> device)", c.write, l.write},
  {"read (device -> host array)", c.read, l.read},
  {"copy (device -> device)", c.copy, l.copy},
  {"fill", c.fill, l.fill},
  {"read into a new array (vs C read)", c.read, l.get},
  {"write from a Lua table (vs C write)", c.write, table_mbps},
}
for _, r in ipairs(rows) do r[4] = r[3] / r[2] end
bench.print_table("%-34s %14s %14s %8s", {"op", "C baseline MB/s", "luagpu MB/s", "ratio"},
                  "%-34s %14.0f %14.0f %8.2f", rows)
print(string.format("write from a Lua table: %.1f million elements per second (%d elements)",
                    tn / table_s / 1e6, tn))
