-- The REPL on a terminal: luagpu runs in a pseudo-terminal (util-linux's
-- `script`), and each keystroke sequence is typed only once the output
-- shows what it waits for (a count of prompts, or a text), so no step
-- depends on timing. Tab completion, multi-line history, Ctrl-C during a
-- wait on a kernel; help(), matrices and error objects through a pipe.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"
if PROG:sub(1, 1) ~= "/" then PROG = io.popen("pwd"):read("l") .. "/" .. PROG end

local support = require "support"
local shell_quote, write_file, read_file = support.shell_quote, support.write_file,
                                           support.read_file

local tmpdir = support.tmpdir

-- The REPL in a pseudo-terminal with HOME=home (support.repl_session).
local function session(home, steps) return support.repl_session(PROG, home, steps) end

-- Runs the REPL with input through a pipe; returns stdout and stderr.
local function piped(input)
  local inpath, errpath = os.tmpname(), os.tmpname()
  write_file(inpath, input)
  local p = io.popen(string.format("%s <%s 2>%s", shell_quote(PROG), shell_quote(inpath),
                                   shell_quote(errpath)))
  local out = p:read("a")
  p:close()
  local err = read_file(errpath)
  os.remove(inpath)
  os.remove(errpath)
  return out, err
end

-- The first line of sessions that wait on a long kernel: p.spin(b, n) runs n
-- steps on one work-item. PoCL links a kernel at its first launch, in a child
-- process that a Ctrl-C would stop too: it is launched once here.
local SPIN = "dev = gpu.device() p = dev:build[[kernel void spin(global uint *x, uint n) { "
             .. "uint s = 1; for (uint i = 0; i < n; i++) s = s * 1664525u + i; x[0] = s; }]] "
             .. "b = dev:buffer('uint', 1) p.spin(b, 1):run({1}):wait()\n"

describe("the REPL on a terminal", function()
  it("completes globals, module fields, methods and fields with Tab", function()
    local home = tmpdir()
    local out, status = session(home, {
      {prompts = 1, keys = "gpu.versi\t\n"},
      {prompts = 2, keys = "dev = gpu.device()\n"},
      {prompts = 3, keys = "dev:summ\t():match('^name')\n"},
      {prompts = 4, keys = "b = dev:buffer('int', 5)\n"},
      {prompts = 5, keys = "b.ty\t\n"},
      {prompts = 6, keys = "a = gpu.array('int', 3)\n"},
      {prompts = 7, keys = "a:fi\t(7)\n"},
      {prompts = 8, keys = "t = {alpha = 6 * 7}\n"},
      {prompts = 9, keys = "t.alp\t\n"},
      {prompts = 10, keys = "pri\t('printed')\n"},
      {prompts = 11, keys = "\4"},
    })
    os.execute("rm -r " .. shell_quote(home))
    assert.equals("rc 0\n", status)
    assert.matches("gpu> gpu.version\n" .. require("luagpu").version .. "\n", out, 1, true)
    assert.matches("gpu> dev:summary():match('^name')\nname\n", out, 1, true)
    assert.matches("gpu> b.type\nint\n", out, 1, true)
    assert.matches("gpu> a:fill(7)\nluagpu.Array<int>[3]: {7, 7, 7}\n", out, 1, true)
    assert.matches("gpu> t.alpha\n42\n", out, 1, true)
    assert.matches("gpu> print('printed')\nprinted\n", out, 1, true)
  end)

  it("completes a tensor's methods and public fields, dev predefined", function()
    local home = tmpdir()
    local out, status = session(home, {
      {prompts = 1, keys = "t = dev:tensor('float', {2, 3}, 1)\n"},
      {prompts = 2, keys = "t:resh\t({3, 2}).shape[1]\n"},
      {prompts = 3, keys = "t.nd\t\n"},
      {prompts = 4, keys = "t.\t\t"},
      {text = "t.strides", prompts = 5, keys = "\3"},   -- the line drawn again, then Ctrl-C
      {prompts = 6, keys = "\4"},
    })
    os.execute("rm -r " .. shell_quote(home))
    assert.equals("rc 0\n", status)
    assert.matches("gpu> t:reshape({3, 2}).shape[1]\n3\n", out, 1, true)
    assert.matches("gpu> t.ndim\n2\n", out, 1, true)
    for _, name in ipairs {"t.shape", "t.type", "t.ndim", "t.strides", "t.device", "t.sum",
                           "t.reshape"} do
      assert.matches("%s" .. name:gsub("%.", "%%.") .. "%s", out)
    end
    assert.not_matches("t%._", out)   -- no internals
  end)

  it("lists the candidates on a second Tab", function()
    local home = tmpdir()
    local out, status = session(home, {
      {prompts = 1, keys = "dev = gpu.device()\n"},
      {prompts = 2, keys = "dev:bu\t\t"},
      -- the list, and the line drawn again under it, before Ctrl-C: a Ctrl-C
      -- between the two (a loaded machine) left no third prompt to count
      {text = "dev:build_file", prompts = 3, keys = "\3"},
      {prompts = 4, keys = "\4"},
    })
    os.execute("rm -r " .. shell_quote(home))
    assert.equals("rc 0\n", status)
    -- the first Tab finds nothing to add to "dev:bu", the second lists
    for _, name in ipairs {"dev:buffer", "dev:build", "dev:build_binary", "dev:build_file"} do
      assert.matches("%s" .. name .. "%s", out)
    end
  end)

  it("keeps a multi-line chunk as one history entry, saved at once", function()
    local home = tmpdir()
    local _, status = session(home, {
      {prompts = 1, keys = "function f()\n  return 6 * 7\nend\n"},
      {prompts = 2, keys = "\4"},
    })
    assert.equals("rc 0\n", status)
    local hist = read_file(home .. "/.luagpu_history")
    assert.matches("^#%d+\nfunction f%(%)\n  return 6 %* 7\nend\n$", hist)
    -- a new session: Ctrl-P (previous) recalls the whole chunk
    local out, status2 = session(home, {
      {prompts = 1, keys = "\16\n"},
      {prompts = 2, keys = "f()\n"},
      {prompts = 3, keys = "\4"},
    })
    os.execute("rm -r " .. shell_quote(home))
    assert.equals("rc 0\n", status2)
    assert.matches("\n42\n", out, 1, true)
    assert.not_matches("expected", out, 1, true)
  end)

  it("returns to the prompt on Ctrl-C while waiting on a kernel; history survives os.exit",
     function()
    local home = tmpdir()
    local out, status = session(home, {
      {prompts = 1, keys = SPIN},
      -- about 6 s of work on a CPU: far longer than the Ctrl-C takes to come
      {prompts = 2, keys = "ev = p.spin(b, 4000000000):run({1}) print('wai' .. 'ting') ev:wait()\n"},
      -- "waiting" is printed a few instructions before ev:wait() starts: a
      -- Ctrl-C at once could land in print (seen once on a loaded machine)
      {text = "waiting", delay = 1, keys = "\3"},
      {prompts = 3, keys = "print(ev.status ~= 'complete', 6 * 7)\n"},
      {prompts = 4, keys = "os.exit(0)\n"},
    })
    local hist = read_file(home .. "/.luagpu_history")
    os.execute("rm -r " .. shell_quote(home))
    assert.equals("rc 0\n", status)
    assert.matches("interrupted! (the kernel spin command goes on)\nstack traceback:", out, 1, true)
    assert.matches("\ntrue\t42\n", out, 1, true)
    assert.matches("\nprint(ev.status ~= 'complete', 6 * 7)\n#", hist, 1, true)
    assert.matches("\nos%.exit%(0%)\n$", hist)
  end)

  it("on Ctrl-D says which queues it waits for, and Ctrl-C then ends it at once", function()
    local home = tmpdir()
    local out, status = session(home, {
      {prompts = 1, keys = SPIN},
      {prompts = 2, keys = "q = dev:queue() ev = p.spin(b, 4000000000):run({1}, nil, {queue = q})\n"},
      {prompts = 3, keys = "\4"},
      {text = "(Ctrl-C aborts)", keys = "\3"},
    })
    os.execute("rm -r " .. shell_quote(home))
    assert.equals("rc 130\n", status)
    assert.matches("luagpu: waiting for the commands still running on a queue of "
                   .. "[^\n]+ %(Ctrl%-C aborts%)\n", out)
    assert.matches("luagpu: interrupted: exiting without waiting for the commands\n", out, 1, true)
  end)
end)

describe("the REPL's end", function()
  it("waits for the commands of every queue, past 64 of them, and says how many", function()
    -- a kernel of about a second on one queue, and 70 more queues each with a
    -- marker waiting for it: 71 queues busy when the input ends
    local out, err = piped("dev = gpu.device() p = dev:build[[kernel void spin(global uint *x, "
      .. "uint n) { uint s = 1; for (uint i = 0; i < n; i++) s = s * 1664525u + i; x[0] = s; }]] "
      .. "b = dev:buffer('uint', 1) p.spin(b, 1):run({1}):wait()\n"
      .. "qs = {} for i = 1, 70 do qs[i] = dev:queue() end\n"
      .. "a = dev:queue() ev = p.spin(b, 800000000):run({1}, nil, {queue = a}) "
      .. "ms = {} for i = 1, 70 do ms[i] = qs[i]:marker{wait = {ev}} end print(#ms)\n")
    assert.matches("\n?70\n", out)
    local listed = err:match("luagpu: waiting for the commands still running on 71 queues "
                             .. "%(([^\n]*), %.%.%.%) %(Ctrl%-C aborts%)\n")
    assert.is_not_nil(listed, err)
    local n = 0
    for _ in (listed .. ", "):gmatch("a queue of [^,]+, ") do n = n + 1 end
    assert.equals(3, n, listed)
  end)
end)

describe("the REPL's help and printer", function()
  it("help() lists an object's methods, one line each, and the module's functions", function()
    local out = piped("help(gpu)\nhelp(gpu.device())\nhelp(gpu.array('int', 2))\n"
                      .. "help(setmetatable({}, {__index = {go = function() end}}))\nhelp(7)\n")
    assert.matches("gpu: the luagpu module\n  gpu.array(type, n | table | shape): ", out, 1, true)
    assert.matches("\n  gpu.wait(ev, ...): waits for all", out, 1, true)
    assert.matches("\nluagpu.Device: fields name, vendor, type, ", out, 1, true)
    assert.matches("\n  dev:build(source [, {options =, defines =}]): compiles OpenCL C into a "
                   .. "Program\n", out, 1, true)
    assert.matches("\nluagpu.Array: fields type, count, shape, bytes\n  a:copy([type]): ", out, 1, true)
    assert.matches("\ntable\n  :go(...)\n", out, 1, true)
    assert.matches("\nnumber: 7\n", out, 1, true)
  end)

  it("help(t) gives a tensor's fields and a line per method, help(gpu) the helpers", function()
    local out = piped("t = dev:tensor('float', {2, 2}, 1)\nhelp(t)\nhelp(gpu)\n")
    assert.equals(1, out:find("luagpu.Tensor: fields buffer, device, ndim, offset, shape, strides, "
                              .. "type\n", 1, true))
    assert.matches("\n  x:add(y): elementwise add, in the promoted type (also x + y)\n", out, 1, true)
    assert.matches("\n  x:reshape(shape): ", out, 1, true)
    assert.matches("\n  x:sum([dim [, keepdim]] [, {type =}]): ", out, 1, true)
    assert.matches("\nhelper modules (gpu.NAME loads one on first use; the others: require "
                   .. "\"luagpu.NAME\"):\n", out, 1, true)
    for _, name in ipairs {"gpu.tensor", "gpu.reduce", "gpu.matmul", "gpu.where", "gpu.algo",
                           "luagpu.split", "luagpu.trace", "luagpu.mpi"} do
      assert.matches("\n  " .. name, out, 1, true)
    end
    assert.matches("\n  gpu.warmup(dev [, types]): ", out, 1, true)
    assert.not_matches("\n  gpu%.[%w_]+%(%.%.%.%)\n", out)   -- every function has its own line
    assert.not_matches("\n  x:[%w_]+%(%.%.%.%)\n", out)
  end)

  it("help(xs) of a sharded tensor gives its fields and a line per method", function()
    local out = piped("xs = gpu.shard(dev:tensor('float', {4, 2}, 1), {dev})\nhelp(xs)\n")
    assert.equals(1, out:find("luagpu.ShardedTensor: fields devices, dim, ndim, shape, shards, "
                              .. "type\n", 1, true))
    assert.matches("\n  xs:mm(b): each shard of rows times b", out, 1, true)
    assert.matches("\n  xs:exp(): elementwise exp on each shard\n", out, 1, true)
    assert.not_matches("\n  x?s?:[%w_]+%(%.%.%.%)\n", out)   -- every method has its own line
  end)

  it("predefines dev, the default device, made on first use", function()
    local out = piped("rawget(_G, 'dev') == nil\ndev == gpu.device()\nrawget(_G, 'dev') == dev\n"
                      .. "gpu.type(dev:sampler{}), gpu.type(dev:tensor('int', {1}))\n"
                      .. "not dev.image_support or gpu.type(dev:image({order = 'r', type = "
                      .. "'float'}, {2}))\n")
    assert.matches("^true\ntrue\ntrue\nSampler\tTensor\n", out)
    local img = require("luagpu").device().image_support and "Image" or "true"
    assert.matches("\n" .. img .. "\n$", out)
    -- scripts get no such global
    local p = io.popen(shell_quote(PROG) .. " -e 'print(dev)' 2>&1")
    assert.equals("nil\n", p:read("a"))
    p:close()
    -- no such device: the session starts; naming dev raises at its line
    p = io.popen("echo 'print(1) print(dev)' | LUAGPU_DEVICE=nosuchdevice " .. shell_quote(PROG)
                 .. " 2>&1")
    local err = p:read("a")
    p:close()
    assert.matches('\n1\nstdin:1: luagpu: gpu.device: no device matches "nosuchdevice"', err, 1,
                   true)
  end)

  it("names the line of an expression whose helper raised, and prints its values", function()
    -- (the expression ran as `return LINE`, a tail call: the error lost
    -- its stdin:1: and the traceback its main chunk)
    local out, err = piped("m = dev:tensor('float', {2, 3}, 1)\nm:mm(m)\n1, nil, 3 -- c\n"
                           .. "print((m:sum(1)):get()[2])\n")
    assert.matches("stdin:1: luagpu: tensor:mm: shapes {2, 3} and {2, 3} do not multiply", err,
                   1, true)
    assert.matches("\tstdin:1: in main chunk\n", err, 1, true)
    assert.matches("1\tnil\t3\n2.0\n", out, 1, true)
    -- a module's functions are fields, listed with its own names
    out = piped("help(gpu.tensor)\n")
    assert.matches("table: fields MAX_DIMS, cat, ", out, 1, true)
  end)

  it("prints a tensor with its type and shape first, summarised past 1000 elements", function()
    local out = piped("dev:tensor('float', {2, 3}, {1, 2, 3, 4, 5, 6.5})\n"
                      .. "dev:arange('int', 2000):reshape({2, 1000})\n")
    assert.matches("luagpu.Tensor<float>{2, 3}:\n[[ 1.,  2.,  3.],\n [ 4.,  5., 6.5]]\n", out,
                   1, true)
    assert.matches("luagpu.Tensor<int>{2, 1000}:\n[[   1,    2,    3, ...,  998,  999, 1000],\n"
                   .. " [1001, 1002, 1003, ..., 1998, 1999, 2000]]\n", out, 1, true)
  end)

  it("has a help line for every method of every luagpu class", function()
    local p = io.popen(shell_quote(PROG) .. " -e " .. shell_quote([[
      require "luagpu.tensor"   -- (its Device methods too)
      local missing = {}
      for name, mt in pairs(debug.getregistry()) do
        if type(name) == "string" and name:match("^luagpu%.") and type(mt) == "table"
           and type(rawget(mt, "__methods")) == "table" then
          local text = (function()
            local o = {}
            for k in pairs(mt.__methods) do o[#o + 1] = k end
            return o
          end)()
          for _, k in ipairs(text) do missing[#missing + 1] = name .. ":" .. k end
        end
      end
      table.sort(missing)
      io.write("methods ", table.concat(missing, " "), "\n")
    ]]) .. " 2>&1")
    local out = p:read("a")
    p:close()
    local help = dofile("host/help.lua")
    local count = 0
    for entry in out:match("methods ([^\n]*)"):gmatch("%S+") do
      local class, method = entry:match("^(.-):(.*)$")
      local c = help.classes[class]
      assert(c and c.methods[method], "no line for " .. entry .. " in host/help.lua")
      count = count + 1
    end
    assert.is_true(count >= 20, out)
  end)

  it("has a help line for every Tensor method, made from the tables that define them", function()
    local p = io.popen(shell_quote(PROG) .. " -e " .. shell_quote([[
      local O = require "luagpu.tensor.object"
      require "luagpu.tensor"
      local c = require("luagpu.tensor.help").class()
      local n, missing = 0, {}
      for name in pairs(O.methods) do
        n = n + 1
        local line = c.methods[name]
        if not (line and line:find("x:" .. name .. "(", 1, true) == 1) then
          missing[#missing + 1] = name
        end
      end
      for name in pairs(O.fields) do n = n + 1 end
      print(n, #c.fields, table.concat(missing, " "))
    ]]) .. " 2>&1")
    local out = p:read("a")
    p:close()
    local n, nf, missing = out:match("^(%d+)\t(%d+)\t(.-)\n$")
    assert.is_not_nil(n, out)
    assert.equals("", missing, "no help line for these Tensor methods (lua/luagpu/tensor/help.lua)")
    assert.is_true(tonumber(n) > 100 and tonumber(nf) >= 7, out)
  end)

  it("prints shaped host arrays as matrices, elided past 10 rows and columns", function()
    local out = piped([[
      dev = gpu.device()
      dev:buffer("int", {2, 3}, {host = {1, 2, 3, 4, 5, 6}}):get()
      a = gpu.array("int", 12 * 13) for i = 1, #a do a[i] = i end
      dev:buffer("int", {12, 13}, {host = a}):get()
    ]] .. "\n")
    assert.matches("luagpu.Array<int>[2x3]:\n{{1, 2, 3},\n {4, 5, 6}}\n", out, 1, true)
    local rows = {}
    for line in out:gmatch("[^\n]+") do rows[#rows + 1] = line end
    local at
    for i, line in ipairs(rows) do if line == "luagpu.Array<int>[12x13]:" then at = i end end
    assert.is_number(at)
    assert.equals("{{  1,   2,   3,   4,   5, ...,   9,  10,  11,  12,  13},", rows[at + 1])
    assert.equals(" {  :,   :,   :,   :,   :, ...,   :,   :,   :,   :,   :},", rows[at + 6])
    assert.equals(" {144, 145, 146, 147, 148, ..., 152, 153, 154, 155, 156}}", rows[at + 11])
  end)

  it("leaves luagpu's own frames out of an error's traceback, and says how many", function()
    local input = "x = gpu.device():tensor('float', {3})\n"
                  .. "local function f() return x + 'a' end f()\n"
    local _, err = piped(input)
    local head = "stdin:1: luagpu: tensor:add: argument #2: expected a tensor or a number, " ..
                 "got string\nstack traceback:\n\tstdin:1: in local 'f'\n\tstdin:1: in main chunk\n" ..
                 "\t[C]: in ?\n\t("
    assert.matches(head, err, 1, true)
    local hidden = tonumber(err:match("\t%((%d+) frames inside luagpu left out; " ..
                                      "LUAGPU_TRACEBACK=full shows them%)"))
    assert.is_true(hidden and hidden >= 2, err)
    -- with LUAGPU_TRACEBACK=full, those frames (error's, the helpers') are there
    local inpath = support.write_file(os.tmpname(), input)
    local p = io.popen(string.format("LUAGPU_TRACEBACK=full %s <%s 2>&1 >/dev/null",
                                     shell_quote(PROG), shell_quote(inpath)))
    local full = p:read("a")
    p:close()
    os.remove(inpath)
    assert.matches("stack traceback:\n\t[C]: in function 'error'\n", full, 1, true)
    local frames = select(2, full:gsub("\n\t", ""))
    assert.equal(3 + hidden, frames, full)
    assert.is_nil(full:find("left out", 1, true))
    -- a script's own error keeps its frames whole
    _, err = piped("error('mine')\n")
    assert.matches("stdin:1: mine\nstack traceback:\n\t[C]: in function 'error'\n" ..
                   "\tstdin:1: in main chunk\n\t[C]: in ?\n", err, 1, true)
  end)

  it("prints error objects through __tostring or the table printer", function()
    local _, err = piped("error({code = 42, 'x'})\n"
                         .. "error(setmetatable({}, {__tostring = function() return 'mine' end}))\n"
                         .. "error()\n")
    assert.matches('error object: {"x", code = 42}\nstack traceback:', err, 1, true)
    assert.matches("\nmine\n", err, 1, true)
    assert.matches("error object: nil\nstack traceback:", err, 1, true)
  end)
end)
