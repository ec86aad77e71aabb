-- Programs: dev:build and dev:build_file with options, defines and includes,
-- build failures and warnings, prog.kernels / prog.NAME / prog:kernel,
-- k.args, release, gpu.kernel_source, and every bad-input message, on the
-- real OpenCL runtime. What once crashed the process (options PoCL cannot
-- parse, kernel names too long for it) and what a build prints to stderr
-- are checked in child processes.
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

local function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- A fresh temporary folder (removed at the end of the spec).
local tmpdirs = {}
local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p '" .. p .. "'"))
  tmpdirs[#tmpdirs + 1] = p
  return p
end
teardown(function()
  for _, d in ipairs(tmpdirs) do os.execute("rm -rf '" .. d .. "'") end
end)

local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local POCL = dev.platform:find("Portable Computing Language", 1, true) ~= nil

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

-- Runs script in a child lua5.4 with the module under test loaded (gpu, dev)
-- and a private program cache; returns its exit code, stdout and stderr.
local function child(script, env)
  local dir = tmpdir()
  write_file(dir .. "/script.lua", 'package.cpath = os.getenv("LUAGPU_BUILD") .. "/?.so;" .. '
             .. 'package.cpath\nlocal gpu = require "luagpu"\nlocal dev = gpu.device()\n' .. script)
  local _, _, code = os.execute(string.format(
    "%s LUAGPU_BUILD=%s XDG_CACHE_HOME=%s lua5.4 %s >%s 2>%s", env or "", sh_quote(BUILD),
    sh_quote(dir),
    sh_quote(dir .. "/script.lua"), sh_quote(dir .. "/out"), sh_quote(dir .. "/err")))
  return code, read_file(dir .. "/out"), read_file(dir .. "/err")
end

-- Runs a one-int-output kernel (out[0] = ...) and returns out[0].
local function run1(k, ...)
  local out = dev:buffer("int", 1)
  local args = table.pack(...)
  args[args.n + 1] = out
  k(table.unpack(args, 1, args.n + 1)):run({1}):wait()
  return out:get()[1]
end

-- One program for most field checks: several kernels, some named like
-- Program fields and methods.
local SOURCE = [[
__kernel void scale(__global const float *x, __global float *y, float a, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = a * x[i];
}
__kernel void options(__global int *out) { out[0] = 7; }
__kernel void release(__global int *out) { out[0] = 8; }
__kernel void shapes(__global float4 *v, __local int *tmp, __constant float *c,
                     uchar u, float4 f, __global void *any, __global int *out) {
  out[0] = u;
}
]]
local prog = dev:build(SOURCE)

describe("dev:build", function()
  it("lists the kernels, sorted, and keeps the fields of the contract", function()
    assert.same({"options", "release", "scale", "shapes"}, prog.kernels)
    assert.equal(dev, prog.device)
    assert.is_string(prog.log)
    assert.matches("-cl-kernel-arg-info", prog.options, 1, true)
    assert.is_nil(prog.file)
    assert.is_boolean(prog.cached)
    assert.matches("^luagpu.Program {options, release, scale, shapes} on ", tostring(prog))
  end)

  it("returns one Kernel object per name, by field and by prog:kernel", function()
    local k = prog.scale
    assert.equal(k, prog.scale)
    assert.equal(k, prog:kernel("scale"))
    assert.equal("scale", k.name)
    assert.equal(4, k.nargs)
    assert.equal(prog, k.program)
    assert.equal("luagpu.Kernel scale(global const float* x, global float* y, float a, int n)",
                 tostring(k))
    assert.is_true(k.work_group_size >= 1)
    assert.is_true(k.preferred_work_group_size_multiple >= 1)
  end)

  it("gives kernels named like fields and methods through prog:kernel", function()
    assert.is_string(prog.options)
    assert.is_function(prog.release)
    assert.equal(7, run1(prog:kernel("options")))
    assert.equal(8, run1(prog:kernel("release")))
  end)

  it("finds kernels by name where a driver's clCreateKernelsInProgram fails", function()
    -- NVIDIA's fails for a program built for any device of a context but the
    -- first; LUAGPU_KERNELS_BY_NAME=1 takes the same by-name path here
    local dir = tmpdir()
    write_file(dir .. "/by_name.lua", [[
      local gpu = require "luagpu"
      local dev = gpu.device()
      local prog = dev:build("__kernel void b(__global int *x) { x[0] = 2; }\n" ..
                             "__kernel void a(__global int *x, int v) { x[1] = v; }\n" ..
                             "__kernel void c(void) {}")
      local x = dev:buffer("int", 2)
      prog.b(x):run({1})
      prog.a(x, 5):run({1}):wait()
      local r = x:get()
      print(table.concat(prog.kernels, ","), #prog.a.args, prog.a.args[2].name, r[1], r[2])
    ]])
    local p = io.popen(("cd %s && LUAGPU_KERNELS_BY_NAME=1 XDG_CACHE_HOME=%s %s %s 2>&1")
                       :format(sh_quote("."), sh_quote(dir), sh_quote(BUILD .. "/luagpu"),
                               sh_quote(dir .. "/by_name.lua")))
    local out = p:read("a")
    p:close()
    assert.equal("a,b,c\t2\tv\t2\t5\n", out)
  end)

  it("raises for names that are no kernel, listing the kernels", function()
    has_error("luagpu: program: no kernel named 'nope' (kernels: options, release, scale, shapes)",
              function() return prog.nope end)
    has_error("luagpu: prog:kernel: no kernel named 'nope' (kernels: options, release, scale, "
              .. "shapes)", prog.kernel, prog, "nope")
    has_error("luagpu: program: no kernel named '1'", function() return prog[1] end)
    has_error("luagpu: prog:kernel: argument #1: expected a kernel name, got number",
              prog.kernel, prog, 1)
    has_error("luagpu: program: field 'scale' is read-only", function() prog.scale = 1 end)
  end)

  it("reports name, type, address space and access of each parameter", function()
    local args = prog.shapes.args
    assert.equal(7, #args)
    local function check(i, name, type, address)
      assert.equal(name, args[i].name)
      assert.equal(type, args[i].type)
      assert.equal(address, args[i].address)
      assert.equal("none", args[i].access)
    end
    check(1, "v", "float4*", "global")
    check(2, "tmp", "int*", "local")
    check(3, "c", "float*", "constant")
    check(4, "u", "uchar", "private")
    check(5, "f", "float4", "private")
    check(7, "out", "int*", "global")
    assert.equal("void*", args[6].type)
    assert.equal("const", prog.scale.args[1].qualifiers)
    assert.equal("", prog.scale.args[2].qualifiers)
  end)

  it("passes options and defines (numbers, words, true; false leaves it out)", function()
    local p = dev:build([[
      __kernel void f(__global int *out) {
        out[0] = A + (int)(B * 4) + (FLAG_T ? 100 : 0) + WORD;
      #ifdef FLAG_F
        out[0] = -1;
      #endif
      }]], {options = "-D WORD=1000 -cl-mad-enable",
            defines = {A = 3, B = 0.75, FLAG_T = true, FLAG_F = false}})
    assert.equal(3 + 3 + 100 + 1000, run1(p.f))
    assert.matches("-D A=3 -D B=0.75 -D FLAG_T -D WORD=1000 -cl-mad-enable", p.options, 1, true)
  end)

  it("enables cl_khr_fp64 without asking where the device has doubles", function()
    if not dev.fp64 then return pending("the device has no fp64") end
    local p = dev:build[[
      __kernel void f(__global double *x) { x[0] = x[0] * 3.0 + 0.5; }]]
    local x = dev:buffer("double", 1)
    x:write({1 / 3})
    p.f(x):run({1}):wait()
    assert.equal(1 / 3 * 3.0 + 0.5, x:get()[1])
  end)

  it("raises with the whole build log when the build fails", function()
    local e = errmsg(dev.build, dev, "__kernel void broken(__global int *x) { x[0] = y; }\n")
    assert.matches("luagpu: dev:build: clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11): "
                   .. "build log:\n", e, 1, true)
    assert.matches("<source>:1:", e, 1, true)
    assert.matches("undeclared identifier 'y'", e, 1, true)
  end)

  it("puts what the compiler prints to stderr in the log, keeping the program's own output",
     function()
    local code, out, err = child([[
      io.stderr:setvbuf("full")               -- buffered: flushed before any capture
      io.stderr:write("mine before\n")
      local ok, e = pcall(dev.build, dev, "__kernel void broken(__global int *x) { x[0] = y; }")
      print(ok, (e:gsub("\n", "|")))
      local p = dev:build("#warning careful-here\n__kernel void f(__global int *x) { x[0] = 1; }")
      print("log", (p.log:gsub("\n", "|")))
      io.stderr:write("mine after\n")
    ]])
    assert.equal(0, code, err)
    assert.equal("mine before\nmine after\n", err)
    local failed, log = out:match("^false\t([^\n]*)\nlog\t([^\n]*)\n$")
    assert.is_string(failed, out)
    assert.matches("clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11): build log:|", failed, 1, true)
    assert.matches("undeclared identifier 'y'", failed, 1, true)
    assert.matches("careful-here", log, 1, true)
    assert.is_nil(log:find("mine", 1, true))
    if POCL then                              -- clang's summaries, once on the terminal
      assert.matches("|1 error generated.", failed, 1, true)
      assert.matches("|1 warning generated.", log, 1, true)
    end
  end)

  it("captures the compiler's lines in /tmp where $TMPDIR takes no file", function()
    -- (they reached the terminal, and the message missed them)
    local code, out, err = child([[
      local ok, e = pcall(dev.build, dev, "__kernel void broken(__global int *x) { x[0] = y; }")
      print(ok, (e:gsub("\n", "|")))
    ]], "TMPDIR=/nonexistent/luagpu-spec")
    assert.equal(0, code, err)
    assert.equal("", err)
    assert.matches("undeclared identifier 'y'", out, 1, true)
    if POCL then assert.matches("|1 error generated.", out, 1, true) end
  end)

  it("keeps the warnings of a successful build in prog.log", function()
    local p = dev:build("#warning careful-here\n__kernel void f(__global int *x) { x[0] = 1; }")
    assert.matches("careful-here", p.log, 1, true)
    assert.same({"f"}, p.kernels)
  end)

  it("raises on bad arguments and options", function()
    has_error("luagpu: dev:build: argument #1: expected a string of OpenCL C source, got no value",
              dev.build, dev)
    has_error("luagpu: dev:build: argument #2: unknown option 'option' (expected options, "
              .. "defines)", dev.build, dev, "", {option = "-w"})
    has_error("luagpu: dev:build: argument #2: options: expected a string, got table",
              dev.build, dev, "", {options = {}})
    has_error("luagpu: dev:build: argument #2: defines: expected a table, got string",
              dev.build, dev, "", {defines = "A=1"})
    has_error("luagpu: dev:build: argument #2: defines: expected identifiers as names, got 1x",
              dev.build, dev, "", {defines = {["1x"] = 1}})
    has_error("luagpu: dev:build: argument #2: defines: expected identifiers as names, got 1",
              dev.build, dev, "", {defines = {5}})
    has_error("luagpu: dev:build: argument #2: defines: A: expected a number, string or "
              .. "boolean, got table", dev.build, dev, "", {defines = {A = {}}})
    has_error("luagpu: dev:build: argument #2: defines: A: a value with spaces or quotes "
              .. "cannot pass", dev.build, dev, "", {defines = {A = "a b"}})
    -- (a carriage return, form feed or vertical tab cut the value silently)
    for _, v in ipairs{"5\r*3", "5\f*3", "5\v*3"} do
      has_error("luagpu: dev:build: argument #2: defines: A: a value with spaces or quotes "
                .. "cannot pass", dev.build, dev, "", {defines = {A = v}})
    end
    has_error("luagpu: dev:build: argument #2: defines: A: expected a finite number, got inf",
              dev.build, dev, "", {defines = {A = math.huge}})
    -- a NUL would end the options the compiler reads: what follows it was lost
    has_error("luagpu: dev:build: argument #2: options: a NUL byte would end them early",
              dev.build, dev, "", {options = "-D A=1\0 -D B=2"})
    has_error("luagpu: dev:build: argument #2: defines: A: the value holds a NUL byte",
              dev.build, dev, "", {defines = {A = "1\0"}})
    has_error("luagpu: dev:build: argument #2: defines: a name holds a NUL byte",
              dev.build, dev, "", {defines = {["A\0B"] = 1}})
    has_error("luagpu: dev:build: argument #2: expected an options table {options =, "
              .. "defines =}, got number", dev.build, dev, "", 5)
    has_error("luagpu: dev:build: argument #2: unknown option '1' (expected options, defines)",
              dev.build, dev, "", {"-w"})
  end)

  it("raises for -D and -I without their argument, which crashed PoCL", function()
    local cases = {
      {"-D", "-D needs a macro name after it, got nothing"},
      {"-w -D", "-D needs a macro name after it, got nothing"},
      {"-w -D ", "-D needs a macro name after it, got nothing"},
      {"-D -w", "-D needs a macro name after it, got '-w'"},
      {"-I", "-I needs a folder after it, got nothing"},
      {"-I ", "-I needs a folder after it, got nothing"},
      {"-DX -I", "-I needs a folder after it, got nothing"},
      {"-I -w", "-I needs a folder after it, got '-w'"},
    }
    local script = {"local SRC = '__kernel void f(__global int *o) { o[0] = X; }'"}
    for i, c in ipairs(cases) do
      script[#script + 1] = string.format(
        "print(%d, select(2, pcall(dev.build, dev, SRC, {options = %q})))", i, c[1])
    end
    -- and the good spellings still build
    script[#script + 1] = [[
      for _, o in ipairs({"-DX=4", "-D X=4", "-w -DX=4", "-DX=4 -I .", "-I. -DX=4"}) do
        local p = dev:build(SRC, {options = o})
        local b = dev:buffer("int", 1)
        p.f(b):run({1}):wait()
        print("good", o, b:get()[1])
      end]]
    local code, out, err = child(table.concat(script, "\n"))
    assert.equal(0, code, err)
    for i, c in ipairs(cases) do
      assert.matches("\n" .. i .. "\tluagpu: dev:build: argument #2: options: " .. c[2] .. "\n",
                     "\n" .. out, 1, true)
    end
    local _, good = out:gsub("good\t[^\n]*\t4\n", "")
    assert.equal(5, good, out)
  end)

  it("raises for kernel names too long for PoCL, which aborted the process", function()
    if not POCL then return pending("the limit is PoCL's") end
    local limit = tonumber(io.popen("getconf NAME_MAX /tmp"):read("l")) - #".so"
    local code, out, err = child(string.format([[
      local function try(what, src, name)
        local ok, p = pcall(dev.build, dev, src)
        if not ok then return print(what, p) end
        local b = dev:buffer("int", 1)
        p[name](b):run({1}):wait()
        print(what, "ran", b:get()[1])
      end
      local n = %d
      local fit, over = ("k"):rep(n), ("k"):rep(n + 1)
      try("fit", "__kernel void " .. fit .. "(__global int *o) { o[0] = 1; }", fit)
      try("over", "__kernel void " .. over .. "(__global int *o) { o[0] = 2; }", over)
      try("long", "__kernel void " .. ("k"):rep(300) .. "(__global int *o) { o[0] = 3; }", "")
      -- a name made by the preprocessor counts too
      try("macro", "#define TWICE(a) a##a\n__kernel void TWICE(]] .. ("m"):rep(200) .. [[)"
          .. "(__global int *o) { o[0] = 4; }", "")
    ]], limit))
    assert.equal(0, code, err)
    assert.matches("fit\tran\t1\n", out, 1, true)
    local function too_long(what, name, n)
      assert.matches(string.format("%s\tluagpu: dev:build: kernel '%s...' has a name of %d "
                                   .. "characters: PoCL takes at most %d (it names a file after "
                                   .. "each kernel)\n", what, name:rep(24), n, limit), out, 1, true)
    end
    too_long("over", "k", limit + 1)
    too_long("long", "k", 300)
    too_long("macro", "m", 400)
  end)
end)

describe("dev:build_file", function()
  it("builds a file whose includes are found beside it, nested too", function()
    local d = tmpdir()
    assert(os.execute("mkdir -p '" .. d .. "/sub'"))
    write_file(d .. "/sub/a.h", '#include "b.h"\n#define A_VALUE (B_VALUE + 1)\n')
    write_file(d .. "/sub/b.h", "#define B_VALUE 41\n")
    write_file(d .. "/main.cl", '#include "sub/a.h"\n'
               .. "__kernel void f(__global int *out) { out[0] = A_VALUE; }\n")
    local p = dev:build_file(d .. "/main.cl")
    assert.equal(42, run1(p.f))
    assert.equal(d .. "/main.cl", p.file)
  end)

  it("finds includes in the folders of the user's -I", function()
    local d = tmpdir()
    write_file(d .. "/value.h", "#define VALUE 17\n")
    local p = dev:build('#include "value.h"\n'
                        .. "__kernel void f(__global int *out) { out[0] = VALUE; }",
                        {options = "-I " .. d})
    assert.equal(17, run1(p.f))
  end)

  it("finds includes in the root's kernels/ folder", function()
    if not gpu.root then return pending("no checkout or install root") end
    local p = dev:build[[
      #if __has_include("reduce.cl")
      #define HAS 1
      #else
      #define HAS 0
      #endif
      __kernel void f(__global int *out) { out[0] = HAS; }]]
    assert.equal(1, run1(p.f))
    assert.matches("-I " .. gpu.root .. "/kernels", p.options, 1, true)
  end)

  it("searches the user's -I folders before the root's kernels/, and so does the cache",
     function()
    if not gpu.root then return pending("no checkout or install root") end
    local d = tmpdir()
    write_file(d .. "/reduce.cl", "#define WHOSE 2\n")     -- named like the helpers' kernel
    local src = '#include "reduce.cl"\n__kernel void f(__global int *out) { out[0] = WHOSE; }'
    local p = dev:build(src, {options = "-I " .. d})
    assert.equal(2, run1(p.f))
    local mine, root = p.options:find("-I " .. d, 1, true), p.options:find("-I " .. gpu.root
                                                                           .. "/kernels", 1, true)
    assert.is_true(mine < root, p.options)
    write_file(d .. "/reduce.cl", "#define WHOSE 3\n")
    p = dev:build(src, {options = "-I" .. d})
    assert.is_false(p.cached)
    assert.equal(3, run1(p.f))
  end)

  it("names the file in the error and in the build log", function()
    local d = tmpdir()
    write_file(d .. "/bad.cl", "\n\n__kernel void f(__global int *x) { x[0] = nothing; }\n")
    local e = errmsg(dev.build_file, dev, d .. "/bad.cl")
    assert.matches("luagpu: dev:build_file: " .. d .. "/bad.cl: clBuildProgram: "
                   .. "CL_BUILD_PROGRAM_FAILURE (-11): build log:\n", e, 1, true)
    assert.matches(d .. "/bad.cl:3:", e, 1, true)
    assert.matches("undeclared identifier 'nothing'", e, 1, true)
  end)

  it("says why #include does not search a folder whose path holds a space", function()
    -- (OpenCL's build options cannot pass such a -I: the message said only
    -- "'h.h' file not found")
    local d = tmpdir() .. "/my dir"
    os.execute("mkdir -p " .. sh_quote(d))
    write_file(d .. "/h.h", "#define V 5\n")
    write_file(d .. "/k.cl", '#include "h.h"\n__kernel void f(__global int *x) { x[0] = V; }\n')
    local e = errmsg(dev.build_file, dev, d .. "/k.cl")
    assert.matches("(#include did not search " .. d .. ": its path holds a space, which " ..
                   "OpenCL's build options cannot pass)", e, 1, true)
  end)

  it("raises for files it cannot read and for bad arguments", function()
    has_error("luagpu: dev:build_file: argument #1: cannot open 'no/such.cl': No such file",
              dev.build_file, dev, "no/such.cl")
    has_error("luagpu: dev:build_file: argument #1: expected a file name, got no value",
              dev.build_file, dev)
    local d = tmpdir()
    has_error("luagpu: dev:build_file: argument #1: '" .. d .. "' is not a file",
              dev.build_file, dev, d)
  end)

  -- A FIFO (no writer) once blocked the open forever; the check runs in a
  -- child process under `timeout` so that a hang fails instead of hanging.
  it("refuses a FIFO or a device without blocking, and --precompile does too", function()
    local d = tmpdir()
    local fifo = d .. "/pipe.cl"
    assert(os.execute("mkfifo " .. sh_quote(fifo)))
    local prog = BUILD .. "/luagpu"
    local function run(args)
      local p = io.popen("timeout 20 " .. sh_quote(prog) .. " " .. args .. " 2>&1")
      local out = p:read("a")
      local _, _, code = p:close()
      return out, code
    end
    for _, path in ipairs({fifo, "/dev/null"}) do
      local script = "local gpu = require 'luagpu'; local ok, e = pcall(gpu.device().build_file, "
                     .. "gpu.device(), " .. string.format("%q", path) .. "); print(ok, e)"
      local out, code = run("-e " .. sh_quote(script))
      assert.equal(0, code, out)
      assert.equal("false\tluagpu: dev:build_file: argument #1: '" .. path .. "' is not a file\n", out)
    end
    local out, code = run("--precompile " .. sh_quote(fifo))
    assert.equal(1, code, out)
    assert.matches("dev:build_file: argument #1: '" .. fifo .. "' is not a file", out, 1, true)
  end)

  -- An include that finds a FIFO once hung inside the compiler's open, holding PoCL's lock,
  -- with the cache on or off; the build is now refused before the compiler runs
  it("refuses a build whose include finds a FIFO or a device, with the cache on or off",
     function()
    local d = tmpdir()
    local fifo = d .. "/fifo.h"
    assert(os.execute("mkfifo " .. sh_quote(fifo)))
    write_file(d .. "/k.cl", '#include "fifo.h"\nkernel void f(global int *x) { x[0] = 1; }\n')
    local prog = BUILD .. "/luagpu"
    local cases = {
      {"dev:build", "d:build('#include \"fifo.h\"\\nkernel void f(global int *x) {}', "
                    .. "{options = '-I " .. d .. "'})", "fifo.h", fifo},
      {"dev:build", "d:build('#if __has_include(<fifo.h>)\\n#endif\\nkernel void f(global int *x) {}', "
                    .. "{options = '-I " .. d .. "'})", "fifo.h", fifo},
      {"dev:build_file", "d:build_file('" .. d .. "/k.cl')", "fifo.h", fifo},
      {"dev:build", "d:build('#include \"/dev/null\"\\nkernel void f(global int *x) {}')",
       "/dev/null", "/dev/null"},
      -- a macro defined as the file's name, and the digraph of # (they hung)
      {"dev:build", "d:build('#define H \"fifo.h\"\\n#include H\\nkernel void f(global int *x) {}', "
                    .. "{options = '-I " .. d .. "'})", "fifo.h", fifo},
      {"dev:build", "d:build('%:include \"fifo.h\"\\nkernel void f(global int *x) {}', "
                    .. "{options = '-I " .. d .. "'})", "fifo.h", fifo},
    }
    for _, nocache in ipairs({"0", "1"}) do
      for _, c in ipairs(cases) do
        local script = "local gpu = require 'luagpu' local d = gpu.device() "
                       .. "print(pcall(function() return " .. c[2] .. " end))"
        local p = io.popen("LUAGPU_NO_CACHE=" .. nocache .. " timeout 20 " .. sh_quote(prog)
                           .. " -e " .. sh_quote(script) .. " 2>&1")
        local out = p:read("a")
        local _, _, code = p:close()
        assert.equal(0, code, out)
        assert.matches("^false\t", out)
        assert.matches("luagpu: " .. c[1] .. ": the include \"" .. c[3] .. "\" finds "
                       .. c[4] .. ", which is not a file\n", out, 1, true)
      end
    end
    -- a macro the scan cannot follow to a file is refused, whatever it names
    for _, c in ipairs{
      {"#include HDR", "the macro HDR cannot be checked before the compiler opens its file " ..
       "(a FIFO would block it): define it in the source as \"file\" or <file>, or write the " ..
       "file's name"},
      {"#ifdef A\n#define H <x.h>\n#else\n#define H \"fifo.h\"\n#endif\n#include H",
       "the macro H cannot be checked before the compiler opens its file (a FIFO would block " ..
       "it): it is defined twice"},
    } do
      local ok, e = pcall(dev.build, dev, c[1] .. "\nkernel void f(global int *x) {}",
                          {options = "-I " .. d})
      assert.is_false(ok)
      assert.equal("luagpu: dev:build: an #include of " .. c[2], tostring(e))
    end
  end)

  -- Past the scan's limits (includes nested 32 deep, 256 files, 62 -I
  -- folders) the includes went unchecked and a FIFO among them hung the
  -- compiler: such a build is now refused before it runs
  it("refuses a build whose includes pass what the scan checks", function()
    local d = tmpdir()
    assert(os.execute("mkfifo " .. sh_quote(d .. "/fifo.h")))
    for i = 0, 40 do write_file(d .. "/h" .. i .. ".h", '#include "h' .. (i + 1) .. '.h"\n') end
    write_file(d .. "/h41.h", '#include "fifo.h"\n')
    local src = {}
    for i = 1, 256 do
      write_file(d .. "/m" .. i .. ".h", "")
      src[i] = '#include "m' .. i .. '.h"'
    end
    src[#src + 1] = '#include "h40.h"'
    write_file(d .. "/many.cl", table.concat(src, "\n") .. "\nkernel void f(global int *x) {}\n")
    has_error("luagpu: dev:build: the include \"h32.h\" is past what luagpu checks (includes "
              .. "nested 32 deep): a build whose includes cannot all be checked is refused",
              dev.build, dev, '#include "' .. d .. '/h0.h"\nkernel void f(global int *x) {}')
    has_error("luagpu: dev:build_file: the include \"h40.h\" is past what luagpu checks (256 "
              .. "files included): a build whose includes cannot all be checked is refused",
              dev.build_file, dev, d .. "/many.cl")
    has_error("luagpu: dev:build: argument #2: options: more than 62 -I folders (luagpu checks "
              .. "the includes they find, and no more)", dev.build, dev,
              "#include <fifo.h>\nkernel void f(global int *x) {}",
              {options = string.rep("-I" .. d .. "/x ", 63) .. "-I" .. d})
    -- within the limits the FIFO is found and named
    has_error("luagpu: dev:build: the include \"fifo.h\" finds " .. d .. "/fifo.h, which is "
              .. "not a file", dev.build, dev, '#include "' .. d .. '/h30.h"\nkernel void f() {}')
    os.execute("rm -rf " .. sh_quote(d))
  end)
end)

describe("prog:release", function()
  it("releases the program and its kernels; use afterwards raises", function()
    local p = dev:build("__kernel void f(__global int *out) { out[0] = 5; }")
    local k = p.f
    assert.equal(5, run1(k))
    p:release()
    p:release()                             -- twice is fine
    assert.matches("released", tostring(p))
    has_error("attempt to use a released program", function() return p.f end)
    has_error("attempt to use a released program", function() return p.kernels end)
    has_error("luagpu: program:kernel: attempt to use a released program", function()
      return p:kernel("f")
    end)
    has_error("attempt to use a released kernel", k, dev:buffer("int", 1))
    assert.matches("(released)", tostring(k), 1, true)
  end)

  it("closes with <close>", function()
    local kept
    do
      local p <close> = dev:build("__kernel void f(__global int *out) { out[0] = 5; }")
      kept = p
    end
    has_error("attempt to use a released program", function() return kept.f end)
  end)
end)

describe("gpu.kernel_source", function()
  it("gives the source of the helpers' kernels", function()
    assert.matches("__kernel", gpu.kernel_source("reduce.cl"), 1, true)
  end)

  it("takes only plain file names of kernel sources", function()
    for _, name in ipairs({"", ".", "..", ".cl", "reduce", "../kernels/reduce.cl",
                           "kernels/reduce.cl", "/etc/passwd", ".hidden.cl"}) do
      has_error('luagpu: gpu.kernel_source: argument #1: expected a kernel file name such as '
                .. '"reduce.cl", got "' .. name .. '"', gpu.kernel_source, name)
    end
    has_error('luagpu: gpu.kernel_source: argument #1: expected a kernel file name such as '
              .. '"reduce.cl", got "reduce.cl"', gpu.kernel_source, "reduce.cl\0.cl")
    has_error("luagpu: gpu.kernel_source: argument #1: no kernel source named 'nope.cl'",
              gpu.kernel_source, "nope.cl")
    has_error("luagpu: gpu.kernel_source: argument #1: expected a kernel file name, got number",
              gpu.kernel_source, 1)
    has_error("luagpu: gpu.kernel_source: argument #1: expected a kernel file name, got no value",
              gpu.kernel_source)
  end)
end)
