-- x:gather, x:index_select, x:take, x:scatter, x:scatter_add, x:put,
-- x:masked_fill, x:masked_select, x:nonzero against NumPy on random tensors
-- (views among them, positions 1-based with negatives from the end), and
-- positions out of range found on the device.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"

local has_error = support.has_error

describe("indexing by tensors and masks", function()
  local dev = gpu.device()
  math.randomseed(3232)

  local function np_of(x)
    return {type = x.type, shape = x.shape, data = x:get():totable()}
  end
  local function same(ref, x) S.check(assert, x, ref) end

  local function random_tensor(t, shape)
    if #shape == 2 and math.random() < 0.4 then
      return dev:tensor(t, {shape[2], shape[1]}, S.random_values(t, shape[1] * shape[2])):t()
    end
    return dev:tensor(t, shape, S.random_values(t, S.numel(shape)))
  end

  -- random positions in 1..len, some given from the end
  local function positions(it, shape, len)
    local v = {}
    for i = 1, S.numel(shape) do
      local p = math.random(1, len)
      v[i] = math.random() < 0.3 and p - len - 1 or p
    end
    return dev:tensor(it, shape, v)
  end

  it("gathers as take_along_axis, np.take and flat takes", function()
    if not S.need_numpy(assert, pending) then return end
    for _ = 1, 8 do
      local nd = math.random(1, 3)
      local shape = S.random_shape(nd, 1, 5)
      local t = S.TYPES[math.random(#S.TYPES)]
      local x = random_tensor(t, shape)
      local d = math.random(1, nd)
      local ishape = {}
      for k = 1, nd do ishape[k] = k == d and math.random(0, 6) or math.random(1, shape[k]) end
      local it = math.random() < 0.5 and "long" or "int"
      local g = positions(it, ishape, shape[d])
      local sel = positions(it, {math.random(0, 5)}, shape[d])
      local tk = positions("long", S.random_shape(math.random(0, 2), 1, 4), #x)
      local vars = {x = np_of(x), g = np_of(g), s = np_of(sel), k = np_of(tk)}
      local ref = S.numpy(([[
def z(p, n): return np.where(p < 0, p + n, p - 1)
idx = list(np.indices(g.shape)); idx[%d] = z(g, x.shape[%d])
out = [x[tuple(idx)], np.take(x, z(s, x.shape[%d]), %d), np.take(x.ravel(), z(k, x.size))]
]]):format(d - 1, d - 1, d - 1, d - 1), vars)
      same(ref[1], x:gather(d, g))
      same(ref[2], x:index_select(d, sel))
      same(ref[3], x:take(tk))
    end
  end)

  it("gathers along the last dim of long rows (a row a group, read once into local memory) " ..
     "as take_along_axis: views, fewer rows, narrower and wider index rows, rows that do " ..
     "not fit", function()
    if not S.need_numpy(assert, pending) then return end
    -- the longest row of floats the local-memory path takes on this device
    local room = math.min(dev.local_mem_size // 2, 32768) // 4
    local lens = {256, 257, 700, room, room + 1}
    for round = 1, #lens do
      local len = lens[round]
      local nd = round % 3 + 1
      local shape = {}
      for k = 1, nd - 1 do shape[k] = math.random(1, 3) end
      shape[nd] = len
      local t = round % 2 == 0 and "float" or S.TYPES[math.random(#S.TYPES)]
      if t ~= "float" and round == #lens then t = "float" end
      local x = random_tensor(t, shape)
      if round == 2 then               -- a reversed view: a negative stride along the row
        x = random_tensor(t, shape):flip(nd)
      end
      local ishape = {}
      for k = 1, nd - 1 do ishape[k] = math.random(1, shape[k]) end
      ishape[nd] = ({1, 300, len, 2 * len + 3, 255})[round]
      local g = positions(round % 2 == 0 and "int" or "long", ishape, len)
      local vars = {x = np_of(x), g = np_of(g)}
      local ref = S.numpy(([=[
def z(p, n): return np.where(p < 0, p + n, p - 1)
idx = list(np.indices(g.shape)); idx[%d] = z(g, x.shape[%d])
out = [x[tuple(idx)]]
]=]):format(nd - 1, nd - 1), vars)
      same(ref[1], x:gather(nd, g))
      -- index_select along the last dim gathers through the same kernel
      local sel = positions("long", {ishape[nd]}, len)
      ref = S.numpy(([=[
out = [np.take(x, np.where(s < 0, s + x.shape[%d], s - 1), %d)]
]=]):format(nd - 1, nd - 1), {x = np_of(x), s = np_of(sel)})
      same(ref[1], x:index_select(nd, sel))
    end
    -- a position out of range in a long row raises, and the next call works
    local x = dev:arange("float", 3 * 300):reshape{3, 300}
    local v = {}
    for i = 1, 600 do v[i] = 1 end
    v[600] = 301
    has_error("luagpu: tensor:gather: argument #2: position 301 is out of range (1 to 300, " ..
              "or -300 to -1)", x.gather, x, 2, dev:tensor("long", {2, 300}, v))
    v[600] = -300
    local r = x:gather(2, dev:tensor("long", {2, 300}, v)):get()
    assert.same({1, 1, 301, 301, 301}, {r[1], r[300], r[301], r[599], r[600]})
  end)

  it("index_select copies whole rows of contiguous tensors as np.take: vectors of 4 or not, " ..
     "offsets, reversed index tensors", function()
    if not S.need_numpy(assert, pending) then return end
    for round = 1, 8 do
      local t = S.TYPES[math.random(#S.TYPES)]
      -- rows after dim d of 32 to 70 elements (a multiple of 4 or not)
      local shape = {math.random(1, 3), math.random(1, 6), round % 2 == 0 and 36 or math.random(32, 70)}
      local base = dev:tensor(t, {shape[1] + 1, shape[2], shape[3]},
                              S.random_values(t, (shape[1] + 1) * shape[2] * shape[3]))
      local x = round % 3 == 0 and base:select(1, 2):unsqueeze(1) or base:slice(1, 1, shape[1])
      local d = round % 3 == 0 and 2 or math.random(1, 2)
      local sel = positions(round % 2 == 0 and "int" or "long", {math.random(0, 7)}, x.shape[d])
      if round % 4 == 1 then sel = sel:flip(1) end
      local vars = {x = np_of(x), s = np_of(sel)}
      local ref = S.numpy(([[
def z(p, n): return np.where(p < 0, p + n, p - 1)
out = [np.take(x, z(s, x.shape[%d]), %d)]
]]):format(d - 1, d - 1), vars)
      same(ref[1], x:index_select(d, sel))
    end
    -- many work-groups, each work-item's two units in different groups'
    -- spans, rows of vectors of 4 and not, the last group's half full
    for _, cols in ipairs {64, 33} do
      local x = dev:tensor("float", {300, cols}, S.random_values("float", 300 * cols))
      local sel = positions("int", {203}, 300)
      local ref = S.numpy("out = [np.take(x, np.where(s < 0, s + 300, s - 1), 0)]",
                          {x = np_of(x), s = np_of(sel)})
      same(ref[1], x:index_select(1, sel))
    end
    local x = dev:tensor("float", {3, 40})
    has_error("luagpu: tensor:index_select: argument #2: position -4 is out of range (1 to 3, " ..
              "or -3 to -1)", x.index_select, x, 1, dev:tensor("long", {2}, {1, -4}))
    -- a dim of size 0 is named as such (it read "(1 to 0, or -0 to -1)")
    local e = dev:tensor("float", {0, 3})
    has_error("luagpu: tensor:index_select: argument #2: position 1 is out of range (the dim " ..
              "has size 0)", e.index_select, e, 1, dev:tensor("long", {1}, {1}))
  end)

  it("scatters, adds and puts as put_along_axis, np.add.at and np.put", function()
    if not S.need_numpy(assert, pending) then return end
    for _ = 1, 8 do
      local shape = S.random_shape(2, 1, 5)
      local t = ({"int", "uint", "long", "ulong", "float", "double"})[math.random(6)]
      local x = random_tensor(t, shape)
      local d = math.random(1, 2)
      -- distinct positions per line along d for scatter (one writer each)
      local ishape = {shape[1], shape[2]}
      ishape[d] = math.random(1, shape[d])
      local vals = {}
      S.each(ishape, function(idx)
        vals[#vals + 1] = idx[d]                       -- a permutation would do; this is one
      end)
      local g = dev:tensor("long", ishape, vals):flip(d)
      local src = random_tensor(t, ishape)
      local many = positions("int", ishape, shape[d])  -- repeats: scatter_add adds them all
      local flatpos, pv = {}, {}
      for i = 1, #x do flatpos[i] = i end
      for i = #x, 2, -1 do local j = math.random(i); flatpos[i], flatpos[j] = flatpos[j], flatpos[i] end
      local np = math.random(0, #x)
      for i = np + 1, #x do flatpos[i] = nil end
      for i = 1, np do pv[i] = S.random_values(t, 1)[1] end
      local putpos = dev:tensor("long", {np}, flatpos)
      local putv = dev:tensor(t, {np}, pv)
      local vars = {x = np_of(x), g = np_of(g), src = np_of(src), m = np_of(many),
                    p = np_of(putpos), v = np_of(putv)}
      local ref = S.numpy(([[
def z(p, n): return np.where(p < 0, p + n, p - 1)
a = x.copy(); np.put_along_axis(a, z(g, x.shape[%d]), src, %d)
b = x.copy()
idx = [np.indices(m.shape)[k] for k in range(2)]
idx[%d] = z(m, x.shape[%d])
np.add.at(b, tuple(idx), src)
c = x.copy(); np.put(c, p - 1, v)
out = [a, b, c]
]]):format(d - 1, d - 1, d - 1, d - 1), vars)
      same(ref[1], x:scatter(d, g, src))
      same(ref[2], x:scatter_add(d, many, src))
      local y = x:clone()
      assert.equal(y, y:put(putpos, putv))
      same(ref[3], y)
    end
    -- a number as the source; put through a transposed view writes its base
    local z = dev:tensor("int", {5})
    assert.same({3, 1, 0, 0, 2},
                z:scatter_add(1, dev:tensor("long", {6}, {1, 1, 1, 2, 5, -1}), 1):totable())
    local base = dev:tensor("int", {2, 3}, {1, 2, 3, 4, 5, 6})
    base:t():put(dev:tensor("long", {2}, {1, 6}), dev:tensor("int", {2}, {-1, -6}))
    assert.same({{-1, 2, 3}, {4, 5, -6}}, base:totable())
  end)

  it("fills, selects and finds by masks as np.where, x[mask] and argwhere", function()
    if not S.need_numpy(assert, pending) then return end
    for _ = 1, 6 do
      local shape = S.random_shape(math.random(1, 3), 0, 5)
      local t = S.TYPES[math.random(#S.TYPES)]
      local x = random_tensor(t, shape)
      local mask = dev:tensor("uchar", shape, S.random_values("uchar", S.numel(shape))):gt(120)
      local row = #shape >= 1 and dev:tensor("int", {shape[#shape]},
                                             S.random_values("int", shape[#shape])) or nil
      local vars = {x = np_of(x), m = np_of(mask)}
      if row then vars.r = np_of(row) end
      local ref = S.numpy([[
out = [np.where(m != 0, 7, x).astype(x.dtype), x[m != 0], np.argwhere(x != 0) + 1,
       x[np.broadcast_to(r != 0, x.shape)] if 'r' in globals() else x.ravel()]
]], vars)
      same(ref[1], x:masked_fill(mask, 7))
      same(ref[2], x:masked_select(mask))
      same(ref[3], x:nonzero())
      if row then same(ref[4], x:masked_select(row)) end
    end
    assert.same({0, 2}, dev:tensor("int", {2, 3}):nonzero().shape)
    assert.same({0}, dev:tensor("float", {0}):masked_select(dev:tensor("uchar", {0})).shape)
  end)

  -- masked_select, nonzero and unique select tile by tile (a count per
  -- tile, their scan, then each tile's kept elements; on GPUs a group of
  -- algo.classes.X.scan_local work-items stages a tile in local memory, on
  -- CPUs a work-item walks one): lengths at and past the tiles' edges,
  -- masks kept nowhere, everywhere and at random, of several types, both
  -- forms, and groups of 4 work-items (many tiles), against what Lua finds.
  it("selects by masks and finds runs across many tiles, at the tiles' edges", function()
    local algo = gpu.algo
    local compact = require "luagpu.algo.compact"
    local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
    local saved_local, saved_staged, saved_lb = cls.scan_local, cls.scan_staged, cls.scan_lookback
    local function check_all(tile)
      for _, n in ipairs {1, tile - 1, tile, tile + 1, 2 * tile, 3 * tile + 5, 9 * tile - 3} do
        for _, density in ipairs {0, 1, 0.03, 0.5, 0.97} do
          local hx, hm = {}, {}
          for i = 1, n do
            hx[i] = math.random(-1000, 1000) / 8
            hm[i] = math.random() < density and (i % 3 == 0 and 0 / 0 or i % 5 - 7) or 0
          end
          local x = dev:tensor("float", {n}, hx)
          local m = dev:tensor("double", {n}, hm)       -- NaN is not 0: kept
          local want, at = {}, {}
          for i = 1, n do
            if hm[i] ~= 0 then want[#want + 1] = hx[i]; at[#at + 1] = {i} end
          end
          assert.same(want, x:masked_select(m):totable())
          assert.same(want, x:masked_select(m:ne(0)):totable())
          local nz = m:nonzero()
          assert.same({#at, 1}, nz.shape)
          if #at > 0 then assert.same(at, nz:totable()) end
        end
        -- runs of equal values, some across tiles; -0.0 equals 0.0; NaNs one run, last
        local hv = {}
        for i = 1, n do
          local r = math.random()
          hv[i] = r < 0.1 and 0 / 0 or r < 0.2 and -0.0 or r < 0.3 and 0.0 or
                  math.random(1, 1 + n // 50)
        end
        local v, c = dev:tensor("float", {n}, hv):unique()
        local count, nans = {}, 0
        for i = 1, n do
          if hv[i] ~= hv[i] then nans = nans + 1 else count[hv[i]] = (count[hv[i]] or 0) + 1 end
        end
        local keys = {}
        for k in pairs(count) do keys[#keys + 1] = k end
        table.sort(keys)
        local wv, wc = {}, {}
        for i, k in ipairs(keys) do wv[i], wc[i] = k, count[k] end
        local gv, gc = v:totable(), c:totable()
        if nans > 0 then
          assert.is_true(gv[#gv] ~= gv[#gv])
          assert.equal(nans, gc[#gc])
          gv[#gv], gc[#gc] = nil, nil
        end
        assert.same(wv, gv)
        assert.same(wc, gc)
      end
    end
    local ok, err = pcall(function()
      check_all(compact.tile_size(dev, "float"))
      cls.scan_staged = not saved_staged
      check_all(compact.tile_size(dev, "float"))
      cls.scan_staged, cls.scan_local = true, 4
      local tile = compact.tile_size(dev, "float")
      assert.equal(64, tile)
      check_all(tile)
      -- unique's staged select placing its tiles by the look-back (GPUs'
      -- form), in groups of 4 and of the class's own size
      cls.scan_lookback = true
      check_all(tile)
      cls.scan_local = saved_local
      check_all(compact.tile_size(dev, "float"))
    end)
    cls.scan_local, cls.scan_staged, cls.scan_lookback = saved_local, saved_staged, saved_lb
    assert(ok, err)
  end)

  it("raises for positions out of range, found on the device, and bad arguments", function()
    local x = dev:arange("float", 12):reshape{3, 4}
    has_error("luagpu: tensor:gather: argument #2: position 4 is out of range (1 to 3, or -3 " ..
              "to -1)", x.gather, x, 1, dev:tensor("long", {1, 4}, {1, 2, 3, 4}))
    has_error("luagpu: tensor:gather: argument #2: position -4 is out of range (1 to 3, or -3 " ..
              "to -1)", x.gather, x, 1, dev:tensor("int", {1, 1}, {-4}))
    has_error("luagpu: tensor:index_select: argument #2: position 0 is out of range (1 to 4, " ..
              "or -4 to -1)", x.index_select, x, 2, dev:tensor("long", {2}, {1, 0}))
    has_error("luagpu: tensor:take: argument #1: position 13 is out of range (1 to 12, or -12 " ..
              "to -1)", x.take, x, dev:tensor("long", {1}, {13}))
    has_error("luagpu: tensor:scatter: argument #2: position 9 is out of range (1 to 4, or -4 " ..
              "to -1)", x.scatter, x, 2, dev:tensor("long", {1, 1}, {9}), 0)
    has_error("luagpu: tensor:put: argument #1: position -13 is out of range (1 to 12, or -12 " ..
              "to -1)", x.put, x, dev:tensor("long", {1}, {-13}), 0)
    -- the flag is put back: the next call with good positions works
    assert.same({{1}}, x:gather(1, dev:tensor("long", {1, 1}, {1})):totable())
    has_error("luagpu: tensor:gather: argument #2: expected an index tensor of integers (long " ..
              "or int), got one of float", x.gather, x, 1, x)
    has_error("luagpu: tensor:take: argument #1: expected an index tensor (of integers), got " ..
              "table", x.take, x, {1, 2})
    has_error("luagpu: tensor:gather: argument #2: the index tensor has 1 dims, the tensor 2",
              x.gather, x, 1, dev:tensor("long", {2}, {1, 1}))
    has_error("luagpu: tensor:gather: argument #2: the index tensor's shape {1, 5} exceeds the " ..
              "tensor's {3, 4} in dim 2", x.gather, x, 1, dev:tensor("long", {1, 5}))
    has_error("luagpu: tensor:index_select: argument #2: expected a 1-D index tensor, got " ..
              "shape {1, 1}", x.index_select, x, 1, dev:tensor("long", {1, 1}, {1}))
    has_error("luagpu: tensor:scatter: argument #3: the source's shape {1, 1} does not cover " ..
              "the index tensor's {2, 2}", x.scatter, x, 1, dev:tensor("long", {2, 2}, 1),
              dev:tensor("float", {1, 1}))
    has_error("luagpu: tensor:scatter: argument #3: cannot write double values into a float " ..
              "tensor without a loss: convert with :astype(\"float\")", x.scatter, x, 1,
              dev:tensor("long", {1, 1}, 1), dev:tensor("double", {1, 1}))
    local c = dev:tensor("char", {3})
    has_error("luagpu: tensor:scatter_add: adds with atomics of 32 or 64 bits: int, uint, " ..
              "long, ulong, float or double, got char (convert with :astype)",
              c.scatter_add, c, 1, dev:tensor("long", {1}, 1), 1)
    has_error("luagpu: tensor:put: argument #2: expected 2 values (one per position), got 3",
              x.put, x, dev:tensor("long", {2}, 1), dev:tensor("float", {3}))
    local n = dev:tensor("int", {2})
    has_error("luagpu: tensor:put: argument #2: 1099511627776.0 does not fit int",
              n.put, n, dev:tensor("long", {1}, 1), 2 ^ 40)
    has_error("luagpu: tensor:masked_fill: argument #2: expected a number, got string",
              x.masked_fill, x, x:gt(1), "a")
    has_error("luagpu: tensor:masked_select: argument #1: the mask's shape {3} does not " ..
              "broadcast to {3, 4}", x.masked_select, x, dev:tensor("uchar", {3}))
    has_error("luagpu: tensor:masked_select: argument #1: expected a mask tensor, got nil",
              x.masked_select, x)
    -- found by the audit: ulong positions from 2^63, converted to long,
    -- counted from the end (2^64 - 1 took the last element)
    local far = dev:tensor("long", {2}, {2, -1}):astype("ulong")
    local v = dev:arange("float", 6)
    has_error("luagpu: tensor:take: argument #1: position 18446744073709551615 is out of range " ..
              "(no position reaches 2^63)", v.take, v, far)
    has_error("luagpu: tensor:index_select: argument #2: position 18446744073709551615 is out " ..
              "of range (no position reaches 2^63)", v.index_select, v, 1, far)
    has_error("luagpu: tensor:scatter_add: argument #2: position 18446744073709551615 is out " ..
              "of range (no position reaches 2^63)", v.scatter_add, v, 1, far, 1)
    has_error("luagpu: tensor:put: argument #1: position 9223372036854775808 is out of range " ..
              "(no position reaches 2^63)", v.put, v, dev:full("ulong", {1}, 2.0^63), 0)
    assert.same({1, 2, 3, 4, 5, 6}, v:totable())
    has_error("luagpu: tensor:take: argument #1: position 7 is out of range (1 to 6, or -6 to " ..
              "-1)", v.take, v, dev:tensor("ulong", {1}, 7))
    assert.same({6, 2}, v:take(dev:tensor("ulong", {2}, {6, 2})):totable())
  end)
  -- positions a call found good are not read again while their buffer's
  -- version stands (b.version); every way of writing them brings the check
  -- back, as does another view of them or a shorter dim
  it("checks positions again after any write to them, another view or a shorter dim", function()
    local X = dev:arange("float", 160):reshape{4, 40}       -- whole rows (lg_index_rows)
    local P = dev:tensor("long", {4}, {1, 2, 3, 4})
    local function good() P:set(dev:tensor("long", {4}, {1, 2, 3, 4})) end
    local whole = X:totable()
    local function reads(f)            -- the blocking reads f makes
      dev:finish()
      gpu.trace(true)
      local ok, err = pcall(f)
      local rec = gpu.trace(false)
      assert(ok, err)
      local n = 0
      for _, c in ipairs(rec) do if c.name == "read" then n = n + 1 end end
      return n
    end
    assert.equal(1, reads(function() X:index_select(1, P) end))
    assert.equal(0, reads(function() X:index_select(1, P) end))
    assert.equal(0, reads(function() X:gather(1, P:reshape{4, 1}) end))   -- same positions
    for _ = 1, 3 do assert.same(whole, X:index_select(1, P):totable()) end
    local writes = {
      {9, function() P:put(dev:tensor("long", {1}, {2}), 9) end},
      {0, function() P[3] = 0 end},
      {7, function() P.buffer:write(gpu.array("long", {1, 2, 7, 4})):wait() end},
      {-5, function() P.buffer:fill(-5):wait() end},
      {6, function() dev:tensor("long", {4}, 6).buffer:copy_to(P.buffer):wait() end},
      {8, function()
        local b = P.buffer
        local a = b:map("write")
        for i = 1, 4 do a[i] = 8 end
        b:unmap(a):wait()
      end},
      {11, function()
        dev:build("__kernel void w(__global long *p) { p[1] = 11; }").w(P):run({1})
      end},
    }
    for i, w in ipairs(writes) do
      assert.same(whole, X:index_select(1, P):totable())   -- checked
      assert.same(whole, X:index_select(1, P):totable())   -- known good: no read
      w[2]()
      local ok, err = pcall(X.index_select, X, 1, P)
      assert.is_false(ok, "write " .. i .. " was not seen")
      assert.matches("position " .. w[1] .. " is out of range", tostring(err), 1, true)
      good()
    end
    -- the same storage read through another view: the first four, then all
    X = dev:arange("float", 20):reshape{4, 5}             -- short rows (lg_gather)
    local Q = dev:tensor("long", {5}, {1, 2, 3, 4, 9})
    assert.same({4, 5}, X:index_select(1, Q:slice(1, 1, 4)).shape)
    assert.same({4, 5}, X:index_select(1, Q:slice(1, 1, 4)).shape)
    has_error("luagpu: tensor:index_select: argument #2: position 9 is out of range (1 to 4, " ..
              "or -4 to -1)", X.index_select, X, 1, Q)
    -- good for a longer dim, not for a shorter one
    local R = dev:tensor("long", {2}, {1, 8})
    local Y = dev:arange("float", 16):reshape{8, 2}
    assert.same({{1, 2}, {15, 16}}, Y:index_select(1, R):totable())
    assert.same({{1, 2}, {15, 16}}, Y:index_select(1, R):totable())
    has_error("luagpu: tensor:index_select: argument #2: position 8 is out of range (1 to 4, " ..
              "or -4 to -1)", X.index_select, X, 1, R)
    has_error("luagpu: tensor:gather: argument #2: position 8 is out of range (1 to 4, " ..
              "or -4 to -1)", X.gather, X, 1, R:reshape{2, 1})
    has_error("luagpu: tensor:scatter_add: argument #2: position 8 is out of range (1 to 5, " ..
              "or -5 to -1)", X.scatter_add, X, 2, R:reshape{1, 2}, 1)
  end)
  -- found by the differential test (issue 32): the number went through
  -- float, rounding the long values it did not replace
  it("masked_fill keeps 64-bit values exactly, with a float number too", function()
    local big = {6415447163641963532, -7337043266644462082, math.maxinteger - 1,
                 math.mininteger + 1}
    local x = dev:tensor("long", {4}, big)
    local m = dev:tensor("uchar", {4}, {0, 0, 0, 1})
    local r = x:masked_fill(m, -0.0):get()
    assert.same({big[1], big[2], big[3], 0}, {r[1], r[2], r[3], r[4]})
    r = x:masked_fill(m, 5):get()
    assert.same({big[1], big[2], big[3], 5}, {r[1], r[2], r[3], r[4]})
    local u = dev:tensor("long", {2}, {-1, 3}):astype("ulong")
    r = u:masked_fill(dev:tensor("uchar", {2}, {0, 1}), 2.0^63):astype("long"):get()
    assert.same({-1, math.mininteger}, {r[1], r[2]})
    local f = dev:tensor("double", {2}, {0.1, 0.2})
    r = f:masked_fill(dev:tensor("uchar", {2}, {1, 0}), 3):get()
    assert.same({3.0, 0.2}, {r[1], r[2]})
  end)

  -- found by the audit: put read its positions and values from the memory
  -- it was writing (y:put(y, y) gave {3, 2, 3} for {3, 2, 1})
  it("put reads positions and values that are the tensor itself as np.put does", function()
    if not S.need_numpy(assert, pending) then return end
    for _ = 1, 6 do
      local n = math.random(2, 40)
      local perm = dev:randperm(n)
      local vars = {p = np_of(perm)}
      local y = dev:arange("long", n):add(0):eval()
      y:put(perm, perm:slice(1, -1, 1, -1):contiguous():add(0):eval())    -- (a value copy)
      local ref = S.numpy([[
a = p.copy(); np.put(a, a - 1, a)
b = np.arange(1, len(p) + 1); np.put(b, p - 1, b[::-1].copy())
c = p.copy(); np.put(c, np.arange(len(p)), c[::-1].copy())
out = [a, b, c]
]], vars)
      local a = perm:clone()
      assert.equal(a, a:put(a, a))                        -- positions and values: a
      same(ref[1], a)
      local b = dev:arange("long", n)
      b:put(perm, b:slice(1, -1, 1, -1))                   -- values: a view of b
      same(ref[2], b)
      local c = perm:clone()
      c:put(dev:arange("long", n), c:flip(1):contiguous())
      same(ref[3], c)
      local d = perm:clone()
      local pos = dev:arange("long", n)
      d:put(pos, d:slice(1, 1, n))                         -- values: d's own elements
      same({shape = {n}, data = perm:get():totable()}, d)
    end
    -- an expanded view: its places are one element; put wrote a copy back
    -- over it and left {0}, whichever write landed last
    local one = dev:tensor("int", {1})
    local e = one:expand{4}
    local err = support.errmsg(function() local r = e:put(dev:tensor("long", {1}, 2), 5); return r end)
    assert.equal("spec/tensor_gather_spec.lua:" .. debug.getinfo(1, "l").currentline - 1 ..
                 ": luagpu: tensor:put: the tensor's elements share memory (dim 1 has stride " ..
                 "0, as x:expand makes): put into the tensor it expands, or a :clone()", err)
    assert.same({0}, one:totable())
    assert.same({0, 5, 0, 0}, e:clone():put(dev:tensor("long", {1}, 2), 5):totable())
  end)

  it("masked_fill names itself when the mask does not broadcast", function()
    local x = dev:tensor("float", {2, 3})
    has_error("luagpu: tensor:masked_fill: argument #1: the mask's shape {4, 2, 3} does not " ..
              "broadcast to {2, 3}", x.masked_fill, x, dev:tensor("uchar", {4, 2, 3}), 1)
    has_error("luagpu: tensor:masked_fill: argument #1: the mask's shape {2, 2} does not " ..
              "broadcast to {2, 3}", x.masked_fill, x, dev:tensor("uchar", {2, 2}), 1)
  end)
  -- it named gpu.where, argument #3
  it("masked_fill names itself for a mask on another device", function()
    local out, code = support.two_devices([[
      local gpu = require "luagpu"
      local d1, d2 = table.unpack(gpu.devices())
      local x, m = d1:tensor("float", {3}, 1), d2:tensor("uchar", {3}, 1)
      print(select(2, pcall(x.masked_fill, x, m, 0)))]])
    assert.equal(0, code, out)
    assert.matches("^luagpu: tensor:masked_fill: argument #1: the tensors are on different " ..
                   "devices %(.*%)\n$", out)
  end)
end)
