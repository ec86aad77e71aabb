-- luagpu.autoload: which Lua helper provides what the C module shows
-- before that helper is loaded. luaopen_luagpu runs it once (the one helper
-- the C side names): open(gpu) declares the methods and module fields,
-- loaded on first lookup; the other functions are the hooks the C side
-- calls (module.c's gpu.load, trace.c's gpu.trace(path)). A helper that
-- adds methods to a C type registers them with gpu.extend itself; what has
-- to be found before anything requires the helper is listed here, and
-- nowhere else.

-- require stays global, looked up when used, as a script's require is
local ipairs, type, rawset, setmetatable = ipairs, type, rawset, setmetatable

local M = {}

-- Methods of C types that a helper provides: class -> {module, the
-- module's table of them, names}.
local METHODS = {
  {"Device", "luagpu.tensor", "device_methods", {"tensor", "arange", "rand", "randn", "memory",
              "zeros", "ones", "full", "eye", "linspace", "randint", "uniform", "normal",
              "randperm", "empty_cache"}},
}

-- Module fields loaded on first use: gpu.NAME = require(module), or the
-- module's field of that name.
local FIELDS = {
  reduce = {"luagpu.reduce"},
  matmul = {"luagpu.matmul"},
  tensor = {"luagpu.tensor"},
  algo = {"luagpu.algo"},
  where = {"luagpu.tensor", "where"},
  cat = {"luagpu.tensor", "cat"},
  stack = {"luagpu.tensor", "stack"},
  outer = {"luagpu.tensor", "outer"},
  searchsorted = {"luagpu.tensor", "searchsorted"},
  einsum = {"luagpu.tensor", "einsum"},
  shard = {"luagpu.tensor", "shard"},
  replicate = {"luagpu.tensor", "replicate"},
  warmup = {"luagpu.warmup", "warmup"},
  show = {"luagpu.show", "show"},
}

-- Declares everything above on the module table gpu (luaopen_luagpu's).
function M.open(gpu)
  for _, m in ipairs(METHODS) do
    local class, module, field, names = m[1], m[2], m[3], m[4]
    gpu.extend(class, names, function()
      local provided, methods = require(module)[field], {}
      if type(provided) ~= "table" then return end
      for _, name in ipairs(names) do
        if type(provided[name]) == "function" then methods[name] = provided[name] end
      end
      gpu.extend(class, methods)
    end)
  end
  -- (__fields: the names, for the REPL's Tab and help)
  setmetatable(gpu, {__fields = FIELDS, __index = function(t, key)
    local f = FIELDS[key]
    if f == nil then return nil end
    local v = require(f[1])
    if f[2] then v = v[f[2]] end
    rawset(t, key, v)
    return v
  end})
end

-- gpu.load(path, dev, ...) with a Device: a tensor (luagpu.tensor's load).
function M.load(...)
  return require("luagpu.tensor").load(...)
end

-- gpu.trace(path): writes the record (luagpu.trace's writer); fn names
-- the caller in messages.
function M.write_trace(record, path, fn)
  return require("luagpu.trace").write(record, path, fn)
end

return M
