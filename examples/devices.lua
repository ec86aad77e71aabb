-- devices.lua: every OpenCL platform and device on this machine, in full.
--   build/luagpu examples/devices.lua
local gpu = gpu or require "luagpu"

local platforms = gpu.platforms()
if #platforms == 0 then
  print("no OpenCL platforms found (is an ICD such as pocl-opencl-icd installed?)")
  os.exit(1)
end
for i, p in ipairs(platforms) do
  print(("platform %d: %s (%s)"):format(i, p.name, p.version))
  for j, dev in ipairs(p.devices) do
    print(("\n  device %d.%d"):format(i, j))
    print((dev:summary():gsub("[^\n]+", "    %0")))
  end
  print()
end
print("default device: " .. tostring(gpu.device()))
