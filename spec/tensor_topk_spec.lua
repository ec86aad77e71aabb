-- x:topk's radix select (luagpu.tensor.topk, kernels/topk.cl) against a
-- stable sort in Lua, on random data: both of its ways (rows in local
-- memory, and the long rows' histogram passes, forced through
-- topk.sizes), every element type, heavy ties, NaNs, smallest and
-- largest, odd row lengths, dims of non-contiguous views, k = 0 and k = L
-- (the sort's way), and the error messages. One comparison against NumPy.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"
local TK = require "luagpu.tensor.topk"

local has_error = support.has_error

local TYPES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
               "double"}
local FLOAT = {float = true, double = true}

-- the order topk promises on host values h (a Lua list): NaN largest,
-- ties by position; ulong compared unsigned
local function before(t, largest)
  return function(a, b)
    local x, y = a[1], b[1]
    local xn, yn = x ~= x, y ~= y
    if xn or yn then
      if xn ~= yn then return xn == largest end
      return a[2] < b[2]
    end
    if x ~= y then
      local less
      if t == "ulong" then less = math.ult(x, y) else less = x < y end
      return less ~= largest
    end
    return a[2] < b[2]
  end
end

-- the first k positions of each row of L elements (row-major list h)
local function reference(t, h, L, k, largest)
  local out = {}
  for r = 0, #h // L - 1 do
    local row = {}
    for j = 1, L do row[j] = {h[r * L + j], j} end
    table.sort(row, before(t, largest))
    for j = 1, k do out[#out + 1] = row[j][2] end
  end
  return out
end

-- random values of t: from {0, 1, 2, 3} (heavy ties) or spread over the
-- type's range; floats with NaNs, -0.0 and infinities
local function values(t, n, ties)
  local h = {}
  for i = 1, n do
    local r = math.random()
    if ties then h[i] = math.random(0, 3)
    elseif FLOAT[t] then
      if r < 0.05 then h[i] = 0 / 0
      elseif r < 0.08 then h[i] = -0.0
      elseif r < 0.1 then h[i] = r < 0.09 and math.huge or -math.huge
      else h[i] = (math.random() - 0.5) * 10 ^ math.random(-30, 30) end
    elseif t == "long" then h[i] = math.random(math.mininteger, math.maxinteger)
    elseif t == "ulong" then h[i] = math.random(0, math.maxinteger)
    else
      local size = ({char = 1, uchar = 1, short = 2, ushort = 2, int = 4, uint = 4})[t]
      local span = 1 << (8 * size)
      local lo = (t:sub(1, 1) == "u") and 0 or -(span // 2)
      h[i] = lo + math.random(0, span - 1)
    end
  end
  return h
end

local function same_value(a, b)
  if a ~= a then return b ~= b end
  return a == b and (a ~= 0 or math.type(a) == "integer" or 1 / a == 1 / b)
end

describe("topk by a radix select", function()
  local dev = gpu.device()
  math.randomseed(3030)
  local cls = dev.type == "cpu" and "cpu" or "gpu"
  local saved = TK.sizes[cls].rows_max
  local selects = 0
  local plain = TK.topk
  before_each(function()
    TK.topk = function(...)
      local v, p = plain(...)
      if v then selects = selects + 1 end
      return v, p
    end
  end)
  after_each(function()
    TK.topk = plain
    TK.sizes[cls].rows_max = saved
  end)

  -- checks x:topk(k, d, largest) of x (values h, rows along d of length
  -- L, moved last: hl) against the reference
  local function check(t, x, hl, L, k, d, largest, what)
    local v, p = x:topk(k, d, {largest = largest})
    if d ~= #x.shape then
      v = v:transpose(d, #x.shape):contiguous()
      p = p:transpose(d, #x.shape):contiguous()
    end
    local want = reference(t, hl, L, k, largest)
    local gv, gp = v:get():totable(), p:get():totable()
    assert.equal("long", p.type)
    assert.equal(#want, #gp)
    for i = 1, #want do
      local r = (i - 1) // k
      if gp[i] ~= want[i] then
        error(("%s: position %d of row %d: want %d, got %s"):format(what, (i - 1) % k + 1,
              r + 1, want[i], tostring(gp[i])))
      end
      local hv = hl[r * L + want[i]]
      if not same_value(hv, gv[i]) then
        error(("%s: value %d of row %d: want %s, got %s"):format(what, (i - 1) % k + 1, r + 1,
              tostring(hv), tostring(gv[i])))
      end
    end
  end

  it("every element type, both ways, rows of odd lengths, ties and NaN", function()
    for _, t in ipairs(TYPES) do
      if t == "double" and not dev.fp64 then
        pending("no fp64 on " .. dev.name)
      else
        for _, case in ipairs {{65, 7, 3}, {1000, 100, 2}} do
          local L, k, nrows = case[1], case[2], case[3]
          for _, ties in ipairs {false, true} do
            local h = values(t, L * nrows, ties)
            local x = dev:tensor(t, {nrows, L}, h)
            h = x:get():totable()                 -- as stored (floats rounded)
            for _, long in ipairs {false, true} do
              TK.sizes[cls].rows_max = long and 0 or saved
              for _, largest in ipairs {true, false} do
                local n = selects
                check(t, x, h, L, k, 2, largest,
                      ("%s {%d, %d} k %d%s%s%s"):format(t, nrows, L, k, ties and " ties" or "",
                      long and " long" or "", largest and "" or " smallest"))
                assert.equal(n + 1, selects)
              end
            end
          end
        end
      end
    end
  end)

  it("short rows (1, 3, 63, 200: sorted whole; several rows a group), k = 0 and k = L", function()
    for _, L in ipairs {1, 3, 63, 200} do
      local h = values("float", L * 5, L == 63)
      local x = dev:tensor("float", {5, L}, h)
      h = x:get():totable()
      for _, k in ipairs {0, L // 2, L} do
        for _, largest in ipairs {true, false} do
          local n = selects
          check("float", x, h, L, k, 2, largest, ("float {5, %d} k %d"):format(L, k))
          assert.equal(n + (2 * k <= L and 1 or 0), selects)
        end
      end
      local v, p = x:topk(0)
      assert.same({5, 0}, v.shape)
      assert.same({5, 0}, p.shape)
      assert.equal("long", p.type)
    end
  end)

  it("long 1-D rows: k of 1, 7, 100 and 1000, ties, NaN", function()
    local n = 1 << 17
    for _, case in ipairs {{"float", false}, {"int", true}, {"double", false}} do
      local t, ties = case[1], case[2]
      if t ~= "double" or dev.fp64 then
        local h = values(t, n, ties)
        local x = dev:tensor(t, {n}, h)
        h = x:get():totable()
        TK.sizes[cls].rows_max = math.min(saved, n // 2)   -- the long way
        for _, k in ipairs {1, 7, 100, 1000} do
          local before_ = selects
          check(t, x, h, n, k, 1, k ~= 7, ("%s %d k %d"):format(t, n, k))
          assert.equal(before_ + 1, selects)
        end
      end
    end
  end)

  it("along dim 1 and a middle dim of non-contiguous views", function()
    for _, long in ipairs {false, true} do
      TK.sizes[cls].rows_max = long and 0 or saved
      local h = values("float", 9 * 301, true)
      local x = dev:tensor("float", {9, 301}, h)
      local hl = x:get():totable()                          -- x:t()'s dim 1 is x's rows
      x = x:t()                                             -- {301, 9}, rows along dim 1
      check("float", x, hl, 301, 20, 1, true, "x:t() dim 1")
      check("float", x, hl, 301, 33, 1, false, "x:t() dim 1 smallest")
      local y = dev:tensor("int", {4, 50, 6}, values("int", 4 * 50 * 6, true))
      local ys = y:slice(3, 2, 5)                           -- {4, 50, 4}, not contiguous
      local yl = ys:permute({1, 3, 2}):contiguous():get():totable()
      check("int", ys, yl, 50, 5, 2, true, "y:slice dim 2")
    end
  end)

  it("as NumPy's stable argsort on a long row", function()
    if not S.need_numpy(assert, pending) then return end
    TK.sizes[cls].rows_max = 0
    local h = values("float", 5000, false)
    local x = dev:tensor("float", {5000}, h)
    local ref = S.numpy([=[
v = x
key = np.where(np.isnan(v), -np.inf, -v)
order = np.argsort(key, kind="stable")
nan_first = np.concatenate([np.flatnonzero(np.isnan(v)), order[~np.isnan(v[order])]])
pos = nan_first[:300]
out = [v[pos], pos + 1]
]=], {x = {type = "float", shape = {5000}, data = x:get():totable()}})
    local v, p = x:topk(300)
    S.check(assert, v, ref[1])
    S.check(assert, p, ref[2])
  end)

  it("raises for bad arguments", function()
    local x = dev:tensor("float", {2, 3})
    has_error("luagpu: tensor:topk: argument #1: expected k from 0 to 3 (the size of dim 2), " ..
              "got 4", x.topk, x, 4)
    has_error("luagpu: tensor:topk: argument #1: expected k from 0 to 2 (the size of dim 1), " ..
              "got -1", x.topk, x, -1, 1)
    has_error("luagpu: tensor:topk: argument #3: option largest: expected a boolean, got 1",
              x.topk, x, 1, {largest = 1})
    has_error("luagpu: tensor:topk: argument #2: dim 3 is out of range (1 to 2, or -2 to -1)",
              x.topk, x, 1, 3)
    has_error("luagpu: tensor:topk: expected a tensor of at least 1 dim, got a 0-d one",
              function() return dev:tensor("float", {}):topk(0) end)
    has_error("luagpu: tensor:topk: argument #2: expected an integer dim, got a table (several " ..
              "dims at once are not supported yet)", x.topk, x, 1, {2})
    -- a class's sizes that are no table (a script set them to nil)
    local sizes = TK.sizes[cls]
    for _, bad in ipairs{false, 5} do
      TK.sizes[cls] = bad
      local ok, e = pcall(x.topk, x, 1)
      TK.sizes[cls] = sizes
      assert.is_false(ok)
      assert.matches("luagpu: tensor:topk: topk.sizes." .. cls .. ": expected a table of sizes, " ..
                     "got " .. tostring(bad), e, 1, true)
    end
    TK.sizes[cls] = nil
    local ok, e = pcall(x.topk, x, 1)
    TK.sizes[cls] = sizes
    assert.is_false(ok)
    assert.matches("topk.sizes." .. cls .. ": expected a table of sizes, got nil", e, 1, true)
  end)
end)
