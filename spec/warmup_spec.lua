-- gpu.warmup(dev [, types]): the helpers' common programs built ahead of
-- time. Each case runs in a fresh luagpu process, so that the count of
-- programs the helpers built (luagpu.core.programs' counter) starts at 0.
local support = require "support"
local shell_quote = support.shell_quote

local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

-- Runs code in a fresh luagpu; returns its output (stdout and stderr).
local function run(code)
  local p = io.popen(shell_quote(PROG) .. " -e " .. shell_quote(code) .. " 2>&1")
  local out = p:read("a")
  local _, _, status = p:close()
  return out, status
end

describe("gpu.warmup", function()
  it("builds the helpers' programs once; the ops after it build nothing", function()
    local out, status = run([[
      local P = require "luagpu.core.programs"
      local dev = gpu.device()
      local n, secs = gpu.warmup(dev, {"float"})
      print("warmup", n, P.built(), math.type(n), type(secs) == "number" and secs >= 0)
      print("again", (gpu.warmup(dev, "float")))
      local before = P.built()
      local t = {}
      for i = 1, 1000 do t[i] = i end
      local a, b = dev:tensor("float", {1000}, 2), dev:tensor("float", {1000}, t)
      local c = (a + b):get()
      local d = (b * 3):get()
      local s, mx = b:sum(), b:max()
      local srt = (-b):sort():get()
      local m = dev:tensor("float", {128, 128}, 1)
      local mm = m:mm(m):get()
      print("after", P.built() - before, c[1000], d[2], s, mx, srt[1], mm[1])
    ]])
    assert.equals(0, status, out)
    local n, total, mtype, secs = out:match("warmup\t(%d+)\t(%d+)\t(%a+)\t(%a+)\n")
    assert.is_not_nil(n, out)
    assert.equals("integer", mtype)
    assert.equals("true", secs)
    assert.is_true(tonumber(n) >= 10, out)        -- elementwise, reductions, sort, matmul
    assert.equals(n, total)                        -- all it built is what the count says
    assert.matches("\nagain\t0\n", out, 1, true)
    -- a + b, b * 3, the sum, max, sort and matmul: nothing more to build
    assert.matches("\nafter\t0\t1002.0\t6.0\t500500.0\t1000.0\t-1000.0\t128.0\n", out, 1, true)
  end)

  it("takes a list of types, int by default too, and checks its arguments", function()
    local out, status = run([[
      local dev = gpu.device()
      local n = gpu.warmup(dev, {"int"})
      print("int", n > 0)
      print(pcall(gpu.warmup))
      print(pcall(gpu.warmup, dev, "flot"))
      print(pcall(gpu.warmup, dev, 3))
    ]])
    assert.equals(0, status, out)
    assert.matches("int\ttrue\n", out, 1, true)
    assert.matches("false\tluagpu: gpu.warmup: argument #1: expected a luagpu.Device, got nil\n",
                   out, 1, true)
    assert.matches('false\tluagpu: gpu.warmup: argument #2: type #1: expected one of char uchar '
                   .. 'short ushort int uint long ulong float double, got "flot"\n', out, 1, true)
    assert.matches("false\tluagpu: gpu.warmup: argument #2: expected a type name or a list of "
                   .. "them, got number\n", out, 1, true)
  end)
end)
