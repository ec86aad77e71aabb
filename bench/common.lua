-- bench/common.lua: what the benchmarks share. Each script loads it from
-- beside itself, so that it runs from any folder, and from a copy of bench/
-- alone on another machine:
--
--   local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")
--
-- (from bench/gpu/, "../common.lua"). It loads luagpu only when a function
-- needs the clock, after the script has set package.cpath.

local M = {}

-- The median of the numbers in list (the mean of the middle two for an even
-- count); list is left as it was.
function M.median(list)
  local s = table.move(list, 1, #list, 1, {})
  table.sort(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
end

-- Wall-clock seconds of reps calls of f (which must block until its work is
-- done), appended to into (a new list when nil); returns the list.
function M.walls(reps, f, into)
  local now = (rawget(_G, "gpu") or require "luagpu").now
  into = into or {}
  for _ = 1, reps do
    local t0 = now()
    f()
    into[#into + 1] = now() - t0
  end
  return into
end

-- Seconds of reps calls of enqueue() each timed up to its return, with
-- settle(r) (a wait on what it returned) after each, outside the time.
function M.enqueue_times(reps, enqueue, settle)
  local now = (rawget(_G, "gpu") or require "luagpu").now
  local t = {}
  for i = 1, reps do
    local t0 = now()
    local r = enqueue()
    t[i] = now() - t0
    settle(r)
  end
  return t
end

-- The median wall-clock seconds of reps calls of f (which must block until
-- its work is done), after one warm-up call.
function M.median_wall(reps, f)
  f()
  return M.median(M.walls(reps, f))
end

-- Nanoseconds from the start of the first of a list of profiled Events to
-- the end of the last (the kernel passes of a reduction or a matmul).
function M.span_ns(events)
  return events[#events]:profile()["end"] - events[1]:profile().start
end

-- Nanoseconds of the device's own time of everything f enqueues (f waits
-- or returns the Event to wait on): from the first command's start to the
-- last one's end, from a trace of the call (luagpu's gpu.trace).
function M.traced_span_ns(gpu, f)
  gpu.trace(true)
  local ev = f()
  if ev then ev:wait() end
  local first, last = math.huge, 0
  for _, c in ipairs(gpu.trace(false)) do
    if c.start then first, last = math.min(first, c.start), math.max(last, c["end"]) end
  end
  return last - first
end

-- Microseconds the device was busy with the commands f enqueues (the sum
-- of their durations, from a trace; gaps between them not counted), with
-- what came before finished first. dev's queue must profile.
function M.busy_us(gpu, dev, f)
  dev:finish()
  gpu.trace(true)
  local r = f()
  dev:finish()
  local busy = 0
  for _, c in ipairs(gpu.trace(false)) do
    if c.start and c["end"] then busy = busy + (c["end"] - c.start) end
  end
  r = nil                                   -- (f's results held until the trace ended)
  return busy / 1e3
end

-- The median of reps values of M.busy_us(gpu, dev, f), after two warm-ups.
function M.median_busy_us(gpu, dev, reps, f)
  for _ = 1, 2 do M.busy_us(gpu, dev, f) end
  local t = {}
  for i = 1, reps do t[i] = M.busy_us(gpu, dev, f) end
  return M.median(t)
end

-- The sizes of a matrix product from "N" (square), "MxNxK" or "M,N,K":
-- m, n, k as numbers, or nil when s is none of these.
function M.dims(s)
  s = tostring(s)
  local m, n, k = s:match("^(%d+)[x,](%d+)[x,](%d+)$")
  if m then return tonumber(m), tonumber(n), tonumber(k) end
  return tonumber(s), tonumber(s), tonumber(s)
end

-- Random numbers made on the device, from a hash of the index and a seed:
-- uniform in [LO, 1), on a grid of (1 - LO) / 2^24.
local FILL = [[
__kernel void fill(__global REAL *x, const uint seed, const ulong n) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  uint h = (uint)i * 2654435761u ^ seed;
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
  x[i] = (REAL)(h >> 8) * ((REAL)(1 - LO) / 16777216) + (REAL)LO;
}]]

-- A filler for buffers of type t ("float" or "double") on dev, with values
-- in [lo, 1) (lo 0 or -1): fill(b, seed [, n]) sets the first n elements of
-- b (all of them by default) and returns the Event.
function M.filler(dev, t, lo)
  local kernel = dev:build(FILL, {defines = {REAL = t, LO = lo}}).fill
  return function(b, seed, n)
    n = n or #b
    return kernel(b, seed, n):run({(n + 255) // 256 * 256}, {256})
  end
end

-- Prints a table: head formatted with the titles, then fmt formatted with
-- each row's values.
function M.print_table(head, titles, fmt, rows)
  print(head:format(table.unpack(titles)))
  for _, r in ipairs(rows) do print(fmt:format(table.unpack(r))) end
end

-- s quoted for sh.
function M.sh_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- What the sh command cmd prints on its standard output.
function M.capture(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

-- The program that runs child scripts: the luagpu program in the build
-- folder where it is built, else lua5.4.
function M.interpreter(build)
  return io.open(build .. "/luagpu") and build .. "/luagpu" or "lua5.4"
end

-- The path of a C baseline in the build folder (build/bench_launch, ...),
-- made first when it is missing.
function M.baseline(path)
  if not io.open(path) then
    assert(os.execute("make -s " .. path), "could not build " .. path)
  end
  return path
end

-- Applies $CLASS ("name=value ...", e.g. "sort_ptx_items=8 sort_onesweep=true")
-- to the settings of dev's class in luagpu.algo for the run, printing each.
function M.class_settings(dev)
  local algo = require "luagpu.algo"
  local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
  for k, v in (os.getenv("CLASS") or ""):gmatch("([%w_]+)=(%S+)") do
    if v == "true" or v == "false" then cls[k] = v == "true"
    else cls[k] = math.tointeger(tonumber(v)) or tonumber(v) or v end
    print(("class setting %s = %s"):format(k, v))
  end
end

return M
