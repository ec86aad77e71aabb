-- host/doctor.lua: `luagpu --doctor`, embedded into the program. Checks, in
-- order, the ICD loader and the vendor files it reads, each platform and
-- device (a test build and launch on each), the default device and the
-- program cache folder; prints one line per check, and for each problem the
-- fix in plain words. main.c runs this chunk with the program's name and
-- the probes of host/probe.c.
local progname, probe = ...
local M = {}

local PROBE_SOURCE = [[
kernel void doctor_probe(global int *x, int k) {
  size_t i = get_global_id(0);
  x[i] = (int)i * k;
}
]]
local PROBE_N = 64

-- The report: lines out, problems counted. Each check says ok, note (worth
-- knowing, not broken) or FAIL, with the fix under it.
local function reporter(out)
  local r = {failed = 0}
  function r.section(title) out(title .. "\n") end
  function r.ok(msg) out("  ok    " .. msg .. "\n") end
  function r.note(msg, fix)
    out("  note  " .. msg .. "\n")
    if fix then out("        " .. fix .. "\n") end
  end
  function r.fail(msg, fix)
    r.failed = r.failed + 1
    out("  FAIL  " .. msg .. "\n")
    if fix then out("        fix: " .. fix .. "\n") end
  end
  return r
end

local INSTALL = "install pocl-opencl-icd (any CPU) or your GPU vendor's OpenCL package "
                .. "(nvidia-opencl-icd, intel-opencl-icd, mesa-opencl-icd, rocm-opencl-runtime)"

local function first_line(path)
  local f = io.open(path)
  if not f then return nil end
  local line = f:read("l") or ""
  f:close()
  return (line:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- Which vendor files the ICD loader reads: a list of {file =, lib =}, and
-- where they came from (a sentence). A library named directly has no file.
local function vendor_files(r)
  local env, where = os.getenv("OCL_ICD_VENDORS"), nil
  local dir = "/etc/OpenCL/vendors"
  if env and env ~= "" then
    local kind = probe.isdir(env)
    if kind == nil then
      r.fail("OCL_ICD_VENDORS=" .. env .. " does not exist",
             "unset OCL_ICD_VENDORS, or point it at a folder of .icd files")
      return {}
    elseif kind == "file" then
      if env:match("%.icd$") then return {{file = env, lib = first_line(env)}}, "OCL_ICD_VENDORS" end
      return {{lib = env}}, "OCL_ICD_VENDORS"
    end
    dir, where = env, "OCL_ICD_VENDORS=" .. env
  else
    local khr = os.getenv("OPENCL_VENDOR_PATH")
    if khr and khr ~= "" and probe.isdir(khr) == "folder" then dir = khr end
    where = dir
  end
  local names, err = probe.listdir(dir)
  if not names then
    r.fail("the vendor folder cannot be read: " .. err,
           INSTALL .. "; its package creates " .. dir)
    return {}, where
  end
  local files = {}
  for _, name in ipairs(names) do
    if name:match("%.icd$") then
      local path = dir .. "/" .. name
      files[#files + 1] = {file = path, lib = first_line(path)}
    end
  end
  return files, where
end

-- The ICD loader and the drivers its vendor files name.
local function check_icd(r)
  r.section("ICD loader")
  local lib = probe.loader()
  if lib then r.ok("the OpenCL ICD loader: " .. lib) end
  local files, where = vendor_files(r)
  local extra = os.getenv("OCL_ICD_FILENAMES")
  if extra and extra ~= "" then
    for name in extra:gmatch("[^:]+") do files[#files + 1] = {lib = name} end
  end
  local good = 0
  for _, f in ipairs(files) do
    local label = f.file and (f.file .. " names " .. (f.lib ~= "" and f.lib or "nothing"))
                  or ("the driver " .. f.lib)
    if f.lib == nil or f.lib == "" then
      r.fail(label, "the file should hold the driver's library on its first line; "
             .. "reinstall the package that installed it, or remove the file")
    else
      local ok, err = probe.canload(f.lib)
      if ok then
        good = good + 1
        r.ok(label)
      else
        r.fail(label .. ", which cannot be loaded: " .. err,
               "reinstall the package that installed " .. (f.file or f.lib)
               .. ", or remove the file")
      end
    end
  end
  if #files == 0 and where then
    r.fail("no ICD file names a driver (" .. where .. " holds no .icd file)", INSTALL)
  end
  return good
end

local function check_device(r, i, dev)
  local label = string.format("device %d: %s (%s)", i, dev.name, dev.type)
  if not dev.available then
    r.fail(label .. " reports itself unavailable",
           "another process may hold it exclusively, or its driver needs a restart")
    return
  end
  local ok, err = pcall(function()
    local prog = dev:build(PROBE_SOURCE)
    local b <close> = dev:buffer("int", PROBE_N)
    prog.doctor_probe(b, 3):run({PROBE_N}):wait()
    local got = b:get()
    for j = 1, PROBE_N do
      if got[j] ~= (j - 1) * 3 then
        error(string.format("element %d is %s, expected %d", j, tostring(got[j]), (j - 1) * 3), 0)
      end
    end
  end)
  if ok then
    r.ok(label .. ": a test kernel builds, runs and computes right")
  else
    r.fail(label .. ": the test kernel failed: " .. tostring(err):gsub("\n.*", ""),
           "the driver cannot build or run kernels; update or reinstall it, "
           .. "or pick another device with LUAGPU_DEVICE")
  end
end

local function check_platforms(r, gpu, drivers)
  r.section("Platforms and devices")
  local n, status = probe.platforms()
  if n == 0 then
    if drivers > 0 then
      r.fail("no OpenCL platform (clGetPlatformIDs: " .. status .. ") although a driver loads",
             "the driver found no usable hardware: check that the GPU is seen "
             .. "(nvidia-smi, rocm-smi, clinfo) and that you may use it (the video or render group)")
    else
      r.fail("no OpenCL platform (clGetPlatformIDs: " .. status .. ")",
             "no driver loads: see the ICD loader's problem above")
    end
    return
  end
  local all = gpu.devices()
  local function index(dev)
    for i, d in ipairs(all) do if d == dev then return i end end
    return 0
  end
  for _, p in ipairs(gpu.platforms()) do
    r.ok(string.format("platform %s (%s), %s", p.name, p.vendor, p.version))
    if #p.devices == 0 then
      r.note("platform " .. p.name .. " has no devices")
    end
    for _, dev in ipairs(p.devices) do check_device(r, index(dev), dev) end
  end
  local ok, dev = pcall(gpu.device)
  if ok then
    r.ok("default device: " .. dev.name .. (os.getenv("LUAGPU_DEVICE")
         and " (LUAGPU_DEVICE=" .. os.getenv("LUAGPU_DEVICE") .. ")" or ""))
  elseif os.getenv("LUAGPU_DEVICE") then
    r.fail("LUAGPU_DEVICE=" .. os.getenv("LUAGPU_DEVICE") .. " picks no device: "
           .. tostring(dev):gsub("^luagpu: ", ""),
           "unset LUAGPU_DEVICE, or set it to a number or name from " .. progname .. " --devices")
  else
    -- (PoCL lists no device when its cache folder cannot be used, or
    -- POCL_DEVICES names none: gpu.device's message says which)
    local msg = tostring(dev)
    r.fail("no default device: " .. msg,
           msg:find("the cache folder", 1, true) and
             "make that a writable folder, or set XDG_CACHE_HOME to one" or
           msg:find("POCL_DEVICES", 1, true) and "unset POCL_DEVICES, or name one such as pthread"
           or INSTALL)
  end
end

-- The program cache: where it is, and whether it can be written.
local function check_cache(r)
  r.section("Program cache")
  local off = os.getenv("LUAGPU_NO_CACHE")
  if not probe.cache_on() then
    r.note("off (LUAGPU_NO_CACHE=" .. off .. "): every program is compiled each run")
    return
  end
  local xdg, home = os.getenv("XDG_CACHE_HOME"), os.getenv("HOME")
  local dir = xdg and xdg:sub(1, 1) == "/" and xdg .. "/luagpu"
              or home and home ~= "" and home .. "/.cache/luagpu"
  if not dir then
    r.fail("no cache folder: neither XDG_CACHE_HOME nor HOME is set",
           "set HOME (or XDG_CACHE_HOME to an absolute folder)")
    return
  end
  -- (something else there, or on the way to it, keeps every build from
  -- being cached: it said "does not exist yet" and "everything looks right")
  local kind = probe.isdir(dir)
  if kind == "file" then
    r.fail(dir .. " is not a folder: no program can be cached",
           "remove it (a folder is made there on the first build), or set XDG_CACHE_HOME")
    return
  end
  local parent = dir:match("^(.*)/[^/]*$")
  local pkind = parent and parent ~= "" and probe.isdir(parent)
  if kind == nil and pkind == "file" then
    r.fail(parent .. " is not a folder: the cache folder " .. dir .. " cannot be made",
           "set XDG_CACHE_HOME to a folder")
    return
  end
  if kind == "link" then
    r.fail(dir .. " is a symbolic link to nothing (or a loop of them): no program can be cached",
           "remove it, or point it at a folder")
    return
  end
  if kind ~= "folder" then
    -- (made on the first build: where the folder above lets it be made)
    if pkind == "folder" and not probe.canwrite(parent) then
      r.fail(dir .. " cannot be made: " .. parent .. " is not writable",
             "set XDG_CACHE_HOME to a writable folder, or LUAGPU_NO_CACHE=1")
      return
    end
    r.note(dir .. " does not exist yet (it is made on the first build)")
    return
  end
  local ok, err = probe.canwrite(dir)
  if ok then
    local names = probe.listdir(dir) or {}
    r.ok(string.format("%s: writable, %d entries", dir, #names))
  else
    r.fail(dir .. " cannot be written: " .. err,
           "fix its owner or permissions, delete it, or set LUAGPU_NO_CACHE=1")
  end
end

-- luagpu --doctor: returns the exit status (1 when something is broken).
function M.run(gpu)
  local r = reporter(io.write)
  io.write(progname, " ", gpu.version, " doctor\n")
  local drivers = check_icd(r)
  check_platforms(r, gpu, drivers)
  check_cache(r)
  if r.failed == 0 then
    io.write("everything looks right\n")
    return 0
  end
  io.write(string.format("%d problem%s found\n", r.failed, r.failed == 1 and "" or "s"))
  return 1
end

return M
