-- Packaging: `make install` into a temporary prefix installs luagpu.pc, and
-- `pkg-config --cflags --libs luagpu` builds examples/embed; the rockspec's
-- make targets install a module, helpers and program that work; the man
-- page renders without warnings and names every option of --help.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"
local support = require "support"
local shell_quote = support.shell_quote

local sh = support.sh

local tmpdir = support.tmpdir

-- make with the build under test; the sanitizers' runtime (spec/run.sh
-- preloads it for ASan builds) is not for the compiler
local MAKE = "env -u LD_PRELOAD make --no-print-directory BUILD=" .. shell_quote(BUILD)
-- programs linked against an ASan build of the module need the runtime too
local SAN = os.getenv("ASAN") and " -fsanitize=address,undefined" or ""

describe("packaging", function()
  it("make install writes luagpu.pc; pkg-config's flags build and run examples/embed", function()
    local prefix = tmpdir()
    local out, code = sh(MAKE .. " install PREFIX=" .. shell_quote(prefix))
    assert.equals(0, code, out)
    local pc = support.read_file(prefix .. "/lib/pkgconfig/luagpu.pc")
    assert.matches("\nprefix=" .. prefix .. "\n", pc, 1, true)
    assert.matches("\nVersion: " .. require("luagpu").version .. "\n", pc, 1, true)
    local env = "PKG_CONFIG_PATH=" .. shell_quote(prefix .. "/lib/pkgconfig") .. " "
    local flags, pcode = sh(env .. "pkg-config --cflags --libs luagpu")
    assert.equals(0, pcode, flags)
    assert.matches("-I" .. prefix .. "/include", flags, 1, true)
    assert.matches("-l:luagpu.so", flags, 1, true)
    local demo = prefix .. "/embed_demo"
    out, code = sh("env -u LD_PRELOAD cc -std=c99" .. SAN .. " examples/embed/embed_demo.c "
                   .. flags:gsub("\n", "") .. " -lm -o " .. shell_quote(demo))
    assert.equals(0, code, out)
    out, code = sh(shell_quote(demo))
    assert.equals(0, code, out)
    assert.matches("embed_demo: ok\n$", out)
    assert.is_truthy(io.open(prefix .. "/share/man/man1/luagpu.1"))
    os.execute("rm -r " .. shell_quote(prefix))
  end)

  it("the rockspec builds and installs with the Makefile's targets", function()
    local spec = {}
    local chunk = assert(loadfile("packaging/luagpu-0.1.0-1.rockspec", "t", spec))
    chunk()
    assert.equals("luagpu", spec.package)
    assert.equals(require("luagpu").version .. "-1", spec.version)
    assert.equals("make", spec.build.type)
    -- what luarocks runs for the install, with the rock's folders
    local dir = tmpdir()
    local vars = {}
    for k, v in pairs(spec.build.install_variables) do
      vars[#vars + 1] = k .. "=" .. shell_quote((v:gsub("%$%((%u+)%)", dir .. "/%1")))
    end
    table.sort(vars)
    vars[#vars + 1] = "BUILD=" .. shell_quote(BUILD)     -- the build under test
    local out, code = sh(MAKE .. " " .. spec.build.install_target .. " " .. table.concat(vars, " "))
    assert.equals(0, code, out)
    out, code = sh(string.format("LUA_CPATH=%s LUA_PATH=%s lua5.4 -e %s",
      shell_quote(dir .. "/LIBDIR/?.so"),
      shell_quote(dir .. "/LUADIR/?.lua;" .. dir .. "/LUADIR/?/init.lua"),   -- as luarocks' path
      shell_quote("local gpu = require 'luagpu' local r = require 'luagpu.reduce' "
                  .. "print(package.searchpath('luagpu.reduce', package.path) ~= nil, "
                  .. "r.sum(gpu.device():buffer('int', 10, {host = gpu.array('int', 10):fill(2)})))")))
    assert.equals(0, code, out)
    assert.equals("true\t20\n", out)
    out, code = sh(shell_quote(dir .. "/BINDIR/luagpu") .. " -e 'print(gpu.version)'")
    assert.equals(0, code, out)
    os.execute("rm -r " .. shell_quote(dir))
  end)

  it("the man page renders without warnings and names every option of --help", function()
    local out, code = sh("env -u LD_PRELOAD groff -man -Tutf8 -ww -z docs/luagpu.1")
    assert.equals(0, code, out)
    assert.equals("", out)
    local man = support.read_file("docs/luagpu.1"):gsub("\\%-", "-")
    local usage = sh(shell_quote(PROG) .. " --help")
    local n = 0
    for opt in usage:gmatch("\n  (%-%-?%a*)") do
      if opt ~= "-" and opt ~= "--" then
        assert.matches(opt, man, 1, true)
        n = n + 1
      end
    end
    assert.is_true(n >= 10, usage)
  end)

  it("embeds every helper, kernel and program file as written (no '??' read as a trigraph)", function()
    -- a C program linked with the generated files prints what the build holds
    local dir = tmpdir()
    local c = dir .. "/dump.c"
    local f = assert(io.open(c, "w"))
    f:write([[
#include <stdio.h>
typedef struct lg_EmbeddedFile { const char *name; const char *text; } lg_EmbeddedFile;
extern const lg_EmbeddedFile lg_embedded_kernels[], lg_embedded_helpers[], lg_embedded_main[];
static void dump(const lg_EmbeddedFile *f, const char *dir) {
  for (; f->name != NULL; f++) printf("%s/%s\n%s%c", dir, f->name, f->text, 0);
}
int main(void) {
  dump(lg_embedded_kernels, "kernels"); dump(lg_embedded_helpers, "lua");
  dump(lg_embedded_main, "host"); return 0;
}
]])
    f:close()
    local out, code = sh("env -u LD_PRELOAD cc -std=c99 -w -Ihost -I" .. shell_quote(BUILD) ..
      " $(pkg-config --cflags lua5.4 OpenCL 2>/dev/null) -o " .. shell_quote(dir .. "/dump") ..
      " " .. shell_quote(c) .. " " .. table.concat({BUILD .. "/kernels.c", BUILD .. "/helpers.c",
      BUILD .. "/main_lua.c"}, " ") .. " && " .. shell_quote(dir .. "/dump"))
    assert.equal(0, code, out)
    local n = 0
    for path, text in out:gmatch("([^\n%z]+)\n(%Z*)%z") do
      assert.equal(support.read_file(path), text, path)
      n = n + 1
    end
    assert.is_true(n >= 40, "embedded files found: " .. n)
    os.execute("rm -rf " .. shell_quote(dir))
  end)
end)
