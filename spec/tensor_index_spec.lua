-- x[i] and x[i] = v: the element of a 1-D tensor (a number), the view
-- x:select(1, i) of an n-D one; negative positions from the end; writes
-- through views; every bad position raises at the caller's line.
local gpu = require "luagpu"
local support = require "support"
local S = require "tensor_support"

local has_error = support.has_error

describe("tensor indexing", function()
  local dev = gpu.device()
  math.randomseed(29)

  it("reads elements of 1-D tensors, views and lazy results as numbers", function()
    for _, t in ipairs(S.TYPES) do
      local n = math.random(1, 40)
      local vals = S.random_values(t, n)
      local x = dev:tensor(t, {n}, vals)
      for i = 1, n do
        assert.equal(S.as(t, vals[i]), x[i])
        assert.equal(S.as(t, vals[i]), x[i - n - 1])          -- -n .. -1
      end
    end
    local x = dev:tensor("double", {6}, {1, 2, 3, 4, 5, 6})
    local rev_odd = x:slice(1, 2, 6, 2)                       -- 2, 4, 6
    assert.same({2, 4, 6}, {rev_odd[1], rev_odd[2], rev_odd[3]})
    assert.equal(11, (x * 2 - 1)[6])                          -- a lazy result
    assert.equal("integer", math.type(dev:arange("long", 3)[2]))
  end)

  it("gives views of n-D tensors that read and write their base", function()
    local rows, cols = 4, 5
    local vals = S.random_values("float", rows * cols)
    local M = dev:tensor("float", {rows, cols}, vals)
    for i = 1, rows do
      local r = M[i]
      assert.same({cols}, r.shape)
      for j = 1, cols do assert.equal(S.as("float", vals[(i - 1) * cols + j]), M[i][j]) end
    end
    local T = M:t()                                           -- columns of M
    for j = 1, cols do assert.equal(M[2][j], T[j][2]) end
    M[2] = 7                                                  -- a number fills a row
    M[-1] = dev:tensor("float", {cols}, {1, 2, 3, 4, 5})      -- a tensor is copied in
    M[1][3] = -2.5
    T[1][3] = 100                                             -- through a transposed view
    local h = M:totable()
    for j = 1, cols do
      assert.equal(7, h[2][j])
      assert.equal(j, h[rows][j])
    end
    assert.equal(-2.5, h[1][3])
    assert.equal(100, h[3][1])
    local C = dev:tensor("int", {2, 3, 4})
    C[2] = dev:tensor("int", {4}, {1, 2, 3, 4})               -- broadcast to {3, 4}
    assert.same({{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}}, C[2]:totable())
    assert.same({{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, C[1]:totable())
  end)

  it("raises for bad positions and values, at the caller's line", function()
    local x = dev:arange("int", 5)
    has_error("luagpu: tensor[i]: position 0 is out of range (1 to 5, or -5 to -1)",
              function() return x[0] end)
    has_error("luagpu: tensor[i]: position -6 is out of range (1 to 5, or -5 to -1)",
              function() return x[-6] end)
    has_error("luagpu: tensor[i]: expected an integer position, got 1.5",
              function() return x[1.5] end)
    has_error("luagpu: tensor[i]: expected an integer position, got nan",
              function() return x[0 / 0] end)
    has_error("luagpu: tensor[i]: expected an integer position, got 9.2233720368548e+18",
              function() return x[2 ^ 63] end)
    has_error("luagpu: tensor[i] =: position 9 is out of range (1 to 5, or -5 to -1)",
              function() x[9] = 1 end)
    has_error("luagpu: tensor:set: argument #1: expected a tensor or a number, got string",
              function() x[1] = "a" end)
    has_error("luagpu: tensor:set: argument #1: 10000000000.0 does not fit int " ..
              "(-2147483648 to 2147483647)", function() x[1] = 1e10 end)
    has_error("luagpu: tensor[i]: a 0-d tensor has no dim to index (x:item() gives its value)",
              function() return x:select(1, 1)[1] end)
    has_error("luagpu: tensor: no field or method 'foo'", function() return x.foo end)
    assert.is_nil(support.errmsg(function() return x.foo end):find("did you mean", 1, true))
    -- a near miss names the closest method or field
    has_error("luagpu: tensor: no field or method 'sumn' (did you mean 'sum'?)",
              function() return x.sumn end)
    has_error("luagpu: tensor: no field or method 'shpe' (did you mean 'shape'?)",
              function() return x.shpe end)
    has_error("luagpu: tensor: cannot set 'foo': a tensor's fields are read-only, and it " ..
              "takes no new ones", function() x.foo = 1 end)
    has_error("luagpu: tensor: field 'shape' is read-only", function() x.shape = {1} end)
    -- what NumPy and PyTorch users try first (the messages named a table
    -- or luagpu.Tensor as a missing field, or were Lua's own)
    has_error("luagpu: tensor: no field or method 'matmul' (in luagpu: x:mm(y))",
              function() return x.matmul end)
    has_error("luagpu: tensor: no field or method 'numel' (in luagpu: #x)",
              function() return x.numel end)
    has_error("luagpu: tensor[i]: a table is no position: index one dim at a time (x[i][j])",
              function() return x[{1, 2}] end)
    has_error("luagpu: tensor[i]: a tensor is no position: x:masked_select(mask)",
              function() return x[x:gt(2)] end)
    has_error("luagpu: tensor[i] =: a tensor is no position: x:masked_select(mask)",
              function() x[x:gt(2)] = 0 end)
    for _, f in ipairs{function() return x > 2 end, function() return x <= x end} do
      has_error("luagpu: tensor: < <= > >= cannot compare tensors (Lua wants one boolean): " ..
                "use x:lt(y), x:le(y), x:gt(y), x:ge(y)", f)
    end
    has_error("luagpu: tensor:sum: self: expected a tensor, got nil (call methods with a " ..
              "colon: x:sum(...))", function() return x.sum() end)
    -- (is_contiguous indexed nil inside object.lua)
    has_error("luagpu: tensor:is_contiguous: self: expected a tensor, got nil (call methods " ..
              "with a colon: x:is_contiguous(...))", function() return x.is_contiguous() end)
    has_error("luagpu: tensor:is_contiguous: argument #1: expected no more arguments, got number",
              function() return x:is_contiguous(1) end)
    x:release()
    has_error("luagpu: tensor[i]: attempt to use a released tensor", function() return x[1] end)
    -- the line is the caller's
    local ok, err = pcall(function() return dev:arange("int", 2)[4] end)
    assert.is_false(ok)
    assert.matches("^spec/tensor_index_spec.lua:%d+: luagpu: tensor%[i%]", err)
  end)
end)
