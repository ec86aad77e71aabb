-- luagpu.core.types, the one element-type table of the Lua helpers,
-- checked against the C module's (host/types.c): the same names in the same
-- order, the same sizes, ranges that hold the values a typed array stores
-- and refuses, and C limit expressions that compile to those values.
local gpu = require "luagpu"
local T = require "luagpu.core.types"

describe("luagpu.core.types", function()
  it("names the C module's scalar types, in its order, with its sizes", function()
    local _, msg = pcall(gpu.array, "quux", 1)
    local list = msg:match("expected one of ([%l ]+), optionally")
    assert.is_string(list, msg)
    local c_names = {}
    for name in list:gmatch("%l+") do c_names[#c_names + 1] = name end
    assert.same(c_names, T.NAMES)
    for _, t in ipairs(T.NAMES) do
      assert.equal(gpu.array(t, 3).bytes, 3 * T.SIZES[t], t)
      assert.is_true((T.FLOATS[t] or false) ~= (T.INTEGERS[t] or false), t)
    end
    assert.equal(table.concat(T.NAMES, ", ", 1, 9) .. " or double", T.LIST)
  end)

  it("has integer ranges a typed array stores and refuses past", function()
    for t, r in pairs(T.RANGES) do
      local a = gpu.array(t, 2)
      a[1], a[2] = r[1], r[2]
      assert.equal(r[1], a[1], t)
      assert.equal(r[2], a[2], t)
      assert.is_nil(T.fits(t, r[1]), t)
      assert.is_nil(T.fits(t, r[2]), t)
      if t ~= "long" and t ~= "ulong" then
        assert.has_error(function() a[1] = r[2] + 1 end)
        assert.matches("does not fit " .. t, T.fits(t, r[2] + 1))
      end
      if r[1] > math.mininteger then
        assert.has_error(function() a[1] = r[1] - 1 end)
        assert.matches("does not fit " .. t, T.fits(t, r[1] - 1))
      end
    end
  end)

  it("has C limit expressions and wrap types that mean what the table says", function()
    local dev = gpu.device()
    local names, lines = {}, {}
    for _, t in ipairs(T.NAMES) do
      if t ~= "double" or dev.fp64 then
        names[#names + 1] = t
        local lim = T.LIMITS[t]
        -- each limit stored in its own type, then as the type's bytes
        lines[#lines + 1] = string.format(
          "__kernel void k_%s(__global %s *o) { o[0] = %s; o[1] = %s; }", t, t, lim[1], lim[2])
        if T.WRAP[t] then                       -- wraps: max + 1 == min through WRAP
          lines[#lines + 1] = string.format(
            "__kernel void w_%s(__global %s *o) { %s a = %s; " ..
            "o[0] = (%s)((%s)a + (%s)1); }", t, t, t, lim[2], t, T.WRAP[t], T.WRAP[t])
        end
      end
    end
    local prog = dev:build((dev.fp64 and "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" or "")
                           .. table.concat(lines, "\n"))
    for _, t in ipairs(names) do
      local b = dev:buffer(t, 2)
      prog["k_" .. t](b):run({1})
      local v = b:get()
      if T.FLOATS[t] then
        assert.equal(-math.huge, v[1], t)
        assert.equal(math.huge, v[2], t)
      else
        local r = T.RANGES[t]
        assert.equal(r[1], v[1], t)
        if t ~= "ulong" then assert.equal(r[2], v[2], t) end
        local w = dev:buffer(t, 1)
        prog["w_" .. t](w):run({1})
        assert.equal(r[1], w:get()[1], t .. " wraps to its least value")
      end
    end
  end)

  it("promotes as docs/API.md's table says", function()
    assert.equal("short", T.promote("char", "uchar"))
    assert.equal("long", T.promote("int", "uint"))
    assert.equal("long", T.promote("long", "ulong"))
    assert.equal("float", T.promote("ulong", "float"))
    assert.equal("double", T.promote("float", "double"))
    assert.equal("int", T.promote("int", "ushort"))
    for _, a in ipairs(T.NAMES) do
      for _, b in ipairs(T.NAMES) do assert.equal(T.promote(a, b), T.promote(b, a)) end
    end
  end)
end)
