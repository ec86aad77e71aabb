-- luagpu.tensor.ops: the elementwise ops, each once (internal to
-- luagpu.tensor). The Tensor methods and operators (luagpu.tensor.
-- elementwise) and the code generator (luagpu.tensor.codegen) are both
-- derived from ROWS: adding an op is one row.
--
--   OPS.list          the rows in order
--   OPS.by_name[name] the row of op name: {name =, arity =, rule =, meta =,
--                     method =, c =, floating = whether it computes in the
--                     floating type of the operands' type, result = its
--                     result type when fixed (else the compute type),
--                     integers = whether it takes integer operands only,
--                     aliases = more method names (a list)}
--   OPS.emit(row, t, args, need, node)   the C of the op over the C
--                     expressions args (each of compute type t); need
--                     collects helper functions by name
--   OPS.convert(a, from, to)             the C of expression a as type to
--
-- Result-type rules (docs/API.md, "Type promotion"): the operands' types
-- promote to the compute type ct (luagpu.core.types.promote); then
--   promote   computes in ct and gives ct
--   floating  computes in the floating type of ct (/, ^, sqrt...) and gives it
--   compare   computes in ct and gives uchar (0 or 1): comparisons, isnan,
--             isinf, isfinite, logical_and/or/not
--   where     where(mask, a, b): a and b promote; the mask is read as is
--   cast      x:astype(t): no compute type, gives t
-- Generated C never relies on undefined behaviour: signed + - * are
-- computed in the unsigned type of core/types WRAP and cast back; narrow
-- types promoted by ?: are cast back; floats convert to integers
-- saturating (NaN gives 0).

local TY = require "luagpu.core.types"

local type, format, unpack, ipairs = type, string.format, table.unpack, ipairs
local FLOATS, SIGNED, UNSIGNED_OF, WRAP = TY.FLOATS, TY.SIGNED, TY.UNSIGNED_OF, TY.WRAP

local OPS = {}

------------------------------------------------------------------ C helpers

-- a op b (both of type t) for op + - *, wrapping for integers.
local function arith(op)
  return function(t, a)
    local u = WRAP[t]
    if not u then return format("((%s)(%s %s %s))", t, a[1], op, a[2]) end
    return format("((%s)((%s)(%s) %s (%s)(%s)))", t, u, a[1], op, u, a[2])
  end
end

-- Lua's % of t (the result takes the divisor's sign; x % 0 is 0 for
-- integers, x % -1 too).
local function mod_helper(t)
  if FLOATS[t] then
    -- (a zero takes the divisor's sign too, as NumPy's %: 0.0 % -3 is -0.0)
    return format("inline %s lg_mod_%s(%s a, %s b) { %s r = fmod(a, b); " ..
                  "if (r == 0) return copysign((%s)0, b); " ..
                  "return ((r < 0) != (b < 0)) ? r + b : r; }", t, t, t, t, t, t)
  elseif SIGNED[t] then
    return format("inline %s lg_mod_%s(%s a, %s b) { if (b == 0 || b == -1) return 0; " ..
                  "%s r = a %% b; return (r != 0 && ((r < 0) != (b < 0))) ? (%s)(r + b) : r; }",
                  t, t, t, t, t, t)
  end
  return format("inline %s lg_mod_%s(%s a, %s b) { return b == 0 ? 0 : (%s)(a %% b); }",
                t, t, t, t, t)
end

-- // of t: floor division (x // 0 is 0 for integers, the negation of
-- x // -1 wraps). Floats divide as NumPy's floor_divide (and Python's,
-- PyTorch's): (a - fmod(a, b)) / b, one less where the remainder's sign
-- is not b's, so that (a // b) * b + a % b is a; not floor(a / b), which
-- rounds 1 / 0.1 up to 10 first (NumPy: 1 // 0.1 is 9). b == 0: a / b.
local function idiv_helper(t)
  if FLOATS[t] then
    return format("inline %s lg_idiv_%s(%s a, %s b) { if (b == 0) return a / b; " ..
                  "%s m = fmod(a, b), d = (a - m) / b; " ..
                  "if (m != 0 && ((b < 0) != (m < 0))) d -= 1; " ..
                  "if (d == 0) return copysign((%s)0, a / b); " ..
                  "%s f = floor(d); return d - f > 0.5 ? f + 1 : f; }",
                  t, t, t, t, t, t, t)
  elseif SIGNED[t] then
    return format("inline %s lg_idiv_%s(%s a, %s b) { if (b == 0) return 0; " ..
                  "if (b == -1) return (%s)(0 - (%s)a); %s q = a / b; " ..
                  "return (q * b != a && ((a < 0) != (b < 0))) ? (%s)(q - 1) : q; }",
                  t, t, t, t, t, UNSIGNED_OF[t], t, t)
  end
  return format("inline %s lg_idiv_%s(%s a, %s b) { return b == 0 ? 0 : (%s)(a / b); }",
                t, t, t, t, t)
end

-- The op calling helper lg_NAME_t (made by make(t)).
local function helper_call(name, make)
  return function(t, a, need)
    need[name .. "_" .. t] = make(t)
    return format("lg_%s_%s(%s, %s)", name, t, a[1], a[2])
  end
end

-- fmin/fmax for floats (NaN loses), min/max for integers.
local function extreme(name)
  return function(t, a)
    return format("%s(%s, %s)", FLOATS[t] and "f" .. name or name, a[1], a[2])
  end
end

-- a (of type from) as type to: C casts, but floats to integers saturate
-- (NaN gives 0).
local function convert(a, from, to)
  if from == to then return a end
  if FLOATS[from] and not FLOATS[to] then return format("convert_%s_sat_rtz(%s)", to, a) end
  return format("((%s)(%s))", to, a)
end
OPS.convert = convert

local function neg(t, a)
  if FLOATS[t] then return format("(-%s)", a[1]) end
  return format("((%s)(0 - (%s)(%s)))", t, WRAP[t], a[1])
end

local function abs(t, a)
  a = a[1]
  if FLOATS[t] then return format("fabs(%s)", a) end
  if SIGNED[t] then
    local u = WRAP[t]
    return format("((%s)(%s < 0 ? 0 - (%s)(%s) : (%s)(%s)))", t, a, u, a, u, a)
  end
  return a
end

-- floor and ceil of integers are the integers.
local function rounding(name)
  return function(t, a) return FLOATS[t] and format("%s(%s)", name, a[1]) or a[1] end
end

-- The unary op calling helper lg_NAME_t (made by make(t)).
local function helper_call1(name, make)
  return function(t, a, need)
    need[name .. "_" .. t] = make(t)
    return format("lg_%s_%s(%s)", name, t, a[1])
  end
end

-- NumPy's sign: -1, 0 or 1 in t; floats give +0.0 for both zeros and NaN
-- for NaN; unsigned types 0 or 1.
local function sign_helper(t)
  if FLOATS[t] then
    return format("inline %s lg_sign_%s(%s a) { return a > 0 ? (%s)1 : a < 0 ? (%s)-1 : " ..
                  "a == 0 ? (%s)0 : a; }", t, t, t, t, t, t)
  elseif SIGNED[t] then
    return format("inline %s lg_sign_%s(%s a) { return (%s)((a > 0) - (a < 0)); }", t, t, t, t)
  end
  return format("inline %s lg_sign_%s(%s a) { return (%s)(a != 0); }", t, t, t, t)
end

-- C's fmod of t (the result takes the dividend's sign); for integers C's
-- %, with x fmod 0 and x fmod -1 giving 0 (no trap, no overflow).
local function fmod_helper(t)
  if FLOATS[t] then
    return format("inline %s lg_fmod_%s(%s a, %s b) { return fmod(a, b); }", t, t, t, t)
  elseif SIGNED[t] then
    return format("inline %s lg_fmod_%s(%s a, %s b) { return (b == 0 || b == -1) ? (%s)0 " ..
                  ": (%s)(a %% b); }", t, t, t, t, t, t)
  end
  return format("inline %s lg_fmod_%s(%s a, %s b) { return b == 0 ? (%s)0 : (%s)(a %% b); }",
                t, t, t, t, t, t)
end

-- Shifts of integer type t by a count of t, defined for every count (C
-- leaves counts outside 0 .. bits - 1 undefined, OpenCL C masks them): a
-- count of bits or more gives 0 (>> of a negative signed value: -1); a
-- negative count shifts the other way, as Lua's shifts do. << computes in
-- the unsigned type (no signed overflow); >> of a signed type fills with
-- the sign, written as ~(~a >> n) so that no negative value is shifted.
local function shift_helper(dir)
  return function(t)
    local bits, u = TY.SIZES[t] * 8, WRAP[t]
    local left = format("(%s)((%s)a << %%s)", t, u)
    local right = SIGNED[t] and format("(%s)(a < 0 ? ~(~a >> %%s) : a >> %%s)", t)
                  or format("(%s)(a >> %%s)", t)
    local fill = SIGNED[t] and format("(%s)(a < 0 ? -1 : 0)", t) or format("(%s)0", t)
    local zero = format("(%s)0", t)
    local fwd, fwd_over = left:format("b"), zero
    if dir == "r" then fwd, fwd_over = right:format("b", "b"), fill end
    local head = format("inline %s lg_%sshift_%s(%s a, %s b) { ", t, dir, t, t, t)
    if not SIGNED[t] then
      return head .. format("return b >= %d ? %s : %s; }", bits, fwd_over, fwd)
    end
    -- a negative count: the other way, by 0 - b (b > -bits: no overflow)
    local back, back_over = right:format("(0 - b)", "(0 - b)"), fill
    if dir == "r" then back, back_over = left:format("(0 - b)"), zero end
    return head .. format("if (b >= 0) return b >= %d ? %s : %s; " ..
                          "return b <= -%d ? %s : %s; }", bits, fwd_over, fwd, bits, back_over,
                          back)
  end
end

-- a op b (or op a) of integer type t: narrow types promoted by C are cast
-- back.
local function bitwise(op)
  return function(t, a)
    if a[2] == nil then return format("((%s)%s(%s))", t, op, a[1]) end
    return format("((%s)(%s %s %s))", t, a[1], op, a[2])
  end
end

-- Masks of floats: isnan, isinf, isfinite; integers are never NaN or inf.
local function float_test(name, int_value)
  return function(t, a)
    if not FLOATS[t] then return format("((uchar)%d)", int_value) end
    return format("((uchar)(%s(%s) ? 1 : 0))", name, a[1])
  end
end

------------------------------------------------------------------ the table

-- name, arity, rule, the C (a format of the operands' C expressions, or a
-- function(t, args, need, node)); meta: the metamethod that is the op too;
-- method = false: no Tensor method of the op's name (min and max are the
-- reductions' names, where is gpu.where, cast is x:astype); integers =
-- true: integer operands only (bitwise ops; integral Lua floats count as
-- integers, as Lua's own bitwise operators take them); aliases: more
-- method names of the op (NumPy's and PyTorch's).
local ROWS = {
  {"add",  2, "promote",  arith("+"), meta = "__add"},
  {"sub",  2, "promote",  arith("-"), meta = "__sub"},
  {"mul",  2, "promote",  arith("*"), meta = "__mul"},
  {"div",  2, "floating", "(%s / %s)", meta = "__div"},
  {"mod",  2, "promote",  helper_call("mod", mod_helper), meta = "__mod"},
  {"pow",  2, "floating", "pow(%s, %s)", meta = "__pow"},
  {"idiv", 2, "promote",  helper_call("idiv", idiv_helper), meta = "__idiv"},
  {"min",  2, "promote",  extreme("min"), method = false},
  {"max",  2, "promote",  extreme("max"), method = false},
  {"lt",   2, "compare",  "((uchar)(%s < %s))"},
  {"le",   2, "compare",  "((uchar)(%s <= %s))"},
  {"gt",   2, "compare",  "((uchar)(%s > %s))"},
  {"ge",   2, "compare",  "((uchar)(%s >= %s))"},
  {"eq",   2, "compare",  "((uchar)(%s == %s))"},
  {"ne",   2, "compare",  "((uchar)(%s != %s))"},
  {"neg",  1, "promote",  neg, meta = "__unm"},
  {"abs",  1, "promote",  abs},
  {"floor", 1, "promote", rounding("floor")},
  {"ceil", 1, "promote",  rounding("ceil")},
  {"sqrt", 1, "floating", "sqrt(%s)"},
  {"exp",  1, "floating", "exp(%s)"},
  {"log",  1, "floating", "log(%s)"},
  {"sin",  1, "floating", "sin(%s)"},
  {"cos",  1, "floating", "cos(%s)"},
  {"tanh", 1, "floating", "tanh(%s)"},
  {"tan",   1, "floating", "tan(%s)"},
  {"asin",  1, "floating", "asin(%s)", aliases = {"arcsin"}},
  {"acos",  1, "floating", "acos(%s)", aliases = {"arccos"}},
  {"atan",  1, "floating", "atan(%s)", aliases = {"arctan"}},
  {"sinh",  1, "floating", "sinh(%s)"},
  {"cosh",  1, "floating", "cosh(%s)"},
  {"asinh", 1, "floating", "asinh(%s)", aliases = {"arcsinh"}},
  {"acosh", 1, "floating", "acosh(%s)", aliases = {"arccosh"}},
  {"atanh", 1, "floating", "atanh(%s)", aliases = {"arctanh"}},
  {"log2",  1, "floating", "log2(%s)"},
  {"log10", 1, "floating", "log10(%s)"},
  {"log1p", 1, "floating", "log1p(%s)"},
  {"exp2",  1, "floating", "exp2(%s)"},
  {"expm1", 1, "floating", "expm1(%s)"},
  {"rsqrt", 1, "floating", "rsqrt(%s)"},
  {"erf",   1, "floating", "erf(%s)"},
  {"erfc",  1, "floating", "erfc(%s)"},
  {"lgamma", 1, "floating", "lgamma(%s)"},
  -- C's round: halves away from zero (NumPy's rounds them to even)
  {"round", 1, "promote",  rounding("round")},
  {"trunc", 1, "promote",  rounding("trunc"), aliases = {"fix"}},
  {"sign",  1, "promote",  helper_call1("sign", sign_helper)},
  {"atan2", 2, "floating", "atan2(%s, %s)", aliases = {"arctan2"}},
  {"hypot", 2, "floating", "hypot(%s, %s)"},
  {"fmod",  2, "promote",  helper_call("fmod", fmod_helper)},
  {"isnan", 1, "compare",  float_test("isnan", 0)},
  {"isinf", 1, "compare",  float_test("isinf", 0)},
  {"isfinite", 1, "compare", float_test("isfinite", 1)},
  {"bitwise_and", 2, "promote", bitwise("&"), meta = "__band", integers = true},
  {"bitwise_or",  2, "promote", bitwise("|"), meta = "__bor", integers = true},
  {"bitwise_xor", 2, "promote", bitwise("^"), meta = "__bxor", integers = true},
  {"bitwise_not", 1, "promote", bitwise("~"), meta = "__bnot", integers = true,
   aliases = {"invert", "bitwise_invert"}},
  {"lshift", 2, "promote", helper_call("lshift", shift_helper("l")), meta = "__shl",
   integers = true, aliases = {"left_shift", "bitwise_left_shift"}},
  {"rshift", 2, "promote", helper_call("rshift", shift_helper("r")), meta = "__shr",
   integers = true, aliases = {"right_shift", "bitwise_right_shift"}},
  {"logical_and", 2, "compare", "((uchar)((%s) != 0 && (%s) != 0))"},
  {"logical_or",  2, "compare", "((uchar)((%s) != 0 || (%s) != 0))"},
  {"logical_not", 1, "compare", "((uchar)((%s) == 0))"},
  -- ?: promotes char and short to int: cast back
  {"where", 3, "where", function(t, a) return format("((%s)((%s) != 0 ? %s : %s))", t, a[1], a[2], a[3]) end,
   method = false},
  {"cast", 1, "cast", function(_, a, _, e) return convert(a[1], e.args[1].type, e.type) end,
   method = false},
}

-- rule -> {computes in the floating type, fixed result type}
local RULES = {
  promote = {false, nil},
  floating = {true, nil},
  compare = {false, "uchar"},
  where = {false, nil},
  cast = {false, nil},
}

OPS.list, OPS.by_name = {}, {}
for i, r in ipairs(ROWS) do
  local rule = RULES[r[3]]
  local row = {name = r[1], arity = r[2], rule = r[3], c = r[4], meta = r.meta,
               method = r.method ~= false, floating = rule[1], result = rule[2],
               integers = r.integers or false, aliases = r.aliases or {}}
  OPS.list[i] = row
  OPS.by_name[row.name] = row
end

function OPS.emit(row, t, args, need, node)
  local c = row.c
  if type(c) == "string" then return format(c, unpack(args, 1, row.arity)) end
  return c(t, args, need, node)
end

return OPS
