-- luagpu.core.programs: the one per-device cache of the helpers' programs.
-- Every helper builds through P.get; the cache key, the counter and the
-- wrapping of build errors are made here and nowhere else.
--
--   P.get(dev, recipe)     the program recipe describes, built on first use
--   P.built(family)        programs built so far for family ("matmul"), or
--                          for every family (nil)
--   P.counter(M, family)   makes M.programs_built read P.built(family)
--
-- A recipe is a table:
--   family    whose counter counts the build ("reduce", "matmul", "algo",
--             "tensor")
--   file      a kernel file (kernels/NAME.cl, gpu.kernel_source), or
--   files     a list of them, compiled as one source (each from its line 1),
--   source    or the source itself: a string, or a function returning it
--             (called only on a miss; then key must be given)
--   key       what tells this source from others of the family when source
--             is a function (default: the source text)
--   prefix    text put before the source (no #line: it may define macros)
--   defines   {NAME = value} (in key order) or {{NAME, value}, ...} (in
--             list order), as "#define NAME value" lines before the source
--   options   the build options (a string)
--   custom    names the user's expressions that went into the source: a
--             failed build raises "luagpu: FN: CUSTOM do not compile on
--             DEVICE:\nLOG" at the script's line (fn: the recipe's fn)
--   fn        the function name for that message
--   make      function(dev, source, options) -> program, for a program that
--             is more than a build (a binary patched after a first build)
-- Without custom, a failed build raises the build's own error.

local gpu = require "luagpu"
local H = require "luagpu.core.check"

local type, pairs, ipairs, tostring, pcall, error = type, pairs, ipairs, tostring, pcall, error
local setmetatable, getmetatable = setmetatable, getmetatable
local sort, concat, format = table.sort, table.concat, string.format

local P = {}

local cache = setmetatable({}, {__mode = "k"})   -- device -> key -> program
local built = {}                                  -- family -> count

-- The #define lines of defines (a map or a list of pairs), and their part
-- of the key: the same for a map whatever its order.
local function define_lines(defines)
  local lines = {}
  if defines == nil then return lines end
  if defines[1] ~= nil then
    for i, d in ipairs(defines) do lines[i] = format("#define %s %s", d[1], tostring(d[2])) end
    return lines
  end
  for k, v in pairs(defines) do lines[#lines + 1] = format("#define %s %s", k, tostring(v)) end
  sort(lines)
  return lines
end

local function source_of(r)
  if r.file then return "#line 1\n" .. gpu.kernel_source(r.file) end
  if r.files then
    local parts = {}
    for i, f in ipairs(r.files) do parts[i] = "#line 1\n" .. gpu.kernel_source(f) end
    return concat(parts, "\n")
  end
  local s = r.source
  if type(s) == "function" then s = s() end
  return s
end

-- The key of recipe r: family, what names the source, defines, options.
local function key_of(r, defines)
  local what = r.file or (r.files and concat(r.files, "+")) or r.key or r.source
  return concat({r.family, what, r.prefix or "", concat(defines, "\n"), r.options or ""}, "\0")
end

-- The program of recipe r on dev: from the cache, or built (and counted).
function P.get(dev, r)
  local defines = define_lines(r.defines)
  local key = key_of(r, defines)
  local entries = cache[dev]
  if entries == nil then
    entries = {}
    cache[dev] = entries
  end
  local prog = entries[key]
  if prog then return prog end
  local body = source_of(r)
  defines[#defines + 1] = body
  local src = (r.prefix or "") .. concat(defines, "\n")
  local ok
  if r.make then ok, prog = pcall(r.make, dev, src, r.options)
  else ok, prog = pcall(dev.build, dev, src, r.options and {options = r.options} or nil) end
  if not ok then
    if r.custom then
      H.fail(r.fn, "%s do not compile on %s:\n%s", r.custom, dev.name, tostring(prog))
    end
    error(prog, 0)
  end
  built[r.family] = (built[r.family] or 0) + 1
  entries[key] = prog
  return prog
end

function P.built(family)
  if family then return built[family] or 0 end
  local n = 0
  for _, c in pairs(built) do n = n + c end
  return n
end

-- Makes M.programs_built (a field scripts and specs read) the count of
-- family: M's metatable answers it, so M must not hold the field itself.
function P.counter(M, family)
  local mt = getmetatable(M) or {}
  local index = mt.__index
  mt.__index = function(t, k)
    if k == "programs_built" then return built[family] or 0 end
    if type(index) == "function" then return index(t, k) end
    if index then return index[k] end
  end
  return setmetatable(M, mt)
end

return P
