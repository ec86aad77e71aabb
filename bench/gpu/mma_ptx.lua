-- bench/gpu/mma_ptx.lua: writes the PTX that NVIDIA's OpenCL compiler makes
-- of matmul's tensor-core programs (lua/luagpu/matmul/mma.lua, with its
-- current params), one file per program, so that CUDA's own tools can show
-- what the GPU runs (registers, spills, the SASS of the inner loop):
--
--   build/luagpu bench/gpu/mma_ptx.lua [DIR [SIZE]]      # default /tmp, 4096
--   /usr/local/cuda/bin/ptxas -arch=sm_90 -v DIR/tf32.ptx -o tf32.cubin
--   /usr/local/cuda/bin/cuobjdump -sass tf32.cubin > tf32.sass
--
-- (The GPU machine has CUDA's toolkit under /usr/local/cuda; the PTX's
-- .version needs a ptxas at least as new as the driver's compiler.)
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"
local mma = require "luagpu.matmul.mma"

local dir = arg and arg[1] or "/tmp"
local n = tonumber(arg and arg[2]) or 4096
local dev = gpu.device()
local A, B = dev:buffer("float", {n, n}), dev:buffer("float", {n, n})
local C = dev:buffer("float", {n, n})
for _, p in ipairs{"tf32", "3xtf32"} do
  print(p .. ": " .. matmul.path(dev, p))
  matmul(A, B, C, {precision = p})
end
dev:finish()
for key, prog in pairs(mma.programs_of(dev)) do
  local bin = prog.binary
  local at = bin:find(".version", 1, true)
  if not at then
    print(key .. ": no PTX in the binary (not NVIDIA's driver?)")
  else
    local ptx = bin:sub(at)
    local stop = ptx:find("\0", 1, true)
    if stop then ptx = ptx:sub(1, stop - 1) end
    local name = dir .. "/" .. (key:find("THREE") and "3xtf32" or "tf32") .. ".ptx"
    local f = assert(io.open(name, "wb"))
    f:write(ptx)
    f:close()
    print(("%s: %d bytes of PTX (%s)"):format(name, #ptx, key))
  end
end
