-- bench/gpu/host_profile.lua: where a tensor op's host time goes, by
-- function (Lua and C), from call and return hooks on the host's clock:
-- exclusive and inclusive microseconds per call of the op, the hooks' own
-- cost included (so compare within a run; a C function's time is its own).
--   build/luagpu bench/gpu/host_profile.lua [op ...]
local gpu = require "luagpu"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local now = gpu.now
local ops = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "probe_ops.lua")(
  gpu, dev, os.getenv("SMALL") and 1 << 16 or nil)
local names = {...}
if #names == 0 then names = {"sort", "unique", "cat", "bmm", "argmax2", "cumsum"} end
local REPS = 20
local getinfo = debug.getinfo
for _, name in ipairs(names) do
  local f = assert(ops[name], name)
  for _ = 1, 5 do f() end
  dev:finish()
  local excl, incl, calls = {}, {}, {}
  local stack, keys, child = {}, {}, {}
  local depth = 0
  local function key_of()
    local i = getinfo(3, "nS")
    if i.what == "C" then return "C " .. tostring(i.name) end
    return i.short_src:gsub(".*/luagpu/", "") .. ":" .. i.linedefined .. " " .. tostring(i.name)
  end
  local function leave(t)
    local k = keys[depth]
    local el = t - stack[depth]
    incl[k] = (incl[k] or 0) + el
    excl[k] = (excl[k] or 0) + el - child[depth]
    calls[k] = (calls[k] or 0) + 1
    depth = depth - 1
    if depth > 0 then child[depth] = child[depth] + el end
  end
  local hook = function(ev)
    local t = now()
    if ev == "call" or ev == "tail call" then
      if ev == "tail call" and depth > 0 then leave(t) end
      depth = depth + 1
      stack[depth], keys[depth], child[depth] = t, key_of(), 0
    elseif depth > 0 then
      leave(t)
    end
  end
  local wall = 0
  for _ = 1, REPS do
    local t0 = now()
    depth = 0
    debug.sethook(hook, "cr")
    f()
    debug.sethook()
    wall = wall + now() - t0
    dev:finish()
  end
  print(("== %s: %.1f us per call under the hooks"):format(name, wall / REPS * 1e6))
  local list = {}
  for k, v in pairs(excl) do list[#list + 1] = k end
  table.sort(list, function(a, b) return excl[a] > excl[b] end)
  for i = 1, math.min(18, #list) do
    local k = list[i]
    print(("  %8.1f excl %8.1f incl %6.1f calls  %s"):format(excl[k] / REPS * 1e6,
      incl[k] / REPS * 1e6, calls[k] / REPS, k))
  end
end
