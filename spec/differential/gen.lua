-- The Lua half of the differential test of tensors against NumPy
-- (spec/differential_spec.lua, `make fuzz-numpy`): draws random tensor
-- programs from a seed, runs each in luagpu and writes one JSON line per
-- program (what it does, its inputs, luagpu's results or error) for
-- spec/differential/check.py, which replays it in NumPy and compares.
--
-- A program is Lua source (run as it is, and printed as the reproducer of
-- a mismatch) plus a description of the same program for the checker.
-- Programs come in families: a family fixes what a generated kernel is
-- keyed on (the expression's operations, its element types, which leaves
-- are one tensor, whether a number is an integer or a float), and its
-- programs vary the rest (shapes with size-1 and size-0 dims, views, values,
-- numbers, dims), so a run builds few kernels: PoCL takes 0.1-1 s a build.
--
--   D.run{n =, seed =, families =, out = path [, device =] [, progress =]
--         [, times =] [, extra =]}
--     draws n programs from `families` families (default n / 6) and writes
--     them to path (progress: a line to stderr every 50; times: each
--     program's CPU seconds in its record; extra: the ops of issue 32 too:
--     tan .. lgamma, round, trunc, sign, masks, atan2, hypot, fmod, bitwise
--     and logical ops; ops: with extra, families of issue 32's indexing,
--     joining and statistics ops (OPS32): true (the default with extra)
--     every other family, false none, "only" every family; "paths": the
--     ways of the session of 2026-11-27 (OPSP: topk's, the one-sweep sort,
--     softmax's) in every family, and with true every other ops family
--     draws one); returns the number of programs and of errors raised

local D = {}

local format, concat = string.format, table.concat
local mtype = math.type

local TYPES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
               "double"}
local FLOATS = {float = true, double = true}
local SIGNED = {char = true, short = true, int = true, long = true}
local SIZE = {char = 1, uchar = 1, short = 2, ushort = 2, int = 4, uint = 4, long = 8,
              ulong = 8, float = 4, double = 8}
local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
               ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
               long = {math.mininteger, math.maxinteger}, ulong = {0, math.maxinteger}}

------------------------------------------------------------------ random

-- xorshift64*: the same programs from a seed on every machine, apart from
-- math.random (which busted and luagpu may use).
local state = 88172645463325252
local function seed(s) state = (s * 2654435761 + 88172645463325252) | 1 end
local function bits()
  state = state ~ (state >> 12)
  state = state ~ (state << 25)
  state = state ~ (state >> 27)
  return state * 2685821657736338717
end
local function int(lo, hi) return lo + ((bits() >> 1) % (hi - lo + 1)) end
local function chance(p) return ((bits() >> 11) / 2.0^53) < p end
local function pick(list) return list[int(1, #list)] end
local function uniform() return (bits() >> 11) / 2.0^53 end

------------------------------------------------------------------ types

-- docs/API.md's promotion table (only to draw programs that mostly make
-- sense: check.py derives every type on its own).
local SIGNED_OF = {[1] = "char", [2] = "short", [4] = "int", [8] = "long"}
local function promote(a, b)
  if a == b then return a end
  if a == "double" or b == "double" then return "double" end
  if a == "float" or b == "float" then return "float" end
  local sa, sb = SIGNED[a] or false, SIGNED[b] or false
  if sa == sb then return SIZE[a] >= SIZE[b] and a or b end
  local s, u = a, b
  if sb then s, u = b, a end
  if SIZE[s] > SIZE[u] then return s end
  return SIGNED_OF[SIZE[u] * 2] or "long"
end
local function floating(t)
  if FLOATS[t] then return t end
  return SIZE[t] == 8 and "double" or "float"
end

------------------------------------------------------------------ values

local function f32(v) return (string.unpack("f", string.pack("f", v))) end
local FMAX = {float = f32(3.4028234663852886e38), double = 1.7976931348623157e308}
local FTINY = {float = 2.0^-126, double = 2.0^-1022}

-- Values come in modes, drawn per input: small integers (many ties: sorts
-- must be stable), the type's limits, special floats (NaN, inf, -0.0),
-- random values over the type's range, or a mix.
local MODES = {"small", "small", "limits", "special", "random", "mixed", "mixed"}

-- One element of type t in mode.
local function value(t, mode)
  if mode == "mixed" then mode = pick{"small", "small", "small", "limits", "special", "random"} end
  if FLOATS[t] then
    local v
    if mode == "special" then
      v = pick{0.0, -0.0, 0.0, -0.0, 1.0 / 0, -1.0 / 0, 0 / 0, 0 / 0, 1.0, -1.0}
    elseif mode == "limits" then
      v = pick{FMAX[t], -FMAX[t], FTINY[t], -FTINY[t], 2.0^31 - 1, 2.0^63, -2.0^63, 2.0^64,
               1e-30, 2.0^24 + 1, 2.0^53 + 1, -0.0, 0.5, 2.0^32}
    elseif mode == "random" then
      v = (uniform() - 0.5) * 2.0^int(-8, 40)
    else
      v = int(-12, 12) / 4
    end
    return t == "float" and f32(v) or v
  end
  local r = RANGE[t]
  if mode == "limits" or mode == "special" then
    local v = pick{r[1], r[2], r[1] + 1, r[2] - 1, 0, 1, 2}
    if t == "ulong" and chance(0.5) then v = pick{-1, -2, math.mininteger} end  -- >= 2^63
    return v
  elseif mode == "random" then
    if SIZE[t] == 8 then return bits() end   -- ulongs from 2^63 up read negative
    return int(r[1], r[2])
  end
  local lo = r[1] < -3 and -3 or r[1]
  return int(lo, 3)
end

-- A Lua number for an operand of a node computing in ct: "int" or "float".
local function number(kind, ct)
  if kind == "float" then
    return pick{0.5, -0.0, 2.0^63, 1.0 / 0, -1.0 / 0, 0 / 0, 1e10, -2.5, 3.0, 2.0^31 - 1,
                0.1, 7.0, -1.0}
  end
  local r = RANGE[ct]
  local list = {int(-3, 9), int(-3, 9), math.maxinteger, math.mininteger, 2147483647,
                -2147483648, 0, 1, -1, 255}
  if r then
    list[#list + 1] = r[1]
    list[#list + 1] = r[2]
    if chance(0.9) then   -- mostly numbers that fit; the rest must raise
      local ok = {}
      for _, v in ipairs(list) do if v >= r[1] and v <= r[2] then ok[#ok + 1] = v end end
      list = ok
    end
  end
  return pick(list)
end

------------------------------------------------------------------ Lua text

local function lua_number(v)
  if mtype(v) == "integer" then
    if v == math.mininteger then return "math.mininteger" end
    return format("%d", v)
  end
  if v ~= v then   -- NaN of either sign (0/0's, or its negation)
    local function sign(x) return string.pack(">d", x):byte(1) >= 128 end
    return sign(v) == sign(0 / 0) and "(0/0)" or "(-(0/0))"
  end
  if v == 1 / 0 then return "math.huge" end
  if v == -1 / 0 then return "-math.huge" end
  if v == 0 and 1 / v < 0 then return "-0.0" end
  local s = format("%.17g", v)
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s
end

local function lua_list(t)
  local parts = {}
  for i, v in ipairs(t) do parts[i] = lua_number(v) end
  return "{" .. concat(parts, ", ") .. "}"
end

------------------------------------------------------------------ JSON

local function json(v)
  local tv = type(v)
  if tv == "number" then
    if mtype(v) == "integer" then return format("%d", v) end
    return '"' .. format("%a", v) .. '"'    -- floats as C99 hex: exact, with inf and nan
  elseif tv == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c) return format("\\u%04x", c:byte()) end) .. '"'
  elseif tv == "boolean" then
    return tostring(v)
  elseif tv == "nil" then
    return "null"
  end
  if v[1] ~= nil or next(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = json(v[i]) end
    return "[" .. concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = json(k) .. ":" .. json(v[k]) end
  return "{" .. concat(parts, ",") .. "}"
end
D.json = json

------------------------------------------------------------------ families

local UNARY = {"neg", "abs", "floor", "ceil"}
local FUNCS = {"sqrt", "exp", "log", "sin", "cos", "tanh"}
local ARITH = {"add", "sub", "mul", "div", "idiv", "mod", "pow"}
local CMP = {"lt", "le", "gt", "ge", "eq", "ne"}
local REDUCE = {"sum", "prod", "mean", "min", "max", "argmin", "argmax"}

-- The ops of issue 32 (D.run{extra = true}: spec/differential_spec.lua's
-- second run, `make fuzz-numpy EXTRA=1`): without extra, programs draw
-- none of them and no random number for them, so a seed's programs stay
-- those it drew before.
local EXTRA = false
local FUNCS2 = {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                "log2", "log10", "log1p", "exp2", "expm1", "rsqrt", "erf", "erfc", "lgamma"}
local ROUNDS = {"round", "trunc", "sign"}
local MASKS = {"isnan", "isinf", "isfinite", "logical_not"}
local BINARY2 = {"atan2", "hypot", "fmod"}
local BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift"}
local INTS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong"}

-- A random expression template over the family's leaf slots; returns the
-- node, its type. Nodes: {op = "leaf", slot =}, {op = "num", kind =},
-- {op = name, args = {...}} (+ t for astype).
local function template(fam, depth)
  local function leaf()
    if #fam.slots > 0 and chance(0.35) then  -- the same tensor again
      local s = pick(fam.slots)
      return {op = "leaf", slot = s.id}, s.t
    end
    local t = pick(fam.types)
    local s = {id = #fam.slots + 1, t = t, arange = chance(0.06), ones = {},
               drop = chance(0.3) and int(0, fam.nd) or 0}
    for i = 1, fam.nd do s.ones[i] = chance(0.2) end
    fam.slots[#fam.slots + 1] = s
    return {op = "leaf", slot = s.id}, t
  end
  local function num(ct)
    return {op = "num", kind = chance(0.7) and "int" or "float"}, ct
  end
  local node
  -- an operand of an integer type: an astype where it is not
  local function int_node(d)
    local a, ta = node(d)
    if a.op == "num" then a, ta = leaf() end
    if FLOATS[ta] then
      local t = pick(INTS)
      a, ta = {op = "astype", t = t, args = {a}}, t
    end
    return a, ta
  end
  -- a node of an op of issue 32
  local function extra(d)
    local r = uniform()
    local a, ta = node(d - 1)
    if a.op == "num" then a, ta = leaf() end
    if r < 0.3 then
      return {op = pick(FUNCS2), args = {a}}, floating(ta)
    elseif r < 0.42 then
      return {op = pick(ROUNDS), args = {a}}, ta
    elseif r < 0.52 then
      return {op = pick(MASKS), args = {a}}, "uchar"
    elseif r < 0.68 then
      local op = pick(BINARY2)
      local b, tb
      -- (a number second: a method has no form with a number first)
      if chance(0.4) then b, tb = num(ta) else b, tb = node(d - 1) end
      if b.op == "num" then
        local ct = ta
        if b.kind == "float" and not FLOATS[ct] then ct = "float" end
        return {op = op, args = {a, b}}, op == "fmod" and ct or floating(ct)
      end
      local ct = promote(ta, tb)
      return {op = op, args = {a, b}}, op == "fmod" and ct or floating(ct)
    elseif r < 0.9 then
      local op = pick(BITWISE)
      a, ta = int_node(d - 1)
      local b, tb
      if chance(0.4) then
        b, tb = {op = "num", kind = "int", shift = op == "lshift" or op == "rshift"}, ta
      else
        b, tb = int_node(d - 1)
      end
      if chance(0.2) and b.op ~= "num" then a, b, ta, tb = b, a, tb, ta end
      return {op = op, args = {a, b}}, b.op == "num" and ta or promote(ta, tb)
    elseif r < 0.95 then
      a, ta = int_node(d - 1)
      return {op = "bitwise_not", args = {a}}, ta
    end
    local b = node(d - 1)
    if b.op == "num" and b.kind == "float" then b.kind = "int" end
    return {op = chance(0.5) and "logical_and" or "logical_or", args = {a, b}}, "uchar"
  end
  function node(d)
    if d == 0 or chance(0.2) then return leaf() end
    if EXTRA and chance(0.4) then return extra(d) end
    local r = uniform()
    if r < 0.35 then
      local a, ta = node(d - 1)
      local b, tb
      if chance(0.4) then b, tb = num(ta) else b, tb = node(d - 1) end
      if chance(0.3) then a, b, ta, tb = b, a, tb, ta end
      if a.op == "num" and b.op == "num" then b, tb = leaf() end
      local op = pick(ARITH)
      local ct = a.op == "num" and tb or b.op == "num" and ta or promote(ta, tb)
      if (a.op == "num" or b.op == "num") and ((a.op == "num" and a or b).kind == "float") and
         not FLOATS[ct] then ct = "float" end
      if op == "div" or op == "pow" then ct = floating(ct) end
      return {op = op, args = {a, b}}, ct
    elseif r < 0.5 then
      if chance(0.3) then
        -- x + c against x itself: a compiler that takes signed overflow for
        -- impossible folds it to c > 0
        local l, tl = leaf()
        local a = {op = pick{"add", "sub", "mul"}, args = {l, {op = "num", kind = "int"}}}
        return {op = pick(CMP), args = {a, l}}, "uchar"
      end
      local a, ta = node(d - 1)
      if a.op == "num" then a, ta = leaf() end
      local b, tb
      if chance(0.4) then b, tb = num(ta) else b, tb = node(d - 1) end
      return {op = pick(CMP), args = {a, b}}, "uchar"
    elseif r < 0.62 then
      local a, ta = node(d - 1)
      if a.op == "num" then a, ta = leaf() end
      local op = chance(0.5) and pick(UNARY) or pick(FUNCS)
      return {op = op, args = {a}}, (op == "neg" or op == "abs" or op == "floor" or
                                     op == "ceil") and ta or floating(ta)
    elseif r < 0.72 then
      local a, ta = node(d - 1)
      local b, tb = node(d - 1)
      if a.op == "num" then a, ta = leaf() end
      if b.op == "num" then b, tb = leaf() end
      return {op = chance(0.5) and "min" or "max", args = {a, b}}, promote(ta, tb)
    elseif r < 0.8 then
      local a, ta = node(d - 1)
      if a.op == "num" then a, ta = leaf() end
      local lo = chance(0.6) and num(ta) or node(d - 1)
      local hi = chance(0.6) and num(ta) or node(d - 1)
      return {op = "clamp", args = {a, lo, hi}}, ta
    elseif r < 0.9 then
      local m = node(d - 1)
      if m.op == "num" then m = leaf() end
      local a, ta, b, tb
      if chance(0.3) then a, ta = num("long") else a, ta = node(d - 1) end
      if chance(0.3) then b, tb = num(ta) else b, tb = node(d - 1) end
      return {op = "where", args = {m, a, b}}, (a.op == "num" and b.op == "num") and "long" or
             promote(ta, tb)
    end
    local a = node(d - 1)
    if a.op == "num" then a = leaf() end
    local t = pick(TYPES)
    return {op = "astype", t = t, args = {a}}, t
  end
  return node(depth)
end

-- The kinds of families in turn (so that a short run has some of each),
-- reductions by op in turn.
local KINDS = {"elem", "reduce", "set", "elem", "sort", "reduce", "argsort", "elem", "set",
               "reduce", "cumsum", "elem"}
-- with extra, every other family draws an op of issue 32 (OPS32 below)
local KINDS_X = {"elem", "ops", "reduce", "ops", "set", "ops", "elem", "ops", "sort", "ops",
                 "reduce", "ops", "argsort", "ops", "elem", "ops", "set", "ops", "reduce", "ops",
                 "cumsum", "ops", "elem", "ops"}
local KINDS_OPS = {"ops"}
local OPS = false         -- D.run's ops: false, true (KINDS_X), "only" or "paths" (KINDS_OPS)
local ops_family, ops_program   -- (below)
local paths_family, paths_program   -- (below, with OPSP's comment)
local OPSP = {"topk_whole", "onesweep", "softmax", "topk_select", "logsumexp", "topk_long",
              "onesweep", "log_softmax", "topk_kmax", "topk_natural", "create"}
D.OPSP = OPSP
local DEV                  -- D.run's device: the sizes where the ways change

-- Family number id: its kind (elem, reduce, cumsum, sort, argsort, set),
-- element types, template and options; reductions take REDUCE's ops in
-- turn from position first.
local function family(id, first)
  local fam = {id = id, slots = {}}
  local ntypes = int(1, 3)
  fam.types = {}
  for i = 1, ntypes do fam.types[i] = pick(TYPES) end
  local kinds = (OPS == "only" or OPS == "paths") and KINDS_OPS or OPS and KINDS_X or KINDS
  fam.kind = kinds[(id - 1) % #kinds + 1]
  fam.nd = pick{0, 1, 1, 2, 2, 2, 3, 3, 4}      -- the dims of its programs' results
  if fam.kind == "cumsum" or fam.kind == "sort" or fam.kind == "argsort" then
    fam.nd = math.max(fam.nd, 1)
  end
  if fam.kind == "reduce" then
    local k = 0
    for i = 1, id do if kinds[(i - 1) % #kinds + 1] == "reduce" then k = k + 1 end end
    fam.op = REDUCE[(k - 2 + first) % #REDUCE + 1]
  end
  if fam.kind == "ops" then return ops_family(fam, id, first) end
  if fam.kind == "set" then
    fam.target = pick(TYPES)
    -- values of types that promote to the target, mostly
    fam.types = {}
    for _, t in ipairs(TYPES) do
      if promote(t, fam.target) == fam.target or chance(0.05) then
        fam.types[#fam.types + 1] = t
      end
    end
    fam.number = chance(0.3) and (chance(0.7) and "int" or "float")
    fam.self = not fam.number and chance(0.4) and pick{"self", "t", "alias"}
    if not fam.number then
      local vt
      fam.tree, vt = template(fam, int(0, 2))
      if promote(vt, fam.target) ~= fam.target and chance(0.85) then
        fam.tree = {op = "astype", t = fam.target, args = {fam.tree}}
      end
    end
  else
    local depth = fam.kind == "elem" and int(1, 3) or int(0, 2)
    fam.tree = template(fam, depth)
  end
  return fam
end

------------------------------------------------------------------ shapes and views

local function copy(t) local c = {} for i, v in ipairs(t) do c[i] = v end return c end
local function count(shape) local n = 1 for _, d in ipairs(shape) do n = n * d end return n end

local function random_shape(nd)
  local s = {}
  for i = 1, nd do s[i] = chance(0.08) and 0 or int(1, 5) end
  if nd > 0 and chance(0.05) then
    -- one long dim: reductions cut into parts, sorts of several tiles
    for i = 1, nd do s[i] = math.min(s[i], 2) end
    s[int(1, nd)] = int(64, 2100)
  end
  return s
end

-- A shape that broadcasts to s: leading dims dropped, some sizes 1.
-- A shape that broadcasts to s, as slot says (the family fixes which
-- dims a leaf lacks, so that its programs share kernels): leading dims
-- dropped, some sizes 1.
local function broadcastable(s, slot)
  local out = {}
  for i = slot.drop + 1, #s do out[#out + 1] = slot.ones[i] and 1 or s[i] end
  return out
end

local function shape_text(s) return "{" .. concat(s, ", ") .. "}" end

-- Views that make a tensor of shape want from a base: returns the base's
-- shape and the views (Lua method calls and their descriptions).
local function views(want, depth, expand)
  if depth == 0 or chance(0.35) then return copy(want), {} end
  local nd = #want
  local kinds = {"reshape", "select"}
  if nd >= 1 then
    kinds[#kinds + 1] = "slice"; kinds[#kinds + 1] = "slice"
    kinds[#kinds + 1] = "down"; kinds[#kinds + 1] = "flip"
  end
  if nd >= 2 then kinds[#kinds + 1] = "transpose"; kinds[#kinds + 1] = "permute" end
  if expand and nd >= 1 then kinds[#kinds + 1] = "expand" end
  local k = pick(kinds)
  local pre, v = copy(want), nil
  if k == "slice" then
    local d = int(1, nd)
    local step, first = int(1, 3), int(1, 2)
    local n = want[d]
    local last
    if n == 0 then
      pre[d] = first - 1 + int(0, 2)
      last = first - 1
    else
      local lo = first + (n - 1) * step
      pre[d] = lo + int(0, step)
      local hi = math.min(pre[d], first + n * step - 1)
      last = int(lo, hi)
    end
    local sf, sl = first, last
    if chance(0.3) and first <= pre[d] then sf = first - pre[d] - 1 end
    if chance(0.4) and last >= 1 then sl = last - pre[d] - 1 end
    local dd = chance(0.2) and d - nd - 1 or d
    if step == 1 and chance(0.3) and sl == -1 then
      v = {text = format(":slice(%d, %d)", dd, sf), desc = {"slice", dd, sf, -1, 1}}
    else
      v = {text = format(":slice(%d, %d, %d, %d)", dd, sf, sl, step),
           desc = {"slice", dd, sf, sl, step}}
    end
  elseif k == "down" then             -- a negative step: first down to last
    local d = int(1, nd)
    local s = int(1, 3)
    local n = want[d]
    local first, last
    if n == 0 then
      pre[d] = int(0, 2)
      last = int(1, pre[d] + 1)
      first = last - 1
    else
      last = int(1, 2)
      first = last + (n - 1) * s
      pre[d] = first + int(0, 2)
    end
    local sf = (chance(0.3) and first >= 1) and first - pre[d] - 1 or first
    local dd = chance(0.2) and d - nd - 1 or d
    v = {text = format(":slice(%d, %d, %d, %d)", dd, sf, last, -s),
         desc = {"slice", dd, sf, last, -s}}
  elseif k == "flip" then
    local d = int(1, nd)
    local dd = chance(0.3) and d - nd - 1 or d
    v = {text = format(":flip(%d)", dd), desc = {"flip", dd}}
  elseif k == "transpose" then
    local d1, d2 = int(1, nd), int(1, nd - 1)
    if d2 >= d1 then d2 = d2 + 1 end
    pre[d1], pre[d2] = want[d2], want[d1]
    if nd == 2 and chance(0.5) then
      v = {text = ":t()", desc = {"transpose", 1, 2}}
    else
      v = {text = format(":transpose(%d, %d)", d1, d2), desc = {"transpose", d1, d2}}
    end
  elseif k == "permute" then
    local p = {}
    for i = 1, nd do p[i] = i end
    for i = nd, 2, -1 do local j = int(1, i); p[i], p[j] = p[j], p[i] end
    for i = 1, nd do pre[p[i]] = want[i] end
    v = {text = ":permute" .. shape_text(p), desc = {"permute", p}}
  elseif k == "expand" then
    local drop = chance(0.3) and int(0, nd) or 0
    pre = {}
    local arg = {}
    for i = 1, nd do
      if i <= drop then arg[i] = want[i]
      else
        local one = chance(0.5)
        pre[#pre + 1] = one and 1 or want[i]
        arg[i] = (not one and chance(0.3)) and -1 or want[i]
      end
    end
    v = {text = ":expand" .. shape_text(arg), desc = {"expand", arg}}
  elseif k == "select" then
    local d = int(1, nd + 1)
    local m = int(1, 3)
    table.insert(pre, d, m)
    local i = int(1, m)
    if chance(0.3) then i = i - m - 1 end
    v = {text = format(":select(%d, %d)", d, i), desc = {"select", d, i}}
  else -- reshape: the same elements under another shape
    local n = count(want)
    if n == 0 or chance(0.3) then
      pre = {}
      for i, d in ipairs(want) do pre[i] = d end
      if #pre < 4 then table.insert(pre, int(1, #pre + 1), 1) end
    elseif chance(0.5) then
      pre = {n}
    else
      local a = n
      local f = {}
      for q = 2, a do if a % q == 0 then f[#f + 1] = q end end
      local q = #f > 0 and pick(f) or 1
      pre = {q, n // q}
    end
    local arg = copy(want)
    if n > 0 and nd > 0 and chance(0.3) then arg[int(1, nd)] = -1 end
    v = {text = ":reshape" .. shape_text(arg), desc = {"reshape", arg}}
  end
  local base, list = views(pre, depth - 1, expand)
  list[#list + 1] = v
  return base, list
end

------------------------------------------------------------------ the ops of issue 32

-- Families of kind "ops" (D.run{extra = true} only): each fixes one op of
-- issue 32 (indexing by tensors and masks, joins, statistics: OPS32 in
-- turn) and its element types; its programs draw shapes (size-0 and
-- size-1 dims), views, dims (negative too), index tensors of any integer
-- type with negative and, now and then, bad positions, and values with
-- ties and NaNs. The description: op, the operands (operand numbers) and
-- the arguments as given; check.py derives everything else.
local OPS32 = {"index", "gather", "squeeze", "var", "setindex", "index_select", "unsqueeze",
               "std", "take", "flatten", "norm", "scatter", "split", "median", "scatter_add",
               "chunk", "topk", "put", "flip", "unique", "masked_fill", "roll", "bincount",
               "masked_select", "tril", "dot", "nonzero", "triu", "outer", "searchsorted",
               "repeat_tiles", "einsum", "pad", "cumprod", "cat", "mreduce", "stack", "mm"}
local MREDUCE = {"sum", "prod", "mean", "min", "max", "any", "all"}
local EINSUM = {
  {"ij,jk->ik", {"i", "j"}, {"j", "k"}}, {"ij->ji", {"i", "j"}}, {"ii->i", {"i", "i"}},
  {"ij->", {"i", "j"}}, {"i,i->", {"i"}, {"i"}}, {"i,j->ij", {"i"}, {"j"}},
  {"bij,bjk->bik", {"b", "i", "j"}, {"b", "j", "k"}}, {"ij->j", {"i", "j"}},
  {"ij,ij->ij", {"i", "j"}, {"i", "j"}}, {"ii", {"i", "i"}}, {"ij,jk", {"i", "j"}, {"j", "k"}},
  {"ijk->kj", {"i", "j", "k"}}, {"ij,kj->ik", {"i", "j"}, {"k", "j"}}}

function ops_family(fam, id, first)
  local k = 0
  local kinds = (OPS == "only" or OPS == "paths") and KINDS_OPS or KINDS_X
  for i = 1, id do if kinds[(i - 1) % #kinds + 1] == "ops" then k = k + 1 end end
  if OPS == "paths" or OPS == true and k % 2 == 0 then
    -- the ways of the session of 2026-11-27, in turn
    local j = OPS == "paths" and k or k // 2
    fam.op, fam.paths = OPSP[(j - 2 + first) % #OPSP + 1], true
    return paths_family(fam)
  end
  fam.op = OPS32[(k - 2 + first * 5) % #OPS32 + 1]
  fam.itype = pick(INTS)
  local op = fam.op
  if op == "scatter_add" then
    fam.types[1] = pick{"int", "uint", "long", "ulong", "float", "double", "int", "float",
                        chance(0.5) and "short" or "uchar"}
  elseif op == "bincount" then
    fam.types[1] = pick(INTS)
  elseif op == "mreduce" then
    fam.rop = pick(MREDUCE)
    if (fam.rop == "sum" or fam.rop == "prod" or fam.rop == "mean") and chance(0.4) then
      fam.rtype = fam.rop == "mean" and pick{"float", "double"} or pick(TYPES)
    end
  elseif op == "einsum" then
    fam.spec = pick(EINSUM)
  elseif op == "mm" then
    -- float or double, mostly both one type (others raise); x:bmm now and then
    fam.types[1] = pick{"float", "double", "float", "double", pick(TYPES)}
    fam.types[2] = chance(0.9) and fam.types[1] or pick(TYPES)
    fam.bmm = chance(0.25)
  end
  return fam
end

-- a position along a dim of len in an index tensor of type it: mostly in
-- range (negatives from the end), bad when bad
local function position(len, it, bad)
  local r = RANGE[it]
  local p
  if bad or len == 0 then
    p = pick{0, len + 1, -len - 1, len + 2, len + 1,
             -- past 32 bits (a kernel reading them as 32-bit would wrap)
             (1 << 32) + 1, -(1 << 32) + 1, math.maxinteger, math.mininteger, 1 << 31,
             -(1 << 31) - 1, (1 << 32) - 1, 255 + 1, 65535 + 2}
  else
    p = int(1, len)
    if chance(0.35) then p = p - len - 1 end
  end
  if p < r[1] or p > r[2] then
    if bad or len == 0 then p = p < 0 and 0 or (len + 1 <= r[2] and len + 1 or 0)
    else p = math.min(int(1, len), r[2]) end
  end
  return p
end

-- Values with many ties and NaNs (order ops), else of a random mode.
local function tie_value(t)
  if chance(0.5) then
    if FLOATS[t] then
      return pick{0.0, -0.0, 1.0, 1.0, 2.0, -1.0, 0 / 0, 0 / 0, 1 / 0, -1 / 0, 0.5}
    end
    return int(math.max(RANGE[t][1], -2), 3)
  end
  return value(t, pick(MODES))
end

------------------------------------------------------------------ the ways of the session of 2026-11-27

-- Families of kind "ops" that take the ways each call chooses by size
-- (D.run{ops = "paths"}, and every other ops family of ops = true):
-- x:topk on its ways (rows sorted whole in local memory, rows selected in
-- local memory, the long rows' histogram passes: by the sizes where
-- luagpu.tensor.topk's plan changes on this device, or with its rows_max
-- lowered, as a script may), k at 1, L, half of L and K_MAX; the radix
-- sort in one sweep a pass (algo.classes' sort_onesweep with the warp
-- instructions emulated, sort_rows_max 0; algo.sort's onesweep option) for
-- x:sort, x:argsort, x:unique and key-value sorts, sizes around its tile;
-- softmax, log_softmax and logsumexp on both ways (rows in registers, and
-- longer rows read twice: by luagpu.tensor.rows' sizes, or with its ITEMS
-- lowered); and the calls the other families do not draw (gen.lua's
-- "create": dev:zeros .. dev:linspace, the *_like constructors, clone,
-- contiguous, item, and the NumPy spellings arcsin .. fix, invert,
-- left_shift ...). Each program's first lines set what it changes (a reproducer
-- runs as printed); D.run puts the settings back after it.

local function class_of(dev) return dev.type == "cpu" and "cpu" or "gpu" end
local CLS_TEXT = 'dev.type == "cpu" and "cpu" or "gpu"'

local function floor_pow2(n)
  local p = 1
  while p * 2 <= n do p = p * 2 end
  return p
end

-- The radix sort's tile in one sweep (algo/sort.lua's entry_for, from the
-- class's settings and the device's fields) for keys of type t.
local function onesweep_tile(t)
  local gpu = require "luagpu"
  local C = gpu.algo.classes[class_of(DEV)]
  local L = math.min(C.sort_ptx_local, floor_pow2(DEV.max_work_group_size), 256)
  local ipt = C.sort_ptx_items
  while L * ipt > 32768 do ipt = ipt // 2 end
  local size = SIZE[t]
  local function bytes() return (L // 32) * 1024 + 2048 + L * 4 + L * ipt * (size + 4) + 64 + 1024 end
  while bytes() > DEV.local_mem_size and ipt > 1 do ipt = ipt // 2 end
  while bytes() > DEV.local_mem_size and L > 32 do L = L // 2 end
  return L * ipt
end

-- The least row length from lo up that takes topk's way `way` for k
-- (nil: none up to hi).
local function first_way(t, k, way, lo, hi)
  local TK = require "luagpu.tensor.topk"
  if TK.plan(DEV, t, hi, k) ~= way then return nil end
  while lo < hi do
    local mid = (lo + hi) // 2
    if TK.plan(DEV, t, mid, k) == way then hi = mid else lo = mid + 1 end
  end
  return lo
end

function paths_family(fam)
  local op = fam.op
  fam.types[1] = pick(TYPES)
  if op == "topk_natural" then
    -- the long way at the first length the rows kernel does not take
    -- (rows_max or local memory, as this device has them)
    fam.k = pick{1, 7, 100}
    fam.natural = first_way(fam.types[1], fam.k, "long", 2 * fam.k, 1 << 22)
  elseif op == "onesweep" then
    -- one build a family: the passes carry positions (x:argsort, x:sort of
    -- several rows), nothing (x:sort of one row, x:unique), or values of
    -- another type (algo.sort's values)
    fam.carry = pick{"uint", "uint", "none", "values"}
    fam.types[2] = pick(TYPES)
    fam.tile = onesweep_tile(fam.types[1])
  elseif op == "softmax" or op == "log_softmax" or op == "logsumexp" then
    fam.lowered = chance(0.4)     -- rows.sizes' ITEMS 1: the long way at a few hundred
  end
  return fam
end

-- Values of type t in a mode drawn for a program: ties and NaNs, the
-- type's limits, specials, random, or a mix.
local function path_values(t)
  local mode = pick{"ties", "ties", "limits", "special", "random", "mixed", "distinct"}
  -- NaNs of both signs (0/0 has one, its negation the other: both sort last)
  local function both(v) if v ~= v and chance(0.5) then return -v end return v end
  if mode == "ties" then return function() return both(tie_value(t)) end end
  if mode == "distinct" then
    return function()
      if FLOATS[t] then return value(t, "random") end
      return chance(0.9) and value(t, "random") or value(t, "limits")
    end
  end
  return function() return both(value(t, mode)) end
end

-- A shape of nd dims with L at dim d, the others small (their product
-- at most most).
local function shape_around(nd, d, L, most)
  local s = {}
  local left = most
  for i = 1, nd do
    if i == d then s[i] = L
    else
      s[i] = chance(0.04) and 0 or int(1, math.max(1, math.min(3, left)))
      left = left // math.max(s[i], 1)
    end
  end
  return s
end

-- The NumPy spellings (API.md: the same ops): name, the op it is, its
-- second operand (nil, "num", "shift" or "tensor"), integer types only.
local ALIASES = {{"arcsin", "asin"}, {"arccos", "acos"}, {"arctan", "atan"},
                 {"arcsinh", "asinh"}, {"arccosh", "acosh"}, {"arctanh", "atanh"},
                 {"arctan2", "atan2", "tensor"}, {"arctan2", "atan2", "num"}, {"fix", "trunc"},
                 {"invert", "bitwise_not", nil, true}, {"bitwise_invert", "bitwise_not", nil, true},
                 {"left_shift", "lshift", "shift", true},
                 {"bitwise_left_shift", "lshift", "tensor", true},
                 {"right_shift", "rshift", "shift", true},
                 {"bitwise_right_shift", "rshift", "shift", true}}

-- A program of "create": one of the constructors, copies and spellings
-- (its sub-op drawn per program; the family fixes the element type).
local function create_program(fam, lines, desc, A, operand, x_operand, numtext)
  local t = fam.types[1]
  desc.op = "create"
  local sub = pick{"zeros", "ones", "full", "eye", "linspace", "zeros_like", "ones_like",
                   "full_like", "clone", "contiguous", "item", "alias", "alias", "alias"}
  A.sub, A.t = sub, t
  local S = random_shape(int(0, 3))
  local function shape_arg()
    if #S == 1 and chance(0.5) then return tostring(S[1]) end
    return shape_text(S)
  end
  local function fill_value(typ)
    local v = number(chance(0.8) and "int" or "float", typ)
    if FLOATS[typ] and chance(0.3) then v = pick{0 / 0, 1 / 0, -0.0, 2.5, 1e300} end
    return v
  end
  if sub == "zeros" or sub == "ones" then
    A.shape = S
    return format("dev:%s(%q, %s)", sub, t, shape_arg())
  elseif sub == "full" then
    A.shape, A.v = S, fill_value(t)
    return format("dev:full(%q, %s, %s)", t, shape_arg(), numtext(A.v))
  elseif sub == "eye" then
    A.n = int(0, 5)
    if chance(0.5) then A.m = int(0, 5) end
    return format("dev:eye(%q, %d%s)", t, A.n, A.m and ", " .. A.m or "")
  elseif sub == "linspace" then
    local function ends()
      local r = uniform()
      if r < 0.4 then return int(-6, 6) end
      if r < 0.7 then return int(-12, 12) / 4 end
      if r < 0.95 then return (uniform() - 0.5) * 2.0^int(0, 12) end
      return pick{0 / 0, 1 / 0, 300, -200, 70000, 2.0^40}
    end
    A.first, A.last = ends(), ends()
    A.count = pick{0, 1, 2, int(3, 12), int(3, 40), 100}
    if chance(0.03) then A.count = pick{-1, 1.5} end
    return format("dev:linspace(%q, %s, %s, %s)", t, numtext(A.first), numtext(A.last),
                  numtext(A.count))
  elseif sub == "zeros_like" or sub == "ones_like" or sub == "full_like" or
         sub == "clone" or sub == "contiguous" or sub == "item" then
    if sub == "item" then S = pick{{}, {1}, {1, 1}, {1, 1, 1}, {2}, {0}} end
    local x, kx = x_operand(S, true, t)
    A.x = kx
    if sub == "clone" or sub == "contiguous" or sub == "item" then
      return format("%s:%s()", x, sub)
    end
    local args = {}
    if sub == "full_like" then
      A.v = fill_value(t)
      args[1] = numtext(A.v)
    end
    if chance(0.5) then
      A.type = pick(TYPES)
      if sub == "full_like" then A.v = fill_value(A.type); args[1] = numtext(A.v) end
      args[#args + 1] = format("%q", A.type)
    end
    return format("%s:%s(%s)", x, sub, concat(args, ", "))
  end
  -- alias: the NumPy spelling of an op, against the op itself in check.py
  local al = pick(ALIASES)
  local xt = t
  if al[4] and FLOATS[xt] then xt = pick(INTS) end
  local x, kx = x_operand(S, true, xt)
  local args = {{op = "leaf", operand = kx}}
  local text
  if al[3] == "tensor" then
    local y, ky = x_operand(S, true, al[4] and pick(INTS) or pick(TYPES))
    args[2] = {op = "leaf", operand = ky}
    text = format("%s:%s(%s)", x, al[1], y)
  elseif al[3] then
    local v = al[3] == "shift" and pick{int(0, 9), 31, 63, 64, -1, 8} or number("int", xt)
    if al[3] == "num" and chance(0.3) then v = pick{0.5, -2.5, 0 / 0} end
    args[2] = {op = "num", v = v}
    text = format("%s:%s(%s)", x, al[1], numtext(v))
  else
    text = format("%s:%s()", x, al[1])
  end
  A.alias, A.tree = al[1], {op = al[2], args = args}
  return text
end

function paths_program(fam, lines, desc, A, operand, x_operand, numtext)
  local op, t = fam.op, fam.types[1]
  local cls = "local CLS = " .. CLS_TEXT
  if op:sub(1, 5) == "topk_" then
    desc.op = "topk"
    A.way = op:sub(6)
    local L, k
    local way = A.way
    if way == "whole" then L = pick{int(1, 16), int(1, 128), 128, 64, 65, 2, 3}
    elseif way == "select" then L = pick{129, 130, int(129, 700), int(700, 2100), 1024, 1025}
    elseif way == "long" then L = pick{int(2, 300), int(300, 3000), 1024, 1025, 2049, int(2, 40)}
    elseif way == "kmax" then L = pick{2048, 2049, 2047, 2050, int(2048, 2400)}
    else L = fam.natural and fam.natural + pick{0, 0, 1, 3} or int(2, 300) end
    if way == "kmax" then
      k = pick{1024, 1024, 1025, 1023, L // 2, L // 2 + 1}
    elseif way == "natural" and fam.natural then
      k = fam.k
    else
      k = pick{1, 1, L, L // 2, L // 2 + 1, int(0, L // 2), int(0, L // 2), 0,
               int(1, math.min(L, 8)), L - 1, math.min(L, 1024)}
    end
    k = math.max(0, math.min(k, L))
    if chance(0.02) then k = pick{L + 1, -1} end
    -- few rows of long ones, many of short ones (several a group)
    local most = L > 600 and 3 or L > 128 and 6 or 60
    if way == "natural" then most = 1 end
    local nd = pick{1, 1, 2, 2, 3}
    local d = int(1, nd)
    local S = shape_around(nd, d, L, most)
    if way == "whole" and nd >= 2 and chance(0.5) then S[d == 1 and 2 or 1] = int(20, 40) end
    if way == "long" and L <= 40 and nd >= 2 then
      S[d == 1 and 2 or 1] = int(50, 400)     -- many short rows the long way (rows in grid dim 1)
    end
    local TK = require "luagpu.tensor.topk"
    local TKS = TK.sizes[class_of(DEV)]
    local saved = TKS.rows_max
    if way == "long" then
      local R = pick{0, L - 1, L // 2}
      lines[#lines + 1] = cls
      lines[#lines + 1] = format('require("luagpu.tensor.topk").sizes[CLS].rows_max = %d', R)
      TKS.rows_max = R
    end
    -- the way the call plans to take (the spec sees each one drawn)
    if k >= 0 and k <= L then A.plan = TK.plan(DEV, t, L, k) end
    TKS.rows_max = saved
    local x, kx
    if way == "natural" then
      -- a long row as it is (no views: its values are written once)
      local list, f = {}, path_values(t)
      for i = 1, count(S) do list[i] = f() end
      x, kx = operand(t, S, false, nil, nil, list)
    else
      x, kx = x_operand(S, true, t, path_values(t))
    end
    A.x, A.k = kx, k
    local args = {tostring(k)}
    if d ~= nd or chance(0.7) then
      A.dim = chance(0.3) and d - nd - 1 or d
      args[#args + 1] = tostring(A.dim)
    end
    if chance(0.5) then
      A.largest = chance(0.5)
      args[#args + 1] = "{largest = " .. tostring(A.largest) .. "}"
    end
    return format("{%s:topk(%s)}", x, concat(args, ", "))
  elseif op == "onesweep" then
    lines[#lines + 1] = "local C = gpu.algo.classes[" .. CLS_TEXT .. "]"
    lines[#lines + 1] = 'C.sort_onesweep, C.sort_ptx, C.sort_rows_max = true, "emulated", 0'
    local tile = fam.tile
    local n = pick{int(2, 40), tile - 1, tile, tile + 1, int(tile, 3 * tile + 7), 2 * tile + 1,
                   1, 0, int(2, 9)}
    local vals = path_values(t)
    A.descending = chance(0.4) or nil
    local dtext = A.descending and "{descending = true}" or nil
    if fam.carry == "values" then
      -- algo.sort of a tensor's keys, values of another type moved along
      desc.op = "algo_sort"
      local list, vlist = {}, {}
      local vt = fam.types[2]
      for i = 1, n do list[i] = vals(); vlist[i] = value(vt, "random") end
      local kname, kk = operand(t, {n}, false, nil, nil, list)
      local vname, vk = operand(vt, {n}, false, nil, nil, vlist)
      A.keys, A.values = kk, vk
      lines[#lines + 1] = format("gpu.algo.sort(%s, {values = %s, descending = %s, " ..
                                 "onesweep = true})", kname, vname, tostring(A.descending == true))
      return format("{%s, %s}", kname, vname)
    end
    local S, d
    if fam.carry == "none" then
      -- one row: x:sort of a 1-D tensor (or of a dim with the others 1), x:unique
      desc.op = chance(0.5) and "unique" or "sort"
      local nd = desc.op == "unique" and int(1, 3) or pick{1, 1, 2}
      d = int(1, nd)
      S = shape_around(nd, d, n, 1)
      if desc.op == "unique" and nd > 1 then
        -- any shape of n elements
        S = {n}
        for _ = 2, nd do table.insert(S, 1) end
      end
      for i = 1, nd do if i ~= d then S[i] = 1 end end
    else
      desc.op = chance(0.5) and "argsort" or "sort"
      local rows = pick{2, 3, int(2, 9), 257, 300, 1}
      local L = math.max(1, n // rows)
      if rows >= 257 then L = int(1, 3) end
      local nd = pick{2, 2, 3}
      d = int(1, nd)
      S = shape_around(nd, d, L, 1)
      local other = d == 1 and 2 or 1
      S[other] = rows
      if desc.op == "sort" and rows == 1 then S[other] = 2 end
    end
    local x, kx = x_operand(S, true, t, vals)
    A.x = kx
    if desc.op == "unique" then return format("{%s:unique()}", x) end
    local args = {}
    if d ~= #S or chance(0.6) then
      A.dim = chance(0.3) and d - #S - 1 or d
      args[#args + 1] = tostring(A.dim)
    end
    args[#args + 1] = dtext
    return format("%s:%s(%s)", x, desc.op, concat(args, ", "))
  end
  if op == "create" then return create_program(fam, lines, desc, A, operand, x_operand, numtext) end
  -- softmax, log_softmax, logsumexp
  desc.op = op
  local RW = require "luagpu.tensor.rows"
  local sz = RW.sizes[class_of(DEV)]
  local items = sz.ITEMS
  if fam.lowered then
    items = 1
    lines[#lines + 1] = cls
    lines[#lines + 1] = 'require("luagpu.tensor.rows").sizes[CLS].ITEMS = 1'
  end
  -- the longest row kept in registers: LS * ITEMS chunks of 4
  local thr = math.min(sz.LS, floor_pow2(DEV.max_work_group_size)) * items * 4
  local L = pick{int(1, 8), thr - 1, thr, thr + 1, thr + 3, thr + 4, int(thr // 2, 2 * thr),
                 int(1, 300), 0, 1, 4, 5}
  if L > 6000 then L = int(1, 6000) end
  local nd = pick{1, 1, 2, 2, 3}
  local d = int(1, nd)
  local S = shape_around(nd, d, L, L > 1000 and 3 or 8)
  local x, kx = x_operand(S, true, t, function()
    -- mostly finite values (a NaN or infinity rules its whole row)
    if chance(0.03) then return value(t, "special") end
    return value(t, pick{"small", "random", "random", "small"})
  end)
  A.x = kx
  if op == "logsumexp" and chance(0.2) then return format("%s:logsumexp()", x) end
  local dim
  if op == "logsumexp" or d ~= nd or chance(0.6) then
    dim = chance(0.3) and d - nd - 1 or d
    if chance(0.02) then dim = nd + 1 end
    A.dim = dim
  end
  if op == "logsumexp" and chance(0.4) then
    A.keepdim = true
    return format("%s:logsumexp(%d, %s)", x, dim, chance(0.5) and "true" or "{keepdim = true}")
  end
  return format("%s:%s(%s)", x, op, dim or "")
end

function ops_program(fam, S, lines, desc, operand, dim_arg)
  local op, t = fam.op, fam.types[1]
  local t2 = fam.types[2] or t
  desc.op = op
  local A = {}
  desc.a = A
  -- now and then an operand is lazy (an expression of the same values):
  -- the op must evaluate it first
  local function lazy(name)
    if op ~= "put" and op ~= "setindex" and chance(0.12) then
      lines[#lines + 1] = format("%s = %s:neg():neg()", name, name)
    end
  end
  local function idx_operand(shape, len)
    local bad = chance(0.12)
    local n = count(shape)
    local which = bad and n > 0 and int(1, n) or 0
    local i = 0
    local name, k = operand(fam.itype, shape, chance(0.3), nil, nil, nil)
    -- (values drawn for the base's elements: any order of them is fine)
    local inp = desc.inputs[desc.operands[k].input]
    for j = 1, #inp.vals do
      i = i + 1
      inp.vals[j] = position(len, fam.itype, bad and (which == 0 or j == which or chance(0.1)))
    end
    -- rewrite the input's line with the new values
    lazy(name)
    for li = #lines, 1, -1 do
      local a = lines[li]:match("^local (a%d+) = dev:tensor")
      if a == "a" .. desc.operands[k].input then
        lines[li] = format("local %s = dev:tensor(%q, %s, gpu.array(%q, %s))", a, fam.itype,
                           shape_text(inp.shape), fam.itype, lua_list(inp.vals))
        break
      end
    end
    return name, k
  end
  local function x_operand(shape, expand, typ, given)
    local name, k = operand(typ or t, shape, expand, nil, nil, given)
    lazy(name)
    return name, k
  end
  local function num_for(typ)
    local v = number(chance(0.8) and "int" or "float", typ)
    if FLOATS[typ] and chance(0.3) then v = pick{0 / 0, 1 / 0, -0.0, 2.5} end
    return v
  end
  local function numtext(v)
    local s = lua_number(v)
    if s:sub(1, 1) == "-" then s = "(" .. s .. ")" end
    return s
  end
  local out
  if fam.paths then
    out = paths_program(fam, lines, desc, A, operand, x_operand, numtext)
    lines[#lines + 1] = "local out = " .. out
    return
  end
  local nd = #S
  if op == "index" or op == "setindex" then
    if nd == 0 and chance(0.9) then S = {int(1, 3)}; nd = 1 end
    local x, k = x_operand(S, false)
    A.x = k
    local L = S[1] or 1
    local i = chance(0.12) and pick{0, L + 1, -L - 1} or (L > 0 and int(1, L) or 1)
    if not chance(0.12) and L > 0 and chance(0.35) then i = i - L - 1 end
    if chance(0.04) then i = 1.5 end
    A.i = i
    if op == "index" then
      out = format("%s[%s]", x, numtext(i))
    else
      local sub = {table.unpack(S, 2)}
      if chance(0.6) or #sub == 0 then
        local v = num_for(t)
        A.v = v
        lines[#lines + 1] = format("%s[%s] = %s", x, numtext(i), numtext(v))
      else
        local vt = pick(fam.types)
        local vs = {}
        for j, n in ipairs(sub) do vs[j] = chance(0.2) and 1 or n end
        local v, vk = x_operand(vs, true, vt)
        A.v = {operand = vk}
        lines[#lines + 1] = format("%s[%s] = %s", x, numtext(i), v)
      end
      out = x
    end
  elseif op == "gather" or op == "index_select" or op == "scatter" or op == "scatter_add" then
    if nd == 0 then S = {int(0, 4)}; nd = 1 end
    local x, k = x_operand(S, op == "gather" or op == "index_select")
    A.x = k
    local d = dim_arg(nd)
    A.dim = d
    local dd = d < 0 and d + nd + 1 or d
    local ishape
    if op == "index_select" then
      ishape = {int(0, 5)}
      if chance(0.05) then ishape = {2, 2} end
    else
      ishape = {}
      for j = 1, nd do
        ishape[j] = j == dd and int(0, 4) or (chance(0.7) and S[j] or int(0, S[j]))
      end
      if chance(0.04) then ishape[int(1, nd)] = S[1] + 1 end
    end
    local iname, ik = idx_operand(ishape, S[dd])
    A.idx = ik
    if op == "gather" or op == "index_select" then
      out = format("%s:%s(%d, %s)", x, op, d, iname)
    else
      local src
      if chance(0.3) then
        local v = num_for(t)
        A.src = v
        src = numtext(v)
      else
        local ss = {}
        for j, n in ipairs(ishape) do ss[j] = n + (chance(0.2) and 1 or 0) end
        local st = chance(0.8) and t or pick(fam.types)
        local sname, sk = x_operand(ss, true, st)
        A.src = {operand = sk}
        src = sname
      end
      out = format("%s:%s(%d, %s, %s)", x, op, d, iname, src)
    end
  elseif op == "take" or op == "put" then
    local x, k = x_operand(S, op == "take")
    A.x = k
    local ishape = random_shape(int(0, 2))
    local iname, ik = idx_operand(ishape, count(S))
    A.idx = ik
    if op == "take" then
      out = format("%s:take(%s)", x, iname)
    else
      local v
      if chance(0.4) then
        local n = num_for(t)
        A.v = n
        v = numtext(n)
      else
        local vs = chance(0.7) and copy(ishape) or {count(ishape) + (chance(0.1) and 1 or 0)}
        local vname, vk = x_operand(vs, false, chance(0.8) and t or pick(fam.types))
        A.v = {operand = vk}
        v = vname
      end
      lines[#lines + 1] = format("%s:put(%s, %s)", x, iname, v)
      out = x
    end
  elseif op == "masked_fill" or op == "masked_select" then
    local x, k = x_operand(S, true)
    A.x = k
    local ms = {}
    local drop = chance(0.3) and int(0, nd) or 0
    for j = drop + 1, nd do ms[#ms + 1] = chance(0.25) and 1 or S[j] end
    if chance(0.04) then ms[#ms + 1] = 2 end
    local mt = chance(0.6) and "uchar" or pick(TYPES)
    local m, mk = x_operand(ms, true, mt, function()
      if FLOATS[mt] then return pick{0.0, -0.0, 1.0, 0 / 0, 0.0} end
      return chance(0.5) and 0 or value(mt, "small")
    end)
    A.mask = mk
    if op == "masked_fill" then
      local v = num_for(t)
      A.v = v
      out = format("%s:masked_fill(%s, %s)", x, m, numtext(v))
    else
      out = format("%s:masked_select(%s)", x, m)
    end
  elseif op == "nonzero" then
    local x, k = x_operand(S, true, t, function()
      if chance(0.5) then return FLOATS[t] and pick{0.0, -0.0} or 0 end
      return tie_value(t)
    end)
    A.x = k
    out = x .. ":nonzero()"
  elseif op == "searchsorted" then
    local n = chance(0.1) and 0 or int(1, 9)
    local vals = {}
    for j = 1, n do vals[j] = tie_value(t) end
    table.sort(vals, function(a, b)
      if FLOATS[t] then
        if a ~= a then return false end
        if b ~= b then return true end
        return a < b
      end
      if t == "ulong" then return math.ult(a, b) end
      return a < b
    end)
    local sname, sk = x_operand({n}, false, t, vals)
    A.sorted = sk
    local v
    if chance(0.2) then
      local num = FLOATS[t] and pick{0.5, 1.0, 0 / 0, -1 / 0, 2.0} or int(-2, 4)
      if not FLOATS[t] and RANGE[t][1] == 0 then num = int(0, 4) end
      A.values = num
      v = numtext(num)
    else
      local vt = chance(0.6) and t or t2
      local vname, vk = x_operand(random_shape(int(0, 2)), true, vt, function() return tie_value(vt) end)
      A.values = {operand = vk}
      v = vname
    end
    A.right = chance(0.4) or nil
    out = format("gpu.searchsorted(%s, %s%s)", sname, v, A.right and ", {right = true}" or "")
  elseif op == "squeeze" or op == "unsqueeze" or op == "flatten" or op == "flip" or
         op == "roll" or op == "tril" or op == "triu" or op == "repeat_tiles" or op == "pad" or
         op == "split" or op == "chunk" or op == "cumprod" then
    if op == "squeeze" then for j = 1, nd do if chance(0.4) then S[j] = 1 end end end
    if (op == "tril" or op == "triu") and nd < 2 and chance(0.9) then
      S = {int(0, 4), int(0, 5)}; nd = 2
    end
    if (op == "roll" or op == "split" or op == "chunk" or op == "flip") and nd == 0 and
       chance(0.9) then
      S = {int(0, 5)}; nd = 1
    end
    local x, k = x_operand(S, true, t, op == "cumprod" and function()
      if FLOATS[t] then return pick{1.0, -1.0, 2.0, 0.5, 0.0, 0 / 0, 1.5} end
      return value(t, pick{"small", "small", "limits"})
    end or nil)
    A.x = k
    local n1 = math.max(nd, 1)
    if op == "squeeze" then
      if chance(0.5) then A.dim = dim_arg(n1) end
      out = format("%s:squeeze(%s)", x, A.dim or "")
    elseif op == "unsqueeze" then
      A.dim = int(1, nd + 1)
      if chance(0.3) then A.dim = A.dim - nd - 2 end
      if chance(0.05) then A.dim = nd + 2 end
      out = format("%s:unsqueeze(%d)", x, A.dim)
    elseif op == "flatten" then
      out = x .. ":flatten()"
    elseif op == "flip" then
      if chance(0.5) then
        A.dims = dim_arg(n1)
        out = format("%s:flip(%d)", x, A.dims)
      else
        local l = {}
        for j = 1, chance(0.1) and 0 or int(1, n1) do l[j] = dim_arg(n1) end   -- {}: x
        A.dims = l
        out = format("%s:flip(%s)", x, lua_list(l))
      end
    elseif op == "roll" then
      A.shift, A.dim = int(-7, 7), dim_arg(n1)
      out = format("%s:roll(%d, %d)", x, A.shift, A.dim)
    elseif op == "tril" or op == "triu" then
      if chance(0.7) then A.k = int(-3, 3) end
      out = format("%s:%s(%s)", x, op, A.k or "")
    elseif op == "repeat_tiles" then
      if chance(0.2) then
        A.reps = int(0, 3)
        out = format("%s:repeat_tiles(%d)", x, A.reps)
      else
        local l = {}
        for j = 1, int(0, math.min(nd + 1, 4)) do l[j] = pick{1, 1, 2, 3, 0} end
        A.reps = l
        out = format("%s:repeat_tiles(%s)", x, lua_list(l))
      end
    elseif op == "pad" then
      if chance(0.3) then
        A.widths = int(0, 2)
        out = format("%s:pad(%d", x, A.widths)
      else
        local l, tx = {}, {}
        for j = 1, nd + (chance(0.05) and 1 or 0) do
          l[j] = {int(0, 2), int(0, 2)}
          tx[j] = lua_list(l[j])
        end
        A.widths = l
        out = format("%s:pad({%s}", x, concat(tx, ", "))
      end
      if chance(0.6) then
        A.v = num_for(t)
        out = out .. ", " .. numtext(A.v)
      end
      out = out .. ")"
    elseif op == "split" or op == "chunk" then
      local dim = chance(0.7) and dim_arg(n1) or nil
      A.dim = dim
      local dd = dim and (dim < 0 and dim + nd + 1 or dim) or 1
      local len = S[dd] or 0
      local arg
      if op == "split" and chance(0.4) then
        local l, left = {}, len
        while left > 0 do
          local p = int(0, left)
          l[#l + 1] = p
          left = left - p
        end
        if chance(0.1) then l[#l + 1] = 1 end
        A.size = l
        arg = lua_list(l)
      else
        A.size = int(1, 4)
        arg = tostring(A.size)
      end
      out = format("%s:%s(%s%s)", x, op, arg, dim and ", " .. dim or "")
    elseif op == "cumprod" then
      if chance(0.7) then A.dim = dim_arg(n1) end
      out = format("%s:cumprod(%s)", x, A.dim or "")
    end
  elseif op == "cat" or op == "stack" then
    if nd == 0 and op == "cat" then S = {int(0, 3)}; nd = 1 end
    local n = int(1, 3)
    local d
    if op == "cat" then d = dim_arg(nd) else
      d = int(1, nd + 1)
      if chance(0.3) then d = d - nd - 2 end
    end
    local dd = d < 0 and d + nd + 1 or d
    local names, ks = {}, {}
    for j = 1, n do
      local s = copy(S)
      if op == "cat" then s[dd] = int(0, 3) end
      if chance(0.04) and nd > 0 then s[int(1, nd)] = 6 end
      names[j], ks[j] = x_operand(s, true, pick(fam.types))
    end
    A.list, A.dim = ks, chance(0.85) and d or nil
    if A.dim == nil and op == "cat" and dd ~= 1 then A.dim = d end
    out = format("gpu.%s({%s}%s)", op, concat(names, ", "), A.dim and ", " .. A.dim or "")
  elseif op == "mreduce" or op == "var" or op == "std" or op == "norm" then
    local x, k = x_operand(S, true, t, function() return value(t, pick{"small", "small", "special", "random"}) end)
    A.x = k
    local n1 = math.max(nd, 1)
    local dims
    if op == "mreduce" or chance(0.7) then
      if chance(0.3) then dims = dim_arg(n1)
      else
        -- {} (NumPy's axis=()): each element alone
        dims = {}
        for j = 1, chance(0.08) and 0 or int(1, n1) do dims[j] = dim_arg(n1) end
      end
    end
    A.dims = dims
    local dtext = dims == nil and "nil" or (type(dims) == "table" and lua_list(dims) or tostring(dims))
    if op == "mreduce" then
      A.rop = fam.rop
      A.keepdim = chance(0.4) or nil
      if fam.rtype then
        -- the type option: the type accumulated in and given
        A.type = fam.rtype
        out = format("%s:%s(%s, {keepdim = %s, type = %q})", x, fam.rop, dtext,
                     tostring(A.keepdim == true), fam.rtype)
      else
        out = format("%s:%s(%s%s)", x, fam.rop, dtext, A.keepdim and ", true" or "")
      end
    elseif op == "norm" then
      A.p = pick{2, 1, 3, 0, 1 / 0, -1 / 0, 0.5}
      if chance(0.2) then A.p = nil end
      out = format("%s:norm(%s%s)", x, A.p and numtext(A.p) or "nil",
                   dims and ", " .. dtext or "")
    else
      local o = {}
      if chance(0.5) then A.correction = pick{0, 1, 2}; o[#o + 1] = "correction = " .. A.correction end
      if chance(0.3) then A.keepdim = true; o[#o + 1] = "keepdim = true" end
      local ot = #o > 0 and "{" .. concat(o, ", ") .. "}" or nil
      if dims == nil and ot then out = format("%s:%s(%s)", x, op, ot)
      elseif dims == nil then out = format("%s:%s()", x, op)
      else out = format("%s:%s(%s%s)", x, op, dtext, ot and ", " .. ot or "") end
    end
  elseif op == "median" or op == "topk" or op == "unique" or op == "bincount" then
    local x, k = x_operand(op == "bincount" and {chance(0.1) and 0 or int(1, 12)} or S,
                           true, t, function()
      if op == "bincount" then
        local v = int(0, 6)
        if chance(0.02) then v = SIGNED[t] and -1 or v end
        return v
      end
      return tie_value(t)
    end)
    A.x = k
    local n1 = math.max(nd, 1)
    if op == "median" then
      if chance(0.6) then A.dim = dim_arg(n1) end
      out = A.dim and format("{%s:median(%d)}", x, A.dim) or format("%s:median()", x)
    elseif op == "topk" then
      local dim = chance(0.7) and dim_arg(n1) or nil
      A.dim = dim
      local dd = dim and (dim < 0 and dim + nd + 1 or dim) or nd
      local len = S[dd] or 0
      A.k = int(0, len)
      if chance(0.05) then A.k = len + 1 end
      local args = {tostring(A.k)}
      if dim then args[#args + 1] = tostring(dim) end
      if chance(0.4) then A.largest = chance(0.5); args[#args + 1] = "{largest = " .. tostring(A.largest) .. "}" end
      out = format("{%s:topk(%s)}", x, concat(args, ", "))
    elseif op == "unique" then
      out = format("{%s:unique()}", x)
    else
      if chance(0.4) then A.bins = int(0, 9) end
      out = format("%s:bincount(%s)", x, A.bins or "")
    end
  elseif op == "dot" or op == "outer" then
    local n = S[1] or int(0, 5)
    local a, ak = x_operand({n}, true, t)
    local m = op == "dot" and (chance(0.95) and n or n + 1) or int(0, 5)
    local b, bk = x_operand({m}, true, t2)
    A.x, A.y = ak, bk
    out = op == "dot" and format("%s:dot(%s)", a, b) or format("gpu.outer(%s, %s)", a, b)
  elseif op == "einsum" then
    local spec = fam.spec
    local sizes = {}
    local function shape_of(letters)
      local s = {}
      for j, c in ipairs(letters) do
        sizes[c] = sizes[c] or (chance(0.1) and 0 or int(1, 4))
        s[j] = sizes[c]
      end
      return s
    end
    local a, ak = x_operand(shape_of(spec[2]), false, t)
    A.spec, A.x = spec[1], ak
    if spec[3] then
      local b, bk = x_operand(shape_of(spec[3]), false, t2)
      A.y = bk
      out = format("gpu.einsum(%q, %s, %s)", spec[1], a, b)
    else
      out = format("gpu.einsum(%q, %s)", spec[1], a)
    end
  elseif op == "mm" then
    -- {m, k} x {k, n}, or batches of 3-D ones (either 2-D or of batch 1
    -- for x:mm); now and then shapes that do not multiply or a bad rank
    local function size() return chance(0.1) and int(6, 70) or int(0, 5) end  -- (tiles' edges)
    local m, k, n, b = size(), size(), size(), int(1, 3)
    local xs, ys = {m, k}, {k, n}
    local r = uniform()
    if fam.bmm or r < 0.4 then
      local bx, by = b, b
      if not fam.bmm and chance(0.3) then bx = 1 elseif not fam.bmm and chance(0.3) then by = 1 end
      if chance(0.05) then by = b + 1 end
      xs, ys = {bx, m, k}, {by, k, n}
      if not fam.bmm and chance(0.3) then
        if chance(0.5) then xs = {m, k} else ys = {k, n} end
      end
    end
    if chance(0.05) then ys[#ys - 1] = k + 1 end
    if chance(0.04) then xs = {k} end
    local x, xk = x_operand(xs, false, t)
    local y, yk = x_operand(ys, false, t2)
    A.x, A.y, A.bmm = xk, yk, fam.bmm or nil
    out = format("%s:%s(%s)", x, fam.bmm and "bmm" or "mm", y)
  end
  lines[#lines + 1] = "local out = " .. out
end

------------------------------------------------------------------ programs

-- One program of family fam: returns its Lua body and description.
local function program(fam)
  local S = random_shape(fam.nd)
  local lines, inputs = {}, {}
  local desc = {family = fam.id, kind = fam.kind, inputs = inputs, operands = {}}

  -- an input tensor of type t and shape s: its Lua name
  local function input(t, s, alias_of, given)
    local k = #inputs + 1
    local name = "a" .. k
    if alias_of then
      local a = inputs[alias_of]
      inputs[k] = {t = a.t, shape = s, alias = alias_of}
      lines[#lines + 1] = format("local %s = dev:tensor(%q, %s, a%d.buffer)", name, a.t,
                                 shape_text(s), alias_of)
      return name
    end
    local vals = {}
    local mode = pick(MODES)
    if type(given) == "table" then vals = given
    elseif given then for i = 1, count(s) do vals[i] = given() end
    else for i = 1, count(s) do vals[i] = value(t, mode) end end
    inputs[k] = {t = t, shape = s, vals = vals}
    local big = false
    if t == "ulong" then for _, v in ipairs(vals) do if v < 0 then big = true end end end
    if big then   -- ulongs from 2^63 up: written as longs, converted (a C cast)
      lines[#lines + 1] = format("local %s = dev:tensor(\"long\", %s, gpu.array(\"long\", %s))" ..
                                 ":astype(\"ulong\"):eval()", name, shape_text(s), lua_list(vals))
    else
      lines[#lines + 1] = format("local %s = dev:tensor(%q, %s, gpu.array(%q, %s))", name, t,
                                 shape_text(s), t, lua_list(vals))
    end
    return name
  end

  -- an operand of shape s: an input seen through views (alias_of: the
  -- memory of that input, seen through the views of operand `like`)
  local operand_views = {}
  local function operand(t, s, expand, alias_of, like, given)
    local base, list
    if alias_of then
      base, list = inputs[alias_of].shape, operand_views[like]
    elseif type(given) == "table" then
      base, list = copy(s), {}
    else
      base, list = views(s, int(0, 3), expand)
    end
    local a = input(t, base, alias_of, given)
    local text, vdesc = {a}, {}
    for i, v in ipairs(list) do text[#text + 1] = v.text; vdesc[i] = v.desc end
    local k = #desc.operands + 1
    desc.operands[k] = {input = #inputs, views = vdesc}
    operand_views[k] = list
    lines[#lines + 1] = format("local x%d = %s", k, concat(text))
    return "x" .. k, k
  end

  local slot_names = {}
  local function slot(s)
    if slot_names[s.id] then return slot_names[s.id] end
    local name
    if s.arange then
      local n = S[#S] or 1
      if chance(0.2) then n = 1 end
      local t = s.t
      local r = RANGE[t]
      local first = FLOATS[t] and int(-4, 4) * 0.5 or int(math.max(r[1], -5), 5)
      local step = FLOATS[t] and pick{0.5, -1.5, 2.0} or
                   (SIGNED[t] and pick{1, 2, -1, -3} or pick{1, 3})
      local last = first + (n - 1) * step
      if not FLOATS[t] and (last < r[1] or last > r[2]) then step = 1; last = first + n - 1 end
      local k = #desc.operands + 1
      name = "x" .. k
      desc.operands[k] = {arange = {t, first, last, step}}
      lines[#lines + 1] = format("local %s = dev:arange(%q, %s, %s, %s)", name, t,
                                 lua_number(first), lua_number(last), lua_number(step))
    else
      name = operand(s.t, broadcastable(S, s), true)
    end
    slot_names[s.id] = name
    return name
  end

  -- the Lua expression and description of template node e (ct: the type
  -- its numbers are drawn for)
  local function expr(e, ct)
    if e.op == "leaf" then
      local s = fam.slots[e.slot]
      local name = slot(s)
      return name, {op = "leaf", operand = tonumber(name:sub(2))}
    elseif e.op == "num" then
      local v = e.shift and pick{int(-3, 9), int(-70, 70), math.maxinteger, math.mininteger,
                                 8, 16, 32, 64, -8, -64}
                or number(e.kind, ct or "long")
      local text = lua_number(v)
      if text:sub(1, 1) == "-" then text = "(" .. text .. ")" end   -- -2 ^ x is -(2 ^ x)
      return text, {op = "num", v = v}
    elseif e.op == "self" then
      return e.name, {op = "leaf", operand = e.operand}
    end
    local args, d = {}, {}
    local at = ct
    for i, a in ipairs(e.args) do
      if a.op == "leaf" then at = fam.slots[a.slot].t end
    end
    for i, a in ipairs(e.args) do args[i], d[i] = expr(a, at) end
    local desc_node = {op = e.op, args = d, t = e.t}
    local op = e.op
    local text
    local SYM = {add = "+", sub = "-", mul = "*", div = "/", idiv = "//", mod = "%", pow = "^"}
    local BIT = {bitwise_and = "&", bitwise_or = "|", bitwise_xor = "~", lshift = "<<",
                 rshift = ">>"}
    if BIT[op] and (e.args[1].op == "num" or chance(0.7)) then SYM = BIT end
    if op == "bitwise_not" and chance(0.7) then
      text = format("(~%s)", args[1])
    elseif SYM[op] then
      text = format("(%s %s %s)", args[1], SYM[op], args[2])
    elseif op == "neg" then
      text = chance(0.5) and format("(-%s)", args[1]) or format("%s:neg()", args[1])
    elseif op == "where" then
      text = format("gpu.where(%s, %s, %s)", args[1], args[2], args[3])
    elseif op == "astype" then
      text = format("%s:astype(%q)", args[1], e.t)
    elseif op == "clamp" then
      text = format("%s:clamp(%s, %s)", args[1], args[2], args[3])
    elseif #args == 1 then
      text = format("%s:%s()", args[1], op)
    else
      text = format("%s:%s(%s)", args[1], op, args[2])
    end
    return text, desc_node
  end

  local function dim_arg(n)
    local d = int(1, n)
    if chance(0.3) then d = d - n - 1 end
    return d
  end

  if fam.kind == "ops" then
    ops_program(fam, S, lines, desc, operand, dim_arg)
  elseif fam.kind == "set" then
    local name, k = operand(fam.target, S, false)
    desc.target = k
    local vtext, vdesc
    if fam.number then
      local v = number(fam.number, fam.target)
      if fam.target == "ulong" and chance(0.3) then v = pick{2.0^63, -1.0, 2.0^64 - 2048, 3.0} end
      vtext, vdesc = lua_number(v), {op = "num", v = v}
    else
      local tree = fam.tree
      if fam.self == "self" then
        tree = {op = "add", args = {{op = "self", name = name, operand = k}, tree}}
      elseif fam.self == "t" and #S == 2 and S[1] == S[2] then
        tree = {op = "self", name = name .. ":t()", operand = k}
        vdesc = {op = "leaf", operand = k, t = true}
      elseif fam.self == "alias" and #S == 2 and S[1] == S[2] then
        local alias = operand(fam.target, S, false, desc.operands[k].input, k)
        local ak = tonumber(alias:sub(2))
        tree = {op = "self", name = alias .. ":t()", operand = ak}
        vdesc = {op = "leaf", operand = ak, t = true}
      end
      local d
      vtext, d = expr(tree, fam.target)
      vdesc = vdesc or d
    end
    lines[#lines + 1] = format("local out = %s:set(%s)", name, vtext)
    desc.value = vdesc
  else
    local text, tree = expr(fam.tree)
    desc.tree = tree
    if tree.op == "num" then   -- a tree of one number: on a tensor
      local n = operand(fam.types[1], S, true)
      text = format("(%s * 0 + %s)", n, text)
      desc.tree = {op = "add", args = {{op = "mul", args = {{op = "leaf",
                   operand = tonumber(n:sub(2))}, {op = "num", v = 0}}}, tree}}
    end
    lines[#lines + 1] = "local r = " .. text
    -- a write into an input that r (maybe lazy) reads: r must keep the
    -- values it had (results equal eager evaluation)
    local real = {}
    for k, inp in ipairs(inputs) do if inp.vals then real[#real + 1] = k end end
    if #real > 0 and chance(0.2) then
      local k = pick(real)
      local v = int(0, 3)
      desc.write = {input = k, v = v}
      lines[#lines + 1] = format("a%d:set(%d)", k, v)
    end
    if fam.kind == "elem" then
      lines[#lines + 1] = "local out = r"
    elseif fam.kind == "reduce" then
      local whole = chance(0.4)
      desc.op = fam.op
      if whole then
        lines[#lines + 1] = format("local out = r:%s()", fam.op)
      else
        -- the result's dims are known only to the checker: a dim that may
        -- be out of range is fine (an error it must predict)
        local n = #S
        if n == 0 then n = 1 end
        desc.dim = dim_arg(n)
        desc.keepdim = chance(0.3) or nil
        lines[#lines + 1] = format("local out = r:%s(%d%s)", fam.op, desc.dim,
                                   desc.keepdim and ", true" or "")
      end
    else
      local n = math.max(#S, 1)
      local args = {}
      if chance(0.7) then desc.dim = dim_arg(n); args[#args + 1] = tostring(desc.dim) end
      if fam.kind ~= "cumsum" and chance(0.3) then
        desc.descending = true
        args[#args + 1] = "{descending = true}"
      end
      lines[#lines + 1] = format("local out = r:%s(%s)", fam.kind, concat(args, ", "))
    end
  end
  return concat(lines, "\n"), desc
end

------------------------------------------------------------------ running

-- Every value of tensor x, row-major (ulongs from 2^63 read negative).
local function values(x)
  local a = x:get()
  local t = {}
  for i = 1, #a do t[i] = a[i] end
  return t
end

local result
function result(v, is_tensor)
  if type(v) == "number" then return {number = v} end
  if type(v) == "boolean" then return {boolean = v} end
  if is_tensor(v) then return {t = v.type, shape = v.shape, vals = values(v)} end
  if type(v) == "table" and getmetatable(v) == nil then   -- several results (topk, split)
    local list = {}
    for i = 1, #v do list[i] = result(v[i], is_tensor) end
    return {list = list}
  end
  return {other = tostring(v)}
end

local HEAD = "local gpu, dev = ...\n"
local TAIL = "\nreturn out, {%s}"

function D.run(opts)
  local gpu = require "luagpu"
  local dev = opts.device or gpu.devices()[1]
  local tensor_mt = getmetatable(dev:tensor("int", {}))
  local function is_tensor(v) return type(v) == "table" and getmetatable(v) == tensor_mt end
  local n, s = opts.n or 100, opts.seed or 1
  EXTRA = opts.extra or false
  OPS = opts.ops
  if OPS == nil then OPS = EXTRA end
  DEV = dev
  -- what a program of the ways may change, put back after each
  local cls = class_of(dev)
  local C = gpu.algo.classes[cls]
  local TKS = require("luagpu.tensor.topk").sizes[cls]
  local RWS = require("luagpu.tensor.rows").sizes[cls]
  local saved = {C.sort_onesweep, C.sort_ptx, C.sort_rows_max, TKS.rows_max, RWS.ITEMS}
  local function restore()
    C.sort_onesweep, C.sort_ptx, C.sort_rows_max, TKS.rows_max, RWS.ITEMS = table.unpack(saved)
  end
  seed(s)
  local nfam = opts.families or math.max(1, n // 6)
  local fams = {}
  local first = int(1, #REDUCE)
  for i = 1, nfam do fams[i] = family(i, first) end
  seed(s * 7919 + 17)     -- programs from a stream of their own
  local f = assert(io.open(opts.out, "w"))
  local errors = 0
  for i = 1, n do
    local fam = fams[(i - 1) % nfam + 1]
    local body, desc = program(fam)
    local names = {}
    for k = 1, #desc.inputs do names[k] = "a" .. k end
    local chunk = assert(load(HEAD .. body .. format(TAIL, concat(names, ", ")), "=program", "t"))
    local c0 = os.clock()
    local ok, out, ins = pcall(chunk, gpu, dev)
    if opts.times then desc.cpu = os.clock() - c0 end
    desc.id = i
    desc.lua = body
    if ok then
      local ok2, r = pcall(result, out, is_tensor)
      if ok2 then
        desc.result = r
        desc.post = {}
        for k, a in ipairs(ins) do
          if desc.inputs[k].vals or desc.inputs[k].alias then desc.post[k] = values(a) end
        end
        if opts.times then desc.cpu = os.clock() - c0 end
      else
        desc.error = tostring(r)
        errors = errors + 1
      end
    else
      desc.error = tostring(out)
      errors = errors + 1
    end
    restore()
    f:write(json(desc), "\n")
    if opts.progress and i % 50 == 0 then io.stderr:write(format("%d programs\n", i)) end
  end
  f:close()
  return n, errors
end

return D
