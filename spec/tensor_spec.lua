-- luagpu.tensor: creation, reading, printing and views, against plain-Lua
-- references (spec/tensor_support.lua), and their bad-input messages.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"

local has_error = support.has_error

describe("tensors", function()
  local dev = gpu.device()
  math.randomseed(13)

  describe("creation", function()
    it("is lazily loaded by dev:tensor and gpu.where, and zero-fills", function()
      local x = dev:tensor("float", {2, 3})
      assert.same({2, 3}, x.shape)
      assert.same({3, 1}, x.strides)
      assert.equal("float", x.type)
      assert.equal(2, x.ndim)
      assert.equal(6, #x)
      assert.equal(dev, x.device)
      assert.is_true(x:is_contiguous())
      assert.same({{0, 0, 0}, {0, 0, 0}}, x:totable())
      -- a lazy result's strides, before and after it is realized, and once
      -- released while lazy: row-major
      local y = x * 2 + 1
      assert.same({3, 1}, y.strides)
      local z = x - 1
      z:release()
      assert.same({3, 1}, z.strides)
      y:eval()
      assert.same({3, 1}, y.strides)
      assert.equal("function", type(gpu.where))
      assert.equal(require("luagpu.tensor"), gpu.tensor)
    end)

    it("takes a number, flat and nested tables and host arrays, for every type", function()
      for _, t in ipairs(S.TYPES) do
        local vals = S.random_values(t, 6)
        local flat = dev:tensor(t, {2, 3}, vals)
        local nested = dev:tensor(t, {2, 3}, {{vals[1], vals[2], vals[3]}, {vals[4], vals[5], vals[6]}})
        local arr = dev:tensor(t, {3, 2}, gpu.array(t, vals))
        assert.same(vals, flat:get():totable())
        assert.same(nested:get():totable(), flat:get():totable())
        assert.same(vals, arr:get():totable())
        assert.same({{5, 5}, {5, 5}}, dev:tensor(t, {2, 2}, 5):totable())
      end
      assert.same({1.5, 2.5}, dev:tensor("float", {2}, gpu.array("double", {1.5, 2.5})):totable())
    end)

    it("shares a Buffer without a copy, and 0-d and empty tensors work", function()
      local b = dev:buffer("int", 4, {host = {1, 2, 3, 4}})
      local x = dev:tensor("int", {2, 2}, b)
      b:write{5, 6, 7, 8}
      assert.same({{5, 6}, {7, 8}}, x:totable())
      local v = dev:tensor("int", {2}, b:sub(3, 4))
      assert.same({7, 8}, v:totable())
      assert.equal(2, v.offset)
      local s = dev:tensor("double", {}, {2.5})
      assert.equal(0, s.ndim)
      assert.equal(2.5, s:totable())
      assert.equal(2.5, s:item())
      local e = dev:tensor("float", {3, 0})
      assert.equal(0, #e)
      assert.same({{}, {}, {}}, e:totable())
      assert.same({}, dev:tensor("float", 0):totable())
    end)

    it("arange counts like a Lua for loop", function()
      assert.same({1, 2, 3, 4, 5}, dev:arange("int", 5):totable())
      assert.same({}, dev:arange("int", 0):totable())
      assert.same({0, 0.25, 0.5, 0.75, 1}, dev:arange("float", 0, 1, 0.25):totable())
      assert.same({10, 7, 4, 1}, dev:arange("long", 10, 0, -3):totable())
      assert.same({2, 4}, dev:arange("double", 2, 5, 2):totable())
      -- one element is first, whatever the step (past float's range it was NaN)
      assert.same({0}, dev:arange("float", 0, 1, 1e300):totable())
      assert.same({5}, dev:arange("float", 5, 6, -1e39 * -1):totable())
      assert.same({3}, dev:arange("double", 3, 1, -1e308):totable())
      -- unsigned types step down too (NumPy's arange(5, 0, -2, dtype=uint8))
      for _, t in ipairs {"uchar", "ushort", "uint", "ulong"} do
        assert.same({5, 3, 1}, dev:arange(t, 5, 0, -2):totable())
        assert.same({255, 254, 253}, dev:arange(t, 255, 253, -1):totable())
      end
      assert.same({4000000000, 1000000000}, dev:arange("uint", 4e9, 1e9, -3e9):totable())
      -- a float first far past 2^53 counts the elements the type computes
      -- (in doubles 2^62 to 2^62 by 1 gave 513), as NumPy's
      assert.same({1 << 62}, dev:arange("long", 2.0^62, 2.0^62):totable())
      assert.equal(1, #dev:arange("double", 2.0^62, 2.0^62))
      assert.same({math.mininteger}, dev:arange("ulong", 2.0^63, 2.0^63):totable())
      assert.same({math.mininteger, math.maxinteger, math.maxinteger - 1},
                  dev:arange("ulong", 2.0^63, math.maxinteger - 1, -1):totable())
      -- (2^64 - 1 is 2^64 as a float: clipped to ulong's largest, no wrap to 0)
      assert.same({-2048, -1024}, dev:arange("ulong", 2.0^64 - 2048, 2.0^64 - 1, 1024):totable())
      assert.same({-2048, -1023}, dev:arange("ulong", 2.0^64 - 2048, 2.0^64, 1025):totable())
      assert.same({}, dev:arange("ulong", 2.0^63, 5):totable())
      -- a ulong range reaching 2^63 is counted as ulong, from any first
      -- (Lua's loop stopped at 2^63 - 1: 1 element, not 4098)
      assert.equal(4098, #dev:arange("ulong", (1 << 63) - 1, 2.0^63 + 4096))
      assert.same({(1 << 63) - 2, (1 << 63) - 1, math.mininteger},
                  dev:arange("ulong", (1 << 63) - 2, 2.0^63):totable())
      assert.same({0, math.mininteger}, dev:arange("ulong", 0, 2.0^64, 2.0^63):totable())
      -- one element of an unsigned type stepping down reads back (its
      -- step's size was kept, and -1 fits no uint)
      assert.same({5}, dev:arange("uint", 5, 5, -1):totable())
      assert.same({9}, dev:arange("ushort", 9, 9, -5):totable())
      -- an infinite step with last on the wrong side: none, as Lua's loop
      assert.equal(0, #dev:arange("double", 256, 269, -1 / 0))
      assert.equal(0, #dev:arange("float", 1.5, 0.5, 1 / 0))
      has_error("luagpu: device:arange: argument #4: step -300: uchar steps down by its size, " ..
                "which does not fit (300 does not fit uchar (0 to 255))",
                dev.arange, dev, "uchar", 5, 0, -300)
    end)

    it("raises on bad input, before allocating", function()
      has_error("luagpu: device:tensor: argument #1: expected an element type (char, uchar, short, ushort, int, uint, long, ulong, float or double), got \"flaot\"",
                dev.tensor, dev, "flaot", {2})
      has_error("luagpu: device:tensor: argument #2: size 2: expected an integer >= 0, got 1.5",
                dev.tensor, dev, "float", {2, 1.5})
      has_error("argument #2: size 1: expected an integer >= 0, got nan", dev.tensor, dev, "float", {0 / 0})
      has_error("argument #2: size 1: expected an integer >= 0, got -1", dev.tensor, dev, "float", {-1})
      -- an option put in the shape was once lost ({pinned = true}: a 0-d tensor)
      has_error("luagpu: device:tensor: argument #2: a shape holds only sizes, got the key " ..
                "\"pinned\" (options go in a table of their own)", dev.tensor, dev, "float",
                {pinned = true})
      has_error("argument #2: a shape holds only sizes, got the key 9", dev.tensor, dev, "float",
                {2, 3, [9] = 1})
      has_error("argument #2: shape {4294967296, 4294967296} is too large (at most 2^53 elements)",
                dev.tensor, dev, "float", {2^32, 2^32})
      -- a 0 does not let the other sizes multiply past 2^53 (whatever the
      -- order), and a result's shape made from checked ones is checked too
      for _, shape in ipairs{{0, 2^32, 2^32}, {2^32, 0, 2^32}, {2^27, 2^27, 0}} do
        has_error(("luagpu: device:zeros: argument #2: shape {%d, %d, %d} is too large (at most " ..
                   "2^53 elements, counting the sizes but its 0s)"):format(shape[1], shape[2],
                   shape[3]), dev.zeros, dev, "float", shape)
      end
      has_error("luagpu: tensor:reshape: argument #1: shape {0, 4294967296, 4294967296} is too " ..
                "large", function() return dev:tensor("float", {0}):reshape({0, 2^32, 2^32}) end)
      has_error("luagpu: tensor:reshape: argument #1: shape {4611686018427387904, 4} is too " ..
                "large", function() return dev:tensor("float", {0}):reshape({2^62, 4}) end)
      has_error("luagpu: tensor:expand: shape {0, 4294967296, 4294967296} is too large",
                function() return dev:tensor("float", {0, 1, 1}):expand({0, 2^32, 2^32}) end)
      local thin = dev:zeros("float", {0, 2^32})
      has_error("luagpu: tensor:mm: the result's shape {4294967296, 4294967296} is too large " ..
                "(at most 2^53 elements)", function() return thin:t():mm(thin) end)
      local c = dev:zeros("float", {0, 2^26}):t():mm(dev:zeros("float", {0, 4}))
      assert.same({{2^26, 4}, 2^28}, {c.shape, #c})
      has_error("needs 8796093022208 bytes, more than the device's max_alloc_size",
                dev.tensor, dev, "float", {2^41})
      has_error("argument #2: 9 dimensions are too many (at most 8)", dev.tensor, dev, "float",
                {1, 1, 1, 1, 1, 1, 1, 1, 1})
      has_error("argument #2: expected a shape (a table of sizes), got string", dev.tensor, dev, "float", "x")
      has_error("argument #3: the table has 3 entries, the shape {2, 2} needs 2",
                dev.tensor, dev, "float", {2, 2}, {{1, 2}, {3, 4}, {5, 6}})
      has_error("argument #3: value #2: 300 does not fit uchar (0 to 255)",
                dev.tensor, dev, "uchar", {2}, {1, 300})
      has_error("argument #3: 2.5 is not an integer (int holds integers)",
                dev.tensor, dev, "int", {2}, 2.5)
      has_error("argument #3: expected a buffer of float, got one of int",
                dev.tensor, dev, "float", {2}, dev:buffer("int", 2))
      has_error("argument #3: the shape {3} needs 3 elements, the buffer has 2",
                dev.tensor, dev, "int", {3}, dev:buffer("int", 2))
      -- an empty shape over any buffer (x.buffer of an empty tensor has
      -- elements: no Buffer has none); found by the differential test
      local e = dev:tensor("ulong", {3, 0, 0})
      local same = dev:tensor("ulong", {3, 0, 0}, e.buffer)
      assert.same({3, 0, 0}, same.shape)
      assert.equal(0, #dev:tensor("int", {0}, dev:buffer("int", 2)))
      has_error("argument #3: expected a number, a table, a host array or a buffer, got function",
                dev.tensor, dev, "int", {3}, print)
      has_error("argument #3: expected a number, a table, a host array or a buffer, got luagpu.Event",
                dev.tensor, dev, "int", {3}, dev:buffer("int", 1):fill(0))
      has_error("luagpu: device:arange: argument #4: step must not be 0", dev.arange, dev, "int", 1, 5, 0)
      has_error("luagpu: device:arange: argument #2: 1.5 is not an integer (int holds integers)",
                dev.arange, dev, "int", 1.5, 5)
      has_error("luagpu: device:tensor: self: expected a luagpu.Device, got table", dev.tensor, {}, "int", 1)
      -- a released buffer is named so (it was "expected ... a buffer, got luagpu.Buffer")
      local gone = dev:buffer("int", 3)
      gone:release()
      for _, shape in ipairs{{3}, false} do
        has_error("luagpu: device:tensor: argument #3: attempt to use a released buffer", dev.tensor,
                  dev, "int", shape or nil, gone)
      end
      -- an odd metatable on a shape is not consulted
      local odd = setmetatable({}, {__len = function() return 3 end, __index = function() return 2 end})
      assert.same({}, dev:tensor("float", odd).shape)
      has_error("luagpu: tensor: field 'shape' is read-only", function() dev:tensor("int", 1).shape = {} end)
    end)
  end)

  describe("printing", function()
    it("shows values NumPy-style and elides large tensors", function()
      local x = dev:tensor("int", {2, 3}, {1, 2, 3, 40, 5, 6})
      assert.equal("luagpu.Tensor<int>{2, 3}:\n[[ 1,  2,  3],\n [40,  5,  6]]", tostring(x))
      assert.equal("luagpu.Tensor<float>{2}:\n[0.5,  2.]", tostring(dev:tensor("float", {2}, {0.5, 2})))
      assert.equal("luagpu.Tensor<double>{}: 3.", tostring(dev:tensor("double", {}, 3)))
      local big = tostring(dev:arange("int", 5000):reshape{50, 100})
      assert.matches("[[   1,    2,    3, ...,   98,   99,  100],", big, 1, true)
      assert.matches(" ...,\n", big, 1, true)
      assert.matches("4998, 4999, 5000]]", big, 1, true)
      assert.is_true(#big < 1000)
      -- an empty tensor of many rows is elided too (its 2^53 rows printed for ever)
      local rows = tostring(dev:tensor("float", {2 ^ 53, 0}))
      assert.equal("luagpu.Tensor<float>{9007199254740992, 0}:\n[[],\n [],\n [],\n ...,\n [],\n" ..
                   " [],\n []]", rows)
      -- only what is shown comes to the host: 6 x 6 of a 1000 x 1000 tensor
      local huge = dev:arange("float", 1000000):reshape{1000, 1000}:eval()
      gpu.trace(true)
      local text = tostring(huge)
      local rec = gpu.trace(false)
      local read = 0
      for _, c in ipairs(rec) do if c.kind == "read" then read = read + c.bytes end end
      assert.equal(36 * 4, read)
      -- (shown values more than 1e3 apart: scientific notation, as NumPy's)
      assert.matches("[[1.00000e+00, 2.00000e+00, 3.00000e+00, ..., 9.98000e+02, 9.99000e+02, " ..
                     "1.00000e+03],", text, 1, true)
      assert.matches("9.99999e+05, 1.00000e+06]]", text, 1, true)
    end)

    it("switches floats to scientific notation where NumPy's print does, and shows -0.", function()
      local function shown(t, vals)
        return tostring(dev:tensor(t, {#vals}, vals)):match("\n(.*)")
      end
      assert.equal("[1.e-09, 2.e+00, 3.e+10,    nan]", shown("double", {1e-9, 2, 3e10, 0 / 0}))
      assert.equal("[5.e-01, 1.e-05, 3.e+00]", shown("float", {0.5, 1e-5, 3}))    -- below 1e-4
      assert.equal("[1.5e+00, 2.0e+03, 3.0e+00]", shown("float", {1.5, 2000, 3}))  -- 1e3 apart
      assert.equal("[1.e+08,   -inf]", shown("float", {1e8, -1 / 0}))             -- from 1e8
      assert.equal("[ 1.5, 999.,   0.]", shown("float", {1.5, 999, 0}))             -- fixed
      assert.equal("[-0.,  1.]", shown("float", {-0.0, 1}))
      assert.equal("luagpu.Tensor<double>{}: 1.e+20", tostring(dev:tensor("double", {}, 1e20)))
    end)
  end)

  describe("views", function()
    -- random tensors with their references
    local function random_tensor(t, shape)
      local vals = S.random_values(t, S.numel(shape))
      return dev:tensor(t, shape, vals), {shape = shape, data = vals}
    end

    it("slice (with step), select, transpose, permute, t: no copies, every dim", function()
      for trial = 1, 6 do
        local shape = S.random_shape(3, trial == 1 and 0 or 1, 5)
        local x, r = random_tensor(trial % 2 == 0 and "int" or "float", shape)
        for d = 1, 3 do
          local n = shape[d]
          local first = math.random(1, n + 1)
          local last = math.random(first - 1, n)
          local step = math.random(1, 3)
          local v = x:slice(d, first, last, step)
          assert.equal(x.buffer, v.buffer)
          local vs = {shape[1], shape[2], shape[3]}
          vs[d] = last >= first and (last - first) // step + 1 or 0
          S.check(assert, v, S.build(vs, function(idx)
            local j = {idx[1], idx[2], idx[3]}
            j[d] = first + (idx[d] - 1) * step
            return S.at(r, j)
          end))
          if n > 0 then
            local i = math.random(1, n)
            local s = x:select(d, i)
            local ss = {}
            for k = 1, 3 do if k ~= d then ss[#ss + 1] = shape[k] end end
            S.check(assert, s, S.build(ss, function(idx)
              local j = {}
              local p = 1
              for k = 1, 3 do
                if k == d then j[k] = i else j[k] = idx[p]; p = p + 1 end
              end
              return S.at(r, j)
            end))
          end
        end
        local p = x:permute{3, 1, 2}
        assert.is_false(shape[1] > 1 and shape[3] > 1 and p:is_contiguous())
        S.check(assert, p, S.build({shape[3], shape[1], shape[2]}, function(idx)
          return S.at(r, {idx[2], idx[3], idx[1]})
        end))
        S.check(assert, x:transpose(1, 3), S.build({shape[3], shape[2], shape[1]}, function(idx)
          return S.at(r, {idx[3], idx[2], idx[1]})
        end))
        -- a view of a view, then made contiguous
        local vv = x:transpose(1, 2):slice(3, -1, -1):contiguous()
        assert.is_true(vv:is_contiguous())
        S.check(assert, vv, S.build({shape[2], shape[1], shape[3] > 0 and 1 or 0}, function(idx)
          return S.at(r, {idx[2], idx[1], shape[3]})
        end))
      end
      local m = dev:tensor("int", {2, 3}, {1, 2, 3, 4, 5, 6})
      assert.same({{1, 4}, {2, 5}, {3, 6}}, m:t():totable())
      assert.same({3, 6}, m:select(2, -1):totable())
      assert.same({{1, 3}, {4, 6}}, m:slice(2, 1, -1, 2):totable())
    end)

    -- views of swapped last dims are copied by tiles (kernels/tensor_transpose.cl):
    -- partial tiles, batches (a dim of size 1 among them), offsets, every size
    -- of element
    it("copies views of swapped last dims by tiles, as an element-by-element copy", function()
      local function traced(f)
        dev:finish()
        gpu.trace(true)
        local ok, v = pcall(f)
        local rec = gpu.trace(false)
        assert(ok, v)
        local names = {}
        for _, c in ipairs(rec) do names[#names + 1] = c.name end
        return v, table.concat(names, " ")
      end
      local cases = {{{3, 5}, "float"}, {{33, 70}, "char"}, {{64, 32}, "double"},
                     {{2, 3, 41}, "short"}, {{5, 1, 37, 9}, "long"}, {{1, 40, 2}, "uchar"}}
      for _, case in ipairs(cases) do
        local shape, t = case[1], case[2]
        local n = S.numel(shape)
        local skip = math.random(0, 5)
        local vals = S.random_values(t, n + skip)
        local flat = dev:tensor(t, {n + skip}, vals)
        local base = flat:slice(1, skip + 1, -1):reshape(shape)       -- at an offset
        local nd = #shape
        local v = base:transpose(nd - 1, nd)
        local got, names = traced(function() return v:contiguous() end)
        assert.equal("lg_transpose", names)
        local vshape = {table.unpack(shape)}
        vshape[nd - 1], vshape[nd] = shape[nd], shape[nd - 1]
        S.check(assert, got, S.build(vshape, function(idx)
          local j = {table.unpack(idx)}
          j[nd - 1], j[nd] = idx[nd], idx[nd - 1]
          return vals[skip + S.offset(shape, j)]
        end))
        assert.same(v:totable(), got:totable())
      end
      -- not such a view: the elementwise copy (a step, a permutation of three)
      local x = dev:arange("float", 24):reshape{2, 3, 4}
      local _, names = traced(function() return x:permute{3, 1, 2}:contiguous() end)
      assert.is_nil(names:find("lg_transpose"))
      _, names = traced(function() return x:transpose(2, 3):slice(2, 1, -1, 2):contiguous() end)
      assert.is_nil(names:find("lg_transpose"))
    end)

    it("reshape views where the strides allow, copies otherwise; expand, clone", function()
      local x = dev:arange("int", 24):reshape{2, 3, 4}
      local r = x:reshape{6, -1}
      assert.equal(x.buffer, r.buffer)
      assert.same({6, 4}, r.shape)
      assert.same({{1, 2, 3, 4}, {5, 6, 7, 8}}, r:slice(1, 1, 2):totable())
      -- merging the last two dims of a dim-1 slice is still a view
      local s = x:slice(1, 2, 2)
      assert.equal(x.buffer, s:reshape{12}.buffer)
      -- a transpose cannot be flattened without a copy
      local t = x:transpose(2, 3)
      local flat = t:reshape{24}
      assert.are_not.equal(x.buffer, flat.buffer)
      local expect = {}
      for i = 1, 2 do for k = 1, 4 do for j = 1, 3 do
        expect[#expect + 1] = (i - 1) * 12 + (j - 1) * 4 + k
      end end end
      assert.same(expect, flat:totable())
      local e = dev:tensor("float", {3, 1}, {1, 2, 3}):expand{2, 3, 4}
      assert.same({2, 3, 4}, e.shape)
      assert.same({0, 1, 0}, e.strides)
      assert.same({1, 1, 1, 1}, e:totable()[2][1])
      local c = x:clone()
      assert.are_not.equal(x.buffer, c.buffer)
      assert.same(x:totable(), c:totable())
    end)

    it("set writes through views into the base, broadcasting", function()
      local x = dev:tensor("int", {3, 4})
      x:slice(2, 2, 4, 2):set(7)
      x:select(1, 3):set(dev:tensor("int", {4}, {1, 2, 3, 4}))
      x:slice(1, 1, 1):set(dev:tensor("short", {1}, {-1}))
      assert.same({{-1, -1, -1, -1}, {0, 7, 0, 7}, {1, 2, 3, 4}}, x:totable())
      -- overlapping source and target: as if the source were copied first
      local m = dev:tensor("float", {2, 2}, {1, 2, 3, 4})
      m:set(m:t())
      assert.same({{1, 3}, {2, 4}}, m:totable())
      has_error("luagpu: tensor:set: argument #1: cannot write double values into a int tensor without a loss (int and double promote to double): convert with :astype(\"int\")",
                x.set, x, dev:tensor("double", {4}))
      has_error("luagpu: tensor:set: argument #1: 2.5 is not an integer (int holds integers)", x.set, x, 2.5)
      has_error("luagpu: tensor:set: argument #1: shape {2, 4} does not broadcast to {4}",
                x:select(1, 1).set, x:select(1, 1), dev:tensor("int", {2, 4}))
    end)

    it("raise naming the dim and the range", function()
      local x = dev:tensor("float", {3, 4})
      has_error("luagpu: tensor:slice: argument #1: dim 3 is out of range (1 to 2, or -2 to -1)", x.slice, x, 3, 1, 2)
      has_error("luagpu: tensor:slice: dim 2: expected 1 <= first <= last + 1 <= 4, got first = 2, last = 5",
                x.slice, x, 2, 2, 5)
      has_error("argument #4: step: expected a non-zero integer, got 0", x.slice, x, 1, 1, 2, 0)
      has_error("luagpu: tensor:select: dim 1: position 4 is out of range (1 to 3, or -3 to -1)", x.select, x, 1, 4)
      has_error("luagpu: tensor:select: argument #1: expected an integer dim, got 0.5", x.select, x, 0.5, 1)
      has_error("luagpu: tensor:permute: argument #1: dim 1 appears twice", x.permute, x, {1, 1})
      has_error("luagpu: tensor:permute: argument #1: expected 2 dims (a permutation of 1..2), got 3",
                x.permute, x, {1, 2, 3})
      has_error("luagpu: tensor:reshape: cannot reshape {3, 4} (12 elements) into {5, 2} (10 elements)",
                x.reshape, x, {5, 2})
      has_error("luagpu: tensor:reshape: cannot reshape {3, 4} (12 elements) into {5, -1}", x.reshape, x, {5, -1})
      has_error("luagpu: tensor:expand: cannot expand {3, 4} to {3, 5} (dim 2: 4 vs 5)", x.expand, x, {3, 5})
      has_error("luagpu: tensor:t: expected a tensor of at most 2 dims, got 3", function()
        dev:tensor("float", {1, 1, 1}):t()
      end)
      has_error("luagpu: tensor:select: argument #1: a 0-d tensor has no dims, got 1", function()
        dev:tensor("float", {}):select(1, 1)
      end)
    end)
  end)
end)
