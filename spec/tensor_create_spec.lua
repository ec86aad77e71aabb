-- luagpu.tensor: the constructors NumPy and PyTorch users reach for first:
-- dev:zeros, ones, full, eye, linspace, x:zeros_like, ones_like, full_like,
-- dev:randint, uniform, normal, randperm; against NumPy where it has the
-- same function (eye, linspace), against their definitions otherwise
-- (ranges, sample statistics, permutations), and their errors.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"

local has_error, errmsg = support.has_error, support.errmsg

describe("tensor constructors", function()
  local dev = gpu.device()
  local fp64 = dev.fp64
  local TYPES = {}
  for _, t in ipairs(S.TYPES) do if t ~= "double" or fp64 then TYPES[#TYPES + 1] = t end end

  local function all_equal(list, v)
    for i, x in ipairs(list) do
      if x ~= v and not (x ~= x and v ~= v) then return false, i end
    end
    return true
  end

  it("a host array of values that do not fit raises as the call's argument", function()
    -- (it named array:copy, at a line inside luagpu)
    local ok, err = pcall(dev.tensor, dev, "char", {2}, gpu.array("uchar", {200, 1}))
    assert.is_false(ok)
    assert.equals("luagpu: device:tensor: argument #3: value #1: 200 does not fit char (-128 to "
                  .. "127)", err)
    assert.same({-3, 1}, dev:tensor("char", {2}, gpu.array("int", {-3, 1})):totable())
  end)

  it("zeros, ones and full fill every type and shape, limits included", function()
    for _, t in ipairs(TYPES) do
      for _, shape in ipairs{{}, {0}, {5}, {3, 0, 2}, {2, 3, 4}, 7} do
        local z, o = dev:zeros(t, shape), dev:ones(t, shape)
        local want = type(shape) == "number" and {shape} or shape
        assert.same(want, z.shape)
        assert.equal(t, z.type)
        assert.equal(t, o.type)
        assert.is_true(z:is_contiguous())
        assert.is_true(all_equal(z:get():totable(), 0))
        assert.is_true(all_equal(o:get():totable(), 1))
      end
      local lim = ({char = -128, uchar = 255, short = -32768, ushort = 65535,
                    int = -2147483648, uint = 4294967295, long = math.mininteger, ulong = -1,
                    float = -1.5, double = 0.1})[t]
      local v = t == "ulong" and 2.0^64 - 2048 or lim
      local f = dev:full(t, {4, 3}, v)
      local got = f:get():totable()
      assert.is_true(all_equal(got, t == "ulong" and -2048 or S.as(t, lim)), t)
    end
    local nan = dev:full("float", {3}, 0 / 0):get():totable()
    assert.is_true(nan[1] ~= nan[1])
    assert.same({math.huge, math.huge}, dev:full("float", {2}, math.huge):totable())
    assert.same({-0.0, -0.0}, dev:full("float", 2, -0.0):totable())
    assert.equal(-math.huge, 1 / dev:full("float", {1}, -0.0):totable()[1])
  end)

  it("the *_like constructors take x's shape, type (or the one given) and device", function()
    local x = dev:tensor("int", {2, 3}, {1, 2, 3, 4, 5, 6})
    local lazy = x * 2 + 1
    for _, case in ipairs{
      {lazy:zeros_like(), "int", 0}, {lazy:ones_like(), "int", 1}, {lazy:full_like(-7), "int", -7},
      {x:t():zeros_like("float"), "float", 0}, {x:ones_like("uchar"), "uchar", 1},
      {x:full_like(2.5, "float"), "float", 2.5},
    } do
      local y, t, v = case[1], case[2], case[3]
      assert.equal(t, y.type)
      assert.is_true(all_equal(y:get():totable(), v))
      assert.equal(x.device, y.device)
      assert.equal(6, #y)
    end
    assert.same({3, 2}, x:t():zeros_like().shape)
    assert.equal("table", type(rawget(lazy, "_expr")))   -- not evaluated
    assert.same({}, dev:tensor("double", {}):ones_like("float").shape)
  end)

  it("eye equals NumPy's eye, square and not, every type", function()
    if not S.need_numpy(assert, pending) then return end
    for _, t in ipairs(TYPES) do
      for _, nm in ipairs{{1}, {4}, {3, 5}, {6, 2}, {0, 3}, {3, 0}, {70, 65}} do
        local n, m = nm[1], nm[2]
        local e = m and dev:eye(t, n, m) or dev:eye(t, n)
        local ref = S.numpy(string.format("out = np.eye(%d, %d)", n, m or n))
        assert.same(ref.shape, e.shape)
        assert.equal(t, e.type)
        assert.same(ref.data, e:astype("float"):get():totable(), t)
      end
    end
  end)

  it("linspace equals NumPy's linspace (floored for integer types)", function()
    if not S.need_numpy(assert, pending) then return end
    math.randomseed(5)
    -- (-20 .. -6 in 43 and 5 .. 1 in 21: an fma of i * step + first once
    -- floored element 40 to -8 and element 16 to 1; NumPy: -7 and 2)
    local cases = {{0, 1, 5}, {-3, 7, 11}, {1, 1, 4}, {5, -5, 7}, {2.5, 2.5, 1}, {0, 10, 0},
                   {-1, -10, 4}, {0, 1e6, 1000}, {-20, -6, 43}, {5, 1, 21}, {1, 5, 50}}
    for _ = 1, 4 do
      cases[#cases + 1] = {math.random(-100, 100) / 7, math.random(-100, 100) / 3,
                           math.random(2, 300)}
    end
    for _, t in ipairs{"float", "double", "int", "long", "short"} do
      if t ~= "double" or fp64 then
        for _, c in ipairs(cases) do
          local first, last, count = c[1], c[2], c[3]
          local skip = (t == "short" and (math.abs(first) > 32767 or math.abs(last) > 32767))
          if not skip then
            local x = dev:linspace(t, first, last, count)
            assert.equal(t, x.type)
            local ref = S.numpy(string.format("out = np.linspace(%.17g, %.17g, %d)", first, last,
                                              count))
            assert.same(ref.shape, x.shape)
            local got = x:get():totable()
            for i, v in ipairs(ref.data) do
              local g = got[i]
              -- computed in double as NumPy, i * step and + first rounded each
              -- (no fma): exactly NumPy's value, rounded to float or floored
              -- (a device without fp64 computes in float: within rounding)
              if t == "float" or t == "double" then
                local want = S.as(t, v)
                local ulp = fp64 and 0 or 2 * 2.0^-23
                assert(math.abs(g - want) <= ulp * math.max(1, math.abs(v)),
                       string.format("%s linspace(%g, %g, %d)[%d]: %.17g vs %.17g", t, first,
                                     last, count, i, g, v))
              else
                local f = math.floor(v)
                local near = not fp64 and
                             math.abs(v - math.floor(v + 0.5)) < 1e-6 * math.max(1, math.abs(v))
                assert(g == f or (near and math.abs(g - f) == 1),
                       string.format("%s linspace(%g, %g, %d)[%d]: %d vs %.17g", t, first, last,
                                     count, i, g, v))
              end
            end
            if count > 1 then assert.equal(S.as(t, (t == "float" or t == "double") and last or math.floor(last)),
                                           got[count]) end
            if count > 0 then assert.equal(S.as(t, (t == "float" or t == "double") and first or math.floor(first)),
                                           got[1]) end
          end
        end
      end
    end
  end)

  -- found by the audit: last - first was taken in Lua integers, which wrap
  -- (maxint - minint is -1): the steps went backwards
  it("linspace spans integer types end to end, exactly, as NumPy's float64 steps", function()
    local function same(want, x) assert.same(want, x:totable()) end
    local min, max = math.mininteger, math.maxinteger
    same({min, min // 2, 0, max // 2 + 1, max}, dev:linspace("long", min, max, 5))
    same({max, 0, min}, dev:linspace("long", max, min, 3))
    same({-2147483648, -1, 2147483647}, dev:linspace("int", -2147483648, 2147483647, 3))
    same({-3, -2, -1}, dev:linspace("long", -3, -1, 3))
    if fp64 then
      local d = dev:linspace("double", min, max, 3):totable()
      assert.same({-2.0^63, 0.0, 2.0^63}, d)
    end
  end)

  it("randint draws lo..hi inclusive, uniformly, for every integer type", function()
    local n = 20000
    for _, t in ipairs(S.INTS) do
      local lo = t:sub(1, 1) == "u" and 3 or -2
      local x = dev:randint(t, lo, lo + 4, {n}, 11)
      assert.equal(t, x.type)
      local counts = {}
      for _, v in ipairs(x:get():totable()) do counts[v] = (counts[v] or 0) + 1 end
      for v = lo, lo + 4 do
        -- 4000 expected: 5 standard deviations are about 280
        assert(counts[v] and math.abs(counts[v] - n / 5) < 300,
               string.format("%s: %d drawn %s times of %d", t, v, tostring(counts[v]), n))
        counts[v] = nil
      end
      assert.is_nil(next(counts), t .. ": values outside lo..hi")
      -- one value; the type's whole range
      assert.is_true(all_equal(dev:randint(t, lo, lo, {9}):get():totable(), lo))
    end
    local full = dev:randint("long", math.mininteger, math.maxinteger, {2000}, 3):get():totable()
    local neg = 0
    for _, v in ipairs(full) do if v < 0 then neg = neg + 1 end end
    assert(neg > 850 and neg < 1150, neg .. " negatives of 2000")
    local c = dev:randint("char", -128, 127, {5000}, 4):get():totable()
    local seen = {}
    for _, v in ipairs(c) do seen[v] = true end
    assert.is_true(seen[-128] and seen[127] or false)
    -- ulong bounds past 2^63 (floats from 2^63, as the storing rules allow)
    local u = dev:randint("ulong", 2.0^63, 2.0^63 + 4096, {500}, 9):get():totable()
    for _, v in ipairs(u) do
      assert(v < 0 and v <= math.mininteger + 4096, "ulong draw out of range")
    end
    -- reproducible from a seed; other seeds differ
    assert.same(dev:randint("int", 0, 1000, {50}, 77):totable(),
                dev:randint("int", 0, 1000, {50}, 77):totable())
    assert.are_not.same(dev:randint("int", 0, 1000, {50}, 77):totable(),
                        dev:randint("int", 0, 1000, {50}, 78):totable())
  end)

  it("uniform and normal scale rand and randn; sample statistics", function()
    local types = {"float"}
    if fp64 then types[2] = "double" end
    for _, t in ipairs(types) do
      local n = 40000
      local u = dev:uniform(t, {n}, -3, 5, 21)
      assert.equal(t, u.type)
      assert.is_true(u:min() >= -3 and u:max() <= 5)
      assert(math.abs(u:mean() - 1) < 0.05, "mean " .. u:mean())
      local g = dev:normal(t, {n}, 10, 2, 21)
      assert(math.abs(g:mean() - 10) < 0.06, "mean " .. g:mean())
      local var = ((g - g:mean()) ^ 2):mean()
      assert(math.abs(math.sqrt(var) - 2) < 0.06, "std " .. math.sqrt(var))
      -- lo 0, hi 1 and mean 0, std 1 are rand and randn, bit for bit (and the defaults)
      assert.same(dev:rand(t, {33}, 5):totable(), dev:uniform(t, {33}, 0, 1, 5):totable())
      assert.same(dev:rand(t, {33}, 5):totable(), dev:uniform(t, {33}, nil, nil, 5):totable())
      assert.same(dev:randn(t, {33}, 5):totable(), dev:normal(t, {33}, 0, 1, 5):totable())
      assert.same(dev:randn(t, {33}, 5):totable(), dev:normal(t, {33}, nil, nil, 5):totable())
      -- std 0 is the mean; lo == hi is lo
      assert.is_true(all_equal(dev:normal(t, {7}, 2.5, 0):get():totable(), 2.5))
      assert.is_true(all_equal(dev:uniform(t, {7}, -1.5, -1.5):get():totable(), -1.5))
      assert.same({0, 3}, dev:uniform(t, {0, 3}).shape)
    end
  end)

  it("randperm is a long permutation of 1..n, reproducible from a seed", function()
    for _, n in ipairs{0, 1, 2, 17, 1000, 5000} do
      local p = dev:randperm(n, 8)
      assert.equal("long", p.type)
      assert.same({n}, p.shape)
      local vals = p:get():totable()
      table.sort(vals)
      for i = 1, n do assert.equal(i, vals[i]) end
    end
    assert.same(dev:randperm(300, 1):totable(), dev:randperm(300, 1):totable())
    assert.are_not.same(dev:randperm(300, 1):totable(), dev:randperm(300, 2):totable())
    local moved = 0
    for i, v in ipairs(dev:randperm(1000, 3):totable()) do if v ~= i then moved = moved + 1 end end
    assert.is_true(moved > 950)
  end)

  it("raises at the caller's line on every bad argument", function()
    local odd = setmetatable({}, {__len = function() return 5 end, __index = function() return 2 end})
    local e = errmsg(function() local x = dev:zeros("int", {-1}) return x end)
    assert.matches("^spec/tensor_create_spec%.lua:%d+: luagpu: device:zeros: argument #2: " ..
                   "size 1: expected an integer >= 0, got %-1$", e)
    local cases = {
      {"luagpu: device:zeros: argument #1: expected an element type (char, uchar, short, ushort, " ..
       "int, uint, long, ulong, float or double), got \"float4\"", dev.zeros, dev, "float4", {2}},
      {"luagpu: device:ones: argument #2: size 1: expected an integer >= 0, got nan", dev.ones,
       dev, "int", {0 / 0}},
      {"luagpu: device:ones: argument #2: size 2: expected an integer >= 0, got 1.5", dev.ones,
       dev, "int", {2, 1.5}},
      {"luagpu: device:full: argument #2: shape {4294967296, 4294967296} is too large (at most " ..
       "2^53 elements)", dev.full, dev, "int", {2^32, 2^32}, 1},
      {"luagpu: device:full: argument #2: expected a shape (a table of sizes), got string",
       dev.full, dev, "int", "3", 1},
      {"luagpu: device:full: argument #3: 300 does not fit uchar (0 to 255)", dev.full, dev,
       "uchar", {2}, 300},
      {"luagpu: device:full: argument #3: 2.5 is not an integer (int holds integers)", dev.full,
       dev, "int", {2}, 2.5},
      {"luagpu: device:full: argument #3: expected a number, got nil", dev.full, dev, "int", {2}},
      {"luagpu: device:zeros: self: expected a luagpu.Device, got nil", dev.zeros, nil, "int", 2},
      -- NumPy's zeros(2, 3) habit: the message names the table a shape is
      {"luagpu: device:zeros: argument #3: expected no more arguments, got number (a shape of " ..
       "several dims is one table: {2, 3, ...})", dev.zeros, dev, "float", 2, 3},
      {"luagpu: device:ones: argument #3: expected no more arguments, got number (a shape of " ..
       "several dims is one table: {2, 3, ...})", dev.ones, dev, "float", 2, 3},
      {"luagpu: device:eye: argument #2: rows: expected an integer >= 0, got -3", dev.eye, dev,
       "float", -3},
      {"luagpu: device:eye: argument #3: columns: expected an integer >= 0, got 2.5", dev.eye,
       dev, "float", 3, 2.5},
      {"luagpu: device:eye: arguments #2 and #3: shape {4294967296, 4294967296} is too large",
       dev.eye, dev, "float", 2^32},
      {"luagpu: device:linspace: argument #2: expected a finite number, got nan", dev.linspace,
       dev, "float", 0 / 0, 1, 3},
      {"luagpu: device:linspace: argument #3: expected a finite number, got inf", dev.linspace,
       dev, "float", 0, math.huge, 3},
      {"luagpu: device:linspace: argument #4: count: expected an integer >= 0, got -1",
       dev.linspace, dev, "float", 0, 1, -1},
      {"luagpu: device:linspace: argument #4: count: expected an integer >= 0, got \"3\"",
       dev.linspace, dev, "float", 0, 1, "3"},
      {"luagpu: device:linspace: argument #4: shape {9223372036854775807} is too large",
       dev.linspace, dev, "float", 0, 1, math.maxinteger},
      {"luagpu: device:linspace: argument #3: 300 does not fit uchar (0 to 255)", dev.linspace,
       dev, "uchar", 0, 300.5, 3},
      {"luagpu: device:linspace: argument #3: last - first overflows (1.7e+308 - -1.7e+308)",
       dev.linspace, dev, "float", -1.7e308, 1.7e308, 3},
      {"luagpu: device:randint: argument #1: expected an integer type (char .. ulong), got " ..
       "\"float\"", dev.randint, dev, "float", 0, 1, {2}},
      {"luagpu: device:randint: argument #3: hi (1) is less than lo (5)", dev.randint, dev,
       "int", 5, 1, {2}},
      {"luagpu: device:randint: argument #2: lo: -1 does not fit uint (0 to 4294967295)",
       dev.randint, dev, "uint", -1, 1, {2}},
      {"luagpu: device:randint: argument #3: hi: 2.5 is not an integer (int holds integers)",
       dev.randint, dev, "int", 0, 2.5, {2}},
      {"luagpu: device:randint: argument #2: lo: expected an integer, got nil", dev.randint, dev,
       "int", nil, 1, {2}},
      {"luagpu: device:randint: argument #4: size 1: expected an integer >= 0, got -2",
       dev.randint, dev, "int", 0, 1, {-2}},
      {"luagpu: device:randint: argument #5: seed: expected an integer, got 0.5", dev.randint,
       dev, "int", 0, 1, {2}, 0.5},
      {"luagpu: device:uniform: argument #1: expected \"float\" or \"double\", got \"int\"",
       dev.uniform, dev, "int", {2}, 0, 1},
      {"luagpu: device:uniform: argument #4: hi (0) is less than lo (1)", dev.uniform, dev,
       "float", {2}, 1, 0},
      {"luagpu: device:uniform: argument #3: lo: expected a finite number, got nan", dev.uniform,
       dev, "float", {2}, 0 / 0, 1},
      {"luagpu: device:uniform: argument #4: hi: 1e+39 is past float's range", dev.uniform, dev,
       "float", {2}, 0, 1e39},
      {"luagpu: device:uniform: argument #4: hi - lo (3e+38 - -3e+38) is past float's range",
       dev.uniform, dev, "float", {2}, -3e38, 3e38},
      {"luagpu: device:normal: argument #4: std: expected a number >= 0, got -1", dev.normal,
       dev, "float", {2}, 0, -1},
      {"luagpu: device:normal: argument #3: mean: expected a finite number, got \"0\"",
       dev.normal, dev, "float", {2}, "0", 1},
      {"luagpu: device:normal: argument #5: seed: expected an integer, got nan", dev.normal, dev,
       "float", {2}, 0, 1, 0 / 0},
      {"luagpu: device:randperm: argument #1: expected an integer >= 0, got -1", dev.randperm,
       dev, -1},
      {"luagpu: device:randperm: argument #1: expected an integer >= 0, got nil", dev.randperm,
       dev},
      {"luagpu: device:randperm: argument #1: shape {9223372036854775807} is too large",
       dev.randperm, dev, math.maxinteger},
      {"luagpu: device:randperm: argument #2: seed: expected an integer, got \"1\"",
       dev.randperm, dev, 5, "1"},
    }
    for _, c in ipairs(cases) do has_error(c[1], table.unpack(c, 2)) end
    -- a shape's __len and __index are never called: it is read raw (0 entries here)
    assert.same({}, dev:zeros("int", odd).shape)
    -- a hole in a shape is a missing size, not its end (shape {2} was made, size 3 dropped)
    for _, f in ipairs{dev.zeros, dev.ones, dev.tensor} do
      has_error("argument #2: size 2: expected an integer >= 0, got nil", f, dev, "int", {2, nil, 3})
    end
    has_error("luagpu: device:randint: argument #4: size 2: expected an integer >= 0, got nil",
              dev.randint, dev, "int", 0, 3, {2, nil, 3})
    -- a values table holds only values, as a shape holds only sizes (the key was dropped)
    has_error("luagpu: device:tensor: argument #3: the table holds only values, got the key " ..
              "\"pinned\" (options go in a table of their own)", dev.tensor, dev, "float", {2},
              {1, 2, pinned = true})
    has_error("luagpu: device:tensor: argument #3: the table[2] holds only values, got the key " ..
              "\"n\"", dev.tensor, dev, "float", {2, 2}, {{1, 2}, {3, 4, n = 2}})
    local x = dev:tensor("int", {2})
    has_error("luagpu: tensor:full_like: argument #1: expected a number, got nil", x.full_like, x)
    has_error("luagpu: tensor:zeros_like: argument #1: expected an element type", x.zeros_like,
              x, "bogus")
    has_error("luagpu: tensor:ones_like: self: expected a tensor, got number (call " ..
              "methods with a colon: x:ones_like(...))",
              x.ones_like, 3)
    has_error("luagpu: tensor:full_like: argument #1: -1 does not fit uint (0 to 4294967295)",
              x.full_like, x, -1, "uint")
    x:release()
    has_error("luagpu: tensor:zeros_like: attempt to use a released tensor", x.zeros_like, x)
    if not fp64 then
      has_error("has no double precision (fp64)", dev.zeros, dev, "double", {2})
    end
  end)
end)
