-- The layering of luagpu (tools/layers.lua): C files call, and Lua helpers
-- require, only what docs/ARCHITECTURE.md's "layers" block puts on their
-- line or below; calls up are declared there. Checked on the tree, and on
-- small trees planted in a temporary folder (the real one is not touched).
local support = require "support"
local shell_quote, write_file = support.shell_quote, support.write_file

local BUILD = os.getenv("LUAGPU_BUILD") or "build"

-- Runs the tool with args (a string of shell words); returns its stdout,
-- its stderr and its exit status.
local function layers(args)
  local err = os.tmpname()
  local p = io.popen("lua5.4 tools/layers.lua " .. args .. " 2>" .. shell_quote(err)
                     .. "; echo \"exit $?\"")
  local out = p:read("a")
  p:close()
  local f = io.open(err)
  local text = f:read("a")
  f:close()
  os.remove(err)
  local status = tonumber(out:match("exit (%d+)\n$"))
  return out:gsub("exit %d+\n$", ""), text, status
end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. shell_quote(d .. "/lua/luagpu/core") .. " "
                    .. shell_quote(d .. "/lua/luagpu/tensor") .. " " .. shell_quote(d .. "/host")))
  return d
end

local function rmdir(d) os.execute("rm -rf " .. shell_quote(d)) end

-- A layers block of its own (the doc's only content).
local function doc(dir, lines)
  write_file(dir .. "/ARCH.md", "# planted\n\n```layers\n" .. table.concat(lines, "\n") .. "\n```\n")
end

local function args(dir, objs)
  return "--doc " .. shell_quote(dir .. "/ARCH.md") .. " --lua " .. shell_quote(dir .. "/lua/luagpu")
         .. " --host " .. shell_quote(dir .. "/host") .. " " .. (objs or "")
end

describe("tools/layers.lua", function()
  it("passes on the tree and prints the layers in the documented order", function()
    local out, err, status = layers(BUILD .. "/*.o")
    assert.equals("", err)
    assert.equals(0, status)
    -- the block's layer names, in order, are the lines printed
    local f = assert(io.open("docs/ARCHITECTURE.md"))
    local block = f:read("a"):match("\n```layers\n(.-)\n```")
    f:close()
    local documented = {}
    for line in block:gmatch("[^\n]+") do
      local name = line:gsub("#.*", ""):match("^([CL]%w* [%w%- ]-):")
      if name then documented[#documented + 1] = name end
    end
    local printed = {}
    for n, name in out:gmatch("\n%s*(%d+)  (%S+ ?[%w%- ]-)%s%s+") do
      printed[#printed + 1] = name
      assert.equals(#printed, tonumber(n))
    end
    assert.is_true(#documented >= 10)
    assert.same(documented, printed)
    -- files and helpers sit where the block puts them
    assert.matches("\n%s*1  C base%s+[^\n]*errors%.c", out)
    assert.matches("\n%s*%d+  C module%s+module%.c\n", out)
    assert.matches("\n%s*%d+  Lua core%s+[^\n]*luagpu%.core%.check", out)
    assert.matches("\n%s*%d+  Lua tensor%s+[^\n]*luagpu%.tensor%.codegen", out)
    -- the calls up the design wants, declared, and the one helper C runs
    assert.matches("hook    state.c -> userevent.c (after_wait)", out, 1, true)
    assert.matches("hook    kernel.c -> binary.c (__binary)", out, 1, true)
    assert.matches("require module.c -> luagpu.autoload", out, 1, true)
    assert.matches("no circle, no edge up\n$", out)
  end)

  it("names a planted Lua require cycle, also through a require inside a function", function()
    local d = tmpdir()
    write_file(d .. "/lua/luagpu/core/init.lua", 'local gpu = require "luagpu"\nreturn {}\n')
    write_file(d .. "/lua/luagpu/tensor/init.lua",
               'local core = require("luagpu.core")\nlocal views = require "luagpu.tensor.views"\n'
               .. "return {}\n")
    write_file(d .. "/lua/luagpu/tensor/views.lua",
               "-- require 'luagpu.nothing' in a comment is no require\n"
               .. "local M = {}\nfunction M.f()\n  local ok, t = pcall(require, 'luagpu.tensor')\nend\n"
               .. "return M\n")
    doc(d, {"C module: module.c", "Lua core: core", "Lua tensor: tensor", "provides luagpu = module.c"})
    local out, err, status = layers(args(d))
    rmdir(d)
    assert.equals(1, status)
    assert.equals("", out)
    assert.matches("a Lua require cycle: luagpu.tensor -(require at " .. d
                   .. "/lua/luagpu/tensor/init.lua:2)-> luagpu.tensor.views -(require at " .. d
                   .. "/lua/luagpu/tensor/views.lua:4)-> luagpu.tensor\n", err, 1, true)
    assert.not_matches("nothing", err)
  end)

  it("names a planted upward require and a helper in no layer", function()
    local d = tmpdir()
    write_file(d .. "/lua/luagpu/core/init.lua",
               'local M = {}\nfunction M.lazy() return require("luagpu.tensor") end\nreturn M\n')
    write_file(d .. "/lua/luagpu/tensor/init.lua", 'return require "luagpu.core"\n')
    write_file(d .. "/lua/luagpu/extra.lua", 'return require "luagpu.core"\n')
    doc(d, {"Lua core: core", "Lua tensor: tensor"})
    local out, err, status = layers(args(d))
    rmdir(d)
    assert.equals(1, status)
    assert.equals("", out)
    assert.matches("upward edge: luagpu.core (Lua core) -> luagpu.tensor (Lua tensor), require at "
                   .. d .. "/lua/luagpu/core/init.lua:2\n", err, 1, true)
    assert.matches("luagpu.extra (extra) is in no layer of " .. d .. "/ARCH.md\n", err, 1, true)
  end)

  it("names a planted upward C call against the real objects", function()
    local d = tmpdir()
    local f = assert(io.open("docs/ARCHITECTURE.md"))
    local block = f:read("a"):match("\n```layers\n(.-)\n```")
    f:close()
    -- errors.c moved from the bottom to a layer of its own at the top
    local lines = {}
    for line in block:gmatch("[^\n]+") do
      lines[#lines + 1] = line:gsub(" errors%.c", "")
    end
    lines[#lines + 1] = "C top: errors.c"
    doc(d, lines)
    local out, err, status = layers("--doc " .. shell_quote(d .. "/ARCH.md") .. " " .. BUILD .. "/*.o")
    rmdir(d)
    assert.equals(1, status)
    assert.equals("", out)
    assert.matches("\n  upward edge: class%.c %(C shared%) %-> errors%.c %(C top%), lg_%w+\n", err)
  end)

  it("names a planted C call circle and an undeclared hook", function()
    local d = tmpdir()
    write_file(d .. "/host/a.c", "void lg_b(void);\nvoid lg_a(void);\nvoid lg_a(void) { lg_b(); }\n")
    write_file(d .. "/host/b.c", "void lg_a(void);\nvoid lg_b(void);\nvoid lg_b(void) { lg_a(); }\n")
    write_file(d .. "/host/c.c", "void lg_a(void);\nvoid lg_on(void (*f)(void));\n"
               .. "static void back(void) { lg_a(); }\nvoid lg_c(void);\n"
               .. "void lg_c(void) { lg_on(back); }\n")
    for _, n in ipairs({"a", "b", "c"}) do
      assert(os.execute("cc -c -o " .. shell_quote(d .. "/host/" .. n .. ".o") .. " "
                        .. shell_quote(d .. "/host/" .. n .. ".c")))
    end
    doc(d, {"C low: a.c b.c", "C high: c.c"})
    local out, err, status = layers(args(d, shell_quote(d .. "/host") .. "/*.o"))
    rmdir(d)
    assert.equals(1, status)
    assert.equals("", out)
    assert.matches("a C call circle: a.c -(lg_b)-> b.c -(lg_a)-> a.c\n", err, 1, true)
    assert.matches("undeclared hook: c.c hands back to lg_on (declare it: hook CALLER -> c.c: lg_on)",
                   err, 1, true)
  end)
end)
