-- tools/layers.lua: checks that luagpu is layered as docs/ARCHITECTURE.md
-- documents it (its fenced block "layers": the layers bottom-up, one a line,
-- and the calls up that the design declares). Over three kinds of edges:
--   C calls      file A uses an lg_ symbol that file B defines (nm over the
--                objects given), or reads a metatable field B sets
--                (luaL_getmetafield: "__released"); hooks (a function that
--                an upper file hands a lower one: a function-pointer field
--                set to a function of its own, a function of its own passed
--                to another file's lg_ function, a metafield) must be declared
--   C requires   host/*.c asking require (or lg_require_helper) for a helper
--   Lua requires lua/luagpu/**/*.lua: require "x", require("x") and
--                pcall(require, "x"), at the top or inside functions
-- It fails (exit 1, each fault named on stderr) on a circle of C calls, a
-- circle of Lua requires, an edge pointing up against the documented order
-- that is not declared, a declared edge that is not there, or a file or
-- helper in no layer. Otherwise it prints the layers bottom-up.
--   lua5.4 tools/layers.lua build/*.o                  (from the checkout)
--   lua5.4 tools/layers.lua --doc F --lua DIR --host DIR build/*.o
local opts = {doc = "docs/ARCHITECTURE.md", lua = "lua/luagpu", host = "host"}
local objs = {}
do
  local i = 1
  while i <= #arg do
    local o = arg[i]:match("^%-%-(%w+)$")
    if o then
      if opts[o] == nil or arg[i + 1] == nil then
        io.stderr:write("usage: lua5.4 tools/layers.lua [--doc F] [--lua DIR] [--host DIR] OBJ...\n")
        os.exit(2)
      end
      opts[o] = arg[i + 1]
      i = i + 2
    else
      objs[#objs + 1] = arg[i]
      i = i + 1
    end
  end
end

local faults = {}
local function fault(fmt, ...) faults[#faults + 1] = string.format(fmt, ...) end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

---------------------------------------------------------------- the order

-- layers[i] = {name =, members = {...}}; level[member] = i; declared[from][to] = token
local layers, level, declared, provided = {}, {}, {}, {}
do
  local doc = read(opts.doc)
  local block = doc and ("\n" .. doc):match("\n```layers\n(.-)\n```")
  if not block then
    io.stderr:write("layers: no ```layers block in " .. opts.doc .. "\n")
    os.exit(1)
  end
  for line in (block .. "\n"):gmatch("([^\n]*)\n") do
    line = line:gsub("#.*$", ""):match("^%s*(.-)%s*$")
    local name, members = line:match("^([CL][%w]* [%w%- ]-):%s*(.*)$")
    local from, to, token = line:match("^hook (%S+) %-> (%S+): (%S+)$")
    local rfrom, rto = line:match("^require (%S+) %-> (%S+)$")
    local pname, pfile = line:match("^provides (%S+) = (%S+)$")
    if line == "" then
      -- blank or comment
    elseif from then
      declared[from] = declared[from] or {}
      declared[from][to] = {token = token, kind = "hook", used = false}
    elseif rfrom then
      declared[rfrom] = declared[rfrom] or {}
      declared[rfrom][rto] = {token = rto, kind = "require", used = false}
    elseif pname then
      provided[pname] = pfile
    elseif name then
      local l = {name = name, members = {}}
      layers[#layers + 1] = l
      for m in members:gmatch("%S+") do
        if level[m] then fault("%s is in two layers of %s", m, opts.doc) end
        level[m] = #layers
        l.members[#l.members + 1] = m
      end
    else
      fault("%s: a line of the layers block reads as nothing: %s", opts.doc, line)
    end
  end
end

-- every edge: edges[from][to] = why (a symbol, "require at file:line")
local edges, nodes = {}, {}
local function edge(from, to, why)
  if from == to then return end
  edges[from] = edges[from] or {}
  if not edges[from][to] then edges[from][to] = why end
end

---------------------------------------------------------------- C calls

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local cfiles, csrc = {}, {}
do
  local quoted = {}
  for _, obj in ipairs(objs) do
    local file = obj:match("([^/]+)%.o$")
    if file and exists(opts.host .. "/" .. file .. ".c") then
      cfiles[#cfiles + 1] = file .. ".c"
      quoted[#quoted + 1] = "'" .. obj:gsub("'", "'\\''") .. "'"
    end
  end
  local defined, uses = {}, {}
  if #quoted > 0 then
    -- one nm for all: "path/file.o: [address] KIND symbol" per line
    local p = assert(io.popen("nm -g -A " .. table.concat(quoted, " ")))
    for line in p:lines() do
      local file, kind, sym = line:match("([^/:]+)%.o:.-(%u) ([%w_]+)$")
      if file and exists(opts.host .. "/" .. file .. ".c") then
        if kind == "U" then uses[#uses + 1] = {file .. ".c", sym}
        else defined[sym] = file .. ".c" end
      end
    end
    p:close()
  end
  for _, u in ipairs(uses) do
    if defined[u[2]] then edge(u[1], defined[u[2]], u[2]) end
  end
  for _, f in ipairs(cfiles) do
    nodes[f] = "C"
    csrc[f] = read(opts.host .. "/" .. f) or ""
  end
end

-- Hooks: what a file hands to code below it to be called back.
local STANDARD = {}
for m in ([[__index __newindex __gc __close __mode __name __call __tostring __len __eq
  __lt __le __concat __unm __add __sub __mul __div __mod __pow __idiv __band __bor __bxor
  __shl __shr __bnot __metatable __pairs]]):gmatch("%S+") do STANDARD[m] = true end
local hooks = {}        -- {setter =, token =, where =}
do
  local fnfields = {}
  for _, h in ipairs({"internal.h", "luagpu.h"}) do
    for field in (read(opts.host .. "/" .. h) or ""):gmatch("%(%*%s*([%a_][%w_]*)%)%s*[%(%[]") do
      fnfields[field] = true
    end
  end
  local metaset, metaread = {}, {}
  for _, f in ipairs(cfiles) do
    local src = csrc[f]:gsub("/%*.-%*/", function(c) return (c:gsub("[^\n]", " ")) end)
    local statics = {}
    for name in src:gmatch("\nstatic [^\n;=]-[%s%*]([%a_][%w_]*)%(") do statics[name] = true end
    for field, rhs in src:gmatch("%->([%a_][%w_]*)%s*=%s*([%a_][%w_]*)") do
      if fnfields[field] and statics[rhs] then
        hooks[#hooks + 1] = {setter = f, token = field, what = f .. " sets ->" .. field}
      end
    end
    for fn, args in src:gmatch("(lg_[%w_]+)%s*(%b())") do
      -- whole arguments only (the parentheses' insides blanked first)
      args = args:sub(2, -2):gsub("%b()", "()"):gsub("%b{}", "{}")
      for a in (args .. ","):gmatch("%s*([^,]-)%s*,") do
        if statics[a] then
          hooks[#hooks + 1] = {setter = f, token = fn, what = f .. " hands " .. a .. " to " .. fn}
        end
      end
    end
    for _, pat in ipairs({'lua_setfield%(L, %-?%d+, "(__[%w_]+)"%)', '{"(__[%w_]+)", [%a_][%w_]*}'}) do
      for m in src:gmatch(pat) do
        metaset[m] = metaset[m] or {}
        metaset[m][f] = true
      end
    end
    for m in src:gmatch('luaL_getmetafield%(L, [^,]+, "(__[%w_]+)"%)') do
      metaread[#metaread + 1] = {f, m}
    end
  end
  for _, r in ipairs(metaread) do
    local reader, m = r[1], r[2]
    for _, setter in ipairs(sorted_keys(metaset[m] or {})) do
      if not STANDARD[m] and setter ~= reader then
        local d = declared[reader] and declared[reader][setter]
        if d and d.token == m then
          -- a declared hook: checked below
        elseif (level[setter] or 0) > (level[reader] or 0) then
          hooks[#hooks + 1] = {setter = setter, token = m, what = reader .. " calls " .. setter
                               .. "'s metatable field " .. m}
        else
          edge(reader, setter, m)
        end
      end
    end
  end
end

---------------------------------------------------------------- requires

-- The require calls in Lua source: {name, line}, comments and the text of
-- strings skipped.
local function lua_requires(src)
  local out, i, n, line = {}, 1, #src, 1
  local function long_bracket(at)       -- "[==[" at at: the closing "]==]" and its end
    local eq = src:match("^%[(=*)%[", at)
    if not eq then return nil end
    local _, e = src:find("]" .. eq .. "]", at + #eq + 2, true)
    return e or n
  end
  local function skip(at, stop)
    local s = src:sub(at, stop)
    local _, nl = s:gsub("\n", "")
    line = line + nl
    return stop + 1
  end
  local function string_at(at)           -- a string literal at at: its text and end
    local q = src:sub(at, at)
    if q == '"' or q == "'" then
      local j = at + 1
      while j <= n do
        local c = src:sub(j, j)
        if c == "\\" then j = j + 2
        elseif c == q or c == "\n" then break
        else j = j + 1 end
      end
      return src:sub(at + 1, j - 1), j
    elseif q == "[" then
      local e = long_bracket(at)
      if e then
        local eq = src:match("^%[(=*)%[", at)
        return src:sub(at + #eq + 2, e - #eq - 2), e
      end
    end
  end
  while i <= n do
    local c = src:sub(i, i)
    if c == "\n" then
      line = line + 1
      i = i + 1
    elseif src:sub(i, i + 1) == "--" then
      local e = src:sub(i + 2, i + 2) == "[" and long_bracket(i + 2)
      i = skip(i, e or (src:find("\n", i, true) or n + 1) - 1)
    elseif c == '"' or c == "'" or (c == "[" and src:match("^%[=*%[", i)) then
      local _, e = string_at(i)
      i = skip(i, e)
    elseif c:match("[%a_]") then
      local word = src:match("^[%a_][%w_]*", i)
      local after = i + #word
      if word == "require" and not src:sub(i - 1, i - 1):match("[%.:]") then
        local j = src:match("^%s*[%(,]?%s*()", after)
        local name = string_at(j)
        if name then out[#out + 1] = {name, line} end
      end
      i = after
    else
      i = i + 1
    end
  end
  return out
end

-- The Lua helpers: module name -> {file, package}.
local modules = {}
do
  local p = io.popen("cd '" .. opts.lua:gsub("'", "'\\''") .. "' 2>/dev/null && find . -name '*.lua' | sort")
  for rel in p:lines() do
    rel = rel:gsub("^%./", "")
    local name = "luagpu." .. rel:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
    modules[name] = {file = opts.lua .. "/" .. rel, package = name:match("^luagpu%.([%w_]+)")}
  end
  p:close()
end
-- A name a require asks for: a helper, a C file (provides), or nil (not luagpu's).
local function node_of(name)
  if modules[name] then return name end
  if provided[name] then return provided[name] end
  if name == "luagpu" or name:match("^luagpu[%._]") then
    return false
  end
end
for _, name in ipairs(sorted_keys(modules)) do
  local m = modules[name]
  nodes[name] = "Lua"
  for _, r in ipairs(lua_requires(read(m.file) or "")) do
    local to = node_of(r[1])
    if to == false then
      fault("%s:%d: requires '%s', which is no helper (and no C module named in the block)",
            m.file, r[2], r[1])
    elseif to then
      edge(name, to, "require at " .. m.file .. ":" .. r[2])
    end
  end
end
-- C asking for a helper: lg_require_helper(L, "x"), or require pushed and
-- then a literal name
for _, f in ipairs(cfiles) do
  local src, ln = csrc[f], 0
  local pending = 0
  for l in (src .. "\n"):gmatch("([^\n]*)\n") do
    ln = ln + 1
    local name = l:match('lg_require_helper%(L, "([^"]+)"%)')
    if l:match('lua_getglobal%(L, "require"%)') then pending = 3 end
    if not name and pending > 0 then
      name = l:match('lua_push%a+%(L, "(luagpu[^"]*)"')
      pending = pending - 1
    end
    if name then
      local to = node_of(name)
      if to == false then fault("%s/%s:%d: requires '%s', which is no helper", opts.host, f, ln, name)
      elseif to then edge(f, to, "require at " .. opts.host .. "/" .. f .. ":" .. ln) end
      pending = 0
    end
  end
end

---------------------------------------------------------------- checks

-- the layer of a node: C files by name, Lua helpers by package
local function layer_of(node)
  if nodes[node] == "Lua" then return level[modules[node].package], modules[node].package end
  return level[node], node
end
for node in pairs(nodes) do
  local l, key = layer_of(node)
  if not l then fault("%s (%s) is in no layer of %s", node, key, opts.doc) end
end

-- Declared edges: each must be there, and go up (else it needs no declaring).
for _, from in ipairs(sorted_keys(declared)) do
  for _, to in ipairs(sorted_keys(declared[from])) do
    local d = declared[from][to]
    local lf, lt = layer_of(from), layer_of(to)
    if d.kind == "hook" then
      local sf, st = csrc[from], csrc[to]
      if not sf or not st or not sf:find(d.token, 1, true) or not st:find(d.token, 1, true) then
        fault("declared hook %s -> %s (%s) is not in the code", from, to, d.token)
      end
    elseif not (edges[from] and edges[from][to]) then
      fault("declared require %s -> %s is not in the code", from, to)
    end
    if lf and lt and lt <= lf then
      fault("declared %s %s -> %s does not go up: make it a plain call", d.kind, from, to)
    end
    if edges[from] then edges[from][to] = nil end      -- a declared edge is no circle
  end
end
-- Hooks found in the code must be declared (a hook that file X sets is
-- called by some file below X: declared as "hook BELOW -> X: token").
for _, h in ipairs(hooks) do
  local ok = false
  for _, tos in pairs(declared) do
    local d = tos[h.setter]
    if d and d.kind == "hook" and d.token == h.token then ok = true end
  end
  if not ok then fault("undeclared hook: %s (declare it: hook CALLER -> %s: %s)", h.what,
                       h.setter, h.token) end
end

-- Edges against the order.
for _, from in ipairs(sorted_keys(edges)) do
  for _, to in ipairs(sorted_keys(edges[from])) do
    local lf, lt = layer_of(from), layer_of(to)
    if lf and lt and lt > lf then
      fault("upward edge: %s (%s) -> %s (%s), %s", from, layers[lf].name, to, layers[lt].name,
            edges[from][to])
    end
  end
end

-- Circles: a depth-first search; a back edge closes one.
do
  local state, stack = {}, {}
  local function visit(f)
    state[f] = "open"
    stack[#stack + 1] = f
    for _, to in ipairs(sorted_keys(edges[f] or {})) do
      if state[to] == "open" then
        local parts, on = {}, false
        for _, s in ipairs(stack) do
          if s == to then on = true end
          if on then parts[#parts + 1] = s end
        end
        parts[#parts + 1] = to
        local text = {}
        for i = 1, #parts - 1 do
          text[#text + 1] = parts[i] .. " -(" .. edges[parts[i]][parts[i + 1]] .. ")-> "
        end
        local kind = nodes[to] == "Lua" and "a Lua require cycle" or "a C call circle"
        fault("%s: %s%s", kind, table.concat(text), to)
      elseif not state[to] then
        visit(to)
      end
    end
    stack[#stack] = nil
    state[f] = "done"
  end
  for _, f in ipairs(sorted_keys(nodes)) do if not state[f] then visit(f) end end
end

if #faults > 0 then
  io.stderr:write("layers: luagpu is not layered as " .. opts.doc .. " documents:\n")
  for _, f in ipairs(faults) do io.stderr:write("  ", f, "\n") end
  os.exit(1)
end

-- The layers, bottom-up, with what each holds here.
local held = {}
for node in pairs(nodes) do
  local l = layer_of(node)
  held[l] = held[l] or {}
  held[l][#held[l] + 1] = node
end
local nedges = 0
for _, tos in pairs(edges) do for _ in pairs(tos) do nedges = nedges + 1 end end
print("layers: bottom-up, as " .. opts.doc .. " documents them")
for i, l in ipairs(layers) do
  local here = held[i] or {}
  table.sort(here)
  print(string.format("%3d  %-16s %s", i, l.name, table.concat(here, " ")))
end
print("declared calls up:")
for _, from in ipairs(sorted_keys(declared)) do
  for _, to in ipairs(sorted_keys(declared[from])) do
    local d = declared[from][to]
    print(string.format("     %-7s %s -> %s%s", d.kind, from, to,
                        d.kind == "hook" and " (" .. d.token .. ")" or ""))
  end
end
print(string.format("layers: %d C files, %d Lua helpers, %d edges: no circle, no edge up",
                    #cfiles, #sorted_keys(modules), nedges))
