-- Ports of PyOpenCL's own array tests (test/test_array.py: test_concatenate,
-- test_stack, test_reverse, test_fancy_fill, test_fancy_indexing,
-- test_take_put, test_skip_slicing, test_newaxis, test_squeeze,
-- test_any_all, test_bitwise; test_algorithm.py's test_unique) to luagpu's names: what a PyOpenCL user checks first, with
-- references computed in Lua on random data (positions 1-based here).
local gpu = require "luagpu"

describe("PyOpenCL's array tests, ported", function()
  local dev = gpu.device()
  math.randomseed(20091)

  local function rand(shape, seed) return dev:rand("float", shape, seed) end

  it("test_concatenate: (5, 15, 20), (4, ...), (3, ...) along dim 1", function()
    local a, b, c = rand({5, 15, 20}, 1), rand({4, 15, 20}, 2), rand({3, 15, 20}, 3)
    local cat = gpu.cat({a, b, c})
    assert.same({12, 15, 20}, cat.shape)
    local ha, hb, hc, hcat = a:get(), b:get(), c:get(), cat:get()
    local per = 15 * 20
    for i = 1, 5 * per do assert.equal(ha[i], hcat[i]) end
    for i = 1, 4 * per do assert.equal(hb[i], hcat[5 * per + i]) end
    for i = 1, 3 * per do assert.equal(hc[i], hcat[9 * per + i]) end
  end)

  it("test_stack: along a new first and last dim", function()
    local a, b = rand({3, 4}, 4), rand({3, 4}, 5)
    local s1, s3 = gpu.stack({a, b}), gpu.stack({a, b}, 3)
    assert.same({2, 3, 4}, s1.shape)
    assert.same({3, 4, 2}, s3.shape)
    local ha, hb = a:totable(), b:totable()
    for i = 1, 3 do
      for j = 1, 4 do
        assert.equal(ha[i][j], s1[1][i][j]); assert.equal(hb[i][j], s1[2][i][j])
        assert.equal(ha[i][j], s3[i][j][1]); assert.equal(hb[i][j], s3[i][j][2])
      end
    end
  end)

  it("test_reverse: x[::-1] of 20000 floats, a view", function()
    local x = rand({20000}, 6)
    local r = x:slice(1, -1, 1, -1)
    local hx, hr = x:get(), r:get()
    for i = 1, 20000 do assert.equal(hx[20001 - i], hr[i]) end
    assert.same(r:totable(), x:flip(1):totable())
    assert.same({-1}, r.strides)
  end)

  it("test_fancy_fill: dest[idx] = src with one source value", function()
    local dest = dev:tensor("int", {4})
    dest:put(dev:arange("int", 3), 8)                  -- idx = 1, 2, 3
    assert.same({8, 8, 8, 0}, dest:totable())
  end)

  it("test_fancy_indexing: 2^20 + 2^18 + 22 shuffled positions, put then take", function()
    local n = (1 << 20) + (1 << 18) + 22
    local perm = gpu.array("int", n)
    for i = 1, n do perm[i] = i end
    for i = n, 2, -1 do
      local j = math.random(i)
      perm[i], perm[j] = perm[j], perm[i]
    end
    local idx = dev:tensor("int", {n}, perm)
    local src = dev:arange("int", 20000, 20000 + n - 1)
    local dest = dev:tensor("int", {n})
    dest:put(idx, src)                                   -- dest[idx] = src
    local hd = dest:get()
    for i = 1, n, 997 do assert.equal(20000 + i - 1, hd[perm[i]]) end
    local taken = src:take(idx):get()                    -- src[idx]
    for i = 1, n, 991 do assert.equal(20000 + perm[i] - 1, taken[i]) end
  end)

  it("test_take_put: fields read through a map and written to places", function()
    for _, fields in ipairs {5, 17, 333} do
      local size = 8
      local buf = dev:arange("float", fields * size)
      local dest_places = dev:tensor("long", {8}, {1, 2, 3, 4, 33, 34, 35, 36})
      local read_map = dev:tensor("long", {8}, {8, 7, 6, 5, 4, 3, 2, 1})
      local out = dev:tensor("float", {fields, 96})
      for f = 1, fields do
        local field = buf:slice(1, (f - 1) * size + 1, f * size)
        out[f]:put(dest_places, field:take(read_map))
      end
      local h = out:totable()
      for f = 1, fields, math.max(1, fields // 7) do
        for k, p in ipairs {1, 2, 3, 4, 33, 34, 35, 36} do
          assert.equal((f - 1) * size + (9 - k), h[f][p])
        end
        assert.equal(0, h[f][5])
      end
    end
  end)

  it("test_skip_slicing: a[::3] of a 4 x 4 arange", function()
    local a = dev:arange("int", 0, 15):reshape{4, 4}
    local b = a:slice(1, 1, 4, 3)
    assert.same({2, 4}, b.shape)
    assert.same({12, 13, 14, 15}, b[2]:totable())
  end)

  it("test_newaxis: a[:, newaxis] keeps the strides of the dims longer than 1", function()
    local a = rand({10, 20, 30}, 7)
    local b = a:unsqueeze(2)
    assert.same({10, 1, 20, 30}, b.shape)
    assert.equal(a.strides[1], b.strides[1])
    assert.equal(a.strides[2], b.strides[3])
    assert.equal(a.strides[3], b.strides[4])
  end)

  it("test_squeeze: slices of length 1 squeezed, contiguous or not as NumPy says", function()
    local a = dev:rand("double", {40, 2, 5, 100}, 8)
    local s = a:slice(1, 1, 1):slice(2, 2, 2)
    assert.same({1, 1, 5, 100}, s.shape)
    assert.is_true(s:is_contiguous())
    local q = s:squeeze()
    assert.same({5, 100}, q.shape)
    assert.is_true(q:is_contiguous())
    assert.same(s:reshape{-1}:totable(), q:reshape{-1}:totable())
    local t = a:slice(3, 3, 3)
    assert.same({40, 2, 1, 100}, t.shape)
    assert.is_false(t:is_contiguous())
    local tq = t:squeeze()
    assert.same({40, 2, 100}, tq.shape)
    assert.is_false(tq:is_contiguous())
    assert.same(t:reshape{-1}:totable(), tq:reshape{-1}:totable())
  end)

  it("test_any_all: 20000 chars, one set, then all", function()
    local a = dev:tensor("char", {20000})
    assert.is_false(a:all())
    assert.is_false(a:any())
    a[15214] = 1                                         -- PyOpenCL's a[15213], 0-based
    assert.is_false(a:all())
    assert.is_true(a:any())
    a:set(1)
    assert.is_true(a:all())
    assert.is_true(a:any())
  end)

  -- Lua's own operators on integers, wrapped to type t's width as C's
  -- casts do (two's complement)
  local BITS = {char = 8, short = 16, int = 32, long = 64}
  local function wrap(t, v)
    local b = BITS[t]
    if b == 64 then return v end
    v = v & ((1 << b) - 1)
    return v >= 1 << (b - 1) and v - (1 << b) or v
  end
  local WIDER = {char = 1, short = 2, int = 3, long = 4}

  it("test_bitwise: & | ~ and unary ~ for every pair of long, int, short, char", function()
    local types = {"long", "int", "short", "char"}
    local lo, hi = -(1 << 31), (1 << 31) - 1
    for _, at in ipairs(types) do
      for _, bt in ipairs(types) do
        local n = 16
        local ha, hb = {}, {}
        for i = 1, n do
          ha[i] = wrap(at, math.random(lo, hi)); hb[i] = wrap(bt, math.random(lo, hi))
        end
        local a, b = dev:tensor(at, {n}, ha), dev:tensor(bt, {n}, hb)
        local s = wrap(at, math.random(lo, hi))            -- a scalar that fits a's type
        local rt = WIDER[at] >= WIDER[bt] and at or bt     -- the promoted (signed) type
        local ops = {{"band", function(x, y) return x & y end},
                     {"bor", function(x, y) return x | y end},
                     {"bxor", function(x, y) return x ~ y end}}
        for _, op in ipairs(ops) do
          local f = op[2]
          local ab, as, sa = f(a, b), f(a, s), f(s, a)
          assert.equal(rt, ab.type)
          assert.equal(at, as.type)
          local gab, gas, gsa = ab:get(), as:get(), sa:get()
          for i = 1, n do
            assert.equal(f(ha[i], hb[i]), gab[i])
            assert.equal(f(ha[i], s), gas[i])
            assert.equal(f(s, ha[i]), gsa[i])
          end
          if rt == at then                                 -- in place: a:set(a op b)
            local c = a:clone()
            c:set(f(c, b))
            local gc = c:get()
            for i = 1, n do assert.equal(f(ha[i], hb[i]), gc[i]) end
          end
        end
        local na = (~a):get()
        for i = 1, n do assert.equal(~ha[i], na[i]) end
      end
    end
  end)

  it("test_unique (test_algorithm.py): np.unique of sorted ints in 0..999, many counts", function()
    for _, n in ipairs({10, 2^8 - 1, 2^8, 2^8 + 1, 2^10 - 5, 2^10, 2^10 + 5, 2^12 - 5, 2^12,
                        2^12 + 5, 2^20 - 2^18, 2^20 - 2^18 + 5, 2^20 + 1}) do
      n = math.tointeger(n)
      local h = {}
      for i = 1, n do h[i] = math.random(0, 999) end
      local a = dev:tensor("int", {n}, h)
      table.sort(h)
      local want, counts = {}, {}
      for i = 1, n do
        if i == 1 or h[i] ~= h[i - 1] then want[#want + 1] = h[i]; counts[#want] = 0 end
        counts[#want] = counts[#want] + 1
      end
      local u, c = a:sort():unique()
      assert.same(want, u:totable())
      assert.same(counts, c:totable())
    end
  end)
end)
