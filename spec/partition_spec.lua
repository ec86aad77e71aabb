-- Sub-devices: dev:partition{equally = n}, {counts = {...}} and {affinity =
-- domain} give Devices that run kernels, hold buffers and share them with
-- their siblings; every bad-input message. (PoCL partitions CPUs equally and
-- by counts, not by affinity domain; a device that cannot is skipped but for
-- its message.)
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
    if not can("equally") then return pending(dev.name .. " cannot be partitioned equally") end
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
    if not can("counts") then return pending(dev.name .. " cannot be partitioned by counts") end
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

  it("affinity: along caches or NUMA nodes where the device can, else says what it can", function()
    -- what the device reports, asked another way: each domain tried in turn
    local kinds = {}
    for _, how in ipairs({"equally", "counts"}) do
      if can(how) then kinds[#kinds + 1] = how end
    end
    local domains = {}
    for _, d in ipairs({"numa", "l4", "l3", "l2", "l1", "next"}) do
      local ok, subs = pcall(dev.partition, dev, {affinity = d})
      if ok then
        domains[#domains + 1] = d
        assert.is_true(#subs >= 1)
        local sum = 0
        for _, s in ipairs(subs) do
          assert.equal(dev, s.parent)
          sum = sum + s.compute_units
          local ref = support.random_ints(300, -1000, 1000)
          local b = s:buffer("long", 300)
          b:write(ref)
          s:build(SRC).axpb(b, 2, 5):run({300}):wait()
          local got = b:get()
          for j = 1, 300 do assert.equal(2 * ref[j] + 5, got[j]) end
        end
        assert.is_true(sum <= units)
      elseif tostring(subs):find("cannot be partitioned by affinity domain (", 1, true) then
        -- no affinity partitioning at all (PoCL): the message lists what there is
        assert.equal("luagpu: device:partition: " .. dev.name .. " cannot be partitioned by "
                     .. "affinity domain (" .. (#kinds > 0 and "it supports: "
                     .. table.concat(kinds, ", ") or "it supports no partitioning") .. ")",
                     tostring(subs))
      else
        assert.matches("luagpu: device:partition: " .. dev.name .. " cannot be partitioned "
                       .. 'by affinity domain "' .. d .. '" (it supports: ', tostring(subs),
                       1, true)
      end
    end
  end)

  it("raises on bad input, with the numbers", function()
    has_error("luagpu: device:partition: argument #1: expected a table {equally = n}, "
              .. "{counts = {...}} or {affinity = domain}, got no value", dev.partition, dev)
    has_error("luagpu: device:partition: argument #1: unknown option 'equal'", dev.partition,
              dev, {equal = 1})
    has_error("luagpu: device:partition: argument #1: expected one of equally = n, "
              .. "counts = {...} or affinity = domain, got neither", dev.partition, dev, {})
    has_error("luagpu: device:partition: argument #1: expected one of equally = n, "
              .. "counts = {...} or affinity = domain, got more than one", dev.partition, dev,
              {equally = 1, counts = {1}})
    has_error("luagpu: device:partition: argument #1: expected one of equally = n, "
              .. "counts = {...} or affinity = domain, got more than one", dev.partition, dev,
              {counts = {1}, affinity = "numa"})
    has_error('luagpu: device:partition: argument #1: affinity: expected "numa", "l4", "l3", '
              .. '"l2", "l1" or "next", got "l5"', dev.partition, dev, {affinity = "l5"})
    has_error('luagpu: device:partition: argument #1: affinity: expected "numa", "l4", "l3", '
              .. '"l2", "l1" or "next", got number', dev.partition, dev, {affinity = 2})
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
      -- issue 27 item 21: counts whose sum would wrap
      has_error("luagpu: device:partition: argument #1: counts[1]: 9223372036854775807 "
                .. "compute units, the device has " .. units, dev.partition, dev,
                {counts = {math.maxinteger, math.maxinteger, 4}})
      has_error("luagpu: device:partition: argument #1: counts[2]: " .. (units + 1)
                .. " compute units, the device has " .. units, dev.partition, dev,
                {counts = {1, units + 1, math.maxinteger}})
      has_error("luagpu: device:partition: argument #1: counts[3]: expected an integer >= 1, "
                .. "got " .. math.mininteger, dev.partition, dev,
                {counts = {1, 1, math.mininteger}})
    end
    if can("equally") then
      has_error("luagpu: device:partition: argument #1: equally: 9223372036854775807 compute "
                .. "units per sub-device, the device has " .. units, dev.partition, dev,
                {equally = math.maxinteger})
      has_error("luagpu: device:partition: argument #1: equally: expected an integer >= 1, "
                .. "got 1.5", dev.partition, dev, {equally = 1.5})
    end
  end)

  it("frees the sub-devices a script drops (issue 27 item 44)", function()
    if not can("equally") then return pending(dev.name .. " cannot be partitioned equally") end
    local function rss_kib()
      local f = assert(io.open("/proc/self/statm"))
      local pages = f:read("l"):match("^%d+ (%d+)")
      f:close()
      return tonumber(pages) * 4
    end
    local function cycle(n)
      for i = 1, n do
        local subs = dev:partition{equally = 1}
        if i % 100 == 0 then           -- some of them used, their objects dropped too
          local b = subs[1]:buffer("long", 64)
          b:write(support.random_ints(64, -9, 9)):wait()
        end
        if i % 50 == 0 then collectgarbage() end
      end
      collectgarbage()
      collectgarbage()
    end
    cycle(200)                         -- warm up: what PoCL and Lua keep once
    local lua0, rss0 = collectgarbage("count"), rss_kib()
    cycle(2000)
    local lua1, rss1 = collectgarbage("count"), rss_kib()
    -- before the fix: 8.5 MiB of Lua objects and 20 MiB of process memory kept
    assert.is_true(lua1 - lua0 < 256, "Lua kept " .. (lua1 - lua0) .. " KiB")
    -- under AddressSanitizer freed memory waits in its quarantine: the process grows anyway
    if not os.getenv("ASAN") then
      assert.is_true(rss1 - rss0 < 4096, "the process kept " .. (rss1 - rss0) .. " KiB")
    end
  end)
  it("exits cleanly with a queue put off for an unset user event past the ring of late ids",
     function()
    -- (an id released before lua_close's finish of a queue on it: SIGSEGV in
    -- clFinish at exit, once more than 256 sub-devices had gone)
    if not can("equally") then return pending(dev.name .. " cannot be partitioned equally") end
    local out, code = support.two_devices([[
local d = gpu.device()
local u = gpu.user_event(d:partition{equally = 1}[1])
for i = 1, 300 do local s = d:partition{equally = 1}; local b = s[1]:buffer("int", 4) end
print("end")]])
    assert.equals(0, code, out)
    assert.equals("end\n", out)
  end)
end)
