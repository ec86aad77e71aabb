-- luagpu --doctor: the normal machine passes; a missing or broken ICD, and a
-- LUAGPU_DEVICE that picks nothing, are named with their fix and exit 1.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local support = require "support"
local shell_quote, write_file = support.shell_quote, support.write_file

-- Runs `env luagpu --doctor`; returns stdout and stderr together, and the
-- exit code.
local function doctor(env)
  local p = io.popen(string.format("%s %s --doctor 2>&1", env or "", shell_quote(PROG)))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

local tmpdir = support.tmpdir

describe("luagpu --doctor", function()
  it("passes on this machine: loader, driver, each device's test launch, the cache", function()
    local cache = tmpdir()
    local out, code = doctor("XDG_CACHE_HOME=" .. shell_quote(cache))
    assert.equals(0, code, out)
    assert.matches("ok    the OpenCL ICD loader: [^\n]*libOpenCL", out)
    assert.matches("\n  ok    platform ", out)
    local gpu = require "luagpu"
    for i, d in ipairs(gpu.devices()) do
      assert.matches(string.format("ok    device %d: %s (%s): a test kernel builds, runs and "
                                   .. "computes right", i, d.name, d.type), out, 1, true)
    end
    assert.matches("ok    default device: ", out, 1, true)
    assert.matches("ok    " .. cache .. "/luagpu: writable, %d+ entries", out)
    assert.matches("everything looks right\n$", out)
    assert.not_matches("FAIL", out, 1, true)
    os.execute("rm -r " .. shell_quote(cache))
  end)

  it("says no ICD file names a driver when the vendor folder is empty, exit 1", function()
    local dir = tmpdir()
    local out, code = doctor("OCL_ICD_VENDORS=" .. shell_quote(dir))
    os.execute("rm -r " .. shell_quote(dir))
    assert.equals(1, code, out)
    assert.matches("FAIL  no ICD file names a driver (OCL_ICD_VENDORS=" .. dir
                   .. " holds no .icd file)\n        fix: install pocl-opencl-icd", out, 1, true)
    assert.matches("FAIL  no OpenCL platform (clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR)",
                   out, 1, true)
    assert.matches("2 problems found\n$", out)
  end)

  it("names an ICD file whose driver cannot be loaded", function()
    local dir = tmpdir()
    write_file(dir .. "/broken.icd", "libno_such_driver_xyz.so\n")
    write_file(dir .. "/empty.icd", "\n")
    local out, code = doctor("OCL_ICD_VENDORS=" .. shell_quote(dir))
    os.execute("rm -r " .. shell_quote(dir))
    assert.equals(1, code, out)
    assert.matches("FAIL  " .. dir .. "/broken.icd names libno_such_driver_xyz.so, which "
                   .. "cannot be loaded: libno_such_driver_xyz.so: cannot open shared object "
                   .. "file", out, 1, true)
    assert.matches("FAIL  " .. dir .. "/empty.icd names nothing\n        fix: the file should "
                   .. "hold the driver's library on its first line", out, 1, true)
  end)

  it("says OCL_ICD_VENDORS names nothing that exists", function()
    local out, code = doctor("OCL_ICD_VENDORS=/nonexistent/vendors")
    assert.equals(1, code, out)
    assert.matches("FAIL  OCL_ICD_VENDORS=/nonexistent/vendors does not exist\n"
                   .. "        fix: unset OCL_ICD_VENDORS", out, 1, true)
  end)

  it("names a LUAGPU_DEVICE that picks no device", function()
    local out, code = doctor("LUAGPU_DEVICE=no_such_device_xyz")
    assert.equals(1, code, out)
    assert.matches("FAIL  LUAGPU_DEVICE=no_such_device_xyz picks no device: ", out, 1, true)
    assert.matches("fix: unset LUAGPU_DEVICE, or set it to a number or name from "
                   .. "luagpu --devices", out, 1, true)
    assert.matches("1 problem found\n$", out)
  end)

  -- The writability probe once opened ".doctor-probe" for writing: through
  -- a symbolic link left there it truncated the link's target.
  it("probes the cache folder without following or truncating what is there", function()
    local home = tmpdir()
    local dir = home .. "/luagpu"
    assert(os.execute("mkdir " .. shell_quote(dir)))
    local target = home .. "/precious.txt"
    write_file(target, "keep me\n")
    assert(os.execute("ln -s " .. shell_quote(target) .. " " .. shell_quote(dir .. "/.doctor-probe")))
    local out, code = doctor("XDG_CACHE_HOME=" .. shell_quote(home))
    assert.equals(0, code, out)
    assert.matches("ok    " .. dir:gsub("%p", "%%%0") .. ": writable, %d+ entries", out)
    local f = assert(io.open(target, "rb"))
    assert.equals("keep me\n", f:read("a"))
    f:close()
    local p = io.popen("readlink " .. shell_quote(dir .. "/.doctor-probe"))
    assert.equals(target, p:read("l"))
    p:close()
    p = io.popen("ls -A " .. shell_quote(dir))
    local names = p:read("a")   -- the probe removed its own file only
    p:close()
    assert.matches("^%.doctor%-probe\n", names)
    assert.not_matches("doctor%-probe%.", names)
    os.execute("rm -rf " .. shell_quote(home))
  end)

  it("fails when the cache folder is a file, which no build could use", function()
    -- (it said "does not exist yet" and "everything looks right")
    local home = tmpdir()
    write_file(home .. "/luagpu", "")
    local out, code = doctor("XDG_CACHE_HOME=" .. shell_quote(home))
    assert.equals(1, code, out)
    assert.matches("FAIL  " .. home .. "/luagpu is not a folder: no program can be cached", out,
                   1, true)
    os.execute("rm -rf " .. shell_quote(home))
  end)

  it("names a cache folder that is a file when the driver then lists no device", function()
    -- (PoCL lists no device when $XDG_CACHE_HOME is a file; the message
    -- blamed the driver's installation)
    local home = tmpdir()
    local file = home .. "/cache"
    write_file(file, "")
    local p = io.popen("XDG_CACHE_HOME=" .. shell_quote(file) .. " " .. PROG ..
                       " -e 'print(\"found \" .. tostring(gpu.device()))' 2>&1")
    local out = p:read("a")
    p:close()
    os.execute("rm -rf " .. shell_quote(home))
    if not out:find("^found ") then       -- (a driver that needs no cache folder lists its devices)
      assert.matches("gpu.device: no OpenCL device found: the cache folder " .. file ..
                     " is not a folder, and drivers such as PoCL then list no device", out, 1, true)
    end
  end)

  it("names the cache folder or POCL_DEVICES when the driver then lists no device", function()
    -- (each blamed the driver's installation, and --doctor advised
    -- installing PoCL)
    local home = tmpdir()
    write_file(home .. "/file", "")
    os.execute("ln -s " .. shell_quote(home .. "/nothing") .. " " .. shell_quote(home .. "/dangling"))
    local function run(env)
      local p = io.popen(env .. " " .. PROG .. " -e 'print(\"found \" .. tostring(gpu.device()))' 2>&1")
      local out = p:read("a")
      p:close()
      return out
    end
    for _, case in ipairs{{home .. "/file/sub", "cannot be made (a part of its path is not a folder)"},
                          {home .. "/dangling", "is a symbolic link to nothing"}} do
      local out = run("XDG_CACHE_HOME=" .. shell_quote(case[1]))
      if not out:find("^found ") then
        assert.matches("gpu.device: no OpenCL device found: the cache folder " .. case[1] .. " " ..
                       case[2] .. ", and drivers such as PoCL then list no device", out, 1, true)
      end
    end
    local out = run("POCL_DEVICES=nonexistent")
    if not out:find("^found ") then
      assert.matches("no OpenCL device found (POCL_DEVICES=nonexistent: PoCL lists only the " ..
                     "devices it names", out, 1, true)
    end
    -- set but empty: PoCL lists none, and the message blamed the installation
    out = run("POCL_DEVICES=")
    if not out:find("^found ") then
      assert.matches("no OpenCL device found (POCL_DEVICES is set but empty: PoCL then lists " ..
                     "no device; unset it, or name one such as pthread)", out, 1, true)
    end
    local dout, code = doctor("XDG_CACHE_HOME=" .. shell_quote(home .. "/file/sub"))
    assert.equals(1, code, dout)
    if dout:find("no default device", 1, true) then
      assert.matches("fix: make that a writable folder, or set XDG_CACHE_HOME to one", dout, 1, true)
    end
    -- a cache folder that is a link to nothing: said, not "does not exist yet"
    os.execute("mkdir -p " .. shell_quote(home .. "/xc") .. " && ln -s " ..
               shell_quote(home .. "/nothing") .. " " .. shell_quote(home .. "/xc/luagpu"))
    dout, code = doctor("XDG_CACHE_HOME=" .. shell_quote(home .. "/xc"))
    assert.equals(1, code, dout)
    assert.matches("FAIL  " .. home .. "/xc/luagpu is a symbolic link to nothing", dout, 1, true)
    os.execute("rm -rf " .. shell_quote(home))
  end)

  it("names $LUAGPU_DEVICE when its index is out of range", function()
    -- (it said "argument #1", which the call did not give, and a number
    -- past 2^63 as 9223372036854775807)
    for _, v in ipairs{"99", "99999999999999999999"} do
      local p = io.popen("LUAGPU_DEVICE=" .. v .. " " .. PROG .. " -e 'gpu.device()' 2>&1")
      local out = p:read("a")
      p:close()
      assert.matches("gpu.device: $LUAGPU_DEVICE=" .. v .. ": device index out of range (1 to ",
                     out, 1, true)
    end
  end)

  it("says when the program cache is off", function()
    local out, code = doctor("LUAGPU_NO_CACHE=1")
    assert.equals(0, code, out)
    assert.matches("note  off (LUAGPU_NO_CACHE=1): every program is compiled each run", out, 1, true)
  end)
end)
