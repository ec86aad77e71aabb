-- Installs as README prints them: `luarocks --lua-version 5.4 make
-- packaging/luagpu-0.1.0-1.rockspec` into a temporary tree installs every
-- module `make install` does (luagpu.mpi and its C half included), each
-- loads from a stock lua5.4 with the tree's paths, the tree's luagpu
-- program runs, and the rock's folder holds the header, luagpu.pc, the man
-- page and a kernelspec that names the tree's program. LICENSE is MIT.
local support = require "support"
local shell_quote = support.shell_quote
local BUILD = os.getenv("LUAGPU_BUILD") or "build"

local sh = support.sh

local tmpdir = support.tmpdir

-- The Lua modules and C modules under a tree's share/lua/5.4 and
-- lib/lua/5.4, as the names require takes, sorted.
local function modules_in(luadir, libdir)
  local names = {}
  local out = sh("cd " .. shell_quote(luadir) .. " && find . -name '*.lua' | sort")
  for path in out:gmatch("%./([^\n]+)%.lua\n") do
    local name = path:gsub("/init$", ""):gsub("/", ".")
    names[#names + 1] = name
  end
  out = sh("cd " .. shell_quote(libdir) .. " && find . -name '*.so' | sort")
  for path in out:gmatch("%./([^\n]+)%.so\n") do names[#names + 1] = (path:gsub("/", ".")) end
  table.sort(names)
  return names
end

local HAVE_LUAROCKS = os.execute("command -v luarocks >/dev/null 2>&1")
local HAVE_MPI = os.execute("command -v mpicc >/dev/null 2>&1")

describe("installs", function()
  it("LICENSE is the MIT license the rockspec names", function()
    local text = support.read_file("LICENSE")
    assert.matches("^MIT License\n", text)
    assert.matches("Copyright (c) the luagpu developers", text, 1, true)
    assert.matches('license = "MIT"', support.read_file("packaging/luagpu-0.1.0-1.rockspec"), 1, true)
  end)

  it("README's luarocks line installs every module make install does, each loads from lua5.4", function()
    if not HAVE_LUAROCKS then
      assert(not os.getenv("CI"), "luarocks not found under CI (the Makefile's TEST_PKGS has it)")
      pending("luarocks is not installed (make deps-test installs it)")
      return
    end
    -- the first luarocks command README prints (inline or in a block)
    local line = support.read_file("README.md"):match("(luarocks [^\n`]-make [^\n`]-%.rockspec)")
    assert.is_truthy(line, "README names no luarocks line")
    assert.matches("--lua-version 5.4", line, 1, true)
    local tree, prefix, home = tmpdir(), tmpdir(), tmpdir()
    -- as printed, into a temporary tree, with a HOME of its own for
    -- luarocks' cache; the sanitizers' runtime is not for the compiler
    local out, code = sh("env -u LD_PRELOAD HOME=" .. shell_quote(home) .. " MAKEFLAGS=-j2 " ..
                         line .. " --tree " .. shell_quote(tree))
    assert.equals(0, code, out)
    local luadir, libdir = tree .. "/share/lua/5.4", tree .. "/lib/lua/5.4"
    local rock = modules_in(luadir, libdir)

    -- what make install puts where lua5.4 looks
    out, code = sh("env -u LD_PRELOAD make --no-print-directory BUILD=" .. shell_quote(BUILD) ..
                   " install PREFIX=" .. shell_quote(prefix))
    assert.equals(0, code, out)
    local installed = modules_in(prefix .. "/share/lua/5.4", prefix .. "/lib/lua/5.4")
    assert.same(installed, rock)
    local kernel = support.read_file(prefix .. "/share/jupyter/kernels/luagpu/kernel.json")
    assert.matches('"LUAGPU_KERNEL_PROGRAM": "' .. prefix .. '/bin/luagpu"', kernel, 1, true)
    assert.is_truthy(io.open(prefix .. "/share/jupyter/kernels/luagpu/luagpu_kernel.py"))
    local want = {"luagpu", "luagpu.reduce", "luagpu.matmul", "luagpu.tensor", "luagpu.show",
                  "luagpu.mpi"}
    if HAVE_MPI then want[#want + 1] = "luagpu_mpi" end
    local set = {}
    for _, m in ipairs(rock) do set[m] = true end
    for _, m in ipairs(want) do assert.is_true(set[m], m .. " not installed by the rock") end

    -- each from a stock lua5.4 with the tree's paths (luagpu.mpi runs as a
    -- one-rank job, which Open MPI refuses as root unless told)
    local env = "env -u LD_PRELOAD -u LUAGPU_BUILD OMPI_ALLOW_RUN_AS_ROOT=1 " ..
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LUA_PATH=" ..
                shell_quote(luadir .. "/?.lua;" .. luadir .. "/?/init.lua") ..
                " LUA_CPATH=" .. shell_quote(libdir .. "/?.so") .. " "
    local loaded = 0
    for _, m in ipairs(rock) do
      out, code = sh("cd / && " .. env .. "lua5.4 -e " .. shell_quote(
        ("local m = require %q; assert(m ~= nil); print('ok')"):format(m)))
      assert.equals(0, code, m .. ": " .. out)
      assert.matches("ok\n$", out, nil, false)
      loaded = loaded + 1
    end
    assert.is_true(loaded >= 40, "modules loaded: " .. loaded)

    -- the tree's program (luarocks' wrapper), from another folder
    out, code = sh("cd / && env -u LD_PRELOAD -u LUAGPU_BUILD " .. shell_quote(tree .. "/bin/luagpu") ..
                   " -e " .. shell_quote("print(gpu.version, require('luagpu.show') ~= nil)"))
    assert.equals(0, code, out)
    assert.equals(require("luagpu").version .. "\ttrue\n", out)

    -- the rock's own folder: header, luagpu.pc, man page, kernelspec
    local dir = sh("env -u LD_PRELOAD HOME=" .. shell_quote(home) ..
                   " luarocks --lua-version 5.4 --tree " .. shell_quote(tree) ..
                   " show --rock-dir luagpu"):match("[^\n]+")
    for _, f in ipairs{"include/luagpu.h", "share/man/man1/luagpu.1", "share/pkgconfig/luagpu.pc",
                       "share/jupyter/kernels/luagpu/luagpu_kernel.py"} do
      assert.is_truthy(io.open(dir .. "/" .. f), f .. " not in " .. dir)
    end
    local spec = support.read_file(dir .. "/share/jupyter/kernels/luagpu/kernel.json")
    local program = spec:match('"LUAGPU_KERNEL_PROGRAM": "([^"]+)"')
    assert.equals((sh("realpath " .. shell_quote(tree .. "/bin/luagpu")):gsub("\n$", "")), program)
    local pc = support.read_file(dir .. "/share/pkgconfig/luagpu.pc")
    local libs = pc:match("\nlibdir=([^\n]+)")
    assert.is_truthy(io.open(libs .. "/luagpu.so"), pc)
    os.execute("rm -rf " .. shell_quote(tree) .. " " .. shell_quote(prefix) .. " " .. shell_quote(home))
  end)

  it("README's and the MPI examples' mpirun lines say how to run as root on a small machine", function()
    local texts = {README = support.read_file("README.md"),
                   API = support.read_file("docs/API.md"),
                   mpi_sum = support.read_file("examples/mpi_sum.lua"),
                   mpi_matmul = support.read_file("examples/mpi_matmul.lua")}
    for name, text in pairs(texts) do
      assert.matches("mpirun", text, 1, true)
      assert.matches("--allow-run-as-root --oversubscribe", text, 1, true, name)
    end
  end)
end)
