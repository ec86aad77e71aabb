-- gated_pipeline.lua: a pipeline held back by a user event until the host
-- says go, with on_complete callbacks drawing progress and coroutine tasks
-- (gpu.run_loop, gpu.await) checking each chunk while the others run.
--   build/luagpu examples/gated_pipeline.lua [CHUNKS [N]]
local gpu = gpu or require "luagpu"

local chunks = tonumber(arg and arg[1]) or 6
local n = tonumber(arg and arg[2]) or 1 << 16
local dev = gpu.device()
print(string.format("%d chunks of %d floats on %s", chunks, n, dev.name))

local prog = dev:build[[
kernel void affine(global float *x, float a, float b) {
  size_t i = get_global_id(0);
  x[i] = a * x[i] + b;
}]]

local go = gpu.user_event(dev)          -- nothing runs before the host says so
-- gated commands block their in-order queue: give them one of their own, so
-- that the default queue (dev:buffer's zero-fill, b:get) stays free
local q = dev:queue()
local done, width = 0, 30
local function progress(_, status)
  done = done + 1
  local bar = string.rep("#", done * width // chunks) .. string.rep(".", width - done * width // chunks)
  print(string.format("[%s] %d/%d chunks (%s)", bar, done, chunks, status))
end

local inputs, reads = {}, {}
for c = 1, chunks do
  local host = gpu.array("float", n)
  for i = 1, n do host[i] = (i % 97) + c end
  inputs[c] = host
  local b = dev:buffer("float", n)
  local w = b:write(host, {wait = go, queue = q})
  local k = prog.affine(b, 2, c):run({n}, nil, {wait = w, queue = q})
  reads[c] = b:read(nil, {wait = k, queue = q})
  reads[c]:on_complete(progress)
end
print("enqueued, waiting for the gate: " .. reads[1].status)
assert(reads[chunks].status ~= "complete", "nothing may run before the gate opens")

local bad = 0
gpu.run_loop(function()
  for c = 1, chunks do
    gpu.spawn(function()
      local out = gpu.await(reads[c])            -- other tasks run meanwhile
      for i = 1, n, 97 do
        if out[i] ~= 2 * inputs[c][i] + c then bad = bad + 1 end
      end
    end)
  end
  go:complete()                                  -- the host opens the gate
end)
gpu.poll()                                       -- any callback not yet drawn
assert(done == chunks, "every callback ran")
if bad > 0 then
  print(bad .. " MISMATCHES")
  os.exit(1)
end
print("every chunk checked")
