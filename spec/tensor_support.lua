-- Plain-Lua references for the tensor specs: a reference tensor is
-- {shape = {...}, data = {row-major values}}; values follow C's rules for
-- each element type (integers wrap, float rounds to single precision).
local S = {}

local BITS = {char = 8, uchar = 8, short = 16, ushort = 16, int = 32, uint = 32,
              long = 64, ulong = 64}
local SIGNED = {char = true, short = true, int = true, long = true}
S.INTS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong"}
S.TYPES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double"}

-- v as a value of type t (C's conversion of an integer; float rounding).
function S.as(t, v)
  if t == "float" then return (string.unpack("f", string.pack("f", v))) end
  if t == "double" then return v + 0.0 end
  local bits = BITS[t]
  v = math.tointeger(v) or math.floor(v)
  if bits == 64 then return v end
  local m = 1 << bits
  v = v % m
  if SIGNED[t] and v >= m // 2 then v = v - m end
  return v
end

function S.numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- Calls f(idx) for every multi-index of shape (1-based), row-major.
function S.each(shape, f)
  local n = S.numel(shape)
  local idx = {}
  for i = 1, #shape do idx[i] = 1 end
  for _ = 1, n do
    f(idx)
    for d = #shape, 1, -1 do
      idx[d] = idx[d] + 1
      if idx[d] <= shape[d] then break end
      idx[d] = 1
    end
  end
end

function S.offset(shape, idx)
  local o, s = 0, 1
  for d = #shape, 1, -1 do
    o = o + (idx[d] - 1) * s
    s = s * shape[d]
  end
  return o + 1
end

-- A reference of shape whose element at idx is f(idx).
function S.build(shape, f)
  local data = {}
  S.each(shape, function(idx) data[#data + 1] = f(idx) end)
  return {shape = shape, data = data}
end

function S.at(r, idx) return r.data[S.offset(r.shape, idx)] end

-- The value of r (of shape rs) broadcast to the index idx of shape os.
function S.bat(r, idx, os)
  local shift = #os - #r.shape
  local j = {}
  for i = 1, #r.shape do
    local d = r.shape[i]
    j[i] = d == 1 and 1 or idx[i + shift]
  end
  return S.at(r, j)
end

function S.broadcast_shape(a, b)
  local n = math.max(#a, #b)
  local out = {}
  for i = 1, n do
    local da, db = a[i - (n - #a)] or 1, b[i - (n - #b)] or 1
    out[i] = da == 1 and db or da
  end
  return out
end

-- The elementwise f of references (or numbers) a and b.
function S.zip(a, b, f)
  local as = type(a) == "table" and a.shape or {}
  local bs = type(b) == "table" and b.shape or {}
  local shape = S.broadcast_shape(as, bs)
  return S.build(shape, function(idx)
    local x = type(a) == "table" and S.bat(a, idx, shape) or a
    local y = type(b) == "table" and S.bat(b, idx, shape) or b
    return f(x, y)
  end)
end

function S.map(a, f)
  local data = {}
  for i, v in ipairs(a.data) do data[i] = f(v) end
  return {shape = a.shape, data = data}
end

-- The reference of tensor x (its values read back).
function S.of(x)
  return {shape = x.shape, data = x:get():totable()}
end

-- Random values for type t: small enough that sums stay exact.
function S.random_values(t, n)
  local data = {}
  for i = 1, n do
    if t == "float" or t == "double" then
      data[i] = math.random(-64, 64) / 8
    elseif SIGNED[t] then
      data[i] = math.random(-20, 20)
    else
      data[i] = math.random(0, 40)
    end
  end
  return data
end

-- A random shape of nd dims, sizes from 0 or 1 to hi.
function S.random_shape(nd, lo, hi)
  local s = {}
  for i = 1, nd do s[i] = math.random(lo, hi) end
  return s
end

-- Asserts tensor x equals reference r (shape and values; tol relative for
-- floats).
function S.check(assert, x, r, tol)
  assert.same(r.shape, x.shape)
  local got = x:get():totable()
  assert.equal(#r.data, #got)
  for i, v in ipairs(r.data) do
    local g = got[i]
    if tol and type(v) == "number" and v == v then
      local err = math.abs(g - v)
      if err > tol * math.max(1, math.abs(v)) then
        assert.equal(v, g, "element " .. i)
      end
    elseif v ~= v then
      assert.is_true(g ~= g, "element " .. i .. " should be NaN")
    else
      if g ~= v then assert.equal(v, g, "element " .. i) end
    end
  end
end

------------------------------------------------------------------ NumPy

-- The command of python3 with NumPy, or false.
local python
function S.python()
  if python == nil then
    python = false
    for _, py in ipairs{"python3", "/usr/bin/python3"} do
      if os.execute(py .. ' -c "import numpy" >/dev/null 2>&1') then python = py; break end
    end
  end
  return python
end

-- Whether NumPy can be used; else marks the test pending (a failure under
-- CI, where make test installs python3-numpy).
function S.need_numpy(assert, pending)
  if S.python() then return true end
  assert(not os.getenv("CI"), "python3 with numpy not found under CI")
  pending("python3 with numpy not found: not checked against NumPy")
  return false
end

local PY_PRELUDE = [[
import math, warnings, numpy as np
warnings.simplefilter('ignore'); np.seterr(all='ignore')
DT = dict(char=np.int8, uchar=np.uint8, short=np.int16, ushort=np.uint16, int=np.int32,
          uint=np.uint32, long=np.int64, ulong=np.uint64, float=np.float32, double=np.float64)
def A(t, shape, vals):
    dt = np.dtype(DT[t])
    if dt.kind == 'u': vals = [v % (1 << (8 * dt.itemsize)) for v in vals]
    return np.array(vals, dtype=dt).reshape(shape)
def num(v, kind):
    if kind == 'f':
        v = float(v)
        if v != v: return '(0/0)'
        if v == math.inf: return 'math.huge'
        if v == -math.inf: return '-math.huge'
        return repr(v)
    v = int(v)
    if v >= 1 << 63: v -= 1 << 64
    return 'math.mininteger' if v == -(1 << 63) else str(v)
def lua(v):
    if v is None: return 'nil'
    if isinstance(v, bool): return 'true' if v else 'false'
    if isinstance(v, (list, tuple)): return '{' + ','.join(lua(x) for x in v) + '}'
    a = np.asarray(v)
    if a.dtype.kind == 'b': a = a.astype(np.uint8)
    return '{shape={%s},data={%s}}' % (','.join(str(d) for d in a.shape),
                                       ','.join(num(x, a.dtype.kind) for x in a.ravel()))
]]

local function py_value(t, v)
  if t == "float" or t == "double" then
    if v ~= v then return "math.nan" end
    if v == math.huge then return "math.inf" elseif v == -math.huge then return "-math.inf" end
    if v == 0 and 1 / v < 0 then return "-0.0" end
    return string.format("%.17g", v)
  end
  return string.format("%d", v)
end

-- Runs Python code under NumPy. vars: {name = {type =, shape =, data =}},
-- each bound to its name as an array of that type (ulong data as Lua
-- integers, wrapped). The code sets `out`: an array or number (returned as
-- a reference {shape =, data =}; a NumPy scalar has shape {}), or a list
-- of them (a list of references). Integers come back as Lua integers
-- (uint64 wrapped), floats as floats, NaN and infinities included.
function S.numpy(code, vars)
  local lines = {PY_PRELUDE}
  for name, r in pairs(vars or {}) do
    local vals = {}
    for i, v in ipairs(r.data) do vals[i] = py_value(r.type, v) end
    lines[#lines + 1] = string.format("%s = A(%q, (%s), [%s])", name, r.type,
                                      table.concat(r.shape, ",") .. (#r.shape == 1 and "," or ""),
                                      table.concat(vals, ","))
  end
  lines[#lines + 1] = code
  lines[#lines + 1] = "print('return ' + lua(out))"
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local p = assert(io.popen(assert(S.python(), "no python3 with numpy") .. " " .. path .. " 2>&1"))
  local text = p:read("a")
  local ok = p:close()
  os.remove(path)
  assert(ok, "python failed:\n" .. text)
  return assert(load(text, "=numpy", "t", {math = math}))()
end

return S
