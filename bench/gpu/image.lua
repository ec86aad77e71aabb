-- bench/gpu/image.lua: image reads and writes through luagpu beside a plain
-- C OpenCL host doing the same calls (bench/c/image.c), for the bar "image
-- reads and writes within 10% of a C host". Both time whole-image transfers
-- of 2-D RGBA float images from and into one reused, 64-byte aligned host
-- array (no copy on the host: the array given is the one OpenCL reads or
-- fills), in two forms: blocking (luagpu's img:write(a, {blocking = true})
-- and img:read(a, {blocking = true}) beside the C host's CL_TRUE calls) and
-- with an Event waited for (img:write(a):wait(), img:read(a):wait() beside
-- CL_FALSE calls with an event, clWaitForEvents, clReleaseEvent). Medians of
-- the wall clock per call, round 0 not counted.
--
--   build/bench_image [REPS [SIZES [DEVICE]]] > c.txt
--   build/luagpu bench/gpu/image.lua c.txt [DEVICE]
--
-- The sizes, the repetitions and the device come from c.txt (DEVICE, a
-- name or index as gpu.device takes, overrides the device). Prints a table
-- (ratio: luagpu / C, so 1.10 is 10% slower) and `LUAGPU image_OP_SIZE
-- MEDIAN us` lines (OP write, read: blocking; write_event, read_event).
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"

local path = arg and arg[1]
if not path then
  io.stderr:write("usage: luagpu bench/gpu/image.lua C_OUTPUT [DEVICE]\n"
                  .. "  (C_OUTPUT: what build/bench_image printed)\n")
  os.exit(2)
end
local f = io.open(path, "r")
if not f then
  io.stderr:write("bench/gpu/image.lua: cannot open " .. path
                  .. " (run build/bench_image > " .. path .. " first)\n")
  os.exit(2)
end
local chost, sizes, seen, cdev, reps = {}, {}, {}, nil, 20
for line in f:lines() do
  local key, v = line:match("^CHOST (%S+) (%S+) us")
  if key then
    chost[key] = tonumber(v)
    local size = tonumber(key:match("_(%d+)$"))
    if size and not seen[size] then
      seen[size] = true
      sizes[#sizes + 1] = size
    end
  end
  cdev = cdev or line:match("^device (.+)$")
  reps = tonumber(line:match("^reps (%d+)$")) or reps
end
f:close()
if #sizes == 0 then
  io.stderr:write("bench/gpu/image.lua: no CHOST lines in " .. path .. "\n")
  os.exit(2)
end

local want = arg[2] and arg[2] ~= "" and (tonumber(arg[2]) or arg[2]) or nil
local dev = gpu.device(want or os.getenv("LUAGPU_DEVICE") or cdev)
if not dev.image_support then
  io.stderr:write("bench/gpu/image.lua: " .. dev.name .. " has no image support\n")
  os.exit(2)
end
if cdev and cdev ~= dev.name then
  print(string.format("warning: the C host ran on %s, luagpu runs on %s", cdev, dev.name))
end
local RGBA32F = {order = "rgba", type = "float"}

-- Medians (seconds) of reps calls of f after one warm-up call.
local function time(f) return bench.median_wall(reps, f) end

print(string.format("image transfers on %s: RGBA float, whole image, median of %d calls",
                    dev.name, reps))
print(string.format("%-6s %-11s | %10s %10s %6s | %10s %10s %6s", "op", "size",
                    "C us", "luagpu us", "ratio", "C+ev us", "luagpu us", "ratio"))
local results = {}
local BLOCK = {blocking = true}
for _, n in ipairs(sizes) do
  local im = dev:image(RGBA32F, {n, n})
  local a = gpu.array("float", n * n * 4)   -- zeroed, so touched, like the C host's
  local lua = {
    write = time(function() im:write(a, BLOCK) end),
    read = time(function() im:read(a, BLOCK) end),
    write_event = time(function() im:write(a):wait() end),
    read_event = time(function() im:read(a):wait() end),
  }
  local function cell(c) return c and string.format("%.2f", c) or "-" end
  for _, op in ipairs({"write", "read"}) do
    local c, ce = chost[op .. "_" .. n], chost[op .. "_event_" .. n]
    local l, le = lua[op] * 1e6, lua[op .. "_event"] * 1e6
    print(string.format("%-6s %-11s | %10s %10.2f %6s | %10s %10.2f %6s", op, n .. "x" .. n,
                        cell(c), l, c and string.format("%.3f", l / c) or "-",
                        cell(ce), le, ce and string.format("%.3f", le / ce) or "-"))
    results[#results + 1] = string.format("LUAGPU image_%s_%d %.2f us", op, n, l)
    results[#results + 1] = string.format("LUAGPU image_%s_event_%d %.2f us", op, n, le)
  end
  im = nil
  a = nil
  collectgarbage()
end
for _, line in ipairs(results) do print(line) end
