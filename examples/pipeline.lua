-- pipeline.lua: async writes, kernels and reads on an out-of-order queue,
-- each gated on the events it needs, then a timeline drawn from the profiles.
--   build/luagpu examples/pipeline.lua [chunks] [elements per chunk] [trace]
-- With a third argument, the commands are traced (gpu.trace) and the trace
-- written there: an SVG timeline (docs/pipeline.svg) for a name ending in
-- .svg, else Chrome trace-event JSON for ui.perfetto.dev.
--
-- Each chunk goes write -> scale -> add-neighbour -> read. Nothing blocks until
-- the final gpu.wait: the queue is free to overlap one chunk's copy with
-- another's kernel, and the wait lists keep every chunk's steps in order.
local gpu = gpu or require "luagpu"

local chunks = tonumber(arg and arg[1]) or 4
local n = tonumber(arg and arg[2]) or (1 << 18)
local trace_path = arg and arg[3]
local dev = gpu.device()
local q = dev:queue { out_of_order = true, profiling = true }

local prog = dev:build [[
  kernel void scale(global float *x, float k) {
    size_t i = get_global_id(0);
    x[i] = x[i] * k;
  }
  kernel void add_next(global const float *x, global float *y, uint n) {
    size_t i = get_global_id(0);
    y[i] = x[i] + x[(i + 1) % n];
  }
]]

math.randomseed(42)
if trace_path then gpu.trace(true) end
local inputs, outs, steps = {}, {}, {}
for c = 1, chunks do
  local host = gpu.array("float", n)
  for i = 1, n do host[i] = math.random() end
  inputs[c] = host
end
for c = 1, chunks do
  local host = inputs[c]
  local x = dev:buffer("float", n)
  local y = dev:buffer("float", n)
  local w = x:write(host, { queue = q })
  local s = prog.scale(x, 2.0):run({ n }, nil, { queue = q, wait = { w } })
  local a = prog.add_next(x, y, n):run({ n }, nil, { queue = q, wait = { s } })
  local r = y:read(nil, { queue = q, wait = { a } })
  steps[c] = { write = w, scale = s, add_next = a, read = r }
  outs[c] = r
end
gpu.wait(outs)
if trace_path then gpu.trace(trace_path) end

-- check every chunk against the same computation in Lua
for c = 1, chunks do
  local got, x = outs[c]:wait(), inputs[c]
  for _, i in ipairs { 1, 2, n // 2, n } do
    local want = 2 * x[i] + 2 * x[i % n + 1]
    assert(math.abs(got[i] - want) <= 1e-5 * math.abs(want) + 1e-6,
      ("chunk %d element %d: got %g, want %g"):format(c, i, got[i], want))
  end
end

-- timeline: one row per command, positions relative to the first start
local t0 = math.huge
local t1 = 0
for c = 1, chunks do
  for _, ev in pairs(steps[c]) do
    local p = ev:profile()
    t0 = math.min(t0, p.start)
    t1 = math.max(t1, p["end"])
  end
end
local width = 60
local span = math.max(t1 - t0, 1)
print(("%d chunks of %d floats on %s"):format(chunks, n, dev.name))
print(("%-16s %10s %10s  %s"):format("command", "start us", "took us", "timeline"))
for c = 1, chunks do
  for _, name in ipairs { "write", "scale", "add_next", "read" } do
    local p = steps[c][name]:profile()
    local a = math.floor((p.start - t0) / span * width)
    local b = math.max(a + 1, math.floor((p["end"] - t0) / span * width))
    print(("%-16s %10.1f %10.1f  |%s%s%s|"):format(("%d %s"):format(c, name),
      (p.start - t0) / 1e3, p.duration / 1e3,
      (" "):rep(a), ("#"):rep(b - a), (" "):rep(width - b)))
  end
end
print(("total %.1f us; every chunk checked"):format(span / 1e3))
if trace_path then print("trace written to " .. trace_path) end
