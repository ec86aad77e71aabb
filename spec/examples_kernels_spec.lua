-- The classic kernel examples, run as users run them (build/luagpu SCRIPT):
-- each checks its own results against Lua and ends with "ok"; here we check
-- that they ran, and what they wrote.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs the example with its arguments; returns its output and exit status.
local function run(script, ...)
  local args = {}
  for i, a in ipairs({...}) do args[i] = sh_quote(tostring(a)) end
  local p = io.popen(string.format("%s examples/%s %s 2>&1; echo \"exit=$?\"", PROG, script,
                                   table.concat(args, " ")))
  local out = p:read("a")
  p:close()
  local status = tonumber(out:match("exit=(%d+)\n$"))
  return out:gsub("exit=%d+\n$", ""), status
end

local function ran_ok(script, ...)
  local out, status = run(script, ...)
  assert.equal(0, status, out)
  assert.matches("\nok\n$", out)
  return out
end

local read_file = require("support").read_file

describe("examples", function()
  it("vector_map.lua maps float4 pixels to grey", function()
    local out = ran_ok("vector_map.lua", 64, 48)
    assert.matches("64 x 48 pixels (3072 float4)", out, 1, true)
    assert.matches("checked against Lua", out, 1, true)
  end)

  it("atomics.lua counts with a naive, an atomic and a grouped counter", function()
    local out = ran_ok("atomics.lua", 4096)
    local want = out:match("atomic_count +counted +(%d+) of +(%d+)")
    assert.is_not_nil(want, out)
    local got, total = out:match("atomic_count +counted +(%d+) of +(%d+)")
    assert.equal(total, got)
    got, total = out:match("grouped +counted +(%d+) of +(%d+)")
    assert.equal(total, got)
    got, total = out:match("naive +counted +(%d+) of +(%d+)")
    assert.is_true(tonumber(got) <= tonumber(total))
    assert.matches("naive .* ms\n", out)
  end)

  it("blur.lua blurs the shipped PGM through local memory and writes the result", function()
    local path = os.tmpname()
    local out = ran_ok("blur.lua", "examples/data/small.pgm", path)
    assert.matches("256 x 192, 1 channel; box blur of radius 2", out, 1, true)
    assert.matches("every sample matches", out, 1, true)
    local img = read_file(path)
    os.remove(path)
    assert.equal("P5\n256 192\n255\n", img:sub(1, 15))
    assert.equal(15 + 256 * 192, #img)
  end)

  it("blur.lua and mandelbrot.lua write a PNG through gpu.show when asked, and nothing when not", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. sh_quote(dir)))
    local out = ran_ok("blur.lua", "examples/data/small.pgm", dir .. "/b.png")
    assert.matches("wrote " .. dir .. "/b.png", out, 1, true)
    local png = read_file(dir .. "/b.png")
    assert.equal("\137PNG\r\n\26\n", png:sub(1, 8))
    assert.same({256, 192, 8, 0, 27}, {string.unpack(">I4I4BB", png, 17)})   -- grey, 8-bit
    local p = io.popen(("cd %s && %s %s 40 30 20 m.png 2>&1"):format(sh_quote(dir),
      sh_quote((PROG:sub(1, 1) == "/" and "" or os.getenv("PWD") .. "/") .. PROG),
      sh_quote(os.getenv("PWD") .. "/examples/mandelbrot.lua")))
    out = p:read("a")
    p:close()
    assert.matches("wrote m.png", out, 1, true)
    assert.same({40, 30, 25}, {string.unpack(">I4I4", read_file(dir .. "/m.png"), 17)})
    os.execute("rm -r " .. sh_quote(dir))
    -- without OUT: no file anywhere new, and a word on how to get one
    assert(os.execute("mkdir " .. sh_quote(dir)))
    p = io.popen(("cd %s && TMPDIR=%s %s %s %s 2>&1; ls -A"):format(sh_quote(dir), sh_quote(dir),
      sh_quote((PROG:sub(1, 1) == "/" and "" or os.getenv("PWD") .. "/") .. PROG),
      sh_quote(os.getenv("PWD") .. "/examples/blur.lua"),
      sh_quote(os.getenv("PWD") .. "/examples/data/small.pgm")))
    out = p:read("a")
    p:close()
    assert.matches("note: gpu.show had no path and no notebook to show in, so it wrote nothing", out, 1, true)
    assert.matches("\nok\n$", out)
    os.execute("rm -r " .. sh_quote(dir))
  end)

  it("blur.lua blurs a colour PPM, with another radius", function()
    local w, h = 37, 21                 -- not multiples of the tile: the edges are clamped
    local bytes = {}
    for i = 1, w * h * 3 do bytes[i] = string.char(math.random(0, 255)) end
    local input, output = os.tmpname(), os.tmpname()
    local f = assert(io.open(input, "wb"))
    f:write(string.format("P6\n# random\n%d %d\n255\n", w, h), table.concat(bytes))
    f:close()
    local out = ran_ok("blur.lua", input, output, 3)
    assert.matches("37 x 21, 3 channels; box blur of radius 3", out, 1, true)
    local img = read_file(output)
    os.remove(input)
    os.remove(output)
    assert.equal("P6\n37 21\n255\n", img:sub(1, 13))
    assert.equal(13 + w * h * 3, #img)
  end)

  it("ships the picture its generator makes", function()
    local path = os.tmpname()
    local p = io.popen("lua5.4 examples/data/make_small_pgm.lua " .. sh_quote(path))
    p:read("a")
    p:close()
    local made = read_file(path)
    os.remove(path)
    assert.is_true(made == read_file("examples/data/small.pgm"), "small.pgm differs")
    assert.is_true(#made < 100 * 1024)
  end)

  it("fibonacci.lua prefetches tiles with async_work_group_copy", function()
    local out = ran_ok("fibonacci.lua", 4)
    assert.matches("4096 values in 4 groups of 64 work-items, 16 tiles each", out, 1, true)
    assert.matches("checked against Lua: all 4096 match", out, 1, true)
  end)
end)
