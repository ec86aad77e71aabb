-- host/main.lua: the Lua half of the luagpu program (host/main.c), embedded
-- into it at build time: the --devices table, the banner's device line and
-- the REPL's printer. main.c runs this chunk once, with the program's name,
-- and keeps the table it returns.
local progname = ...
local M = {}

local function mem(n)
  local e = n >= 2^30 and 30 or n >= 2^20 and 20 or 10
  return string.format("%.1f %s", n / 2^e, ({[30] = "GiB", [20] = "MiB", [10] = "KiB"})[e])
end

-- luagpu --devices: prints a table of the devices; returns the exit status.
function M.devices(gpu)
  if #gpu.platforms() == 0 then
    io.stderr:write(progname, ": no OpenCL platforms found ",
                    "(is an ICD such as pocl-opencl-icd installed?)\n")
    return 1
  end
  local devs = gpu.devices()
  local okd, default = pcall(gpu.device)
  local rows = {{"#", "platform", "device", "type", "compute units", "global memory",
                 "max alloc"}}
  for i, d in ipairs(devs) do
    rows[#rows + 1] = {(okd and d == default) and i .. "*" or tostring(i), d.platform, d.name,
      d.type, tostring(d.compute_units), mem(d.global_mem_size), mem(d.max_alloc_size)}
  end
  local width, right = {}, {true, [5] = true, [6] = true, [7] = true}
  for _, row in ipairs(rows) do
    for j, cell in ipairs(row) do width[j] = math.max(width[j] or 0, #cell) end
  end
  for _, row in ipairs(rows) do
    local out = {}
    for j, cell in ipairs(row) do
      local pad = string.rep(" ", width[j] - #cell)
      out[j] = right[j] and pad .. cell or (j < #row and cell .. pad or cell)
    end
    print(table.concat(out, "  "))
  end
  if #devs == 0 then print("(no devices)") end
  if okd then print("* the default device: gpu.device() (set LUAGPU_DEVICE to pick another)") end
  return 0
end

-- The banner's second line: the default device, or why there is none.
function M.banner(gpu)
  local ok, d = pcall(gpu.device)
  if ok then return "default device: " .. tostring(d):gsub("^luagpu%.Device: ", "") end
  return "no default device: " .. tostring(d)
end

-- The REPL's printer: takes the results, returns one line for them. Strings
-- at the top level print as they are (so dev:summary() reads well); tables
-- show their contents to a small depth, host arrays their first values, other
-- userdata go through __tostring.
local maxdepth, maxitems = 3, 20
local keywords = {}
for w in ("and break do else elseif end false for function goto if in local nil not or "
          .. "repeat return then true until while"):gmatch("%a+") do keywords[w] = true end

local show

local function quote(s)
  return (string.format("%q", s):gsub("\\\n", "\\n"))
end

local function showkey(k, depth, seen)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") and not keywords[k] then return k end
  return "[" .. show(k, depth, seen) .. "]"
end

local order = {number = 1, string = 2}
local function before(a, b)
  local ta, tb = order[type(a)] or 3, order[type(b)] or 3
  if ta ~= tb then return ta < tb end
  if ta == 3 then return tostring(a) < tostring(b) end
  return a < b
end

local function showtable(t, depth, seen)
  if seen[t] then return "<cycle>" end
  if depth > maxdepth then return next(t) == nil and "{}" or "{...}" end
  seen[t] = true
  local parts, len, keys = {}, rawlen(t), {}
  for i = 1, math.min(len, maxitems) do parts[i] = show(rawget(t, i), depth + 1, seen) end
  for k in next, t do
    if not (math.type(k) == "integer" and k >= 1 and k <= len) then keys[#keys + 1] = k end
  end
  table.sort(keys, before)
  for _, k in ipairs(keys) do
    if #parts >= maxitems then break end
    parts[#parts + 1] = showkey(k, depth + 1, seen) .. " = " .. show(rawget(t, k), depth + 1, seen)
  end
  local more = len + #keys - #parts
  if more > 0 then parts[#parts + 1] = "... (" .. more .. " more)" end
  seen[t] = nil
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function showarray(a)
  local head = tostring(a)
  local ok, n = pcall(function() return #a end)
  if not ok or head:find("{", 1, true) then return head end
  local fmt = tostring(a.type):match("^float") and "%.7g" or nil
  local parts = {}
  for i = 1, math.min(n, maxitems) do
    local v = a[i]
    parts[i] = fmt and string.format(fmt, v) or tostring(v)
  end
  if n > maxitems then parts[#parts + 1] = "... (" .. n - maxitems .. " more)" end
  return head .. " {" .. table.concat(parts, ", ") .. "}"
end

function show(v, depth, seen)
  local t = type(v)
  if t == "string" then return quote(v) end
  if t == "table" then
    local mt = getmetatable(v)
    if type(mt) == "table" and rawget(mt, "__tostring") then return tostring(v) end
    return showtable(v, depth, seen)
  end
  if t == "userdata" then
    local mt = getmetatable(v)
    if depth == 1 and type(mt) == "table" and rawget(mt, "__name") == "luagpu.Array" then
      local ok, s = pcall(showarray, v)
      if ok then return s end
    end
  end
  return tostring(v)
end

function M.printer(...)
  local out = table.pack(...)
  for i = 1, out.n do
    local v = out[i]
    out[i] = type(v) == "string" and v or show(v, 1, {})
  end
  return table.concat(out, "\t", 1, out.n)
end

return M
