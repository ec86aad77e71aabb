-- luagpu.core.programs, the one program cache of the Lua helpers: one key
-- per recipe (defines in any order), one counter per family, one wrapping
-- of build errors.
local gpu = require "luagpu"
local P = require "luagpu.core.programs"

describe("luagpu.core.programs", function()
  local dev = gpu.device()
  local SRC = "__kernel void k(__global int *o) { o[0] = A * 10 + B; }"

  local function run(prog)
    local b = dev:buffer("int", 1)
    prog.k(b):run({1})
    return b:get()[1]
  end

  it("builds a recipe once per device and counts it for its family", function()
    local family = "spec" .. math.random(1 << 30)
    local before, all = P.built(family), P.built()
    local p1 = P.get(dev, {family = family, source = SRC, defines = {A = 4, B = 2}})
    local p2 = P.get(dev, {family = family, source = SRC, defines = {B = 2, A = 4}})
    assert.equal(p1, p2)
    assert.equal(42, run(p1))
    assert.equal(before + 1, P.built(family))
    assert.equal(all + 1, P.built())
    -- other defines, a list of pairs (in its order), options: other programs
    local p3 = P.get(dev, {family = family, source = SRC, defines = {{"A", 1}, {"B", 7}}})
    assert.equal(17, run(p3))
    local p4 = P.get(dev, {family = family, source = SRC, defines = {A = 4, B = 2},
                           options = "-cl-fast-relaxed-math"})
    assert.are_not.equal(p1, p4)
    assert.equal(before + 3, P.built(family))
  end)

  it("calls a source function only on a miss, keyed by key", function()
    local family, calls = "spec" .. math.random(1 << 30), 0
    local function source() calls = calls + 1; return SRC end
    local r = {family = family, key = "k", source = source, defines = {A = 0, B = 5}}
    assert.equal(5, run(P.get(dev, r)))
    assert.equal(5, run(P.get(dev, r)))
    assert.equal(1, calls)
  end)

  it("reads kernel files and puts a prefix before them", function()
    local prog = P.get(dev, {family = "spec", file = "tensor_random.cl",
                             prefix = "#define LG_SPEC_PREFIX 1\n"})
    assert.equal("Program", gpu.type(prog))
    -- a prefix that breaks the file shows it is put before the file
    assert.has_error(function()
      P.get(dev, {family = "spec", file = "tensor_random.cl", prefix = "#error prefix\n"})
    end)
  end)

  it("names the user's expressions when a custom build fails, at the caller", function()
    local ok, msg = pcall(P.get, dev, {family = "spec", source = "__kernel void k() { x }",
                                       custom = "map 'x'", fn = "reduce.new"})
    assert.is_false(ok)
    assert.matches("^luagpu: reduce.new: map 'x' do not compile on " .. dev.name:gsub("%p", "%%%0")
                   .. ":\n", msg)
    ok, msg = pcall(P.get, dev, {family = "spec", source = "__kernel void k() { x }"})
    assert.is_false(ok)
    assert.not_matches("do not compile", msg)
    assert.matches("build", msg)
  end)

  it("makes a module's programs_built read its family's count", function()
    local family = "spec" .. math.random(1 << 30)
    local M = P.counter({}, family)
    assert.equal(0, M.programs_built)
    P.get(dev, {family = family, source = SRC, defines = {A = 1, B = 1}})
    assert.equal(1, M.programs_built)
    assert.is_nil(M.other)
  end)
end)
