-- tools/sizes.lua: file and function sizes of Lua files, for a review of the
-- layout. Function spans come from luac's listing ("function <f:first,last>").
--   lua5.4 tools/sizes.lua lua/luagpu/*.lua lua/luagpu/*/*.lua
local files, funcs = {}, {}
for _, path in ipairs(arg) do
  local n = 0
  for _ in io.lines(path) do n = n + 1 end
  files[#files + 1] = {path, n}
  local p = assert(io.popen("luac5.4 -l -p '" .. path:gsub("'", "'\\''") .. "'"))
  for a, b in p:read("a"):gmatch("\nfunction <[^:]+:(%d+),(%d+)>") do
    funcs[#funcs + 1] = {path .. ":" .. a, tonumber(b) - tonumber(a) + 1}
  end
  p:close()
end
local function by_size(x, y) return x[2] > y[2] end
table.sort(files, by_size)
table.sort(funcs, by_size)
local total = 0
for _, f in ipairs(files) do total = total + f[2] end
local function median(t) return #t > 0 and t[(#t + 1) // 2][2] or 0 end
print(string.format("%d files, %d lines; file median %d, largest %s (%d)",
  #files, total, median(files), files[1][1], files[1][2]))
print(string.format("%d functions; median %d lines; over 100 lines: %d",
  #funcs, median(funcs), (function() local c = 0
    for _, f in ipairs(funcs) do if f[2] > 100 then c = c + 1 end end return c end)()))
for i = 1, math.min(8, #funcs) do print(string.format("  %4d  %s", funcs[i][2], funcs[i][1])) end
