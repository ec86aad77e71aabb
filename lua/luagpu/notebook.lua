-- luagpu.notebook: the Lua half of the Jupyter kernel
-- (packaging/jupyter/luagpu_kernel.py runs `luagpu -e
-- "require('luagpu.notebook').serve()"`). serve() reads cells from the
-- file descriptor $LUAGPU_NOTEBOOK_IN names and answers on the one
-- $LUAGPU_NOTEBOOK_FD names (stdin is the kernel's /dev/null, so a cell
-- that reads io.stdin reads nothing); what a cell prints goes to stdout
-- and stderr as in a script (line-buffered), which the kernel streams.
--
-- Requests:          "<bytes>\n<cell source>"
-- Answers:           "display <count>\n" then count times "<mime> <bytes>\n<data>"
--                    "result <count>\n" and the same: a value the cell returned
--                    "error <bytes>\n<message and traceback>"
--                    "done\n" (after every cell, once its output is flushed)
-- A cell runs as the REPL's input does: as an expression first (its values
-- are shown), else as statements; globals persist between cells, `gpu` and
-- `dev` (the default device, made on first use) are predefined. Values show
-- as text/plain (tostring) and, for tensors and host arrays, as text/html
-- tables; gpu.show(x) without a path shows its picture.

local gpu = require "luagpu"
local show = require "luagpu.show"
local concat, fmt = table.concat, string.format

local M = {}

local MAX_ROWS, MAX_COLS = 20, 12

local function esc(s)
  return (tostring(s):gsub("[&<>]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;"}))
end

local function cell(v)
  if math.type(v) == "float" then return fmt("%.6g", v) end
  return tostring(v)
end

-- Positions 1..n shown: all, or the first and last few around a gap (0).
local function positions(n, max)
  local list = {}
  if n <= max then
    for i = 1, n do list[i] = i end
  else
    local half = max // 2
    for i = 1, half do list[#list + 1] = i end
    list[#list + 1] = 0
    for i = n - half + 1, n do list[#list + 1] = i end
  end
  return list
end

-- An HTML table of a 1-D or 2-D host array (flat, row-major), with a
-- caption naming its class, type and shape; nil for other shapes. held:
-- for a tensor cut on the device to what the table shows, how many of the
-- first and of the last rows (held.rows) and columns (held.cols) a holds.
local function html_table(a, shape, what, held)
  local rows, cols = 1, shape[1]
  if #shape == 2 then rows, cols = shape[1], shape[2] elseif #shape ~= 1 then return nil end
  held = held or {}
  local hcols = held.cols and 2 * held.cols or cols
  -- element (i, j) of the whole in a
  local function at(i, j)
    if held.rows and i > held.rows then i = i - (rows - 2 * held.rows) end
    if held.cols and j > held.cols then j = j - (cols - 2 * held.cols) end
    return a[(i - 1) * hcols + j]
  end
  local dims = {}
  for i, s in ipairs(shape) do dims[i] = tostring(s) end
  local out = {fmt('<table class="luagpu"><caption>%s&lt;%s&gt; {%s}</caption>', what,
                   esc(a.type), concat(dims, ", "))}
  local cs = positions(cols, MAX_COLS)
  out[#out + 1] = "<tr><th></th>"
  for _, j in ipairs(cs) do out[#out + 1] = j == 0 and "<th>&hellip;</th>" or fmt("<th>%d</th>", j) end
  out[#out + 1] = "</tr>"
  for _, i in ipairs(positions(rows, MAX_ROWS)) do
    if i == 0 then
      out[#out + 1] = fmt('<tr><th>&vellip;</th><td colspan="%d"></td></tr>', #cs)
    else
      out[#out + 1] = fmt("<tr><th>%d</th>", i)
      for _, j in ipairs(cs) do
        out[#out + 1] = j == 0 and "<td>&hellip;</td>" or
                        fmt("<td>%s</td>", esc(cell(at(i, j))))
      end
      out[#out + 1] = "</tr>"
    end
  end
  out[#out + 1] = "</table>"
  return concat(out)
end

-- The MIME bundle of a value: {mime, data} pairs, text/plain first.
function M.bundle(v)
  local list = {{"text/plain", tostring(v)}}
  local kind = gpu.type(v)
  local html
  if kind == "Tensor" then
    -- only what the table shows comes to the host: a long dim's first and
    -- last halves of its limit, joined on the device
    local shape, r, held = v.shape, v, {}
    if #shape == 1 or #shape == 2 then
      local limits = #shape == 2 and {MAX_ROWS, MAX_COLS} or {MAX_COLS}
      local names = #shape == 2 and {"rows", "cols"} or {"cols"}
      for d, n in ipairs(shape) do
        local half = limits[d] // 2
        if n > limits[d] then
          r = gpu.cat({r:slice(d, 1, half), r:slice(d, n - half + 1, n)}, d)
          held[names[d]] = half
        end
      end
      html = html_table(r:get(), shape, "Tensor", held)
    end
  elseif kind == "Array" and not v.type:match("%d$") then
    html = html_table(v, v.shape, "Array")
  end
  if html then list[2] = {"text/html", html} end
  return list
end

local reply   -- fd 3, opened by serve

local function send_display(list, kind)
  io.stdout:flush()
  io.stderr:flush()
  reply:write(kind or "display", " ", #list, "\n")
  for _, item in ipairs(list) do
    reply:write(item[1], " ", #item[2], "\n", item[2])
  end
  reply:flush()
end

local function traceback(msg)
  msg = tostring(msg)
  local tb = debug.traceback("", 2)
  -- the frames inside this file and the C ones under serve are noise
  local lines = {}
  for line in tb:gmatch("[^\n]+") do
    if line:match("^%s+%[?cell") or line:match("^%s+%S+%.lua:") and not line:match("notebook%.lua") then
      lines[#lines + 1] = line
    end
  end
  if #lines > 0 then msg = msg .. "\nstack traceback:\n" .. concat(lines, "\n") end
  return msg
end

local count = 0

-- The cell as a function: an expression returns its values; statements
-- whose last line is an expression return that line's values (as a
-- notebook shows the last one); else statements. nil, message when it
-- does not compile.
local function compile(source, name)
  local f = load("return " .. source, name, "t")
  if f then return f end
  local head, last = source:match("^(.*\n)([^\n]*%S[^\n]*)\n?%s*$")
  if head and not last:match("^%s*%-%-") then
    f = load(head .. "return " .. last, name, "t")
    if f then return f end
  end
  return load(source, name, "t")
end

local count = 0

-- Runs one cell; returns nil, or the error message.
local function run(source)
  count = count + 1
  local f, err = compile(source, "=[cell " .. count .. "]")
  if f == nil then return err end
  local results = table.pack(xpcall(f, traceback))
  if not results[1] then return results[2] end
  for i = 2, results.n do
    if results[i] ~= nil then
      local ok, list = pcall(M.bundle, results[i])
      send_display(ok and list or {{"text/plain", tostring(results[i])}}, "result")
    end
  end
  return nil
end

-- The file descriptor the environment variable name names, opened.
local function open_fd(name, mode)
  local fd = math.tointeger(tonumber(os.getenv(name) or ""))
  local f = fd and io.open("/dev/fd/" .. fd, mode)
  if f == nil then
    error("luagpu: notebook: serve: " .. name .. " names no open file descriptor "
          .. "(serve is run by the Jupyter kernel, packaging/jupyter/luagpu_kernel.py)", 0)
  end
  return f
end

-- The loop: one cell per request until the requests end.
function M.serve()
  local requests = open_fd("LUAGPU_NOTEBOOK_IN", "rb")
  reply = open_fd("LUAGPU_NOTEBOOK_FD", "wb")
  io.stdout:setvbuf("line")
  io.stderr:setvbuf("no")
  show.set_display(function(data, mime) send_display({{mime, data}}) end)
  local device
  setmetatable(_G, {__index = function(_, key)
    if key == "dev" then
      device = device or gpu.device()
      return device
    end
  end})
  while true do
    local header = requests:read("l")
    if header == nil then break end
    local n = tonumber(header)
    local source = n and n > 0 and requests:read(n) or ""
    local ok, err = pcall(run, source)
    if not ok then err = tostring(err) end   -- an interrupt between steps
    io.stdout:flush()
    io.stderr:flush()
    if err then reply:write("error ", #err, "\n", err) end
    reply:write("done\n")
    reply:flush()
  end
end

return M
