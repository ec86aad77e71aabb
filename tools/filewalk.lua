-- tools/filewalk.lua: how many times one statement switches between files on
-- its way to the launch. Runs SETUP, then STMT once unwatched (kernels built,
-- modules loaded), then STMT again under a debug hook that notes the source
-- file of every Lua function entered or returned to. Prints the Lua files
-- visited, the switches between them (consecutive Lua events in different
-- files; C functions in between do not count), the C functions entered, and
-- the entries per file.
--   build/luagpu tools/filewalk.lua 'SETUP' 'STMT'
local setup, stmt = arg[1], arg[2]
assert(setup and stmt, "usage: luagpu tools/filewalk.lua SETUP STMT")
local env = setmetatable({}, {__index = _G})
assert(load(setup, "=setup", "t", env))()
local run = assert(load(stmt, "=stmt", "t", env))
run()

local last, switches, entries, order = nil, 0, {}, {}
local function note(event)
  local info = debug.getinfo(2, "S")
  local src = info.what == "C" and "[C]" or info.short_src:gsub("^.*lua/", "")
  if src == "stmt" then return end
  if src ~= "[C]" and src ~= last then
    if last ~= nil then switches = switches + 1 end
    last = src
  end
  if event == "call" or event == "tail call" then
    if not entries[src] then entries[src] = 0; order[#order + 1] = src end
    entries[src] = entries[src] + 1
  end
end
debug.sethook(note, "cr")
run()
debug.sethook()
local lua_files = 0
for _, f in ipairs(order) do if f ~= "[C]" then lua_files = lua_files + 1 end end
print(string.format("%d Lua files, %d switches between them, %d C functions entered",
  lua_files, switches, entries["[C]"] or 0))
table.sort(order, function(a, b) return entries[a] > entries[b] end)
for _, f in ipairs(order) do print(string.format("  %5d  %s", entries[f], f)) end
