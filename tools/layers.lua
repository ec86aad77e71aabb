-- tools/layers.lua: checks that host/ is layered. From the object files of
-- the module (nm: which file defines each lg_ symbol, which files use it),
-- builds the graph "file A calls file B" and fails on any circle: two files
-- calling each other, or a loop through several. Prints the order (each file
-- above the files it calls) when there is none.
--   lua5.4 tools/layers.lua build/*.o      (from the top of the checkout)
local calls, defined, files = {}, {}, {}

-- objects of host/*.c only: not the program's main.o, generated files, or a
-- stale object whose source is gone
local function is_host(file)
  local f = file and file ~= "main" and io.open("host/" .. file .. ".c")
  if f then f:close() end
  return f ~= nil and f ~= false
end

local objs = {}
for _, obj in ipairs(arg) do
  local file = obj:match("([^/]+)%.o$")
  if is_host(file) then
    files[#files + 1] = file
    calls[file] = {}
    objs[#objs + 1] = "'" .. obj:gsub("'", "'\\''") .. "'"
  end
end
-- one nm for all: "path/file.o: [address] KIND symbol" per line
local p = assert(io.popen("nm -g -A " .. table.concat(objs, " ")))
local uses = {}
for line in p:lines() do
  local file, kind, sym = line:match("([^/:]+)%.o:.-(%u) ([%w_]+)$")
  if file and calls[file] then
    if kind == "U" then uses[#uses + 1] = {file, sym} else defined[sym] = file end
  end
end
p:close()
for _, u in ipairs(uses) do
  local to = defined[u[2]]
  if to and to ~= u[1] then calls[u[1]][to] = calls[u[1]][to] or u[2] end
end
table.sort(files)

-- Depth-first search; a back edge closes a circle, printed with its symbols.
local state, stack, circles = {}, {}, {}
local function visit(f)
  state[f] = "open"
  stack[#stack + 1] = f
  local outs = {}
  for to in pairs(calls[f]) do outs[#outs + 1] = to end
  table.sort(outs)
  for _, to in ipairs(outs) do
    if state[to] == "open" then
      local loop, on = {}, false
      for _, s in ipairs(stack) do
        if s == to then on = true end
        if on then loop[#loop + 1] = s end
      end
      loop[#loop + 1] = to
      local parts = {}
      for i = 1, #loop - 1 do
        parts[#parts + 1] = loop[i] .. ".c -(" .. calls[loop[i]][loop[i + 1]] .. ")-> "
      end
      circles[#circles + 1] = table.concat(parts) .. to .. ".c"
    elseif not state[to] then
      visit(to)
    end
  end
  stack[#stack] = nil
  state[f] = "done"
end
for _, f in ipairs(files) do if not state[f] then visit(f) end end

if #circles > 0 then
  io.stderr:write("layers: host/ has call circles (a file must not call back up):\n")
  for _, c in ipairs(circles) do io.stderr:write("  ", c, "\n") end
  os.exit(1)
end
-- the layers: a file's level is one more than the highest it calls
local level = {}
local function lvl(f)
  if level[f] then return level[f] end
  local l = 0
  for to in pairs(calls[f]) do l = math.max(l, lvl(to) + 1) end
  level[f] = l
  return l
end
local by = {}
for _, f in ipairs(files) do
  local l = lvl(f)
  by[l] = by[l] or {}
  table.insert(by[l], f .. ".c")
end
for l = #by, 0, -1 do print(string.format("layers: %d  %s", l, table.concat(by[l], " "))) end
