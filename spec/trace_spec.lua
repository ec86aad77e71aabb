-- The command trace: gpu.trace in a script, `luagpu --trace`, the Chrome
-- JSON read back by python3's json module and checked (every command there,
-- with its queue, kind, sizes, bytes and Lua line, in order on each
-- in-order queue, waits after what they wait for), and the SVG timeline
-- read back as XML.
local gpu = require "luagpu"

local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local support = require "support"
local shell_quote, write_file, read_file = support.shell_quote, support.write_file,
                                           support.read_file

local function tmppath(suffix)
  local base = os.tmpname()
  os.remove(base)
  return base .. suffix
end

local sh = support.sh

-- A script with commands of every kind on two in-order queues of one
-- device, the second waiting on the first; its lines are the ones named.
local SCRIPT = [[
local dev = gpu.device()
local q2 = dev:queue()
local prog = dev:build("kernel void twice(global float *x) { size_t i = get_global_id(0); x[i] = 2 * x[i]; }")
local n = N
local a = dev:buffer("float", n)
local b = dev:buffer("float", n)
local w = a:write(gpu.array("float", n):fill(3))
local k = prog.twice(a):run({n}, {LOCAL})
local c = a:copy_to(b, {queue = q2, wait = {k}})
local f = a:fill(1, {wait = {c}})
prog.twice(b):run({n}, nil, {queue = q2, event = false})
local m = q2:marker()
local got = b:get({queue = q2})
assert(got[1] == 12 and got[n] == 12)
]]

-- Reads the JSON at path with python3 and prints one line per command
-- ("X" event) and per flow, for the checks in Lua.
local function json_lines(path)
  local py = [==[
import json, sys
d = json.load(open(sys.argv[1]))
names = {}
for e in d["traceEvents"]:
    if e["ph"] == "M": names[e["tid"]] = e["args"]["name"]
for e in d["traceEvents"]:
    if e["ph"] == "X" and e.get("cat") != "compile":   # builds (a cold cache) are no command
        a = e["args"]
        print("X", e["tid"], a["seq"], e["cat"], e["name"], repr(e["ts"]), repr(e["dur"]),
              a["bytes"], a["where"], ",".join(map(str, a.get("global", []))),
              ",".join(map(str, a.get("local", []))), ",".join(map(str, a.get("waits", []))),
              names[e["tid"]], sep="|")
    elif e["ph"] in ("s", "f"):
        print(e["ph"], e["tid"], e["id"], repr(e["ts"]), sep="|")
]==]
  local pyfile = tmppath(".py")
  write_file(pyfile, py)
  local out, code = sh("python3 " .. shell_quote(pyfile) .. " " .. shell_quote(path))
  os.remove(pyfile)
  assert.equals(0, code, out)
  local cmds, flows = {}, {}
  for line in out:gmatch("[^\n]+") do
    local f = {}
    for w in (line .. "|"):gmatch("([^|]*)|") do f[#f + 1] = w end
    if f[1] == "X" then
      cmds[#cmds + 1] = {queue = tonumber(f[2]), seq = tonumber(f[3]), kind = f[4], name = f[5],
                         ts = tonumber(f[6]), dur = tonumber(f[7]), bytes = tonumber(f[8]),
                         where = f[9], global = f[10], ["local"] = f[11], waits = f[12],
                         qname = f[13]}
    else
      flows[#flows + 1] = {ph = f[1], queue = tonumber(f[2]), id = tonumber(f[3]),
                           ts = tonumber(f[4])}
    end
  end
  return cmds, flows
end

describe("gpu.trace", function()
  it("luagpu --trace writes Chrome JSON with every command, ordered per queue", function()
    local n, l = 64 * math.random(1, 16), 16
    local script, json = tmppath(".lua"), tmppath(".json")
    write_file(script, (SCRIPT:gsub("LOCAL", tostring(l)):gsub("N", tostring(n))))
    local out, code = sh(shell_quote(PROG) .. " --trace " .. shell_quote(json) .. " "
                         .. shell_quote(script))
    assert.equals(0, code, out)
    local cmds, flows = json_lines(json)
    os.remove(json)
    local short = script:match("[^/]*$")
    -- the zero-fills of the two buffers, then the script's commands in order
    local want = {
      {"fill", "zero-fill", 1, 5, n * 4}, {"fill", "zero-fill", 1, 6, n * 4},
      {"write", "write", 1, 7, n * 4}, {"kernel", "twice", 1, 8, 0},
      {"copy", "copy", 2, 9, n * 4}, {"fill", "fill", 1, 10, n * 4},
      {"kernel", "twice", 2, 11, 0}, {"marker", "marker", 2, 12, 0},
      {"read", "read", 2, 13, n * 4},
    }
    assert.equals(#want, #cmds)
    table.sort(cmds, function(x, y) return x.seq < y.seq end)
    for i, w in ipairs(want) do
      local c = cmds[i]
      assert.equals(i, c.seq)
      assert.same({w[1], w[2], w[3], w[5]}, {c.kind, c.name, c.queue, c.bytes})
      assert.matches(short .. ":" .. w[4] .. "$", c.where)
      assert.matches("^queue " .. w[3] .. " %(" .. gpu.device().name:gsub("%p", "%%%0"), c.qname)
    end
    assert.equals(tostring(n), cmds[4].global)
    assert.equals(tostring(l), cmds[4]["local"])
    assert.equals("", cmds[7]["local"])
    assert.equals("4", cmds[5].waits)            -- the copy waits for the kernel
    assert.equals("5", cmds[6].waits)            -- the fill for the copy
    -- in-order queues: each command starts after the one before it ends
    local last = {}
    for _, c in ipairs(cmds) do
      assert.is_true(c.dur >= 0)
      if last[c.queue] then
        assert.is_true(c.ts >= last[c.queue].ts + last[c.queue].dur - 0.002,
                       "command " .. c.seq .. " starts before command " .. last[c.queue].seq
                       .. " ends")
      end
      last[c.queue] = c
    end
    assert.is_true(cmds[5].ts >= cmds[4].ts + cmds[4].dur - 0.002)
    assert.is_true(cmds[6].ts >= cmds[5].ts + cmds[5].dur - 0.002)
    -- the waits as flows: from the kernel's end on queue 1 to the copy on
    -- queue 2, and from the copy's end back to the fill on queue 1
    assert.equals(4, #flows)
    assert.same({"s", 1, "f", 2}, {flows[1].ph, flows[1].queue, flows[2].ph, flows[2].queue})
    assert.same({"s", 2, "f", 1}, {flows[3].ph, flows[3].queue, flows[4].ph, flows[4].queue})
    assert.equals(flows[1].id, flows[2].id)
    assert.equals(flows[3].id, flows[4].id)
    assert.is_true(flows[2].ts >= flows[1].ts - 0.002)
    os.remove(script)
  end)

  it("records from a script between gpu.trace(true) and gpu.trace(false)", function()
    local dev = gpu.device()
    local b = dev:buffer("int", 10)
    assert.is_false(gpu.tracing())
    b:fill(1)                            -- before: not recorded
    gpu.trace(true)
    assert.is_true(gpu.tracing())
    local ev = b:fill(2)
    local x = b:get()
    local rec = gpu.trace(false)
    b:fill(3):wait()                     -- after: not recorded
    assert.is_false(gpu.tracing())
    assert.equals(2, #rec)
    assert.equals(2, rec.n)
    assert.equals(0, rec.dropped)
    assert.equals(2, x[10])
    assert.same({"fill", "read"}, {rec[1].kind, rec[2].kind})
    assert.equals(40, rec[1].bytes)
    assert.equals("complete", rec[1].status)
    assert.matches("spec/trace_spec.lua:%d+$", rec[1].where)
    for _, k in ipairs {"queued", "submit", "start", "end"} do
      assert.is_true(math.type(rec[1][k]) == "integer")
    end
    assert.is_true(rec[1]["end"] >= rec[1].start and rec[1].start >= rec[1].queued)
    assert.equals(dev.name, rec[2].device)
    ev:wait()
  end)

  it("records program builds from source, and the SVG marks them across the lanes", function()
    local dev = gpu.device()
    local b = dev:buffer("float", 4)
    local trace = require "luagpu.trace"
    gpu.trace(true)
    -- a source no cache has seen: built from source
    local src = ("__kernel void traced_build(__global float *x) { x[0] = %d.5f; } // %s")
                :format(math.random(1, 1e6), tostring(os.clock()))
    local p = dev:build(src)
    local line = debug.getinfo(1, "l").currentline - 1
    p.traced_build(b):run({1})
    local cached = dev:build(src)                    -- from the cache: no build
    local rec = gpu.trace(false)
    assert.equals(1, #rec.builds)
    local bd = rec.builds[1]
    assert.equals("traced_build", bd.name)
    assert.matches("trace_spec.lua:" .. line .. "$", bd.where)
    assert.is_true(math.type(bd.host) == "integer" and bd.host_end >= bd.host)
    assert.is_true(bd.host_end <= rec[#rec].host)   -- built before the kernel was enqueued
    assert.is_true(cached.cached)
    local svg = trace.svg(rec)
    assert.matches('<g class="compile"><title>compile traced_build [%d.]+ ms, [^<]*trace_spec.lua:'
                   .. line .. '</title>', svg)
    assert.matches("compile %(host%)", svg)          -- in the legend
    local json = trace.json(rec)
    assert.matches('"name":"compile traced_build","cat":"compile"', json, 1, true)
  end)

  it("names the Lua line of the user's code when a helper enqueues", function()
    local reduce = require "luagpu.reduce"
    local b = gpu.device():buffer("int", 1000, {host = gpu.array("int", 1000):fill(1)})
    gpu.trace(true)
    local s = reduce.sum(b)
    local line = debug.getinfo(1, "l").currentline - 1
    local rec = gpu.trace(false)
    assert.equals(1000, s)
    assert.is_true(#rec >= 2)
    for _, c in ipairs(rec) do
      assert.matches("trace_spec.lua:" .. line .. "$", c.where)
    end
  end)

  it("rejects what is no switch or path, and a path when not tracing", function()
    assert.has_error(function() gpu.trace(1) end,
      "luagpu: gpu.trace: argument #1: expected true, false or a file path, got number")
    assert.has_error(function() gpu.trace("x.json") end,
      "luagpu: gpu.trace: not tracing: call gpu.trace(true) first")
    local rec = gpu.trace(false)        -- stopping twice gives an empty record
    assert.equals(0, #rec)
    assert.has_error(function() require("luagpu.trace").write({}, 3) end,
      "luagpu: trace.write: argument #2: expected a file path, got number")
    gpu.trace(true)
    assert.has_error(function() gpu.trace("/nonexistent/dir/t.json") end,
      "luagpu: gpu.trace: cannot write /nonexistent/dir/t.json: No such file or directory")
    assert.is_true(gpu.tracing())      -- a path refused up front: the trace goes on
    gpu.trace(false)
    assert.is_false(gpu.tracing())
  end)

  it("writes into a FIFO only while a reader has it open, and under a long name", function()
    -- (the open of a FIFO nobody read waited for ever at the script's end)
    local d = support.tmpdir()
    assert(os.execute("mkfifo " .. shell_quote(d .. "/t.json")))
    write_file(d .. "/s.lua", "gpu.device():buffer('float', 4):fill(1):wait()\n")
    local out, code = sh("timeout 30 " .. shell_quote(PROG) .. " --trace " ..
                         shell_quote(d .. "/t.json") .. " " .. shell_quote(d .. "/s.lua"))
    assert.equals(1, code, out)
    assert.matches("cannot write " .. d .. "/t.json: no process reads the FIFO (start its " ..
                   "reader first)", out, 1, true)
    -- a reader there first (the shell holds it open read-write: no wait, no
    -- race), then the first bytes of what came through
    out, code = sh("exec 3<> " .. shell_quote(d .. "/t.json") .. "; timeout 30 " ..
                   shell_quote(PROG) .. " --trace " .. shell_quote(d .. "/t.json") .. " " ..
                   shell_quote(d .. "/s.lua") .. " && timeout 10 head -c 17 <&3")
    assert.equals(0, code, out)
    assert.equals('{"displayTimeUnit', out)
    local long = d .. "/" .. ("t"):rep(250) .. ".json"
    out, code = sh(shell_quote(PROG) .. " --trace " .. shell_quote(long) .. " " ..
                   shell_quote(d .. "/s.lua"))
    assert.equals(0, code, out)
    assert.matches('^{"displayTimeUnit"', read_file(long))
    os.execute("rm -rf " .. shell_quote(d))
  end)

  it("checks a record a script built or changed, naming the command and the field", function()
    local trace = require "luagpu.trace"
    gpu.trace(true)
    gpu.device():buffer("float", 4):fill(1):wait()
    local rec = gpu.trace(false)
    local function with(field, v)
      local c = {}
      for k, x in pairs(rec[1]) do c[k] = x end
      c[field] = v
      return {c}
    end
    local cases = {
      {"expected the record of gpu.trace (a table), got 5", 5},
      {"command 1: expected a table, got string", {"x"}},
      {"command 1: field 'host': expected a number, got nil", with("host", nil)},
      {"command 1: field 'kind': expected a string, got boolean", with("kind", true)},
      -- (a lane per queue number: 2^40 of them did not end)
      {"command 1: field 'queue': expected 1 to 1 (queues are numbered in the order of first "
       .. "use), got 1099511627776", with("queue", 1 << 40)},
      {"command 1: field 'waits[1]': expected a command of the record (1 to 1), got 9",
       with("waits", {9})},
      {"command 1: field 'global[2]': expected an integer, got 0.5", with("global", {1, 0.5})},
    }
    for _, c in ipairs(cases) do
      for _, f in ipairs{"json", "svg"} do
        assert.has_error(function() trace[f](c[2]) end, "luagpu: trace." .. f ..
                         ": argument #1: " .. c[1])
      end
    end
    local path = os.tmpname()
    os.remove(path)
    assert.has_error(function() trace.write({5}, path .. ".json") end,
      "luagpu: trace.write: argument #1: command 1: expected a table, got 5")
    assert.is_nil(io.open(path .. ".json"))
    assert.has_error(function() trace.svg(rec, {width = 1e9}) end,
      "luagpu: trace.svg: argument #2: option width: expected an integer from 200 to 100000, "
      .. "got 1000000000.0")
    assert.matches("^<svg", trace.svg(rec, {width = 640}))
  end)

  it("--trace writes the file also when the script raises", function()
    local script, json = tmppath(".lua"), tmppath(".json")
    write_file(script, "local b = gpu.device():buffer('int', 8)\nb:fill(5)\nerror('stop here')\n")
    local out, code = sh(shell_quote(PROG) .. " --trace " .. shell_quote(json) .. " "
                         .. shell_quote(script))
    os.remove(script)
    assert.equals(1, code)
    assert.matches(":3: stop here", out, 1, true)
    local cmds = json_lines(json)
    os.remove(json)
    assert.equals(2, #cmds)                      -- the zero-fill and the fill
    assert.same({"zero-fill", "fill"}, {cmds[1].name, cmds[2].name})
    assert.matches(":2$", cmds[2].where)
  end)

  it("--trace without a file is refused", function()
    local out, code = sh(shell_quote(PROG) .. " --trace")
    assert.equals(1, code)
    assert.matches("^luagpu: '%-%-trace' needs an argument\nusage: ", out)
  end)

  it("--trace followed by an option or - is refused; no file is written", function()
    local dir = tmppath(".d")
    assert(os.execute("mkdir " .. shell_quote(dir)))
    local prog_path = PROG:sub(1, 1) == "/" and PROG or os.getenv("PWD") .. "/" .. PROG
    for _, args in ipairs {"--trace -e 'print(1)'", "--trace -i", "--trace -", "--trace --",
                           "--trace --trace t.json -e 'print(1)'"} do
      local out, code = sh("cd " .. shell_quote(dir) .. " && timeout 20 "
                           .. shell_quote(prog_path)
                           .. " " .. args .. " </dev/null")
      assert.equals(1, code, args)
      local got = args:match("^%-%-trace (%S+)")
      assert.equals("luagpu: '--trace' needs a file name before the script or option, got '"
                    .. got .. "' (name a file that starts with '-' as ./" .. got .. ")",
                    out:match("^[^\n]*"), args)
      local p = io.popen("ls -A " .. shell_quote(dir))
      assert.equals("", p:read("a"), args)      -- no file named -e (or anything) made
      p:close()
    end
    os.remove(dir)
  end)

  it("examples/pipeline.lua writes an SVG timeline: a lane, a bar per command, waits as arrows",
     function()
    local svg = tmppath(".svg")
    local out, code = sh(shell_quote(PROG) .. " examples/pipeline.lua 2 1024 " .. shell_quote(svg))
    assert.equals(0, code, out)
    assert.matches("trace written to " .. svg, out, 1, true)
    local py = tmppath(".py")
    write_file(py, [==[
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
bars = [g.find(ns + "title").text for g in root.iter(ns + "g") if g.get("class") != "compile"]
arrows = [l for l in root.iter(ns + "line") if l.get("marker-end") and not l.get("class")]
print(len(bars), len(arrows))
for b in bars: print(b)
texts = [t.text for t in root.iter(ns + "text")]
lanes = [t.find(ns + "title").text for t in root.iter(ns + "text") if t.find(ns + "title") is not None]
print("legend:", " ".join(k for k in ("kernel", "write", "read", "fill", "waits for") if k in texts))
for l in lanes: print("lane:", l)
]==])
    local text, pcode = sh("python3 " .. shell_quote(py) .. " " .. shell_quote(svg))
    os.remove(py)
    os.remove(svg)
    assert.equals(0, pcode, text)
    -- 2 chunks: 4 zero-fills, then write, scale, add_next, read each,
    -- 3 waits each
    assert.matches("^12 6\n", text)
    for _, name in ipairs {"write write", "kernel scale", "kernel add_next", "read read"} do
      assert.matches(name .. " #%d+: [%d.]+ us at [%d.]+ us, examples/pipeline.lua:%d+", text)
    end
    -- a legend of the kinds present; each lane's device named whole on hover
    assert.matches("\nlegend: kernel write read fill waits for\n", text)
    local dev = gpu.device()
    assert.matches("\nlane: queue 1 on " .. dev.name:gsub("%p", "%%%0") .. "\n", text)
  end)
end)

describe("the trace's file", function()
  -- Runs the program with a time limit; returns its output and exit code.
  local function prog(args)
    return sh("timeout 20 " .. shell_quote(PROG) .. " " .. args)
  end

  it("--trace ends with a command still waiting for a user event, and marks it pending",
     function()
    local script, json = tmppath(".lua"), tmppath(".json")
    write_file(script, [[
local dev = gpu.device()
local q = dev:queue()
local u = gpu.user_event(dev)
local b = dev:buffer("float", 16)
local r = b:read(nil, {queue = q, wait = u})
local k = dev:build("kernel void k(global float *x) { x[0] = 1; }").k(b):run({1}, nil, {queue = q})
print("end")
]])
    local out, code = prog("--trace " .. shell_quote(json) .. " " .. shell_quote(script))
    os.remove(script)
    assert.equals(0, code, out)                 -- 124 when it hangs
    assert.equals("end\n", out)
    local rec = read_file(json)
    os.remove(json)
    -- the zero-fill completed; the gated read and the kernel behind it on q are pending
    local statuses = {}
    for name, status in rec:gmatch('"name":"([%w%-]+)".-"status":"(%a+)"') do
      statuses[#statuses + 1] = name .. "=" .. status
    end
    assert.same({"zero-fill=complete", "read=pending", "k=pending"}, statuses)
  end)

  it("gpu.trace(false) does not wait for a gated command; those done have their times", function()
    local script = tmppath(".lua")
    write_file(script, [[
local dev = gpu.device()
local q = dev:queue()
local u = gpu.user_event(dev)
local b = dev:buffer("float", 1024)
gpu.trace(true)
local f = b:fill(2, {queue = q})
local r = b:read(nil, {queue = q, wait = u})
local c = dev:buffer("float", 4)
f:wait()
dev:finish()
local rec = gpu.trace(false)
print(rec[1].kind, rec[2].kind, rec[3].kind)
print(rec[1].status, rec[2].status, rec[3].status, rec[2].start)
u:complete()
print(r:wait()[1024])
]])
    local out, code = prog(shell_quote(script))
    os.remove(script)
    assert.equals(0, code, out)                 -- 124 when it hangs
    assert.equals("fill\tread\tfill\ncomplete\tpending\tcomplete\tnil\n2.0\n", out)
  end)

  -- Item 1 of issue 27's follow-up: a command recorded behind a gated one the
  -- trace never saw (enqueued before gpu.trace(true)) on an in-order queue.
  local BEHIND = [[
local dev = gpu.device()
local u = gpu.user_event(dev)
local q = dev:queue()
local b = dev:buffer("int", 4)
b:write({1, 2, 3, 4}, {queue = q, wait = {u}})
gpu.trace(true)
local w = b:write({5, 6, 7, 8}, {queue = q})
]]

  it("gpu.trace(false) and gpu.trace(path) end behind a gated command the record never saw",
     function()
    local script, json = tmppath(".lua"), tmppath(".json")
    write_file(script, BEHIND .. [[
local rec = gpu.trace(false)
print(rec.n, rec[1].kind, rec[1].status, rec[1].start)
gpu.trace(true)
b:write({1, 2, 3, 4}, {queue = q})
rec = gpu.trace(]] .. string.format("%q", json) .. [[)
print(rec.n, rec[1].status)
u:complete()
print(table.concat(b:get({queue = q}):totable(), ","))
]])
    local out, code = prog(shell_quote(script))
    assert.equals(0, code, out)                 -- 124 when it hangs
    assert.equals("1\twrite\tpending\tnil\n1\tpending\n1,2,3,4\n", out)
    assert.matches('"status":"pending"', read_file(json), 1, true)
    -- the same at exit with --trace: the file is written, the write pending
    write_file(script, BEHIND .. "print('end')\n")
    os.remove(json)
    out, code = prog("--trace " .. shell_quote(json) .. " " .. shell_quote(script))
    assert.equals(0, code, out)
    assert.equals("end\n", out)
    local rec = read_file(json)
    assert.matches('"name":"write".-"status":"pending"', rec)
    os.remove(script)
    os.remove(json)
  end)

  it("--trace refuses a Lua script, a file that is no trace, a link, a folder: untouched",
     function()
    local script = tmppath(".lua")
    write_file(script, "print('ran')\n")
    local out, code = prog("--trace " .. shell_quote(script) .. " " .. shell_quote(script))
    assert.equals(1, code)
    assert.equals("luagpu: --trace: refusing to write a trace over " .. script
                  .. " (a Lua script): give the trace its own file (out.json, or out.svg)\n", out)
    assert.equals("print('ran')\n", read_file(script))
    local notes = tmppath(".json")
    write_file(notes, "my notes\n")
    out, code = prog("--trace " .. shell_quote(notes) .. " " .. shell_quote(script))
    assert.equals(1, code)
    assert.equals("luagpu: --trace: refusing to overwrite " .. notes .. ": it is not a trace "
                  .. "luagpu wrote (give a new file, such as out.json)\n", out)
    assert.equals("my notes\n", read_file(notes))
    local link = tmppath(".json")
    assert(os.execute("ln -s " .. shell_quote(notes) .. " " .. shell_quote(link)))
    out, code = prog("--trace " .. shell_quote(link) .. " -e 'print(1)'")
    assert.equals(1, code)
    assert.equals("luagpu: --trace: refusing to write a trace through the symbolic link "
                  .. link .. ": give the file itself\n", out)
    assert.equals("my notes\n", read_file(notes))
    out, code = prog("--trace /tmp -e 'print(1)'")
    assert.equals(1, code)
    assert.equals("luagpu: --trace: cannot write /tmp: it is a folder\n", out)
    -- gpu.trace checks before it stops: refused, the trace goes on
    gpu.trace(true)
    assert.has_error(function() gpu.trace(notes) end, "luagpu: gpu.trace: refusing to "
                     .. "overwrite " .. notes .. ": it is not a trace luagpu wrote (give a new "
                     .. "file, such as out.json)")
    assert.is_true(gpu.tracing())
    gpu.trace(false)
    assert.has_error(function() require("luagpu.trace").write({}, script) end,
      "luagpu: trace.write: refusing to write a trace over " .. script .. " (a Lua script): "
      .. "give the trace its own file (out.json, or out.svg)")
    assert.equals("my notes\n", read_file(notes))
    -- a trace of ours is replaced, and only once the new one is whole
    local json = tmppath(".json")
    out, code = prog("--trace " .. shell_quote(json) .. " " .. shell_quote(script))
    assert.equals(0, code, out)
    out, code = prog("--trace " .. shell_quote(json) .. " -e 'gpu.device():buffer(\"int\", 4)'")
    assert.equals(0, code, out)
    assert.matches('"name":"zero-fill"', read_file(json), 1, true)
    for _, p in ipairs {script, notes, link, json} do os.remove(p) end
  end)

  it("--trace with the REPL writes the trace when the session ends, not before", function()
    local json = tmppath(".json")
    local input = tmppath(".txt")
    write_file(input, string.format("print(io.open(%q) == nil)\ngpu.device():buffer('int', 4)\n",
                                    json))
    local out, code = sh("timeout 20 " .. shell_quote(PROG) .. " < " .. shell_quote(input)
                         .. " --trace " .. shell_quote(json) .. " 2>/dev/null")
    assert.equals(0, code, out)
    assert.matches("\ntrue\nluagpu.Buffer: int[4]", out, 1, true)   -- no file while it runs
    assert.matches('"name":"zero-fill"', read_file(json), 1, true)
    os.remove(json)
    os.remove(input)
  end)

  it("a trace that cannot be written raises, and --trace exits 1", function()
    local out, code = prog("--trace /dev/full -e 'gpu.device():buffer(\"int\", 4)'")
    assert.equals(1, code)
    assert.equals("luagpu: gpu.trace: cannot write /dev/full: No space left on device\n", out)
    gpu.trace(true)
    gpu.device():buffer("int", 4)
    assert.has_error(function() gpu.trace("/dev/full") end,
                     "luagpu: gpu.trace: cannot write /dev/full: No space left on device")
    assert.has_error(function() require("luagpu.trace").write({}, "/dev/full") end,
                     "luagpu: trace.write: cannot write /dev/full: No space left on device")
    out, code = prog("--trace /dev/null -e 'gpu.device():buffer(\"int\", 4)'")
    assert.equals(0, code, out)
  end)
end)
