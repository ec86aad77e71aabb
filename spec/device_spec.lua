-- Devices, platforms and gpu.device() spec resolution, on whatever OpenCL
-- runtime is installed (PoCL in CI).
local gpu = require "luagpu"

local errmsg = require("support").errmsg

describe("the module", function()
  it("has a version and a monotonic clock", function()
    assert.matches("^%d+%.%d+%.%d+$", gpu.version)
    local t0 = gpu.now()
    local x = 0
    for i = 1, 100000 do x = x + i end
    local t1 = gpu.now()
    assert.is_number(t0)
    assert.is_true(t1 >= t0)
    assert.equals(5000050000, x)
  end)

  it("knows where its checkout is", function()
    assert.is_string(gpu.root)
    local f = io.open(gpu.root .. "/host/luagpu.h")
    assert.is_not_nil(f)
    f:close()
  end)
end)

describe("gpu.platforms", function()
  it("lists platforms with their fields and devices", function()
    local ps = gpu.platforms()
    assert.is_true(#ps >= 1)
    for _, p in ipairs(ps) do
      assert.is_string(p.name)
      assert.is_string(p.vendor)
      assert.matches("^OpenCL %d", p.version)
      assert.is_table(p.extensions)
      assert.is_true(#p.devices >= 1)
      assert.matches("^luagpu.Platform: ", tostring(p))
    end
  end)
end)

describe("gpu.devices", function()
  local devs = gpu.devices()

  it("finds at least one device, the same object on every call", function()
    assert.is_true(#devs >= 1)
    local again = gpu.devices()
    for i = 1, #devs do assert.equals(devs[i], again[i]) end
    assert.is_true(rawequal(devs[1], gpu.devices("all")[1]))
  end)

  it("filters by kind", function()
    local n = 0
    for _, kind in ipairs { "gpu", "cpu", "accelerator" } do
      for _, d in ipairs(gpu.devices(kind)) do
        assert.equals(kind, d.type)
        n = n + 1
      end
    end
    assert.is_true(n <= #devs)
  end)

  it("gives every field the contract lists, with the right types", function()
    local d = devs[1]
    local strings = { "name", "vendor", "type", "platform", "version", "driver_version" }
    for _, k in ipairs(strings) do assert.is_string(d[k], k) end
    local ints = { "compute_units", "clock_mhz", "global_mem_size", "local_mem_size",
      "max_alloc_size", "max_work_group_size", "address_bits", "constant_buffer_size",
      "mem_base_addr_align" }
    for _, k in ipairs(ints) do
      assert.is_true(math.type(d[k]) == "integer" and d[k] > 0, k)
    end
    assert.is_boolean(d.fp64)
    assert.is_boolean(d.available)
    assert.is_table(d.max_work_item_sizes)
    assert.is_true(#d.max_work_item_sizes >= 1 and #d.max_work_item_sizes <= 3)
    assert.is_true(d.max_work_item_sizes[1] >= 1)
    assert.is_table(d.extensions)
    local fp64_ext = false
    for _, e in ipairs(d.extensions) do
      assert.matches("^cl_", e)
      if e == "cl_khr_fp64" then fp64_ext = true end
    end
    assert.equals(fp64_ext, d.fp64)
    for _, t in ipairs { "char", "short", "int", "long", "float", "double" } do
      assert.equals("integer", math.type(d.preferred_vector_width[t]), t)
    end
    assert.is_true(d.max_alloc_size <= d.global_mem_size)
    -- the alignment is reported in bytes, a power of two
    local a = d.mem_base_addr_align
    assert.equals(0, a & (a - 1))
  end)

  it("hands out copies of table fields and refuses writes", function()
    local d = devs[1]
    local t = d.max_work_item_sizes
    t[1] = -1
    assert.is_true(d.max_work_item_sizes[1] > 0)
    assert.matches("luagpu: device: field 'name' is read%-only", errmsg(function() d.name = "x" end))
  end)

  it("summarises itself", function()
    local d = devs[1]
    local s = d:summary()
    assert.is_string(s)
    assert.truthy(s:find(d.name, 1, true))
    for _, k in ipairs { "compute_units", "global_mem_size", "max_work_item_sizes", "extensions" } do
      assert.truthy(s:find(k, 1, true), k)
    end
    assert.is_true(select(2, s:gsub("\n", "")) >= 15)
    local line = tostring(d)
    assert.matches("^luagpu.Device: ", line)
    assert.is_nil(line:find("\n"))
    assert.truthy(line:find(d.name, 1, true))
  end)

  it("rejects an unknown kind", function()
    assert.matches("luagpu: gpu.devices: argument #1: expected \"gpu\", \"cpu\", \"accelerator\" or \"all\", got \"tpu\"",
      errmsg(gpu.devices, "tpu"))
    assert.matches("expected .* got number", errmsg(gpu.devices, 3))
  end)
end)

describe("gpu.device", function()
  local devs = gpu.devices()

  it("picks a GPU first, else a CPU", function()
    local d = gpu.device()
    local gpus = gpu.devices("gpu")
    if os.getenv("LUAGPU_DEVICE") == nil then
      if #gpus > 0 then assert.equals(gpus[1], d) else assert.equals("cpu", d.type) end
    end
  end)

  it("takes an index into gpu.devices()", function()
    for i = 1, #devs do assert.equals(devs[i], gpu.device(i)) end
    assert.matches("device index 0 out of range %(1 to " .. #devs .. "%)", errmsg(gpu.device, 0))
    assert.matches("device index " .. (#devs + 1) .. " out of range", errmsg(gpu.device, #devs + 1))
    assert.matches("device index 1.5 out of range", errmsg(gpu.device, 1.5))
  end)

  it("takes a kind", function()
    local cpus = gpu.devices("cpu")
    if #cpus > 0 then assert.equals(cpus[1], gpu.device("cpu")) end
    if #gpu.devices("gpu") == 0 then
      assert.matches('no device matches "gpu"', errmsg(gpu.device, "gpu"))
    end
  end)

  it("takes a case-insensitive substring of 'platform / device name'", function()
    local d = devs[1]
    local full = d.platform .. " / " .. d.name
    assert.equals(d, gpu.device(d.name:upper()))
    assert.equals(d, gpu.device(full:lower()))
    assert.equals(d, gpu.device(d.platform:sub(2, 6)))
  end)

  it("lists the devices there are when nothing matches", function()
    local err = errmsg(gpu.device, "no such device xyz")
    assert.matches('luagpu: gpu.device: no device matches "no such device xyz"; the devices are:', err, 1, true)
    assert.truthy(err:find("1: " .. devs[1].platform .. " / " .. devs[1].name, 1, true))
  end)

  it("rejects other types", function()
    assert.matches("luagpu: gpu.device: argument #1: expected a device index, \"gpu\", \"cpu\" or a name substring, got table",
      errmsg(gpu.device, {}))
  end)

  it("follows LUAGPU_DEVICE and explains an empty system", function()
    local lua = "lua5.4 -e 'package.cpath = \"" .. (os.getenv("LUAGPU_BUILD") or "build") ..
      "/?.so;\" .. package.cpath; local gpu = require \"luagpu\"; %s' 2>&1"
    local p = io.popen("LUAGPU_DEVICE=1 " .. lua:format("print(gpu.device() == gpu.devices()[1])"))
    assert.equals("true", p:read("a"):match("^%s*(.-)%s*$"))
    p:close()
    p = io.popen("OCL_ICD_VENDORS=/nonexistent OCL_ICD_FILENAMES= " ..
      lua:format("print(#gpu.devices(), #gpu.platforms(), pcall(gpu.device))"))
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("0\t0\tfalse\tluagpu: gpu.device: no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)", 1, true), out)
  end)
end)

describe("gpu.type", function()
  it("names luagpu's objects and nothing else", function()
    assert.equals("Device", gpu.type(gpu.device()))
    assert.equals("Array", gpu.type(gpu.array("int", 2)))
    assert.equals("Buffer", gpu.type(gpu.device():buffer("int", 2)))
    assert.is_nil(gpu.type({}))
    assert.is_nil(gpu.type(io.stdout))
    assert.is_nil(gpu.type(3))
    assert.matches("bad argument #1 to", select(2, pcall(gpu.type)), 1, true)
  end)
end)

describe("dev:info's queries of objects (issue 27 item 40)", function()
  local dev = gpu.device()

  it("answers every CL_DEVICE_* query of the OpenCL headers", function()
    local f = io.open("/usr/include/CL/cl.h")
    if not f then return pending("no /usr/include/CL/cl.h to list the queries") end
    local text = f:read("a")
    f:close()
    local n = 0
    for name, code in text:gmatch("#define%s+(CL_DEVICE_[%w_]+)%s+0x(10[0-7]%x)") do
      local v = tonumber(code, 16)
      if v >= 0x1000 and v <= 0x107F then
        local ok, e = pcall(dev.info, dev, name)
        assert(ok, name .. ": " .. tostring(e))
        n = n + 1
      end
    end
    assert.is_true(n >= 100, "only " .. n .. " queries found in cl.h")
  end)

  it("platform: the Platform, as gpu.platforms() lists it", function()
    local p = dev:info("platform")
    assert.equal("Platform", getmetatable(p).__name:match("(%w+)$"))
    assert.equal(dev.platform, p.name)
    assert.equal(p.name, p:info("name"))
    local mine
    for _, d in ipairs(p.devices) do mine = mine or d == dev end
    assert.is_true(mine)
    local listed
    for _, q in ipairs(gpu.platforms()) do
      if q.name == p.name and q.version == p.version then listed = q end
    end
    assert.same(listed.extensions, p.extensions)
    assert.equal(dev:info("CL_DEVICE_PLATFORM").name, p.name)
  end)

  it("parent_device and partition_type: nil alone for a root device", function()
    assert.equal(1, select("#", dev:info("parent_device")))
    assert.is_nil(dev:info("parent_device"))
    assert.equal(1, select("#", dev:info("partition_type")))
    assert.is_nil(dev:info("partition_type"))
  end)

  it("partition_properties: the kinds dev:partition takes, as it does", function()
    local kinds = dev:info("partition_properties")
    assert.equal("table", type(kinds))
    local has = {}
    for _, k in ipairs(kinds) do has[k] = true end
    -- asked another way: what dev:partition accepts
    for _, k in ipairs({"equally", "counts"}) do
      local ok, e = pcall(dev.partition, dev, k == "equally" and {equally = 1} or {counts = {1}})
      assert.equal(has[k] or false, ok, k .. ": " .. tostring(e))
    end
  end)

  it("a sub-device answers its parent Device and how it was cut", function()
    local kinds = dev:info("partition_properties")
    local how
    for _, k in ipairs(kinds) do
      if k == "counts" then how = {counts = {1}} end
      if k == "equally" and not how then how = {equally = 1} end
    end
    if not how then return pending(dev.name .. " cannot be partitioned") end
    local subs = dev:partition(how)
    for _, s in ipairs(subs) do
      assert.equal(dev, s:info("parent_device"))
      assert.equal(dev, s:info("CL_DEVICE_PARENT_DEVICE"))
      assert.same(how, s:info("partition_type"))
      assert.equal(dev.platform, s:info("platform").name)
    end
  end)
end)
