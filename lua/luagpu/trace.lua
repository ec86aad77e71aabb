-- luagpu.trace: writes the record of gpu.trace (a list of commands, see
-- docs/API.md "Tracing") as Chrome trace-event JSON, which Perfetto
-- (ui.perfetto.dev) and chrome://tracing open, or as an SVG timeline: one
-- lane per queue, each command a bar coloured by kind and labelled with its
-- name where it fits, waits between commands as arrows, a legend.
--   local trace = require "luagpu.trace"
--   trace.json(record) -> string     trace.svg(record) -> string
--   trace.write(record, path)        -- .svg: the picture, else the JSON (checked, see M.write)
local M = {}

local mtype, type, ipairs, rawlen = math.type, type, ipairs, rawlen

-- Checks record (argument #1 of fn) against the fields of docs/API.md
-- "Tracing" that the writers read, so that a record a script built or
-- changed raises naming the command and the field, not Lua's own error
-- deep in the writer (or a loop over 2^40 lanes for a queue number).
local function check_record(fn, record)
  local function bad(what, v)
    error(("luagpu: %s: argument #1: %s, got %s"):format(fn, what,
          type(v) == "number" and tostring(v) or type(v)), 0)
  end
  if type(record) ~= "table" then bad("expected the record of gpu.trace (a table)", record) end
  local n = #record
  for i = 1, n do
    local c = record[i]
    if type(c) ~= "table" then bad(("command %d: expected a table"):format(i), c) end
    local function need(field, kind, v)
      v = v == nil and c[field] or v
      local ok = kind == "integer" and mtype(v) == "integer" or
                 kind ~= "integer" and type(v) == kind
      if not ok then bad(("command %d: field '%s': expected %s %s"):format(i, field,
                           kind == "integer" and "an" or "a", kind), v) end
    end
    need("seq", "integer"); need("queue", "integer"); need("host", "number")
    need("device", "string"); need("kind", "string"); need("name", "string")
    need("status", "string"); need("where", "string"); need("bytes", "integer")
    need("waits", "table")
    if c.queue < 1 or c.queue > n then
      bad(("command %d: field 'queue': expected 1 to %d (queues are numbered in the order "
           .. "of first use)"):format(i, n), c.queue)
    end
    for _, f in ipairs{"queued", "start", "end"} do
      if c[f] ~= nil then need(f, "number") end
    end
    if (c.start == nil) ~= (c["end"] == nil) or (c.start ~= nil and c.queued == nil) then
      bad(("command %d: expected 'queued', 'start' and 'end' together"):format(i), c.start)
    end
    for _, f in ipairs{"global", "local"} do
      local l = c[f]
      if l ~= nil then
        need(f, "table")
        for k = 1, rawlen(l) do need(f .. "[" .. k .. "]", "integer", l[k]) end
      end
    end
    for k = 1, rawlen(c.waits) do
      local j = c.waits[k]
      need("waits[" .. k .. "]", "integer", j)
      if j < 1 or j > n then
        bad(("command %d: field 'waits[%d]': expected a command of the record (1 to %d)")
            :format(i, k, n), j)
      end
    end
  end
  local builds = record.builds
  if builds ~= nil then
    if type(builds) ~= "table" then bad("field 'builds': expected a table", builds) end
    for i = 1, #builds do
      local b = builds[i]
      if type(b) ~= "table" then bad(("build %d: expected a table"):format(i), b) end
      for _, f in ipairs{"host", "host_end"} do
        if type(b[f]) ~= "number" then
          bad(("build %d: field '%s': expected a number"):format(i, f), b[f])
        end
      end
      for _, f in ipairs{"name", "where"} do
        if type(b[f]) ~= "string" then
          bad(("build %d: field '%s': expected a string"):format(i, f), b[f])
        end
      end
    end
  end
end

-- Each command's times in microseconds from the start of the record (its
-- first command, or an earlier build): start and end from the device's
-- profiling timestamps where its queue profiles, else the host's clock at
-- the enqueue (then no duration). The builds of record.builds (host clock)
-- are put on the same axis: the device's clock is the host's plus the
-- offset the first profiled command shows (its queued time against its
-- enqueue). Returns the commands' times and the builds' ({start, dur}).
local function times(record)
  local t0_dev, t0_host, offset
  for _, c in ipairs(record) do
    if c.queued and (not t0_dev or c.queued < t0_dev) then t0_dev = c.queued end
    if c.queued and not offset then offset = c.queued - c.host end
    if not t0_host or c.host < t0_host then t0_host = c.host end
  end
  -- a host time on the axis, in ns (before the shift to the earliest)
  local function host_axis(h) return offset and h + offset or h end
  local base = t0_dev or t0_host
  local builds = {}
  for i, b in ipairs(record.builds or {}) do
    local s = host_axis(b.host)
    builds[i] = {s = s, e = host_axis(b.host_end)}
    if not base or s < base then base = s end
  end
  local out = {}
  for i, c in ipairs(record) do
    if c.start and c["end"] then
      out[i] = {start = (c.start - base) / 1e3, dur = math.max(0, c["end"] - c.start) / 1e3,
                queued = (c.queued - base) / 1e3}
    else
      local t = (host_axis(c.host) - base) / 1e3
      out[i] = {start = t, dur = 0, queued = t}
    end
  end
  for i, b in ipairs(builds) do
    builds[i] = {start = (b.s - base) / 1e3, dur = math.max(0, b.e - b.s) / 1e3}
  end
  return out, builds
end

local escapes = {['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
                 ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t"}
local function jstr(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(c)
    return escapes[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function jnum(x)
  if math.type(x) == "integer" then return tostring(x) end
  return string.format("%.3f", x)
end

local function jlist(t)
  local parts = {}
  for i, v in ipairs(t) do parts[i] = jnum(v) end
  return "[" .. table.concat(parts, ",") .. "]"
end

local function queue_names(record)
  local names = {}
  for _, c in ipairs(record) do
    names[c.queue] = names[c.queue] or string.format("queue %d (%s)", c.queue, c.device)
  end
  return names
end

-- The record as Chrome trace-event JSON: one complete event ("X") per
-- command on thread "queue N (device)", its details in args, and a flow
-- (an arrow) from each waited command's end to the waiter's start.
function M.json(record)
  check_record("trace.json", record)
  local t = times(record)
  local ev = {}
  for q, name in pairs(queue_names(record)) do
    ev[#ev + 1] = string.format('{"ph":"M","pid":1,"tid":%d,"name":"thread_name","args":{"name":%s}}',
                                q, jstr(name))
  end
  for i, c in ipairs(record) do
    local args = {'"seq":' .. c.seq, '"device":' .. jstr(c.device), '"where":' .. jstr(c.where),
                  '"bytes":' .. c.bytes, '"status":' .. jstr(c.status),
                  '"queued_us":' .. jnum(t[i].queued)}
    if c.global then args[#args + 1] = '"global":' .. jlist(c.global) end
    if c["local"] then args[#args + 1] = '"local":' .. jlist(c["local"]) end
    if #c.waits > 0 then args[#args + 1] = '"waits":' .. jlist(c.waits) end
    ev[#ev + 1] = string.format('{"ph":"X","pid":1,"tid":%d,"name":%s,"cat":%s,"ts":%s,'
                                .. '"dur":%s,"args":{%s}}', c.queue, jstr(c.name), jstr(c.kind),
                                jnum(t[i].start), jnum(t[i].dur), table.concat(args, ","))
  end
  local _, bt = times(record)
  if #bt > 0 then
    ev[#ev + 1] = '{"ph":"M","pid":1,"tid":0,"name":"thread_name","args":{"name":"program builds (host)"}}'
    for i, b in ipairs(record.builds) do
      ev[#ev + 1] = string.format('{"ph":"X","pid":1,"tid":0,"name":%s,"cat":"compile","ts":%s,'
                                  .. '"dur":%s,"args":{"where":%s}}', jstr("compile " .. b.name),
                                  jnum(bt[i].start), jnum(bt[i].dur), jstr(b.where))
    end
  end
  local id = 0
  for i, c in ipairs(record) do
    for _, j in ipairs(c.waits) do
      id = id + 1
      local from = record[j]
      ev[#ev + 1] = string.format('{"ph":"s","pid":1,"tid":%d,"id":%d,"name":"wait","cat":"wait",'
                                  .. '"ts":%s}', from.queue, id, jnum(t[j].start + t[j].dur))
      ev[#ev + 1] = string.format('{"ph":"f","bp":"e","pid":1,"tid":%d,"id":%d,"name":"wait",'
                                  .. '"cat":"wait","ts":%s}', c.queue, id, jnum(t[i].start))
    end
  end
  return '{"displayTimeUnit":"ns","traceEvents":[\n' .. table.concat(ev, ",\n") .. "\n]}\n"
end

local function xml(s)
  return (tostring(s):gsub("[<>&\"]", {["<"] = "&lt;", [">"] = "&gt;", ["&"] = "&amp;",
                                         ['"'] = "&quot;"}))
end

local COLORS = {kernel = "#4e79a7", write = "#f28e2b", read = "#59a14f", fill = "#b07aa1",
                copy = "#edc948", marker = "#9c9c9c", barrier = "#7f7f7f"}
local KIND_ORDER = {"kernel", "write", "read", "copy", "fill", "marker", "barrier"}
local COMPILE = "#e0e0e0"      -- the band of a program build

-- us microseconds as the axis shows them: in us, ms or s by the scale of
-- the whole (of (default) us itself).
local function span(us, whole)
  whole = whole or us
  if whole >= 1e6 then return string.format("%.2f s", us / 1e6) end
  if whole >= 1e4 then return string.format("%.1f ms", us / 1e3) end
  return string.format(whole >= 100 and "%.0f us" or "%.1f us", us)
end

-- A device name short enough for a lane label: trademarks, clock speeds,
-- "Processor"/"CPU" words and PoCL's "pthread-<arch>-" prefix dropped,
-- then cut to n characters ("NVIDIA H100 80GB HBM3" stays whole;
-- the full name is the label's tooltip).
local function short_device(name, n)
  local s = tostring(name):gsub("%([RrTtMm]+%)", ""):gsub("@.*$", "")
  if s:match("^pthread%-") or s:match("^cpu%-") then   -- PoCL: "pthread-<arch>-<model>"
    s = s:gsub("^[^ ]*%-", "", 1)
  end
  s = s:gsub("%f[%w]Processor%f[%W]", "")
  s = s:gsub("%f[%w]CPU%f[%W]", ""):gsub("%d+%-Core", ""):gsub("%s+", " "):gsub("^ ", "")
  s = s:gsub(" $", "")
  if s == "" then s = tostring(name) end
  if #s > n then s = s:sub(1, n - 1) .. "~" end
  return s
end

-- The record as an SVG timeline: a lane per queue (labelled "queue N" and
-- its device's short name; the full name on hover), a bar per command
-- coloured by kind (at least 2 px wide; its name inside when it fits, else
-- beside it when the lane is free there, always in the tooltip), an arrow
-- per wait, a dashed line from a command's queueing to its start, a grey
-- band across the lanes per program build (compile time,
-- on the host's clock), a legend of the kinds present, a time axis in
-- microseconds.
function M.svg(record, opts)
  check_record("trace.svg", record)
  opts = opts or {}
  if type(opts) ~= "table" then
    error("luagpu: trace.svg: argument #2: expected an options table, got " .. type(opts), 2)
  end
  local width, lane, left, top = opts.width or 1000, 36, 150, 46
  if mtype(width) ~= "integer" or width < 200 or width > 100000 then
    error("luagpu: trace.svg: argument #2: option width: expected an integer from 200 to "
          .. "100000, got " .. tostring(width), 2)
  end
  local t, bt = times(record)
  local nq, tmax, devices, kinds = 0, 0, {}, {}
  for i, c in ipairs(record) do
    nq = math.max(nq, c.queue)
    devices[c.queue] = devices[c.queue] or c.device
    kinds[c.kind] = true
    tmax = math.max(tmax, t[i].start + t[i].dur)
  end
  for _, b in ipairs(bt) do tmax = math.max(tmax, b.start + b.dur) end
  if tmax <= 0 then tmax = 1 end
  local scale = (width - left - 20) / tmax
  local height = top + nq * lane + 40
  local out = {
    string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                  .. 'font-family="sans-serif" font-size="11">', width, height),
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
      .. 'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#d62728"/>'
      .. '</marker></defs>',
    string.format('<rect width="%d" height="%d" fill="white"/>', width, height),
    string.format('<text x="10" y="18" font-size="13">luagpu trace: %d commands, %s</text>',
                  #record, span(tmax)),
  }
  -- the legend: a swatch and a word per kind present, then the wait arrow
  local lx = 10
  local present = {}
  for _, k in ipairs(KIND_ORDER) do if kinds[k] then present[#present + 1] = k end end
  for k in pairs(kinds) do if not COLORS[k] then present[#present + 1] = k end end
  for _, k in ipairs(present) do
    out[#out + 1] = string.format('<rect x="%d" y="27" width="10" height="10" fill="%s"/>'
                                  .. '<text x="%d" y="36">%s</text>', lx, COLORS[k] or "#999",
                                  lx + 14, xml(k))
    lx = lx + 22 + #k * 7
  end
  if next(kinds) then
    out[#out + 1] = string.format('<line class="legend" x1="%d" y1="32" x2="%d" y2="32" stroke="#d62728" '
                                  .. 'stroke-width="1.2" marker-end="url(#arrow)"/>'
                                  .. '<text x="%d" y="36">waits for</text>', lx, lx + 18, lx + 22)
    lx = lx + 90
  end
  out[#out + 1] = string.format('<line class="legend" x1="%d" y1="32" x2="%d" y2="32" '
                                .. 'stroke="#aaa" stroke-dasharray="3,2"/><text x="%d" y="36">'
                                .. 'queued</text>', lx, lx + 18, lx + 22)
  lx = lx + 75
  if #bt > 0 then
    out[#out + 1] = string.format('<rect x="%d" y="27" width="10" height="10" fill="%s"/>'
                                  .. '<text x="%d" y="36">compile (host)</text>', lx, COMPILE,
                                  lx + 14)
  end
  for q = 1, nq do
    local y = top + (q - 1) * lane
    out[#out + 1] = string.format('<rect x="0" y="%d" width="%d" height="%d" fill="%s"/>', y,
                                  width, lane, q % 2 == 1 and "#f4f4f4" or "#ffffff")
    if devices[q] then
      out[#out + 1] = string.format('<text x="6" y="%d"><title>queue %d on %s</title>queue %d'
                                    .. '<tspan x="6" dy="12" fill="#555">%s</tspan></text>',
                                    y + lane // 2 - 2, q, xml(devices[q]), q,
                                    xml(short_device(devices[q], 22)))
    end
  end
  local function x_of(us) return left + us * scale end
  -- program builds: a band across the lanes, labelled where it is wide enough
  for i, b in ipairs(bt) do
    local x, w = x_of(b.start), math.max(2, b.dur * scale)
    local name = record.builds[i].name
    local label = string.format("compile %s %.1f ms", name, b.dur / 1e3)
    out[#out + 1] = string.format('<g class="compile"><title>%s, %s</title><rect x="%.1f" y="%d" '
                                  .. 'width="%.1f" height="%d" fill="%s" opacity="0.6"/>',
                                  xml(label), xml(record.builds[i].where), x, top, w, nq * lane,
                                  COMPILE)
    if #label * 6 + 6 < w then
      out[#out + 1] = string.format('<text x="%.1f" y="%d" fill="#333">%s</text>', x + 3,
                                    top + nq * lane - 4, xml(label))
    end
    out[#out + 1] = "</g>"
  end
  -- where each bar's lane is next taken (for a label beside a thin bar)
  local next_x, last = {}, {}
  for i = #record, 1, -1 do
    local q = record[i].queue
    next_x[i] = last[q] or width - 20
    last[q] = math.min(last[q] or math.huge, x_of(t[i].start))
  end
  for i, c in ipairs(record) do
    local y = top + (c.queue - 1) * lane + 6
    local x, w = x_of(t[i].start), math.max(2, t[i].dur * scale)
    local qx = x_of(t[i].queued)
    if x - qx > 2 then   -- queued until it started: a thin line (PoCL compiles at a first launch)
      out[#out + 1] = string.format('<line class="queued" x1="%.1f" y1="%d" x2="%.1f" y2="%d" '
                                    .. 'stroke="#aaa" stroke-width="1" stroke-dasharray="3,2">'
                                    .. '<title>%s queued %.1f us before it started</title></line>',
                                    qx, y + (lane - 12) // 2, x, y + (lane - 12) // 2,
                                    xml(c.name), t[i].start - t[i].queued)
    end
    local title = string.format("%s %s #%d: %.1f us at %.1f us, %s", c.kind, c.name, c.seq,
                                t[i].dur, t[i].start, c.where)
    out[#out + 1] = string.format('<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" '
                                  .. 'height="%d" fill="%s" stroke="#333" stroke-width="0.5"/>',
                                  xml(title), x, y, w, lane - 12, COLORS[c.kind] or "#999")
    local text_w = #c.name * 6.5 + 4
    if text_w < w then
      out[#out + 1] = string.format('<text x="%.1f" y="%d" fill="white">%s</text>', x + 3,
                                    y + lane // 2, xml(c.name))
    elseif text_w + 4 < next_x[i] - (x + w) then
      out[#out + 1] = string.format('<text x="%.1f" y="%d" fill="#222">%s</text>', x + w + 3,
                                    y + lane // 2, xml(c.name))
    end
    out[#out + 1] = "</g>"
  end
  for i, c in ipairs(record) do
    for _, j in ipairs(c.waits) do
      local from = record[j]
      out[#out + 1] = string.format('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d62728" '
                                    .. 'stroke-width="1.2" marker-end="url(#arrow)"/>',
                                    x_of(t[j].start + t[j].dur), top + (from.queue - 1) * lane + lane // 2,
                                    x_of(t[i].start), top + (c.queue - 1) * lane + lane // 2)
    end
  end
  local axis = top + nq * lane + 14
  out[#out + 1] = string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>', left,
                                axis, width - 20, axis)
  for k = 0, 4 do
    local us = tmax * k / 4
    out[#out + 1] = string.format('<text x="%.1f" y="%d" text-anchor="middle">%s</text>',
                                  x_of(us), axis + 16, span(us, tmax))
  end
  out[#out + 1] = "</svg>\n"
  return table.concat(out, "\n")
end

-- Writes the record to path: the SVG timeline for a path ending in .svg,
-- else the Chrome JSON. Refuses a path ending in .lua, a symbolic link, a
-- folder and a file that is neither empty nor a trace; writes into a new
-- file renamed over path once complete (a device such as /dev/stdout
-- directly), and raises when any write, close or rename fails. fn names the
-- caller in messages ("trace.write" when not given).
function M.write(record, path, fn)
  fn = fn or "trace.write"
  if type(path) ~= "string" then
    error("luagpu: " .. fn .. ": argument #2: expected a file path, got " .. type(path), 2)
  end
  check_record(fn, record)
  require "luagpu"                          -- makes luagpu.trace_file
  local file = require "luagpu.trace_file"
  local text = path:lower():match("%.svg$") and M.svg(record) or M.json(record)
  local ok, err = pcall(function() file.write(path, text, file.check(path, fn), fn) end)
  if not ok then   -- the message at the line that called trace.write (or gpu.trace)
    error(tostring(err):gsub("^[^\n]-:%d+: (luagpu: )", "%1"), fn == "gpu.trace" and 3 or 2)
  end
end

return M
