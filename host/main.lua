-- host/main.lua: the Lua half of the luagpu program (host/main.c), embedded
-- into it at build time: the --devices table, the banner's device line, the
-- REPL's printer, its Tab completion and help(). main.c runs this chunk
-- once, with the program's name, the probes of probe.c and the table of
-- host/help.lua, and keeps the table it returns.
local progname, _, H = ...
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

-- luagpu --precompile file.cl ... [-DNAME=v -Idir ...]: builds each file for
-- every device (the one LUAGPU_DEVICE picks, when set), with the words that
-- start with "-" as build options, which fills the program cache; returns
-- the exit status.
function M.precompile(gpu, files)
  local ok, devs = true, gpu.devices()
  if os.getenv("LUAGPU_DEVICE") then ok, devs = pcall(function() return {gpu.device()} end) end
  if not ok or #devs == 0 then
    io.stderr:write(progname, ": --precompile: ", ok and "no OpenCL device found" or tostring(devs),
                    "\n")
    return 1
  end
  local off = os.getenv("LUAGPU_NO_CACHE")
  if off and off ~= "" and off ~= "0" then
    io.stderr:write(progname, ": --precompile: the program cache is off (LUAGPU_NO_CACHE=", off,
                    "): the builds are checked but not kept\n")
  end
  local status, options, names, takes = 0, {}, {}, false
  for _, a in ipairs(files) do   -- words starting with "-" are build options
    if takes or a:sub(1, 1) == "-" then   -- (a bare -D or -I takes the next word)
      options[#options + 1] = a
      takes = not takes and (a == "-D" or a == "-I")
    else
      names[#names + 1] = a
    end
  end
  local opts = #options > 0 and {options = table.concat(options, " ")} or nil
  for _, file in ipairs(names) do
    for _, dev in ipairs(devs) do
      local built, prog = pcall(dev.build_file, dev, file, opts)
      if built then
        local n = #prog.kernels
        print(string.format("%s: %s: %d kernel%s, %s", file, dev.name, n, n == 1 and "" or "s",
                            prog.cached and "already in the cache" or "built"))
      else
        io.stderr:write(progname, ": ", tostring(prog):gsub("^luagpu: ", ""), "\n")
        status = 1
      end
    end
  end
  return status
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

-- Host arrays: one line of values, or for a shaped array of scalars, a
-- matrix (leading dimensions as rows), elided in the middle past 10 rows or
-- columns, right-aligned.
local maxrows, maxcols = 10, 10

local function showmatrix(head, a, fmt, rows, cols)
  local function pick(n, max)
    local list = {}
    if n <= max then
      for i = 1, n do list[i] = i end
    else
      for i = 1, max // 2 do list[#list + 1] = i end
      list[#list + 1] = false
      for i = n - max // 2 + 1, n do list[#list + 1] = i end
    end
    return list
  end
  local rlist, clist, width, cells = pick(rows, maxrows), pick(cols, maxcols), {}, {}
  for r, i in ipairs(rlist) do
    cells[r] = {}
    for c, j in ipairs(clist) do
      local s = "..."
      if i and j then
        local v = a[(i - 1) * cols + j]
        s = fmt and string.format(fmt, v) or tostring(v)
      elseif not i and j then
        s = ":"
      end
      cells[r][c] = s
      width[c] = math.max(width[c] or 0, #s)
    end
  end
  local lines = {head}
  for r, row in ipairs(cells) do
    for c, s in ipairs(row) do row[c] = string.rep(" ", width[c] - #s) .. s end
    lines[#lines + 1] = (r == 1 and "{{" or " {") .. table.concat(row, ", ")
                        .. (r == #cells and "}}" or "},")
  end
  return table.concat(lines, "\n")
end

local function showarray(a)
  local head = tostring(a):match("^[^:]*")
  local n = #a
  local fmt = tostring(a.type):match("^float") and "%.7g" or nil
  local shape = a.shape
  if #shape >= 2 and n == a.count and n > 0 then
    local cols = shape[#shape]
    return showmatrix(head .. ":", a, fmt, n // cols, cols)
  end
  local parts = {}
  for i = 1, math.min(n, maxitems) do
    local v = a[i]
    parts[i] = fmt and string.format(fmt, v) or tostring(v)
  end
  if n > maxitems then parts[#parts + 1] = "... (" .. n - maxitems .. " more)" end
  return head .. ": {" .. table.concat(parts, ", ") .. "}"
end

function show(v, depth, seen)
  local t = type(v)
  if t == "string" then return quote(v) end
  if t == "table" then
    local mt = debug.getmetatable(v)
    if type(mt) == "table" and rawget(mt, "__tostring") then return tostring(v) end
    return showtable(v, depth, seen)
  end
  if t == "userdata" then
    local mt = debug.getmetatable(v)
    if depth == 1 and type(mt) == "table" and rawget(mt, "__name") == "luagpu.Array" then
      local ok, s = pcall(showarray, v)
      if ok then return s end
    end
  end
  return tostring(v)
end

-- One value as the printer shows it inside a table (error objects).
function M.show(v)
  return show(v, 1, {})
end

function M.printer(...)
  local out = table.pack(...)
  for i = 1, out.n do
    local v = out[i]
    out[i] = type(v) == "string" and v or show(v, 1, {})
  end
  return table.concat(out, "\t", 1, out.n)
end

-- ------------------------------------------------------ help and Tab

local function class_of(v)
  local mt = debug.getmetatable(v)
  local name = type(mt) == "table" and rawget(mt, "__name")
  return mt, type(name) == "string" and name or nil
end

local function is_name(k)
  return type(k) == "string" and k:match("^[%a_][%w_]*$") and not keywords[k]
end

-- The help table of a class ({fields =, methods =}): host/help.lua's for
-- the C classes, the metatable's __help() for the helpers' (a Tensor's).
local function class_help(mt, name)
  local cls = name and H.classes[name]
  if cls then return cls end
  local f = type(mt) == "table" and rawget(mt, "__help")
  if type(f) ~= "function" then return nil end
  local ok, c = pcall(f)
  return ok and type(c) == "table" and c or nil
end

-- The names gpu.extend declared on a methods table, to be loaded on their
-- first lookup (class.c keeps them in its __index's first upvalue).
local function declared(methods)
  local mt = debug.getmetatable(methods)
  local index = type(mt) == "table" and rawget(mt, "__index")
  if type(index) ~= "function" then return nil end
  local _, lazy = debug.getupvalue(index, 1)
  return type(lazy) == "table" and lazy or nil
end

-- The names v answers to after sep ("." fields and methods, ":" methods):
-- its own keys when a table (but an object's internals, "_..."), then its
-- metatables' __methods (and those declared, not yet loaded), __fields
-- (the names of fields read through __index), the class's documented
-- fields, and __index tables, up a chain of at most 8.
local function names_of(v, sep)
  local out, seen = {}, {}
  local function add(k, val, field)
    if is_name(k) and not seen[k] and (sep ~= ":" or type(val) == "function" and not field) then
      seen[k] = true
      out[#out + 1] = k
    end
  end
  local mt, name = class_of(v)
  if type(v) == "table" then
    for k, val in next, v do
      if not (name and type(k) == "string" and k:sub(1, 1) == "_") then add(k, val) end
    end
  end
  for _ = 1, 8 do
    if type(mt) ~= "table" then break end
    local methods = rawget(mt, "__methods")
    if type(methods) == "table" then
      for k, val in next, methods do add(k, val) end
      for k in next, declared(methods) or {} do add(k, names_of) end
    end
    local fields = rawget(mt, "__fields")
    if type(fields) == "table" and sep ~= ":" then
      for k in next, fields do add(k, nil, true) end
    end
    local cls = class_help(mt, name)
    if cls and sep ~= ":" then
      for _, f in ipairs(cls.fields) do add(f, nil, true) end
    end
    local index = rawget(mt, "__index")
    if type(index) ~= "table" then break end
    for k, val in next, index do add(k, val) end
    mt, name = class_of(index)
  end
  table.sort(out)
  return out
end

-- v[k] without raising: tables raw first, then through metamethods.
local function get(v, k)
  if type(v) == "table" and rawget(v, k) ~= nil then return rawget(v, k) end
  local ok, r = pcall(function() return v[k] end)
  return ok and r or nil
end

-- Tab: the completions of word ("gpu.de", "dev:", "b.ty", "pri"), whole.
function M.complete(word)
  local path, sep, prefix = word:match("^([%w_.]-)([.:]?)([%w_]*)$")
  if not path then return {} end
  local v, names = _G, nil
  if sep == "" then
    names = names_of(_G, ".")
    for k in pairs(keywords) do names[#names + 1] = k end
  else
    for part in (path .. "."):gmatch("([^.]*)%.") do
      if not is_name(part) then return {} end
      v = get(v, part)
      if v == nil then return {} end
    end
    names = names_of(v, sep)
  end
  local out, start = {}, path .. sep
  for _, k in ipairs(names) do
    if k:sub(1, #prefix) == prefix then out[#out + 1] = start .. k end
  end
  table.sort(out)
  return out
end

local GENERAL = [[
help(v) shows what v offers: help(gpu), help(dev), help(t) for a tensor t, help(buffer), ...
Tab completes names, fields and methods (gpu.de<Tab>, dev:<Tab>, t:<Tab>, b.<Tab>).
`dev` is the default device (gpu.device()), made when first used.
Builds that take over a second say so; gpu.warmup(dev) builds the helpers' kernels ahead.
Up recalls earlier chunks whole; Ctrl-C stops running code or a wait; Ctrl-D exits.
The reference is docs/API.md in the source, and man luagpu.]]

-- help(gpu): the module's functions and values, then the helper modules.
local function help_module(gpu)
  local lines, helper = {"gpu: the luagpu module"}, {}
  for _, h in ipairs(H.helpers) do if h[1] then helper[h[1]] = true end end
  for _, k in ipairs(names_of(gpu, ".")) do
    if not helper[k] then
      local line = H.module[k]
      if not line then
        local f = rawget(gpu, k)
        line = "gpu." .. k .. (type(f) == "function" and "(...)" or "")
      end
      lines[#lines + 1] = "  " .. line
    end
  end
  lines[#lines + 1] = "helper modules (gpu.NAME loads one on first use; "
                      .. "the others: require \"luagpu.NAME\"):"
  for _, h in ipairs(H.helpers) do lines[#lines + 1] = "  " .. h[2] end
  return table.concat(lines, "\n")
end

-- help(v): what v offers, one line per method (from host/help.lua, or
-- the helper's own table for a Tensor).
function M.help(v)
  if v == nil then return GENERAL end
  local gpu = package.loaded.luagpu
  if rawequal(v, gpu) then return help_module(gpu) end
  local mt, name = class_of(v)
  local cls = class_help(mt, name)
  local head = cls and name or (name or type(v))
  local lines = {head}
  if cls and #cls.fields > 0 then
    lines[1] = head .. ": fields " .. table.concat(cls.fields, ", ")
  end
  local methods = names_of(v, ":")
  -- a plain table, or a module (a table of its own functions, as
  -- gpu.tensor): its fields; an object of a script's class: its methods
  if type(v) == "table" and not cls and (not mt or next(v) ~= nil) then
    local keys = names_of(v, ".")
    if #keys > 0 then lines[1] = "table: fields " .. table.concat(keys, ", ") end
    methods = {}
  end
  if type(v) == "string" then methods = {} end
  for _, k in ipairs(methods) do
    lines[#lines + 1] = "  " .. (cls and cls.methods[k] or (":" .. k .. "(...)"))
  end
  if #lines == 1 and not cls and type(v) ~= "table" then
    lines[1] = head .. ": " .. tostring(v)
  end
  return table.concat(lines, "\n")
end

-- traceback text tb (luaL_traceback's) with the frames inside luagpu's Lua
-- helpers left out, and the C call of `error` above them: an error a helper
-- raises names the script's line in its message already, and the frames
-- that matter at a glance are the script's. A line says how many were left
-- out; LUAGPU_TRACEBACK=full keeps them all.
function M.traceback(tb)
  local check = package.loaded["luagpu.core.check"]
  if type(tb) ~= "string" or type(check) ~= "table" or type(check.fail) ~= "function" or
     os.getenv("LUAGPU_TRACEBACK") == "full" then
    return tb
  end
  -- the helpers' folder, as short_src writes it ("/x/lua/luagpu/", or
  -- "[luagpu built-in]/luagpu/")
  local src = debug.getinfo(check.fail, "S").short_src
  local dir = src:match("^(.*/)core/check%.lua$")
  if not dir or dir:sub(1, 3) == "..." then return tb end
  local head, body = tb:match("^(.-\nstack traceback:\n)(.*)$")
  if not head then return tb end
  local lines, kept, hidden = {}, {}, 0
  for line in (body .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local function helper(line)
    return line:sub(1, #dir + 1) == "\t" .. dir
  end
  for i, line in ipairs(lines) do
    local drop = helper(line)
      -- error's own frame, and a tail-call mark, next to a helper's frame
      or (line == "\t[C]: in function 'error'" and lines[i + 1] and helper(lines[i + 1]))
      or (line == "\t(...tail calls...)" and i > 1 and helper(lines[i - 1]))
    if drop then hidden = hidden + 1 else kept[#kept + 1] = line end
  end
  if hidden == 0 then return tb end
  kept[#kept + 1] = string.format("\t(%d frame%s inside luagpu left out; LUAGPU_TRACEBACK=full " ..
                                  "shows them)", hidden, hidden == 1 and "" or "s")
  return head .. table.concat(kept, "\n")
end

-- The REPL's globals, once, before the first chunk: `dev`, the default
-- device, made on its first use (a session that never names it makes
-- none); Tab offers it before that (__fields).
function M.start()
  local gpu = package.loaded.luagpu
  local G = _G
  if debug.getmetatable(G) ~= nil or rawget(G, "dev") ~= nil then return end
  setmetatable(G, {
    __fields = {dev = true},
    __index = function(t, k)
      if k ~= "dev" then return nil end
      local ok, d = pcall(gpu.device)
      if not ok then   -- raised at the line that named dev
        error((tostring(d):gsub("^%[luagpu main%.lua%]:%d+: ", "")), 2)
      end
      rawset(t, "dev", d)
      return d
    end,
  })
end

return M
