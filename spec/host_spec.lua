-- The luagpu program, driven through io.popen: scripts and their arguments,
-- options, exit codes, and the REPL fed through stdin.
local gpu = require "luagpu"

local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local support = require "support"
local shell_quote, write_file, read_file = support.shell_quote, support.write_file,
                                           support.read_file

-- Runs `luagpu ARGS` (ARGS already quoted for sh) with input on stdin
-- (nothing when nil) and the environment settings env ("NAME=value ...");
-- returns stdout, stderr and the exit code.
local function run(args, input, env)
  local inpath, errpath = os.tmpname(), os.tmpname()
  write_file(inpath, input or "")
  local p = io.popen(string.format("%s %s %s <%s 2>%s", env or "", shell_quote(PROG), args,
                                   shell_quote(inpath), shell_quote(errpath)))
  local out = p:read("a")
  local _, _, code = p:close()
  local err = read_file(errpath)
  os.remove(inpath)
  os.remove(errpath)
  return out, err, code
end

-- A fresh temporary path ending in suffix (nothing there yet).
local function tmppath(suffix)
  local base = os.tmpname()
  os.remove(base)
  return base .. suffix
end

-- A script in a temporary file; returns its path.
local function script(text)
  local path = tmppath(".lua")
  write_file(path, text)
  return path
end

local function lines(s)
  local t = {}
  for line in s:gmatch("([^\n]*)\n") do t[#t + 1] = line end
  return t
end

describe("the luagpu program", function()
  describe("running a script", function()
    it("sets arg as lua does, passes the arguments as ..., and preloads gpu", function()
      local a, b = tostring(math.random(1000)), "two words"
      local path = script([[
        print(arg[0], arg[1], arg[2], #arg, select("#", ...), ...)
        print(arg[-1] == arg[-1], type(gpu), gpu == require "luagpu", gpu.version)
      ]])
      local out, err, code = run(shell_quote(path) .. " " .. a .. " " .. shell_quote(b))
      os.remove(path)
      assert.equals("", err)
      assert.equals(0, code)
      local l = lines(out)
      assert.equals(table.concat({path, a, b, "2", "2", a, b}, "\t"), l[1])
      assert.equals("true\ttable\ttrue\t" .. gpu.version, l[2])
    end)

    it("puts the program and the options before the script at negative indices", function()
      local path = script("print(arg[-3], arg[-2], arg[-1], arg[0])")
      local out, _, code = run("-e 'x = 1' " .. shell_quote(path))
      os.remove(path)
      assert.equals(0, code)
      assert.equals(PROG .. "\t-e\tx = 1\t" .. path .. "\n", out)
    end)

    it("runs a script from stdin with -", function()
      local n = math.random(100)
      local out, err, code = run("- " .. n .. " b", "print(arg[0], 2 * " .. n .. ", ...)")
      assert.equals("", err)
      assert.equals(0, code)
      assert.equals("-\t" .. 2 * n .. "\t" .. n .. "\tb\n", out)
    end)

    it("exits with the script's os.exit code", function()
      local code = math.random(2, 100)
      local _, _, got = run("-e 'os.exit(" .. code .. ")'")
      assert.equals(code, got)
    end)

    it("reports a script that raises with its message and a traceback, exit 1", function()
      local path = script("local function f()\n  error('bad thing ' .. 6 * 7)\nend\nf()\n")
      local out, err, code = run(shell_quote(path))
      os.remove(path)
      assert.equals(1, code)
      assert.equals("", out)
      assert.matches("^luagpu: " .. path:gsub("%p", "%%%0") .. ":2: bad thing 42\n", err)
      assert.matches("stack traceback:", err, 1, true)
      assert.matches("in local 'f'", err, 1, true)
    end)

    it("reports the module's errors with the caller's position, the prefix once", function()
      local _, err, code = run("-e 'gpu.devices(\"bogus\")'")
      assert.equals(1, code)
      assert.matches("^luagpu: %(command line%):1: gpu.devices: argument #1: expected "
                     .. "\"gpu\", \"cpu\", \"accelerator\" or \"all\", got \"bogus\"\n"
                     .. "stack traceback:\n", err)
    end)

    it("reports a syntax error without running anything, exit 1", function()
      local path = script("print('ran')\nx = = 1\n")
      local out, err, code = run(shell_quote(path))
      os.remove(path)
      assert.equals(1, code)
      assert.equals("", out)
      assert.matches(":2: unexpected symbol near '='", err, 1, true)
    end)

    it("stops a script on SIGINT with interrupted! and a traceback, exit 1", function()
      local flag = tmppath(".started")   -- the script makes it once it runs
      local p = io.popen(string.format([[
        %s -e 'io.open(%q, "w"):close() while true do end' 2>&1 & pid=$!
        i=0; until [ -e %s ] || [ $i -gt 300 ]; do sleep 0.1; i=$((i+1)); done
        kill -INT $pid; wait $pid; echo "exit $?"
      ]], shell_quote(PROG), flag, shell_quote(flag)))
      local out = p:read("a")
      p:close()
      os.remove(flag)
      assert.matches("^luagpu: interrupted!\nstack traceback:\n", out)
      assert.matches("exit 1\n$", out)
    end)

    it("runs $LUAGPU_INIT first, unless -E", function()
      local out, err, code = run("-e 'print(x)'", nil, "LUAGPU_INIT='x = 6 * 7'")
      assert.equals("", err)
      assert.equals(0, code)
      assert.equals("42\n", out)
      out = run("-E -e 'print(x)'", nil, "LUAGPU_INIT='x = 6 * 7'")
      assert.equals("nil\n", out)
    end)

    it("runs the helpers from build/luagpu copied alone to an empty folder", function()
      local dir = tmppath("-alone")
      assert(os.execute("mkdir " .. shell_quote(dir) .. " && cp " .. shell_quote(PROG) .. " "
                        .. shell_quote(dir)))
      local n = math.random(100, 3000)
      local p = io.popen(string.format("cd %s && ./luagpu -e %s 2>&1", shell_quote(dir),
        shell_quote(([[
          local reduce, matmul = require "luagpu.reduce", require "luagpu.matmul"
          local dev = gpu.device()
          local b = dev:buffer("int", N, {host = gpu.array("int", N):fill(3)})
          local A = dev:buffer("float", {2, 2}, {host = {1, 2, 3, 4}})
          local C = matmul(A, A)
          print(gpu.root, reduce.sum(b), table.concat(C:get():totable(), " "))
          print(debug.getinfo(reduce.sum, "S").source)
        ]]):gsub("N", tostring(n)))))
      local out = p:read("a")
      p:close()
      os.execute("rm -r " .. shell_quote(dir))
      assert.equals("nil\t" .. 3 * n .. "\t7.0 10.0 15.0 22.0\n"
                    .. "@[luagpu built-in]/luagpu/reduce/init.lua\n", out)
    end)

    it("reports a missing script file in one line, exit 1", function()
      local out, err, code = run("/nonexistent/nothing.lua")
      assert.equals(1, code)
      assert.equals("", out)
      assert.equals("luagpu: cannot open /nonexistent/nothing.lua: No such file or directory\n", err)
    end)
  end)

  describe("options", function()
    it("-e runs code in order, -l requires modules into globals", function()
      local x = math.random(1000)
      local out, err, code = run("-e 'x = " .. x .. "' -l s=string -l string "
                                 .. "-e 'print(x * 2, s == string, s.rep(\"ab\", 2))'")
      assert.equals("", err)
      assert.equals(0, code)
      assert.equals(2 * x .. "\ttrue\tabab\n", out)
    end)

    it("-l a.b.c sets the global named after the last part", function()
      local dir = tmppath("")
      assert(os.execute("mkdir -p " .. shell_quote(dir .. "/pkg")))
      write_file(dir .. "/pkg/mod.lua", "return {answer = 42}")
      local out, err, code = run("-e " .. shell_quote("package.path = '" .. dir .. "/?.lua;' .. package.path")
                                 .. " -l pkg.mod -e 'print(mod.answer)'")
      os.execute("rm -r " .. shell_quote(dir))
      assert.equals("", err)
      assert.equals(0, code)
      assert.equals("42\n", out)
    end)

    it("-l of a missing module fails with require's message, exit 1", function()
      local _, err, code = run("-l no_such_module_xyz")
      assert.equals(1, code)
      assert.matches("^luagpu: module 'no_such_module_xyz' not found:", err)
    end)

    it("finds the checkout's pure-Lua helpers from any folder", function()
      local root = io.popen("pwd"):read("l")
      local out, err, code = run("-e " .. shell_quote("print(package.path)"))
      assert.equals("", err)
      assert.equals(0, code)
      local dir = io.popen("cd " .. shell_quote(root) .. " && pwd -P"):read("l")
      assert.matches(dir .. "/lua/?.lua", out, 1, true)
      if io.open(root .. "/lua/luagpu/reduce/init.lua") then
        local abs = PROG:sub(1, 1) == "/" and PROG or root .. "/" .. PROG
        local p = io.popen("cd / && " .. shell_quote(abs)
                           .. " -e 'print(type(require \"luagpu.reduce\"))' 2>&1")
        local text = p:read("a")
        assert.equals("table\n", text)
        p:close()
      end
    end)

    it("-v prints the versions of luagpu, Lua and OpenCL", function()
      local out, err, code = run("-v")
      assert.equals("", err)
      assert.equals(0, code)
      assert.matches("^luagpu " .. gpu.version:gsub("%.", "%%.") .. " %(Lua 5%.4%.%d+, OpenCL 1%.2 API%)\n$", out)
    end)

    it("-v and the REPL say when a build takes over the threshold, the script alone not",
       function()
      local cache = tmppath("")
      local env = "LUAGPU_COMPILE_NOTICE_S=0 XDG_CACHE_HOME=" .. shell_quote(cache)
      local function build(n)   -- a source built nowhere before
        return string.format("gpu.device():build('kernel void notice_k(global int *x) "
                             .. "{ x[0] = %d; }')", n)
      end
      local notice = "luagpu: compiling notice_k took %d+%.%d s; it is cached for next time\n"
      local _, err, code = run("-e " .. shell_quote(build(1)), nil, env)
      assert.equals(0, code, err)
      assert.equals("", err)
      _, err, code = run("-v -e " .. shell_quote(build(2)), nil, env)
      assert.equals(0, code, err)
      assert.matches("^" .. notice .. "$", err)
      -- the same build again comes from the cache: nothing to say
      _, err, code = run("-v -e " .. shell_quote(build(2)), nil, env)
      assert.equals("", err)
      local out
      out, err, code = run("", build(3) .. "\n", env .. " LUAGPU_NO_CACHE=1")
      assert.equals(0, code, err)
      assert.matches("\nluagpu: compiling notice_k took %d+%.%d s; the program cache is off "
                     .. "%(LUAGPU_NO_CACHE%)\n", err, out)
      -- the default threshold: a second
      _, err, code = run("-v -e " .. shell_quote(build(4)), nil,
                         "XDG_CACHE_HOME=" .. shell_quote(cache))
      assert.not_matches("compiling notice_k took 0%.%d s", err)
      os.execute("rm -rf " .. shell_quote(cache))
    end)

    it("--devices lists every device in a table, marking the default", function()
      local out, err, code = run("--devices")
      assert.equals("", err)
      assert.equals(0, code)
      local l = lines(out)
      assert.matches("^%s*#%s+platform%s+device%s+type%s+compute units%s+global memory%s+max alloc$", l[1])
      local devices = gpu.devices()
      assert.is_true(#devices >= 1)
      for i, d in ipairs(devices) do
        local row = l[i + 1]
        assert.matches("^%s*" .. i .. "%*?  ", row)
        assert.matches(d.platform .. "  ", row, 1, true)
        assert.matches(d.name .. "  ", row, 1, true)
        assert.matches("  " .. d.type .. "  ", row, 1, true)
        assert.matches(" " .. d.compute_units .. "  ", row, 1, true)
        -- PoCL reports the memory free at the time, so only the form is checked
        assert.matches("  %d+%.%d [KMG]iB  +%d+%.%d [KMG]iB$", row)
      end
      local default = gpu.device()
      for i, d in ipairs(devices) do
        if d == default then assert.matches("^%s*" .. i .. "%*", l[i + 1]) end
      end
      assert.matches("* the default device", out, 1, true)
    end)

    it("--help prints the usage and exits 0", function()
      local out, err, code = run("--help")
      assert.equals("", err)
      assert.equals(0, code)
      assert.matches("^usage: luagpu %[options%] %[script %[args%]%]\n", out)
      assert.matches("--devices", out, 1, true)
    end)

    it("rejects an unknown option with the usage on stderr, exit 1", function()
      local out, err, code = run("--bogus")
      assert.equals(1, code)
      assert.equals("", out)
      assert.matches("^luagpu: unrecognized option '%-%-bogus'\nusage: luagpu ", err)
    end)

    it("rejects -e without its argument, exit 1", function()
      local out, err, code = run("-e")
      assert.equals(1, code)
      assert.equals("", out)
      assert.matches("^luagpu: '%-e' needs an argument\nusage: ", err)
    end)
  end)

  describe("the REPL fed through stdin", function()
    it("prints the values of expressions and runs statements silently", function()
      local a, b = math.random(1000), math.random(1000)
      local out, err, code = run("", table.concat({
        "x = " .. a,
        "x + " .. b,
        "'text'",
        "1, nil, 'two'",
        "nil",
        "local y = 1",
      }, "\n") .. "\n")
      assert.equals(0, code)
      assert.matches("^luagpu " .. gpu.version:gsub("%.", "%%."), err)   -- the banner
      assert.equals(table.concat({a + b, "text", "1\tnil\ttwo", "nil"}, "\n") .. "\n", out)
    end)

    it("continues incomplete chunks over several lines", function()
      local n = math.random(5, 20)
      local out, _, code = run("", table.concat({
        "function sum(n)",
        "  local s = 0",
        "  for i = 1, n do s = s + i end",
        "  return s",
        "end",
        "sum(" .. n .. ")",
        "{1,",
        " 2}",
        "[[a",
        "b]]",
      }, "\n") .. "\n")
      assert.equals(0, code)
      assert.equals(n * (n + 1) // 2 .. "\n{1, 2}\na\nb\n", out)
    end)

    it("prints tables readably, nested to a depth and truncated", function()
      local out = run("", table.concat({
        "{1, 2, 3}",
        "{a = 1, b = 'x', [10] = true, ['not id'] = 2}",
        "{1, {2, {3, {4, {5}}}}}",
        "t = {} for i = 1, 25 do t[i] = i end",
        "t",
        "c = {} c.self = c",
        "c",
        "{}",
      }, "\n") .. "\n")
      local l = lines(out)
      assert.equals("{1, 2, 3}", l[1])
      assert.equals('{[10] = true, a = 1, b = "x", ["not id"] = 2}', l[2])
      assert.equals("{1, {2, {3, {...}}}}", l[3])
      assert.equals("{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, "
                    .. "... (5 more)}", l[4])
      assert.equals("{self = <cycle>}", l[5])
      assert.equals("{}", l[6])
    end)

    it("prints userdata through __tostring and host arrays with their values", function()
      local out = run("", "gpu.device()\ngpu.array('int', {4, 5, 6})\n")
      local l = lines(out)
      -- PoCL reports global memory from the free memory of the moment: two
      -- processes may print different sizes, so compare the rest
      local function stable(s) return (s:gsub(", [%d.]+ %a+%)$", ", <memory>)")) end
      assert.matches(", [%d.]+ %a+%)$", l[1])
      assert.equals(stable(tostring(gpu.device())), stable(l[1]))
      assert.matches("{4, 5, 6}", l[2], 1, true)
    end)

    it("takes lines holding NUL bytes whole, and the lines after them", function()
      local out, err, code = run("", 'x = "a\0b"\n#x\nx:byte(2)\nprint("after")\n')
      assert.equals(0, code, err)
      assert.equals("3\n0\nafter\n", out)
    end)

    it("reports errors with a traceback and carries on", function()
      local n = math.random(1000)
      local out, err, code = run("", "error('boom')\nnosuch.field\n" .. n .. "\n")
      assert.equals(0, code)
      assert.equals(n .. "\n", out)
      assert.matches("stdin:1: boom\nstack traceback:\n", err, 1, true)
      assert.matches("stdin:1: attempt to index a nil value (global 'nosuch')", err, 1, true)
    end)

    it("reports a chunk left unfinished at the end of input", function()
      local _, err, code = run("", "for i = 1, 2 do\n")
      assert.equals(0, code)
      assert.matches("stdin:1: 'end' expected near <eof>", err, 1, true)
    end)

    it("follows a script with -i", function()
      local path = script("answer = 6 * 7")
      local out, _, code = run("-i " .. shell_quote(path), "answer + 1\n")
      os.remove(path)
      assert.equals(0, code)
      assert.equals("43\n", out)
    end)

    it("returns to the prompt when Ctrl-C interrupts a running loop", function()
      local dir = tmppath("")
      local outp, errp = dir .. ".out", dir .. ".err"
      -- The REPL reads from a fifo; the loop announces itself, then the
      -- shell sends SIGINT and feeds one more line.
      local sh = string.format([[
        fifo=%s.fifo; mkfifo "$fifo"
        %s <"$fifo" >%s 2>%s & pid=$!
        exec 3>"$fifo"
        printf 'io.write("looping\\n") io.stdout:flush() while true do end\n' >&3
        i=0; until grep -q looping %s || [ $i -gt 300 ]; do sleep 0.1; i=$((i+1)); done
        kill -INT $pid
        printf '6 * 7\n' >&3
        exec 3>&-
        wait $pid; echo $?
        rm -f "$fifo"
      ]], dir, shell_quote(PROG), outp, errp, outp)
      local p = io.popen(sh)
      local status = p:read("a")
      p:close()
      local out, err = read_file(outp), read_file(errp)
      os.remove(outp); os.remove(errp)
      assert.equals("0\n", status)
      assert.equals("looping\n42\n", out)
      assert.matches("interrupted!\nstack traceback:", err, 1, true)
    end)
  end)
end)
