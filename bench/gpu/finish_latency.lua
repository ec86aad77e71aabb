-- bench/gpu/finish_latency.lua: what waiting for a finished command costs
-- on top of the command itself: a tiny kernel, then dev:finish(), ev:wait()
-- or a loop polling ev.status, with profiling on and off. Medians of REPS.
--
--   build/luagpu bench/gpu/finish_latency.lua [REPS]
local gpu = rawget(_G, "gpu") or require "luagpu"
local reps = tonumber(arg and arg[1]) or 2000
local dev = gpu.device()
local k = dev:build("__kernel void nop(__global float *x) { x[get_global_id(0)] += 1.0f; }").nop
local b = dev:buffer("float", 1024)
local call = k(b)
local NO_EVENT = {event = false}

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function time(f)
  for _ = 1, 50 do f() end
  local t = {}
  for r = 1, reps do
    local t0 = gpu.now()
    f()
    t[r] = (gpu.now() - t0) * 1e6
  end
  return median(t)
end

local q
local cases = {
  {"launch_only_no_event", function() call:run({1024}, nil, NO_EVENT) end},
  {"launch+finish", function() call:run({1024}, nil, NO_EVENT); dev:finish() end},
  {"launch_event+wait", function() call:run({1024}):wait() end},
  {"launch_event+poll", function()
    local ev = call:run({1024})
    q:flush()
    while ev.status ~= "complete" do end
  end},
  {"launch+marker+poll", function()
    call:run({1024}, nil, NO_EVENT)
    local ev = q:marker()
    q:flush()
    while ev.status ~= "complete" do end
  end},
}
for _, prof in ipairs {true, false} do
  dev:set_profiling(prof)
  q = dev:default_queue()
  for _, c in ipairs(cases) do
    print(string.format("LUAGPU %s%s %.1f us", c[1], prof and "" or "_noprof", time(c[2])))
  end
end
