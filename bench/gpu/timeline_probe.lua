-- bench/gpu/timeline_probe.lua: where the wall clock of a tensor op goes.
-- For each op: the median of 51 calls of the time until the call returns
-- and until its work is done (profiling off), then one traced call's
-- commands: when the host enqueued each (us after the call began) and when
-- the device ran it (start .. end, on the host's clock through the first
-- command's queued time), so idle gaps between commands show.
--   build/luagpu bench/gpu/timeline_probe.lua [op ...]
local gpu = require "luagpu"
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local now = gpu.now

local ops = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "probe_ops.lua")(
  gpu, dev)
-- Host times of the helpers' enqueues with profiling off: luagpu.algo's
-- command sequences (Seq:run, Seq:cmd), wrapped to note gpu.now() before
-- each (reads outside a sequence and single-launch ops are not seen).
local marks
do
  local Seq = getmetatable(require("luagpu.algo.base").sequence(nil, {}))
  for _, method in ipairs({"run", "cmd"}) do
    local orig = Seq[method]
    Seq[method] = function(self, a, b, ...)
      if marks then marks[#marks + 1] = {method == "cmd" and b or "run", now()} end
      return orig(self, a, b, ...)
    end
  end
end

local names = {...}
if #names == 0 then names = {"cumsum", "unique", "cat", "bmm", "argmax2"} end

for _, name in ipairs(names) do
  local f = assert(ops[name], name)
  for _ = 1, 5 do f() end
  dev:finish()
  local ret, done = {}, {}
  for i = 1, 51 do
    local t0 = now()
    local r = f()
    ret[i] = now() - t0
    dev:finish()
    done[i] = now() - t0
    r = nil
  end
  print(("%-8s returns after %6.1f us, done after %6.1f us (medians of 51)"):format(
    name, bench.median(ret) * 1e6, bench.median(done) * 1e6))
  -- the pool's collector steps per call, and what one costs after a call
  local m0 = dev:memory()
  local st = {}
  for i = 1, 21 do
    f()
    local s0 = now()
    collectgarbage("step", 0)
    st[i] = now() - s0
  end
  dev:finish()
  print(("  pool: %.2f steps and %.2f full collections a call; a step after a call " ..
         "%.1f us; heap %.0f KiB"):format((dev:memory().steps - m0.steps) / 21,
         (dev:memory().collections - m0.collections) / 21, bench.median(st) * 1e6,
         collectgarbage("count")))
  marks = {}
  local t0 = now()
  f()
  local t1 = now()
  dev:finish()
  local list = {}
  for _, m in ipairs(marks) do list[#list + 1] = ("%s %.1f"):format(m[1], (m[2] - t0) * 1e6) end
  marks = nil
  print(("  unprofiled enqueues (us after the call began): %s; returns %.1f"):format(
    table.concat(list, ", "), (t1 - t0) * 1e6))
  dev:set_profiling(true)
  f(); dev:finish()
  gpu.trace(true)
  local t0 = now()
  f()
  local t1 = now()
  dev:finish()
  local t2 = now()
  local rec = gpu.trace(false)
  dev:set_profiling(false)
  local base = t0 * 1e9
  local off
  for _, c in ipairs(rec) do
    if c.queued and c.host then off = c.host - c.queued; break end
  end
  print(("  traced: returns %.1f, done %.1f us"):format((t1 - t0) * 1e6, (t2 - t0) * 1e6))
  for _, c in ipairs(rec) do
    local s = c.start and (c.start + off - base) / 1e3
    local e = c["end"] and (c["end"] + off - base) / 1e3
    print(("  %-24s enqueued %7.1f  runs %7s .. %7s"):format(c.name or c.kind,
      (c.host - base) / 1e3, s and ("%.1f"):format(s) or "-", e and ("%.1f"):format(e) or "-"))
  end
end
