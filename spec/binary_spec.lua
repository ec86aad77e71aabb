-- Program binaries (prog.binary, dev:build_binary), `luagpu --precompile`,
-- and the generic queries dev:info(name) and platform:info(name).
local gpu = require "luagpu"

local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"
local support = require "support"
local shell_quote = support.shell_quote

local SOURCE = [[
kernel void put(global int *x, int v) { x[get_global_id(0)] = v + K; }
kernel void twice(global int *x) { x[get_global_id(0)] *= 2; }
]]

local sh = support.sh

-- The parts of prog.binary's container: the four sizes, then the device name
-- and options together, the kernel metadata, and the driver's own binary.
local function container_parts(bin)
  local sizes, rest = bin:match("^LUAGPU%-BINARY%-1\n(%d+ %d+ %d+ %d+)\n(.*)$")
  local n = {}
  for v in sizes:gmatch("%d+") do n[#n + 1] = tonumber(v) end
  return n, rest:sub(1, n[1] + n[2]), rest:sub(n[1] + n[2] + 1, n[1] + n[2] + n[3]),
         rest:sub(n[1] + n[2] + n[3] + 1)
end

describe("program binaries", function()
  local dev
  setup(function() dev = gpu.device() end)

  it("prog.binary builds again with dev:build_binary, kernels and options kept", function()
    local k = math.random(1, 100)
    local prog = dev:build(SOURCE, {defines = {K = k}})
    local bin = prog.binary
    assert.equals("string", type(bin))
    assert.matches("^LUAGPU%-BINARY%-1\n", bin)
    local again = dev:build_binary(bin)
    assert.equals("luagpu.Program", gpu.type(again) and "luagpu." .. gpu.type(again))
    assert.same({"put", "twice"}, again.kernels)
    assert.equals(prog.options, again.options)
    assert.is_false(again.cached)
    local n, v = math.random(10, 100), math.random(1000)
    local b = dev:buffer("int", n)
    again.put(b, v):run({n})
    again.twice(b):run({n})
    local got = b:get()
    assert.equals(2 * (v + k), got[1])
    assert.equals(2 * (v + k), got[n])
    -- the argument checks work as for a built program: the metadata came along
    assert.has_error(function() again.put(b) end)
  end)

  it("refuses what is no binary, a damaged one, and one made for another device", function()
    local bin = dev:build(SOURCE, {defines = {K = 1}}).binary
    assert.has_error(function() dev:build_binary(42) end,
      "luagpu: device:build_binary: argument #1: expected a binary string (prog.binary), got number")
    assert.has_error(function() dev:build_binary("") end,
      "luagpu: device:build_binary: argument #1: expected a binary string, got an empty one")
    assert.has_error(function() dev:build_binary(bin:sub(1, 200)) end,
      "luagpu: device:build_binary: argument #1: a damaged or cut-short binary (200 bytes)")
    assert.has_error(function() dev:build_binary(bin .. "x") end,
      "luagpu: device:build_binary: argument #1: a damaged or cut-short binary ("
      .. #bin + 1 .. " bytes)")
    -- the same binary, said to be for another device
    local head, rest = bin:match("^(LUAGPU%-BINARY%-1\n%d+ [^\n]*\n)(.*)$")
    local sizes = head:match("\n(%d+ [^\n]*)\n")
    local nname = tonumber(sizes:match("^%d+"))
    local other = "LUAGPU-BINARY-1\n" .. sizes:gsub("^%d+", "9") .. "\nOther GPU" .. rest:sub(nname + 1)
    assert.has_error(function() dev:build_binary(other) end,
      "luagpu: device:build_binary: argument #1: the binary was built for Other GPU, not for "
      .. dev.name)
    local ok, err = pcall(dev.build_binary, dev, "not a driver's binary")
    assert.is_false(ok)
    assert.matches("^luagpu: device:build_binary: clCreateProgramWithBinary: CL_INVALID_BINARY", err)
  end)

  it("refuses kernel metadata that claims more than it holds (issue 27 item 19)", function()
    local bin = dev:build(SOURCE, {defines = {K = 1}}).binary
    local n, name, meta, driver = container_parts(bin)
    assert.equal(n[4], #driver)
    local function with_meta(m)
      return string.format("LUAGPU-BINARY-1\n%d %d %d %d\n", n[1], n[2], #m, #driver) .. name
             .. m .. driver
    end
    assert.matches("^kernel\tput\t2\n", meta)
    -- in a child: before the fix the first was a heap overflow
    local bad = {
      meta:gsub("^kernel\tput\t2\n", "kernel\tput\t" .. (1 << 61) + 28 .. "\n"),
      meta:gsub("^kernel\tput\t2\n", "kernel\tput\t3\n"),
      meta:gsub("^kernel\tput\t2\n", "kernel\tput\t-1\n"),
      meta:gsub("^kernel\tput\t2\n", "kernel\tput\t2x\n"),
      meta:gsub("\narg\t", "\narg\t\t", 1),
      meta:gsub("\narg\t[^\n]*\n", "\n", 1),
      meta .. "kernel\tput\t" .. string.rep("9", 40) .. "\n",
      meta .. "\0",
    }
    local file = os.tmpname()
    for i, m in ipairs(bad) do
      support.write_file(file, with_meta(m))
      local out, code = sh(PROG .. " -e " .. shell_quote(
        "local gpu = require 'luagpu'; local f = io.open(" .. string.format("%q", file)
        .. ", 'rb'); local p = gpu.device():build_binary(f:read('a')); print(p.put)"))
      assert.equal(1, code, i .. ": " .. out)
      assert.matches("luagpu: (command line):1: device:build_binary: argument #1: a damaged "
                     .. "binary: its kernel metadata is malformed", out, 1, true)
    end
    os.remove(file)
    -- well formed, but one argument more than the kernel has: refused by build_binary,
    -- which makes every kernel
    local three = meta:gsub("^kernel\tput\t2\n(arg\t[^\n]*\n)", "kernel\tput\t3\n%1%1")
    support.has_error("damaged kernel metadata for 'put' (3 arguments, the kernel has 2)",
                      dev.build_binary, dev, with_meta(three))
    -- sizes past the string, or numbers no size_t holds
    for _, head in ipairs({"1 2 3", "1 2 3 4 5", "1 2 3 " .. string.rep("9", 30),
                           "18446744073709551615 1 1 1", "1 1 1 -1"}) do
      local s = "LUAGPU-BINARY-1\n" .. head .. "\n" .. string.rep("x", 64)
      support.has_error("luagpu: device:build_binary: argument #1: a damaged or cut-short "
                        .. "binary (" .. #s .. " bytes)", dev.build_binary, dev, s)
    end
  end)

  -- Metadata that calls a pointer a private long let q.f(0x41414141, 7) write there
  -- (SIGSEGV): where the driver reports argument info, the metadata must agree with it.
  -- The call runs in a child so that a crash fails instead of ending busted.
  it("refuses metadata that disagrees with the driver about an argument's space or type",
     function()
    local bin = dev:build("kernel void f(global float *x, int n) { "
                          .. "if (get_global_id(0) < n) x[get_global_id(0)] = 1; }").binary
    local n, name, meta, driver = container_parts(bin)
    assert.equal("kernel\tf\t2\narg\tglobal\tnone\t\tfloat*\tx\narg\tprivate\tnone\t\tint\tn\n",
                 meta)
    if not dev.platform:find("Portable Computing Language", 1, true) then
      return pending("checked where the driver reports argument info for binaries, as PoCL does")
    end
    local file = os.tmpname()
    for _, case in ipairs({
        {"arg\tprivate\tnone\t\tlong\tx", "global float*", "private long"},
        {"arg\tglobal\tnone\t\tdouble*\tx", "global float*", "global double*"},
        {"arg\tlocal\tnone\t\tfloat*\tx", "global float*", "local float*"}}) do
      local m = meta:gsub("arg\tglobal\tnone\t\tfloat%*\tx", case[1])
      support.write_file(file, string.format("LUAGPU-BINARY-1\n%d %d %d %d\n", n[1], n[2], #m,
                                             #driver) .. name .. m .. driver)
      local out, code = sh("timeout 60 " .. PROG .. " -e " .. shell_quote(
        "local gpu = require 'luagpu'; local f = io.open(" .. string.format("%q", file)
        .. ", 'rb'); local q = gpu.device():build_binary(f:read('a')); "
        .. "q.f(0x41414141, 7):run(1):wait() print('ran')"))
      assert.equal(1, code, out)
      assert.matches("luagpu: (command line):1: device:build_binary: a damaged binary: kernel "
                     .. "f's argument 1 is " .. case[2] .. " in the binary, the metadata says " .. case[3], out, 1, true)
    end
    os.remove(file)
  end)

  it("refuses a PoCL binary whose program.bc part is empty (PoCL would abort on it)", function()
    local prog = dev:build(SOURCE, {defines = {K = 1}})
    local at = prog.binary:find("poclbin\0", 1, true)
    if not at then return pending(dev.name .. " does not give PoCL binaries") end
    local bin = prog.binary:sub(at)                     -- the driver's own, last in prog.binary
    local root = string.unpack("<I8", bin, 78)          -- after the 77-byte header
    assert.is_true(root > 0)
    local bad = bin:sub(1, 77) .. string.pack("<I8", 0) .. bin:sub(86 + root)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(bad)
    f:close()
    -- in a child: before the check, PoCL aborted the process
    local out, code = sh(shell_quote(PROG) .. " -e " .. shell_quote(([[
      local gpu = require "luagpu"
      local f = assert(io.open(%q, "rb"))
      local bad = f:read("a")
      f:close()
      local ok, err = pcall(gpu.device().build_binary, gpu.device(), bad)
      print(ok, err)]]):format(path)))
    os.remove(path)
    assert.equals(0, code, out)
    assert.matches("false\tluagpu: device:build_binary: argument #1: a damaged or cut%-short " ..
                   "binary %(" .. #bad .. " bytes%)", out, 1)
  end)

  it("luagpu --precompile fills the program cache, with build options", function()
    local cache = os.tmpname()
    os.remove(cache)
    local file = os.tmpname() .. ".cl"
    support.write_file(file, SOURCE)
    local env = "XDG_CACHE_HOME=" .. shell_quote(cache) .. " "
    local out, code = sh(env .. shell_quote(PROG) .. " --precompile " .. shell_quote(file)
                         .. " -DK=3")
    assert.equals(0, code, out)
    for _, d in ipairs(gpu.devices()) do
      assert.matches(file .. ": " .. d.name .. ": 2 kernels, built\n", out, 1, true)
    end
    out, code = sh(env .. shell_quote(PROG) .. " -e " .. shell_quote(
      "print(gpu.device():build_file(" .. string.format("%q", file)
      .. ", {options = '-DK=3'}).cached)"))
    assert.equals(0, code, out)
    assert.equals("true\n", out)
    out, code = sh(env .. shell_quote(PROG) .. " --precompile " .. shell_quote(file) .. " -DK=3")
    assert.equals(0, code, out)
    assert.matches("2 kernels, already in the cache\n", out, 1, true)
    os.execute("rm -rf " .. shell_quote(cache) .. " " .. shell_quote(file))
  end)

  it("luagpu --precompile and build_file agree on the key, however -D is written", function()
    local cache = os.tmpname()
    os.remove(cache)
    local file = os.tmpname() .. ".cl"
    support.write_file(file, SOURCE)
    local env = "XDG_CACHE_HOME=" .. shell_quote(cache) .. " "
    local function entries()
      local p = io.popen("ls -1 " .. shell_quote(cache .. "/luagpu") .. " 2>/dev/null")
      local n = 0
      for _ in p:lines() do n = n + 1 end
      p:close()
      return n
    end
    local out, code = sh(env .. "LUAGPU_DEVICE=1 " .. shell_quote(PROG) .. " --precompile "
                         .. shell_quote(file) .. " -DK=4 -D M=2")
    assert.equals(0, code, out)
    assert.matches(": 2 kernels, built\n", out, 1, true)
    local after = entries()
    assert.is_true(after >= 1, out)
    -- each way of writing the same definitions is a hit, and adds no entry
    for _, opts in ipairs{"{defines = {K = 4, M = 2}}", "{defines = {M = '2', K = 4}}",
                          "{options = '-D K=4 -DM=2'}", "{options = '-DM=2', defines = {K = 4}}"} do
      out, code = sh(env .. "LUAGPU_DEVICE=1 " .. shell_quote(PROG) .. " -e " .. shell_quote(
        "print(gpu.device():build_file(" .. string.format("%q", file) .. ", " .. opts
        .. ").cached)"))
      assert.equals(0, code, out)
      assert.equals("true\n", out, opts)
    end
    out, code = sh(env .. "LUAGPU_DEVICE=1 " .. shell_quote(PROG) .. " --precompile "
                   .. shell_quote(file) .. " -D K=4 -DM=2")
    assert.equals(0, code, out)
    assert.matches("2 kernels, already in the cache\n", out, 1, true)
    assert.equals(after, entries())
    -- another value is another key
    out, code = sh(env .. "LUAGPU_DEVICE=1 " .. shell_quote(PROG) .. " -e " .. shell_quote(
      "print(gpu.device():build_file(" .. string.format("%q", file)
      .. ", {defines = {K = 5, M = 2}}).cached)"))
    assert.equals("false\n", out)
    assert.equals(after + 1, entries())
    os.execute("rm -rf " .. shell_quote(cache) .. " " .. shell_quote(file))
  end)

  it("luagpu --precompile reports a file that does not build, and no file, exit 1", function()
    local out, code = sh(shell_quote(PROG) .. " --precompile /nonexistent/k.cl")
    assert.equals(1, code)
    assert.matches("luagpu: dev:build_file: argument #1: cannot open '/nonexistent/k.cl'", out, 1, true)
    out, code = sh(shell_quote(PROG) .. " --precompile")
    assert.equals(1, code)
    assert.equals("luagpu: '--precompile' needs a file (kernels.cl ...)\n", out)
  end)
end)

describe("dev:info and platform:info", function()
  it("answer any query by its name, with or without the prefix", function()
    local dev = gpu.device()
    assert.equals(dev.compute_units, dev:info("CL_DEVICE_MAX_COMPUTE_UNITS"))
    assert.equals(dev.compute_units, dev:info("max_compute_units"))
    assert.equals(dev.name, dev:info("name"))
    assert.equals(dev.driver_version, dev:info("driver_version"))
    assert.same(dev.max_work_item_sizes, dev:info("MAX_WORK_ITEM_SIZES"))
    assert.equals(dev.available, dev:info("available"))
    assert.equals(dev.max_alloc_size, dev:info("max_mem_alloc_size"))
    assert.equals(dev.mem_base_addr_align, dev:info("mem_base_addr_align") // 8)
    local p = gpu.platforms()[1]
    assert.equals(p.name, p:info("CL_PLATFORM_NAME"))
    assert.equals(p.version, p:info("version"))
  end)

  it("answers OpenCL 3.0 feature queries where the driver has them", function()
    local dev = gpu.device()
    if not dev.version:match("^OpenCL 3") then
      return pending(dev.name .. " is " .. dev.version .. ": no OpenCL 3.0 queries")
    end
    assert.matches("^3%.%d+%.%d+$", dev:info("numeric_version"))
    local features = dev:info("CL_DEVICE_OPENCL_C_FEATURES")
    assert.equals("table", type(features))
    for name, version in pairs(features) do
      assert.matches("^__opencl_c_", name)
      assert.matches("^%d+%.%d+%.%d+$", version)
    end
    local exts = dev:info("extensions_with_version")
    for _, name in ipairs(dev.extensions) do assert.is_string(exts[name], name) end
    assert.is_boolean(dev:info("generic_address_space_support"))
    assert.matches("^%d+%.%d+%.%d+$", gpu.platforms()[1]:info("numeric_version"))
  end)

  it("returns nil and the reason for a query the driver does not answer", function()
    local dev = gpu.device()
    local v, err = dev:info("CL_DEVICE_UUID_KHR")
    if v == nil then
      assert.matches("^CL_DEVICE_UUID_KHR: the driver does not answer %(CL_", err)
    else
      assert.matches("^%x+$", v)
    end
  end)

  it("rejects unknown names and non-strings", function()
    local dev = gpu.device()
    assert.has_error(function() dev:info("bogus") end,
      "luagpu: device:info: argument #1: unknown query 'bogus' (expected a CL_DEVICE_* name, "
      .. "with or without its prefix)")
    assert.has_error(function() dev:info(3) end,
      "luagpu: device:info: argument #1: expected a query name such as \"CL_DEVICE_VERSION\", "
      .. "got number")
    assert.has_error(function() gpu.platforms()[1]:info("max_compute_units") end,
      "luagpu: platform:info: argument #1: unknown query 'max_compute_units' (expected a "
      .. "CL_PLATFORM_* name, with or without its prefix)")
  end)
end)
