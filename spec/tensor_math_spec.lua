-- luagpu.tensor: the elementwise math beyond the first set (tan .. lgamma,
-- round, trunc, sign, atan2, hypot, fmod, isnan/isinf/isfinite), the
-- bitwise operators and methods, the logical ops: against NumPy on random
-- data with NaN, infinities, zeros and the integer types' limits, against a
-- plain-Lua reference for what NumPy does otherwise (shift counts that are
-- negative: Lua's rule), and their errors.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"
local codegen = require "luagpu.tensor.codegen"

local has_error, errmsg = support.has_error, support.errmsg

local BITS = {char = 8, uchar = 8, short = 16, ushort = 16, int = 32, uint = 32, long = 64,
              ulong = 64}
local SIGNED = {char = true, short = true, int = true, long = true}
local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
               ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
               long = {math.mininteger, math.maxinteger},
               ulong = {math.mininteger, math.maxinteger}}   -- (ulong: all 64-bit words)

-- The floating ops and NumPy's expression of each over X (float64 values).
local UNARY = {
  tan = "np.tan(X)", asin = "np.arcsin(X)", acos = "np.arccos(X)", atan = "np.arctan(X)",
  sinh = "np.sinh(X)", cosh = "np.cosh(X)", asinh = "np.arcsinh(X)", acosh = "np.arccosh(X)",
  atanh = "np.arctanh(X)", log2 = "np.log2(X)", log10 = "np.log10(X)", log1p = "np.log1p(X)",
  exp2 = "np.exp2(X)", expm1 = "np.expm1(X)", rsqrt = "1 / np.sqrt(X)",
  erf = "np.vectorize(math.erf)(X)", erfc = "np.vectorize(math.erfc)(X)",
  lgamma = "np.vectorize(lgamma)(X)",
}
local UNARY_NAMES = {}
for k in pairs(UNARY) do UNARY_NAMES[#UNARY_NAMES + 1] = k end
table.sort(UNARY_NAMES)

local PY_LGAMMA = [[
def lgamma(v):
    try: return math.lgamma(v)
    except (ValueError, OverflowError): return math.inf
]]

-- Asserts the values got equal ref (lists): NaN where ref is NaN, the same
-- infinity, else within tol relative to max(1, |ref|).
local function close(got, ref, tol, label)
  assert.equal(#ref, #got, label)
  for i, v in ipairs(ref) do
    local g = got[i]
    local ok
    if v ~= v then ok = g ~= g
    elseif v == math.huge or v == -math.huge then ok = g == v
    else ok = g == g and math.abs(g - v) <= tol * math.max(1, math.abs(v)) end
    if not ok then
      error(string.format("%s: element %d: expected %.17g, got %.17g", label, i, v, g), 2)
    end
  end
end

-- Random float values: a spread over (-4, 4), (-1, 1), and special values.
local SPECIAL = {0 / 0, math.huge, -math.huge, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5,
                 1e-8, -1e-8, 30.0, -30.0, 1.5, 2.0, -3.0}
local function float_values(n)
  local v = {}
  for i = 1, n do
    local r = math.random()
    if r < 0.25 then v[i] = SPECIAL[math.random(#SPECIAL)]
    elseif r < 0.6 then v[i] = (math.random() - 0.5) * 2
    else v[i] = (math.random() - 0.5) * 8 end
  end
  return v
end

-- n random values over type t's whole range, its limits among them.
local function int_values(t, n)
  local r, v = RANGE[t], {}
  for i = 1, n do
    local k = math.random()
    if k < 0.2 then v[i] = ({r[1], r[2], 0, 1, -1 % (r[2] + 1)})[math.random(5)]
    elseif k < 0.4 then v[i] = math.random(math.max(r[1], -9), 9)
    else v[i] = math.random(r[1], r[2]) end
    if not SIGNED[t] and t ~= "ulong" and v[i] < 0 then v[i] = 0 end
  end
  return v
end

describe("tensor math beyond the first set", function()
  local dev = gpu.device()
  local fp64 = dev.fp64
  math.randomseed(32)

  -- A tensor of type t holding vals (ulong: any 64-bit words).
  local function tensor(t, shape, vals)
    if t == "ulong" then return dev:tensor("long", shape, vals):astype("ulong"):eval() end
    return dev:tensor(t, shape, vals)
  end

  it("floating functions of float, double and integer tensors equal NumPy's", function()
    if not S.need_numpy(assert, pending) then return end
    local cases = {{"float", float_values(300), 2e-5}, {"int", int_values("short", 200), 2e-5},
                   {"uchar", int_values("uchar", 100), 2e-5}}
    if fp64 then
      cases[#cases + 1] = {"double", float_values(300), 1e-12}
      cases[#cases + 1] = {"long", int_values("short", 100), 1e-12}
    end
    for _, case in ipairs(cases) do
      local t, vals, tol = case[1], case[2], case[3]
      local x = dev:tensor(t, {#vals}, vals)
      local ft = (t == "double" or t == "long") and "double" or "float"
      local code = {PY_LGAMMA, string.format("X = x.astype(np.%s).astype(np.float64)",
                                             ft == "float" and "float32" or "float64"),
                    "out = ["}
      for _, name in ipairs(UNARY_NAMES) do
        code[#code + 1] = string.format("  (%s).astype(np.%s),", UNARY[name],
                                        ft == "float" and "float32" or "float64")
      end
      code[#code + 1] = "]"
      local refs = S.numpy(table.concat(code, "\n"), {x = {type = t, shape = {#vals}, data = vals}})
      for k, name in ipairs(UNARY_NAMES) do
        local y = x[name](x)
        assert.equal(ft, y.type, name)
        close(y:get():totable(), refs[k].data, tol, t .. " " .. name)
      end
    end
  end)

  it("round, trunc and sign keep every type; round takes halves away from zero", function()
    if not S.need_numpy(assert, pending) then return end
    for _, t in ipairs(S.TYPES) do
      if t ~= "double" or fp64 then
        local vals = (t == "float" or t == "double") and float_values(200) or int_values(t, 200)
        if t == "float" or t == "double" then
          for _, v in ipairs{0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, 2.0^52 + 1, 1e30} do
            vals[#vals + 1] = v
          end
        end
        local x = tensor(t, {#vals}, vals)
        local refs = S.numpy([[
if x.dtype.kind == 'f':
    X = x.astype(np.float64)
    half = np.abs(X - np.trunc(X)) >= 0.5
    out = [np.where(half, np.trunc(X) + np.sign(X), np.trunc(X)).astype(x.dtype),
           np.trunc(x), np.sign(x)]
else:
    out = [x, x, np.sign(x)]
]], {x = {type = t == "ulong" and "long" or t, shape = {#vals}, data = vals}})
        if t == "ulong" then
          -- (NumPy read the words as longs: sign is 0 or 1 for ulong)
          for i, v in ipairs(refs[3].data) do refs[3].data[i] = v ~= 0 and 1 or 0 end
        end
        for k, name in ipairs{"round", "trunc", "sign"} do
          local y = x[name](x)
          assert.equal(t, y.type, name)
          close(y:get():totable(), refs[k].data, 0, t .. " " .. name)
        end
      end
    end
    -- NaN stays NaN, and both zeros' sign is +0.0
    local s = dev:tensor("float", {3}, {0 / 0, -0.0, 0.0}):sign():totable()
    assert.is_true(s[1] ~= s[1])
    assert.equal(math.huge, 1 / s[2])
    assert.same({1, 2, 3, -1, -2, -3, 0, 0},
                dev:tensor("float", {8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.4, -0.4})
                  :round():astype("int"):totable())
    assert.same({0, 1, 1}, dev:tensor("uint", {3}, {0, 7, 4294967295}):sign():totable())
  end)

  it("isnan, isinf and isfinite give uchar masks; integers are always finite", function()
    if not S.need_numpy(assert, pending) then return end
    for _, t in ipairs{"float", "double", "int", "uchar", "long"} do
      if t ~= "double" or fp64 then
        local vals = (t == "float" or t == "double") and float_values(200) or int_values(t, 50)
        local x = tensor(t, {#vals}, vals)
        local refs = S.numpy("out = [np.isnan(x), np.isinf(x), np.isfinite(x)]",
                             {x = {type = t, shape = {#vals}, data = vals}})
        for k, name in ipairs{"isnan", "isinf", "isfinite"} do
          local y = x[name](x)
          assert.equal("uchar", y.type)
          assert.same(refs[k].data, y:get():totable(), t .. " " .. name)
        end
      end
    end
  end)

  it("atan2, hypot and fmod with broadcasting and numbers on either side", function()
    if not S.need_numpy(assert, pending) then return end
    local types = {{"float", 2e-5}, {"int", 2e-5}}
    if fp64 then types[#types + 1] = {"double", 1e-12} end
    for _, tt in ipairs(types) do
      local t, tol = tt[1], tt[2]
      local float = t ~= "int"
      local va = float and float_values(4 * 5) or int_values("short", 20)
      local vb = float and float_values(5) or int_values("char", 5)
      if not float then vb[1] = 0; vb[2] = -1; va[1] = -7; va[2] = 7 end
      local a, b = dev:tensor(t, {4, 5}, va), dev:tensor(t, {5}, vb)
      local ft = t == "double" and "float64" or "float32"
      local refs = S.numpy(string.format([[
A, B = a.astype(np.%s).astype(np.float64), b.astype(np.%s).astype(np.float64)
def fm(p, q):
    if p.dtype.kind == 'f': return np.fmod(p, q)
    return np.where(q == 0, 0, np.fmod(p, np.where(q == 0, 1, q))).astype(p.dtype)
out = [np.arctan2(A, B).astype(np.%s), np.hypot(A, B).astype(np.%s), fm(a, b),
       np.arctan2(A, 0.5).astype(np.%s), np.arctan2(-2.0, B).astype(np.%s),
       fm(a, np.array(3, dtype=a.dtype)), fm(np.array(-7, dtype=b.dtype), b)]
]], ft, ft, ft, ft, ft, ft), {a = {type = t, shape = {4, 5}, data = va},
                              b = {type = t, shape = {5}, data = vb}})
      local rt = float and t or "float"
      local got = {a:atan2(b), a:hypot(b), a:fmod(b), a:atan2(0.5), b:arctan2(-2.0), a:fmod(3)}
      for k, y in ipairs(got) do
        assert.equal((k == 3 or k == 6) and t or rt, y.type)
        local ref = refs[k]
        if k == 5 then   -- NumPy's arctan2(-2, b): luagpu's b:atan2(-2) is atan2(b, -2)
          ref = S.numpy(string.format("out = np.arctan2(b.astype(np.%s).astype(np.float64), " ..
                                      "-2.0).astype(np.%s)", ft, ft),
                        {b = {type = t, shape = {5}, data = vb}})
        end
        assert.same(ref.shape, y.shape)
        close(y:get():totable(), ref.data, (k == 3 or k == 6) and 0 or tol, t .. " op " .. k)
      end
      -- a number first: the metamethod's order, through the method of the ops table
      local E = require("luagpu.tensor.elementwise")
      close(E.ops.fmod(-7, b):get():totable(), refs[7].data, 0, t .. " -7 fmod b")
    end
    -- C's fmod takes the dividend's sign, Lua's % the divisor's; integers by 0 or -1 give 0
    local a = dev:tensor("int", {6}, {7, -7, 7, -7, -2147483648, 5})
    local b = dev:tensor("int", {6}, {3, 3, -3, -3, -1, 0})
    assert.same({1, -1, 1, -1, 0, 0}, a:fmod(b):totable())
    assert.same({1, 2, -2, -1, 0, 0}, (a % b):totable())
    -- floats: NumPy's % and // over zeros, infinities, NaN and quotients
    -- that round up to an integer (1 // 0.1 is 9, not floor(1 / 0.1) = 10),
    -- the sign of a zero result included (%: the divisor's, 0.0 % -3 is
    -- -0.0); random pairs too
    local vals = {0.0, -0.0, 6.0, -6.0, 1.5, -1.5, 1 / 0, -1 / 0, 0 / 0, 1, 0.1, -0.1, 0.3,
                  2^63, -2^63, 1e30, -1e-30}
    local xs, ys = {}, {}
    for _, u in ipairs(vals) do
      for _, v in ipairs(vals) do xs[#xs + 1] = u; ys[#ys + 1] = v end
    end
    for _ = 1, 200 do
      xs[#xs + 1] = (math.random() - 0.5) * 10 ^ math.random(-3, 3)
      ys[#ys + 1] = (math.random() - 0.5) * 10 ^ math.random(-3, 3)
    end
    for _, t in ipairs(dev.fp64 and {"float", "double"} or {"float"}) do
      local x, y = dev:tensor(t, {#xs}, xs), dev:tensor(t, {#ys}, ys)
      local np_t = t == "float" and "float32" or "float64"
      for _, op in ipairs{{"%", "remainder", x % y}, {"//", "floor_divide", x // y}} do
        local ref = S.numpy(string.format("out = np.%s(x.astype(np.%s), y.astype(np.%s))",
                                          op[2], np_t, np_t),
                            {x = {type = t, shape = {#xs}, data = xs},
                             y = {type = t, shape = {#ys}, data = ys}})
        local got = op[3]:get():totable()
        for i = 1, #xs do
          local w, g = ref.data[i], got[i]
          local same = (w ~= w and g ~= g) or (w == g and (w ~= 0 or 1 / w == 1 / g))
          assert(same, string.format("%s: %.17g %s %.17g is %.17g, NumPy %.17g", t, xs[i], op[1],
                                     ys[i], g, w))
        end
      end
    end
  end)

  -- Lua references of the shifts (type t of BITS[t], a and n Lua integers):
  -- counts past the width give 0 (>> of a negative signed value: -1), a
  -- negative count shifts the other way.
  local shr
  local function shl(t, a, n)
    local bits = BITS[t]
    if n < 0 then return shr(t, a, n <= -bits and bits or -n) end
    if n >= bits then return 0 end
    return S.as(t, a << n)
  end
  function shr(t, a, n)
    local bits = BITS[t]
    if n < 0 then return shl(t, a, n <= -bits and bits or -n) end
    local neg = SIGNED[t] and a < 0
    if n >= bits then return neg and -1 or 0 end
    if bits < 64 and not SIGNED[t] then a = a & ((1 << bits) - 1) end
    local r = a >> n
    if neg and n > 0 then r = r | ~(-1 >> n) end
    return S.as(t, r)
  end

  it("& | ~ and ~x over every integer type equal NumPy's, numbers either side", function()
    if not S.need_numpy(assert, pending) then return end
    for _, t in ipairs(S.INTS) do
      local va, vb = int_values(t, 3 * 40), int_values(t, 40)
      local a, b = tensor(t, {3, 40}, va), tensor(t, {40}, vb)
      local k = int_values(t, 1)[1]
      if t == "ulong" and k < 0 then k = 5 end
      local nt = t == "ulong" and "long" or t       -- (NumPy sees ulong words as longs)
      local refs = S.numpy(string.format([[
k = np.array(%d).astype(a.dtype)
out = [a & b, a | b, a ^ b, ~a, a & k, k | b, k ^ a]
]], k), {a = {type = nt, shape = {3, 40}, data = va}, b = {type = nt, shape = {40}, data = vb}})
      local got = {a & b, a | b, a ~ b, ~a, a & k, k | b, k ~ a}
      for j, y in ipairs(got) do
        assert.equal(t, y.type)
        assert.same(refs[j].shape, y.shape)
        assert.same(refs[j].data, y:get():totable(), t .. " op " .. j)
      end
      -- the methods are the operators
      assert.same(got[1]:get():totable(), a:bitwise_and(b):get():totable())
      assert.same(got[2]:get():totable(), a:bitwise_or(b):get():totable())
      assert.same(got[3]:get():totable(), a:bitwise_xor(b):get():totable())
      assert.same(got[4]:get():totable(), a:bitwise_not():get():totable())
      assert.same(got[4]:get():totable(), a:invert():get():totable())
    end
    -- mixed types promote by the table: uchar & char is short; uint | int is long
    local u = dev:tensor("uchar", {2}, {0xF0, 0x0F})
    local c = dev:tensor("char", {2}, {-1, -128})
    assert.equal("short", (u & c).type)
    assert.same({0xF0, 0}, (u & c):totable())
    local ui = dev:tensor("uint", {1}, {4294967295})
    assert.equal("long", (ui | dev:tensor("int", {1}, {-1})).type)
    assert.same({-1}, (ui | dev:tensor("int", {1}, {-1})):totable())
    -- integral floats count as integers, as Lua's own operators take them
    assert.same({0x00, 0x0F}, (u & 15.0):totable())
  end)

  it("<< and >> are defined for every count: past the width, negative, the limits", function()
    if not S.need_numpy(assert, pending) then return end
    for _, t in ipairs(S.INTS) do
      local bits = BITS[t]
      local va = int_values(t, 64)
      local a = tensor(t, {64}, va)
      -- tensor counts: NumPy's shifts for 0 .. bits + 2 (past the width: 0, or -1)
      local counts = {}
      for i = 1, 64 do counts[i] = (i - 1) % (bits + 3) end
      local n = tensor(t, {64}, counts)
      local nt = t == "ulong" and "long" or t
      local refs = S.numpy([[
if a.dtype.kind == 'i' and a.dtype.itemsize == 8 and ulong: a, n = a.astype(np.uint64), n.astype(np.uint64)
out = [np.left_shift(a, n), np.right_shift(a, n)]
]], {a = {type = nt, shape = {64}, data = va}, n = {type = nt, shape = {64}, data = counts},
     ulong = {type = "uchar", shape = {}, data = {t == "ulong" and 1 or 0}}})
      assert.same(refs[1].data, (a << n):get():totable(), t .. " <<")
      assert.same(refs[2].data, (a >> n):get():totable(), t .. " >>")
      assert.same(refs[1].data, a:lshift(n):get():totable())
      assert.same(refs[2].data, a:right_shift(n):get():totable())
      -- counts of signed tensors may be negative: the other way (Lua's rule)
      if SIGNED[t] then
        local neg = {}
        for i = 1, 64 do neg[i] = ((i - 1) % (2 * bits + 5)) - bits - 2 end
        local m = tensor(t, {64}, neg)
        local l, r = (a << m):get():totable(), (a >> m):get():totable()
        for i = 1, 64 do
          assert.equal(shl(t, va[i], neg[i]), l[i], string.format("%s %d << %d", t, va[i], neg[i]))
          assert.equal(shr(t, va[i], neg[i]), r[i], string.format("%s %d >> %d", t, va[i], neg[i]))
        end
      end
      -- number counts: any Lua integer, none needs to fit the type
      for _, c in ipairs{0, 1, bits - 1, bits, bits + 1, 1000, -1, -(bits - 1), -bits,
                         -bits - 1, math.maxinteger, math.mininteger} do
        local l, r = (a << c):get():totable(), (a >> c):get():totable()
        assert.equal(t, (a << c).type)
        for i = 1, 64 do
          assert.equal(shl(t, va[i], c), l[i], string.format("%s %d << %d", t, va[i], c))
          assert.equal(shr(t, va[i], c), r[i], string.format("%s %d >> %d", t, va[i], c))
        end
      end
      -- a number shifted by a tensor
      local one = (1 << n):get():totable()
      for i = 1, 64 do assert.equal(shl(t, 1, counts[i]), one[i]) end
    end
    assert.same({-64, 0, 63}, (dev:tensor("char", {3}, {-128, 0, 127}) >> 1):totable())
    assert.same({0, 4}, (dev:tensor("uchar", {2}, {128, 2}) << 1):totable())
    assert.same({-9223372036854775807 - 1},
                (dev:tensor("long", {1}, {1}) << 63):totable())
  end)

  it("logical_and, logical_or and logical_not give uchar masks (NaN is true)", function()
    if not S.need_numpy(assert, pending) then return end
    local va, vb = float_values(60), int_values("int", 6)
    for i = 1, 6, 2 do vb[i] = 0 end
    local a, b = dev:tensor("float", {10, 6}, va), dev:tensor("int", {6}, vb)
    local refs = S.numpy([[
out = [np.logical_and(a, b), np.logical_or(a, b), np.logical_not(a), np.logical_not(b),
       np.logical_and(a, 0.0), np.logical_or(b, 2)]
]], {a = {type = "float", shape = {10, 6}, data = va}, b = {type = "int", shape = {6}, data = vb}})
    local got = {a:logical_and(b), a:logical_or(b), a:logical_not(), b:logical_not(),
                 a:logical_and(0.0), b:logical_or(2)}
    for k, y in ipairs(got) do
      assert.equal("uchar", y.type)
      assert.same(refs[k].shape, y.shape)
      assert.same(refs[k].data, y:get():totable(), "op " .. k)
    end
  end)

  it("joins expressions: a chain of new ops is one kernel, on views too", function()
    local x = dev:tensor("int", {4, 5}, int_values("short", 20))
    local y = dev:tensor("float", {5}, {0.5, -2.25, 0 / 0, 3.0, -7.5})
    local function chain(k)
      return (((x & k) << 2):bitwise_xor(x:t():t()) + y:hypot(k):trunc():astype("int"))
        :sign():logical_or(y:isnan())
    end
    chain(3):eval()
    local built = codegen.kernels_built
    local z = chain(5)
    assert.is_false(rawget(z, "_expr") == false)    -- lazy
    z:eval()
    assert.equal(built, codegen.kernels_built)      -- the same structure: its kernel again
    local xv, yv = x:get():totable(), y:get():totable()
    local got = z:get():totable()
    for i = 1, 4 do
      for j = 1, 5 do
        local v = xv[(i - 1) * 5 + j]
        local h = math.sqrt(yv[j] ^ 2 + 25)
        local s = ((v & 5) << 2) ~ v
        s = S.as("int", s + (h == h and math.tointeger(h >= 0 and math.floor(h) or math.ceil(h))
                             or 0))
        local want = (s ~= 0 or yv[j] ~= yv[j]) and 1 or 0
        assert.equal(want, got[(i - 1) * 5 + j])
      end
    end
    -- through a transposed view (the nd kernel)
    local tv = x:t()
    S.check(assert, tv & 1, S.map(S.of(tv), function(v) return v & 1 end))
    S.check(assert, tv:isfinite(), S.map(S.of(tv), function() return 1 end))
  end)

  it("aliases are the same functions", function()
    local x = dev:tensor("float", {1})
    for alias, name in pairs{arcsin = "asin", arccos = "acos", arctan = "atan",
                             arcsinh = "asinh", arccosh = "acosh", arctanh = "atanh",
                             arctan2 = "atan2", fix = "trunc", invert = "bitwise_not",
                             bitwise_invert = "bitwise_not", left_shift = "lshift",
                             right_shift = "rshift", bitwise_left_shift = "lshift",
                             bitwise_right_shift = "rshift"} do
      assert.equal(x[name], x[alias], alias)
    end
  end)

  it("raises at the caller's line on floats, non-integers and non-operands", function()
    local f, i = dev:tensor("float", {2}), dev:tensor("int", {2})
    local e = errmsg(function() return f & 1 end)
    assert.matches("^spec/tensor_math_spec%.lua:%d+: ", e)
    assert.matches("luagpu: tensor:bitwise_and: expected integer operands (char .. ulong " ..
                   "tensors or integers), got float and integer", e, 1, true)
    has_error("luagpu: tensor:bitwise_or: expected integer operands (char .. ulong tensors " ..
              "or integers), got int and double", function() return i | f:astype("double") end)
    has_error("luagpu: tensor:lshift: expected integer operands (char .. ulong tensors or " ..
              "integers), got integer and float", function() return 1 << f end)
    has_error("luagpu: tensor:bitwise_not: expected an integer tensor (char .. ulong), got " ..
              "float", function() return ~f end)
    has_error("luagpu: tensor:bitwise_xor: argument #2: 1.5 has no integer representation",
              function() return i ~ 1.5 end)
    has_error("luagpu: tensor:rshift: argument #1: nan has no integer representation",
              function() return (0 / 0) >> i end)
    has_error("luagpu: tensor:bitwise_and: argument #2: expected a tensor or a number, got nil",
              function() return i & nil end)
    has_error("luagpu: tensor:bitwise_and: argument #2: 300 does not fit uchar (0 to 255)",
              function() return dev:tensor("uchar", {2}) & 300 end)
    has_error("luagpu: tensor:lshift: argument #1: -1 does not fit uint (0 to 4294967295)",
              function() return -1 << dev:tensor("uint", {2}) end)
    has_error("luagpu: tensor:atan2: argument #2: expected a tensor or a number, got string",
              function() return f:atan2("x") end)
    has_error("luagpu: tensor:fmod: shapes {2} and {3} do not broadcast (dim 1: 2 vs 3)",
              function() return f:fmod(dev:tensor("float", {3})) end)
    has_error("luagpu: tensor:tan: self: expected a tensor, got number (call " ..
              "methods with a colon: x:tan(...))",
              function() return f.tan(3) end)
    has_error("luagpu: tensor:isnan: self: expected a tensor, got nil (call " ..
              "methods with a colon: x:isnan(...))", f.isnan)
    has_error("luagpu: tensor:logical_and: argument #2: expected a tensor or a number, got table",
              function() return f:logical_and({}) end)
    local r = dev:tensor("int", {1})
    r:release()
    has_error("luagpu: tensor:bitwise_and: attempt to use a released tensor",
              function() return r & 1 end)
    has_error("luagpu: tensor:erf: attempt to use a released tensor", function() return r:erf() end)
    -- a released operand past self's place is named (x + r said only "attempt to use ...")
    local x = dev:tensor("int", {1})
    for _, c in ipairs{{"tensor:add", function() return x + r end}, {"tensor:add", function() return 1 + r end},
                       {"tensor:bitwise_and", function() return x & r end},
                       {"tensor:atan2", function() return x:atan2(r) end}} do
      has_error("luagpu: " .. c[1] .. ": argument #2: attempt to use a released tensor", c[2])
    end
    for i, args in ipairs{{x, r, 0}, {x, 0, r}} do
      has_error("luagpu: gpu.where: argument #" .. i + 1 .. ": attempt to use a released tensor",
                gpu.where, table.unpack(args))
    end
  end)
end)
