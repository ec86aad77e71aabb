-- Sub-devices: dev:partition{equally = n} and {counts = {...}} give Devices
-- that run kernels, hold buffers and share them with their siblings; every
-- bad-input message. (PoCL partitions CPUs; a device that cannot is skipped
-- but for its message.)
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local has_error = support.has_error

local units = dev.compute_units

local function can(how)
  local ok, e = pcall(dev.partition, dev, how == "equally" and {equally = 1} or {counts = {1}})
  return ok or not tostring(e):find("cannot be partitioned", 1, true)
end

local SRC = "kernel void axpb(global long *x, long a, long b) {\n"
            .. "  size_t i = get_global_id(0); x[i] = a * x[i] + b; }"

describe("dev:partition", function()
  it("equally: one Device per share of compute units, each one usable", function()
    if not can("equally") then return end
    local subs = dev:partition{equally = 1}
    assert.equal(units, #subs)
    for i, s in ipairs(subs) do
      assert.equal("Device", gpu.type(s))
      assert.equal(1, s.compute_units)
      assert.equal(dev, s.parent)
      assert.equal(dev.type, s.type)
      local n = 1000 + i
      local ref = support.random_ints(n, -100000, 100000)
      local b = s:buffer("long", n)
      b:write(ref)
      s:build(SRC).axpb(b, 3, -7):run({n}):wait()
      local got = b:get()
      for j = 1, n do assert.equal(3 * ref[j] - 7, got[j]) end
    end
  end)

  it("counts: the sizes asked for; siblings share buffers and events", function()
    if not can("counts") then return end
    local counts = units >= 2 and {1, units - 1} or {1}
    local subs = dev:partition{counts = counts}
    assert.equal(#counts, #subs)
    for i = 1, #counts do assert.equal(counts[i], subs[i].compute_units) end
    local first, last = subs[1], subs[#subs]
    local ref = support.random_ints(500, -1000, 1000)
    local a = first:buffer("long", 500)
    local b = last:buffer("long", 500)
    local u = gpu.user_event(first)
    local w = a:write(ref, {wait = u})
    local c = a:copy_to(b, {wait = w, queue = last:default_queue()})
    u:complete()
    c:wait()
    assert.same(ref, b:get():totable())
  end)

  it("raises on bad input, with the numbers", function()
    has_error("luagpu: device:partition: argument #1: expected a table {equally = n} or "
              .. "{counts = {...}}, got no value", dev.partition, dev)
    has_error("luagpu: device:partition: argument #1: unknown option 'equal'", dev.partition,
              dev, {equal = 1})
    has_error("luagpu: device:partition: argument #1: expected one of equally = n or "
              .. "counts = {...}, got neither", dev.partition, dev, {})
    has_error("luagpu: device:partition: argument #1: expected one of equally = n or "
              .. "counts = {...}, got both", dev.partition, dev, {equally = 1, counts = {1}})
    if can("equally") then
      has_error("luagpu: device:partition: argument #1: equally: expected an integer >= 1, "
                .. "got 0", dev.partition, dev, {equally = 0})
      has_error("luagpu: device:partition: argument #1: equally: " .. (units + 1)
                .. " compute units per sub-device, the device has " .. units, dev.partition,
                dev, {equally = units + 1})
    else
      has_error("cannot be partitioned equally", dev.partition, dev, {equally = 1})
    end
    if can("counts") then
      has_error("luagpu: device:partition: argument #1: counts[2]: expected an integer >= 1, "
                .. "got x", dev.partition, dev, {counts = {1, "x"}})
      has_error("luagpu: device:partition: argument #1: counts: expected a list of integers, "
                .. "got number", dev.partition, dev, {counts = 2})
      has_error("luagpu: device:partition: argument #1: counts: expected 1 to 64 counts, "
                .. "got 0", dev.partition, dev, {counts = {}})
      has_error("luagpu: device:partition: argument #1: counts: " .. (units + 1)
                .. " compute units in all, the device has " .. units, dev.partition, dev,
                {counts = {1, units}})
    end
  end)
end)
