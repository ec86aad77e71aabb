-- gpu.cat, gpu.stack, x:split, x:chunk, x:squeeze, x:unsqueeze, x:flatten
-- against NumPy on random tensors of random shapes and types (views among
-- the inputs), and their error messages.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"
local T = require "luagpu.core.types"

local has_error = support.has_error

describe("joining and splitting tensors", function()
  local dev = gpu.device()
  math.randomseed(32)

  local function np_of(x)
    return {type = x.type, shape = x.shape, data = x:get():totable()}
  end

  -- a random tensor of type t and shape, sometimes a transposed view
  local function random_tensor(t, shape)
    if #shape == 2 and math.random() < 0.5 then
      local x = dev:tensor(t, {shape[2], shape[1]}, S.random_values(t, shape[1] * shape[2]))
      return x:t()
    end
    return dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
  end

  local function same(ref, x)
    S.check(assert, x, ref)
  end

  it("cat and stack along every dim, promoting types, as NumPy", function()
    if not S.need_numpy(assert, pending) then return end
    for round = 1, 8 do
      local nd = math.random(1, 3)
      local base = S.random_shape(nd, 1, 5)
      local d = math.random(1, nd)
      local count = math.random(1, 4)
      local xs, vars, names = {}, {}, {}
      for i = 1, count do
        local shape = {}
        for k = 1, nd do shape[k] = base[k] end
        shape[d] = math.random(0, 4)
        local t = S.TYPES[math.random(#S.TYPES)]
        xs[i] = random_tensor(t, shape)
        vars["x" .. i], names[i] = np_of(xs[i]), "x" .. i
      end
      local neg = round % 2 == 0 and d - nd - 1 or d
      local got = gpu.cat(xs, neg)
      local want_type = xs[1].type
      for i = 2, count do want_type = T.promote(want_type, xs[i].type) end
      assert.equal(want_type, got.type)              -- luagpu's promotion table
      local cast = {}
      for i, name in ipairs(names) do cast[i] = ("%s.astype(DT[%q])"):format(name, got.type) end
      same(S.numpy(("out = np.concatenate([%s], axis=%d)"):format(table.concat(cast, ","), d - 1),
                   vars), got)
      -- stack: all of the first's shape
      local ys, yvars = {}, {}
      for i = 1, count do
        ys[i] = random_tensor(xs[1].type, base)
        yvars["x" .. i] = np_of(ys[i])
      end
      local sd = math.random(1, nd + 1)
      same(S.numpy(("out = np.stack([%s], axis=%d)"):format(table.concat(names, ","), sd - 1),
                   yvars), gpu.stack(ys, sd))
    end
  end)

  it("cat of many inputs of one type (four to a launch), views among them, as NumPy", function()
    if not S.need_numpy(assert, pending) then return end
    for round = 1, 6 do
      local t = ({"int", "float", "double", "uchar", "long", "short"})[round]
      local cols = math.random(1, 3)
      local count = math.random(5, 11)
      local xs, vars, names = {}, {}, {}
      for i = 1, count do
        local rows = math.random(0, 9)
        local x
        if i % 3 == 0 then          -- a contiguous view at an offset
          local skip = math.random(1, 5)
          x = random_tensor(t, {rows + skip, cols}):slice(1, skip + 1, skip + rows)
        elseif i % 3 == 1 and cols > 1 then   -- not contiguous: a kernel writes it
          x = random_tensor(t, {cols, rows}):t()
        else
          x = random_tensor(t, {rows, cols})
        end
        xs[i] = x
        vars["x" .. i], names[i] = np_of(x), "x" .. i
      end
      same(S.numpy(("out = np.concatenate([%s], axis=0)"):format(table.concat(names, ",")),
                   vars), gpu.cat(xs))
    end
  end)

  it("splits and chunks into views that write their base", function()
    if not S.need_numpy(assert, pending) then return end
    for _ = 1, 10 do
      local shape = S.random_shape(2, 0, 7)
      local x = random_tensor("int", shape)
      local d = math.random(1, 2)
      local size = math.random(1, 4)
      local vars = {x = np_of(x)}
      local len = shape[d]
      local cuts = {}
      for c = size, len - 1, size do cuts[#cuts + 1] = c end
      local ref = S.numpy(("out = np.split(x, [%s], axis=%d)")
                          :format(table.concat(cuts, ","), d - 1), vars)
      local parts = x:split(size, d)
      assert.equal(math.max(1, #ref), #parts)
      for i, r in ipairs(ref) do same(r, parts[i]) end
      local n = math.random(1, 5)
      local chunks = x:chunk(n, d)
      local per = math.max(1, (len + n - 1) // n)
      assert.equal(len == 0 and 1 or (len + per - 1) // per, #chunks)
      local at = 1
      for _, c in ipairs(chunks) do
        same(S.numpy(("out = np.take(x, range(%d, %d), axis=%d)")
                     :format(at - 1, at - 1 + c.shape[d], d - 1), vars), c)
        at = at + c.shape[d]
      end
    end
    local x = dev:arange("int", 10)
    local p = x:split({3, 0, 7})
    assert.same({3, 0, 7}, {#p[1], #p[2], #p[3]})
    p[3]:set(0)
    assert.same({1, 2, 3, 0, 0, 0, 0, 0, 0, 0}, x:totable())
  end)

  it("squeezes, unsqueezes and flattens as NumPy and PyTorch", function()
    if not S.need_numpy(assert, pending) then return end
    local x = random_tensor("float", {1, 3, 1, 2})
    local vars = {x = np_of(x)}
    same(S.numpy("out = np.squeeze(x)", vars), x:squeeze())
    same(S.numpy("out = np.squeeze(x, 2)", vars), x:squeeze(3))
    same(S.numpy("out = np.squeeze(x, 0)", vars), x:squeeze(-4))
    assert.same({1, 3, 1, 2}, x:squeeze(2).shape)                  -- size 3: unchanged
    for d = 1, 5 do
      same(S.numpy(("out = np.expand_dims(x, %d)"):format(d - 1), vars), x:unsqueeze(d))
    end
    same(S.numpy("out = np.expand_dims(x, 4)", vars), x:unsqueeze(-1))
    local m = random_tensor("double", {4, 5}):t()
    same(S.numpy("out = x.ravel()", {x = np_of(m)}), m:flatten())
    local s = dev:tensor("float", {3})
    s:unsqueeze(1)[1][2] = 5                                         -- a view
    assert.same({0, 5, 0}, s:totable())
    assert.same({}, dev:tensor("int", {1, 1}):squeeze().shape)
  end)

  it("flips and walks down with negative steps (views), and rolls, as NumPy", function()
    if not S.need_numpy(assert, pending) then return end
    for _ = 1, 6 do
      local shape = S.random_shape(3, 1, 5)
      local t = S.TYPES[math.random(#S.TYPES)]
      local x = dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
      local vars = {x = np_of(x)}
      local d = math.random(1, 3)
      local len = shape[d]
      local first, step = math.random(1, len), -math.random(1, 3)
      local last = math.random(1, first)
      local idx = {":", ":", ":"}
      idx[d] = ("%d:%s:%d"):format(first - 1, last >= 2 and tostring(last - 2) or "", step)
      local shift = math.random(-7, 7)
      local ref = S.numpy(("out = [np.flip(x, %d), np.flip(x, (0, 2)), x[%s], np.roll(x, %d, %d)," ..
                           " x[::-1, ::-1, ::-1] * 2 + 1, np.roll(x, %d), np.roll(x.T, %d)]")
                          :format(d - 1, table.concat(idx, ","), shift, d - 1, shift, -shift),
                          vars)
      same(ref[1], x:flip(d))
      same(ref[2], x:flip{1, -1})
      same(ref[3], x:slice(d, first, last, step))
      same(ref[4], x:roll(shift, d))
      same(ref[6], x:roll(shift))                   -- no dim: row-major order, shape kept
      same(ref[7], x:permute{3, 2, 1}:roll(-shift))  -- (a view: its own row-major order)
      if t ~= "float" and t ~= "double" then
        same(ref[5], x:flip{1, 2, 3} * 2 + 1)
      end
      same(S.numpy("out = np.ascontiguousarray(x[::-1]).sum(0)", vars), x:flip(1):sum(1))
    end
    -- writing through a reversed view writes the base, reversed
    local y = dev:arange("int", 6)
    y:slice(1, -1, 1, -1):set(dev:arange("int", 6))
    assert.same({6, 5, 4, 3, 2, 1}, y:totable())
    y:flip(1)[1] = 0
    assert.same({6, 5, 4, 3, 2, 0}, y:totable())
    assert.same({6, 4, 2}, y:slice(1, 1, 5, 2):totable())
    assert.same({0, 3}, y:slice(1, -1, 3, -2):totable())
    assert.same({}, y:slice(1, 2, 3, -1):totable())              -- first = last - 1: empty
    assert.same({6, 3, 5, 2}, dev:tensor("int", {2, 2}, {5, 6, 2, 3}):flip(1):flip(2):t():flip(2)
                              :contiguous():reshape{-1}:totable())
    local m = dev:tensor("float", {2, 3}, {1, 2, 3, 4, 5, 6})
    assert.same({{6, 5, 4}, {3, 2, 1}}, m:flip{1, 2}:mm(dev:tensor("float", {3, 3}, {1, 0, 0,
      0, 1, 0, 0, 0, 1})):totable())
    has_error("luagpu: tensor:slice: dim 1: a negative step walks down from first to last: " ..
              "expected 1 <= last <= first + 1 <= 7, got first = 1, last = 3 (negative " ..
              "positions count from the end)", y.slice, y, 1, 1, 3, -1)
    has_error("luagpu: tensor:flip: argument #1: dim 1 appears twice", y.flip, y, {1, -1})
    has_error("luagpu: tensor:roll: argument #1: expected an integer shift, got 0.5",
              y.roll, y, 0.5, 1)
    has_error("luagpu: tensor:roll: argument #2: expected an integer dim, got 1.5",
              y.roll, y, 1, 1.5)
    has_error("luagpu: tensor:roll: argument #2: expected an integer dim, got \"1\"",
              y.roll, y, 1, "1")
    assert.equal(5, dev:tensor("int", {}, 5):roll(3):item())
  end)

  it("reads rows backwards four at a time where they align, as NumPy", function()
    -- (rows of a multiple of 4 reversed: one vector read turned round; other
    -- lengths and offsets take the general kernel: both must agree)
    if not S.need_numpy(assert, pending) then return end
    for _, t in ipairs(S.TYPES) do
      do
        for _, shape in ipairs{{3, 8}, {2, 12}, {5, 4}, {16}, {3, 6}, {9}, {2, 3, 8}} do
          local x = dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
          local y = dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
          local nd = #shape
          local vars = {x = np_of(x), y = np_of(y)}
          local ref = S.numpy(("out = [np.flip(x, %d), np.flip(x, %d) + y, np.flip(x), " ..
                               "np.flip(x, %d)[..., 1:-1] if x.shape[-1] > 2 else x]")
                              :format(nd - 1, nd - 1, nd - 1), vars)
          same(ref[1], x:flip(nd):contiguous())
          same(ref[2], x:flip(nd) + y)
          local all = {}
          for d = 1, nd do all[d] = d end
          same(ref[3], x:flip(all):contiguous())
          if shape[nd] > 2 then
            same(ref[4], x:flip(nd):slice(nd, 2, -2):contiguous())
          end
        end
      end
    end
  end)

  it("tril, triu, repeat_tiles and pad as NumPy", function()
    if not S.need_numpy(assert, pending) then return end
    for _ = 1, 5 do
      local shape = S.random_shape(math.random(2, 3), 0, 5)
      local t = S.TYPES[math.random(#S.TYPES)]
      local x = dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
      if #shape == 2 and math.random() < 0.5 then x = x:t() end
      local nd = #x.shape
      local k = math.random(-3, 3)
      local reps = {}
      for i = 1, math.random(1, 4) do reps[i] = math.random(0, 3) end
      local widths, np_widths = {}, {}
      for i = 1, nd do
        widths[i] = {math.random(0, 2), math.random(0, 2)}
        np_widths[i] = ("(%d,%d)"):format(widths[i][1], widths[i][2])
      end
      local ref = S.numpy(("out = [np.tril(x, %d), np.triu(x, %d), np.tile(x, (%s,)), " ..
                           "np.pad(x, (%s,), constant_values=7), np.pad(x, 1)]")
                          :format(k, k, table.concat(reps, ","), table.concat(np_widths, ",")),
                          {x = np_of(x)})
      same(ref[1], x:tril(k))
      same(ref[2], x:triu(k))
      same(ref[3], x:repeat_tiles(reps))
      same(ref[4], x:pad(widths, 7))
      same(ref[5], x:pad(1))
    end
    local e = dev:tensor("int", {1, 1, 1, 1, 1, 1, 1, 2}, {4, 5})     -- 8 dims: cat per dim
    assert.same({8}, {e:repeat_tiles{1, 1, 1, 1, 1, 1, 1, 4}.shape[8]})
    assert.same({4, 5, 4, 5, 4, 5, 4, 5}, e:repeat_tiles{1, 1, 1, 1, 1, 1, 1, 4}:reshape{-1}:totable())
    has_error("luagpu: tensor:tril: expected a tensor of at least 2 dims, got 1",
              function() return dev:tensor("int", {3}):tril() end)
    has_error("luagpu: tensor:triu: argument #1: expected an integer diagonal, got 0.5",
              function() return e:squeeze():unsqueeze(1):triu(0.5) end)
    has_error("luagpu: tensor:repeat_tiles: argument #1: entry 2: expected an integer >= 0, got -1",
              function() return e:repeat_tiles{1, -1} end)
    has_error("luagpu: tensor:repeat_tiles: argument #1: 9 dims are too many (at most 8)",
              function() return e:repeat_tiles{1, 1, 1, 1, 1, 1, 1, 1, 1} end)
    has_error("luagpu: tensor:pad: argument #1: expected 8 pairs {before, after} (one per " ..
              "dim), got 1", function() return e:pad{{1, 1}} end)
    local m = dev:tensor("uchar", {2, 2})
    has_error("luagpu: tensor:pad: argument #1: entry 2: expected {before, after}, integers " ..
              ">= 0, got {1, -1}", function() return m:pad{{0, 0}, {1, -1}} end)
    has_error("luagpu: tensor:pad: argument #2: 300 does not fit uchar (0 to 255)",
              function() return m:pad(1, 300) end)
    has_error("luagpu: tensor:pad: argument #1: expected a width >= 0 or a list of {before, " ..
              "after}, got 4611686018427387904", function() return m:pad(1 << 62) end)
    has_error("luagpu: tensor:pad: argument #1: entry 1: expected {before, after}, integers " ..
              ">= 0, got {4611686018427387904, 0}", function() return m:pad{{1 << 62, 0}, {0, 0}} end)
    has_error("luagpu: tensor:pad: the result would have more than 2^53 elements",
              function() return m:pad{{1 << 52, 0}, {1 << 52, 0}} end)
  end)

  it("raises at the caller's line for bad lists, shapes and dims", function()
    local a = dev:tensor("int", {2, 3})
    has_error("luagpu: gpu.cat: argument #1: expected a list of tensors, got number",
              gpu.cat, 3)
    has_error("luagpu: gpu.cat: argument #1: expected a list of tensors, got an empty one",
              gpu.cat, {})
    has_error("luagpu: gpu.cat: argument #1: item 2: expected a tensor, got string",
              gpu.cat, {a, "b"})
    has_error("luagpu: gpu.cat: argument #1: item 2 has shape {2, 2}, item 1 {2, 3} (they " ..
              "may differ in dim 1 only)", gpu.cat, {a, dev:tensor("int", {2, 2})})
    has_error("luagpu: gpu.cat: argument #1: item 2 has 1 dims, item 1 2",
              gpu.cat, {a, dev:tensor("int", {3})})
    has_error("luagpu: gpu.cat: argument #2: dim 3 is out of range (1 to 2, or -2 to -1)",
              gpu.cat, {a, a}, 3)
    has_error("luagpu: gpu.stack: argument #1: item 2 has shape {3, 2}, item 1 {2, 3} " ..
              "(stack needs one shape)", gpu.stack, {a, a:t()})
    has_error("luagpu: gpu.stack: argument #2: dim 4 is out of range (1 to 3, or -3 to -1)",
              gpu.stack, {a, a}, 4)
    has_error("luagpu: tensor:split: argument #1: the sizes add up to 4, dim 1 has 2",
              a.split, a, {1, 3})
    has_error("luagpu: tensor:split: argument #1: expected a part size >= 1 or a table of " ..
              "sizes, got 0", a.split, a, 0)
    has_error("luagpu: tensor:split: argument #1: size 2: expected an integer >= 0, got -1",
              a.split, a, {3, -1})
    has_error("luagpu: tensor:chunk: argument #1: expected a number of parts >= 1, got 0.5",
              a.chunk, a, 0.5)
    has_error("luagpu: tensor:unsqueeze: argument #1: dim 4 is out of range (1 to 3, or -3 to -1)",
              a.unsqueeze, a, 4)
    has_error("luagpu: tensor:squeeze: argument #1: dim 3 is out of range (1 to 2, or -2 to -1)",
              a.squeeze, a, 3)
    local big = dev:tensor("int", {1, 1, 1, 1, 1, 1, 1, 1})
    has_error("luagpu: tensor:unsqueeze: the tensor has 8 dims already (at most 8)",
              big.unsqueeze, big, 1)
    -- found by the audit: stack named tensor:unsqueeze; sizes whose sum
    -- wrapped to the dim's length passed split's check and failed in slice
    has_error("luagpu: gpu.stack: argument #1: the tensors have 8 dims already (at most 8)",
              gpu.stack, {big, big})
    has_error("luagpu: tensor:split: argument #1: the sizes add up to 18446744073709551616, " ..
              "dim 1 has 2", a.split, a, {math.maxinteger, math.maxinteger, 4})
    has_error("luagpu: tensor:split: argument #1: the sizes add up to 9223372036854775808, " ..
              "dim 1 has 2", a.split, a, {math.maxinteger, 1})
    -- found by the audit: an empty result was built by tiling (a list of
    -- 2^40 copies of an 8-D tensor: out of memory), a dim past 2^63 wrapped
    -- and tensor:reshape or tensor:expand raised
    local e8 = dev:tensor("float", {0, 1, 1, 1, 1, 1, 1, 1})
    assert.same({0, 1, 1, 1, 1, 1, 1, 1 << 40}, e8:repeat_tiles({1, 1, 1, 1, 1, 1, 1, 1 << 40}).shape)
    assert.same({0}, dev:tensor("int", {0}):repeat_tiles(1 << 62).shape)
    has_error("luagpu: tensor:repeat_tiles: argument #1: dim 2 of the result would be longer " ..
              "than 2^53", a.repeat_tiles, a, {0, math.maxinteger})
    -- 8 dims: tiled as the others (it was a cat of the copies)
    local x8 = dev:arange("int", 6):reshape{2, 1, 1, 1, 1, 1, 1, 3}:transpose(1, 8)
    local t8 = x8:repeat_tiles({2, 1, 1, 1, 1, 1, 3, 2})
    assert.same({6, 1, 1, 1, 1, 1, 3, 4}, t8.shape)
    local h8, hx = t8:reshape{6, 3, 4}:totable(), x8:reshape{3, 2}:totable()
    for i = 1, 6 do
      for j = 1, 3 do
        for k = 1, 4 do assert.equal(hx[(i - 1) % 3 + 1][(k - 1) % 2 + 1], h8[i][j][k]) end
      end
    end
    local b = dev:tensor("int", {2})
    local c = dev:tensor("int", {2})
    c:release()
    has_error("luagpu: gpu.cat: argument #1: item 2: attempt to use a released tensor", gpu.cat,
              {b, c})
  end)
end)
