local gpu = require "luagpu"
for i, d in ipairs(gpu.devices("gpu")) do
  local ok, e = pcall(function()
    local p = d:build("__kernel void f(__global int *x) { x[0] = 7; }")
    local b = d:buffer("int", 1)
    p.f(b):run({1}):wait()
    return b:get()[1]
  end)
  print("build+run", i, d.name, ok, e)
  local ok2, e2 = pcall(function() return require("luagpu.reduce").sum(d:buffer("float", 1000, {host = gpu.array("float", 1000):fill(1)})) end)
  print("reduce", i, ok2, e2)
end
