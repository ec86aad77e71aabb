-- luagpu.matmul's BLAS options (trans_a, trans_b, alpha, beta, batched
-- products, matrix-vector products) against products computed in Lua on
-- random data, in float and double, with views at offsets as operands;
-- tensors' x:mm and x:bmm on transposed views (read in place, no copy);
-- and every bad-input message.
local gpu = require "luagpu"
local matmul = require "luagpu.matmul"
local support = require "support"

local has_error = support.has_error
local dev = gpu.device()
local doubles = dev.fp64

local function random_table(n)
  local t = {}
  for i = 1, n do t[i] = math.random() * 2 - 1 end
  return t
end

-- op(A) * op(B) for the product z of a batch (tables of all the matrices:
-- A holds ca of them, B cb; 1 means one shared), alpha * that + beta * C.
-- A is stored m x k (k x m with ta), B k x n (n x k with tb).
local function reference(o)
  local m, n, k, nb = o.m, o.n, o.k, o.batch or 1
  local out = {}
  for z = 0, nb - 1 do
    local a0 = (o.ca or nb) > 1 and z * m * k or 0
    local b0 = (o.cb or nb) > 1 and z * k * n or 0
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local s = 0
        for x = 0, k - 1 do
          local av = o.ta and o.a[a0 + x * m + i + 1] or o.a[a0 + i * k + x + 1]
          local bv = o.tb and o.b[b0 + j * k + x + 1] or o.b[b0 + x * n + j + 1]
          s = s + av * bv
        end
        local at = z * m * n + i * n + j + 1
        local v = (o.alpha or 1) * s
        if o.beta and o.beta ~= 0 then v = v + o.beta * o.c[at] end
        out[at] = v
      end
    end
  end
  return out
end

-- The largest difference over the largest magnitude of want (or over 1).
local function rel_error(got, want, first)
  first = first or 1
  local diff, scale = 0, 0
  for i = 1, #want do
    local g = got[first + i - 1]
    if g ~= g then return math.huge end
    diff = math.max(diff, math.abs(g - want[i]))
    scale = math.max(scale, math.abs(want[i]))
  end
  return diff / math.max(scale, 1)
end

local TOL = {float = 1e-5, double = 1e-12}

-- A buffer of t holding values (shaped, or a view at a random offset of a
-- larger 1-D buffer when shape is false): returns it and where its values
-- start in what :get() of its root returns.
local function operand(t, values, shape)
  if shape then return dev:buffer(t, shape, {host = values}) end
  local pad = math.random(0, 5)
  local host = {}
  for i = 1, pad do host[i] = 7 end
  for i, v in ipairs(values) do host[pad + i] = v end
  host[#host + 1] = 7
  local root = dev:buffer(t, #host, {host = host})
  return root:sub(pad + 1, pad + #values)
end

-- Runs one product with options o ({m, n, k, t, ta, tb, alpha, beta, batch,
-- ca, cb, views}) and checks it against the reference.
local function check(o)
  local t, m, n, k, nb = o.t or "float", o.m, o.n, o.k, o.batch
  local ca, cb = o.ca or nb or 1, o.cb or nb or 1
  o.a, o.b = random_table(ca * m * k), random_table(cb * k * n)
  o.c = random_table((nb or 1) * m * n)
  local function shape(count, r, c)
    if o.views then return false end
    if nb and (count > 1 or o.shape3) then return {count, r, c} end
    return {r, c}
  end
  local A = operand(t, o.a, shape(ca, o.ta and k or m, o.ta and m or k))
  local B = operand(t, o.b, shape(cb, o.tb and n or k, o.tb and k or n))
  local C
  if o.beta or o.views or o.give_c then
    C = operand(t, o.c, shape(nb or 1, m, n))
  end
  local opts = {trans_a = o.ta, trans_b = o.tb, alpha = o.alpha, beta = o.beta}
  if o.views then opts.m, opts.n, opts.k, opts.batch = m, n, k, nb end
  local out, ev, events = matmul(A, B, C, opts)
  ev:wait()
  if C then assert.equal(C, out) end
  local want = reference(o)
  local err = rel_error(out:get(), want)
  assert.is_true(err < TOL[t], ("%s %dx%dx%d batch %s ta %s tb %s alpha %s beta %s: " ..
                 "relative error %g"):format(t, m, n, k, tostring(nb), tostring(o.ta),
                 tostring(o.tb), tostring(o.alpha), tostring(o.beta), err))
  return out, events
end

local TYPES = doubles and {"float", "double"} or {"float"}
-- MATMUL_SEED=n varies the random data and sizes (a loop over seeds hunts flakes)
local SEED = tonumber(os.getenv("MATMUL_SEED")) or 15

describe("matmul's BLAS options", function()
  math.randomseed(SEED)

  -- first in this file (its own process): nothing of matmul's is built yet
  it("counts the BLAS kernels' builds in matmul.programs_built", function()
    local blas = require "luagpu.matmul.blas"
    local before, blas_before = matmul.programs_built, blas.programs_built
    check{m = 5, n = 7, k = 3, ta = true, tb = true, alpha = 2}
    check{m = 1, n = 1, k = 9, ta = true}           -- a matrix-vector product
    local built, total = blas.programs_built - blas_before, matmul.programs_built - before
    assert.is_true(built >= 2, "transposes and the matrix-vector product built")
    assert.is_true(total >= built, "matmul.programs_built counts them")
    check{m = 5, n = 7, k = 3, ta = true, tb = true, alpha = 2}
    check{m = 1, n = 1, k = 9, ta = true}
    assert.equal(before + total, matmul.programs_built)   -- built once, reused
  end)

  it("trans_a and trans_b at edge sizes, in float and double, 2-D and views", function()
    local sizes = {{1, 1, 1}, {37, 41, 43}, {17, 5, 64}, {64, 33, 9}, {2, 70, 3}}
    for _, t in ipairs(TYPES) do
      for _, s in ipairs(sizes) do
        for _, ta in ipairs{false, true} do
          for _, tb in ipairs{false, true} do
            check{t = t, m = s[1], n = s[2], k = s[3], ta = ta, tb = tb}
            check{t = t, m = s[1], n = s[2], k = s[3], ta = ta, tb = tb, views = true}
          end
        end
      end
    end
  end)

  it("trans at random sizes, alpha and beta with them", function()
    for _ = 1, 12 do
      local m, n, k = math.random(2, 50), math.random(2, 50), math.random(1, 50)
      check{m = m, n = n, k = k, ta = math.random() < 0.5, tb = math.random() < 0.5,
            alpha = math.random() * 4 - 2, beta = math.random() < 0.5 and 0 or math.random(),
            give_c = true, views = math.random() < 0.5}
    end
  end)

  it("alpha and beta: C = alpha * A * B + beta * C", function()
    for _, t in ipairs(TYPES) do
      check{t = t, m = 23, n = 19, k = 31, alpha = 2.5}
      check{t = t, m = 23, n = 19, k = 31, alpha = -1, beta = 0.5}
      check{t = t, m = 23, n = 19, k = 31, beta = 1}
      check{t = t, m = 23, n = 19, k = 31, alpha = 0, beta = 3}
      check{t = t, m = 8, n = 8, k = 8, alpha = 1.5, beta = -2, views = true}
    end
  end)

  it("beta = 0 never reads C: NaNs in it do not propagate", function()
    for _, s in ipairs{{20, 30, 10}, {20, 1, 10}, {1, 30, 10}} do
      local m, n, k = s[1], s[2], s[3]
      local a, b = random_table(m * k), random_table(k * n)
      local A = dev:buffer("float", {m, k}, {host = a})
      local B = dev:buffer("float", {k, n}, {host = b})
      for _, opts in ipairs{{beta = 0}, {alpha = 2, beta = 0}, {alpha = 0}, {alpha = 0, beta = 0},
                            {trans_a = false, beta = 0.0}} do
        local C = dev:buffer("float", {m, n})
        C:fill(0 / 0)
        matmul(A, B, C, opts)
        local got = C:get()
        local want = reference{m = m, n = n, k = k, a = a, b = b, alpha = opts.alpha}
        assert.is_true(rel_error(got, want) < 1e-5)
      end
      -- K = 0: C = beta * C
      local C = dev:buffer("float", {m, n}, {host = random_table(m * n)})
      local before = C:get()
      matmul(dev:buffer("float", {m, 0}), dev:buffer("float", {0, n}), C, {beta = 2})
      local got = C:get()
      for i = 1, m * n do assert.near(2 * before[i], got[i], 1e-6) end
      C:fill(0 / 0)
      matmul(dev:buffer("float", {m, 0}), dev:buffer("float", {0, n}), C, {beta = 0})
      assert.equal(0, C:get()[1])
    end
  end)

  it("sizes of 0 with trans, alpha, beta and batches", function()
    -- M = 0, N = 0: an empty C; K = 0: C = beta * C
    local C = matmul(dev:buffer("float", {5, 0}), dev:buffer("float", {5, 3}), {trans_a = true})
    assert.same({0, 3}, C.shape)
    C = matmul(dev:buffer("float", {2, 4}), dev:buffer("float", {0, 4}), {trans_b = true})
    assert.same({2, 0}, C.shape)
    C = dev:buffer("float", {2, 3}, {host = {1, 2, 3, 4, 5, 6}})
    matmul(dev:buffer("float", {0, 2}), dev:buffer("float", {3, 0}), C,
           {trans_a = true, trans_b = true, alpha = 5, beta = -1})
    assert.same({-1, -2, -3, -4, -5, -6}, C:get():totable())
    C = dev:buffer("float", {3, 2, 3}, {host = random_table(18)})
    C:fill(0 / 0)
    matmul(dev:buffer("float", {3, 2, 0}), dev:buffer("float", {0, 3}), C)
    assert.same(("0 "):rep(18), (("%g "):rep(18)):format(table.unpack(C:get():totable())))
    check{m = 4, n = 5, k = 1, batch = 2, ta = true, tb = true, beta = 2}
  end)

  it("a beta of 0 with a NaN in A still gives NaN (A is read); alpha = 0 does not read A", function()
    local A = dev:buffer("float", {2, 2}, {host = {0 / 0, 1, 1, 1}})
    local B = dev:buffer("float", {2, 2}, {host = {1, 1, 1, 1}})
    local C = matmul(A, B, {alpha = 2})
    local got = C:get()
    assert.is_true(got[1] ~= got[1])
    local C2 = dev:buffer("float", {2, 2}, {host = {1, 2, 3, 4}})
    matmul(A, B, C2, {alpha = 0, beta = 1})
    assert.same({1, 2, 3, 4}, C2:get():totable())
  end)

  it("batched products: 3-D buffers, one launch for the batch", function()
    for _, t in ipairs(TYPES) do
      for _, s in ipairs{{1, 1, 1, 3}, {19, 23, 17, 5}, {32, 32, 32, 4}, {7, 1, 9, 3},
                         {1, 9, 7, 2}} do
        local _, events = check{t = t, m = s[1], n = s[2], k = s[3], batch = s[4]}
        assert.equal(1, #events)
      end
    end
    -- a batch of 1 keeps its 3-D shape
    local out = check{m = 5, n = 6, k = 7, batch = 1, shape3 = true}
    assert.same({1, 5, 6}, out.shape)
    out = check{m = 5, n = 6, k = 7, batch = 3}
    assert.same({3, 5, 6}, out.shape)
  end)

  it("batched products with trans, alpha, beta, broadcasting and 1-D operands", function()
    for _, t in ipairs(TYPES) do
      for _, o in ipairs{
        {m = 13, n = 11, k = 9, batch = 4, ta = true},
        {m = 13, n = 11, k = 9, batch = 4, tb = true, alpha = 2},
        {m = 13, n = 11, k = 9, batch = 4, ta = true, tb = true, beta = 0.5},
        {m = 13, n = 11, k = 9, batch = 4, cb = 1},                    -- B 2-D, shared
        {m = 13, n = 11, k = 9, batch = 4, ca = 1, ta = true},         -- A 2-D, shared
        {m = 13, n = 11, k = 9, batch = 3, views = true},              -- 1-D with opts.batch
        {m = 13, n = 11, k = 9, batch = 3, views = true, cb = 1, tb = true, beta = -1},
        {m = 6, n = 1, k = 40, batch = 3},                             -- batched gemv
        {m = 40, n = 40, k = 40, batch = 2, alpha = 0.5, beta = 2},
      } do
        o.t = t
        check(o)
      end
    end
    -- a 3-D B of one matrix is shared
    local a, b = random_table(2 * 3 * 4), random_table(4 * 5)
    local C = matmul(dev:buffer("float", {2, 3, 4}, {host = a}),
                     dev:buffer("float", {1, 4, 5}, {host = b}))
    assert.same({2, 3, 5}, C.shape)
    assert.is_true(rel_error(C:get(), reference{m = 3, n = 5, k = 4, batch = 2, cb = 1, a = a,
                                                b = b}) < 1e-5)
    -- a batch of 0 makes an empty C
    local E = matmul(dev:buffer("float", {0, 3, 4}), dev:buffer("float", {0, 4, 5}))
    assert.same({0, 3, 5}, E.shape)
    -- the variant may be forced to naive
    check{m = 9, n = 10, k = 11, batch = 3, views = true}
    local nb, m, n, k = 3, 9, 10, 11
    local a2, b2 = random_table(nb * m * k), random_table(nb * k * n)
    local C2 = matmul(dev:buffer("float", {nb, m, k}, {host = a2}),
                      dev:buffer("float", {nb, k, n}, {host = b2}), {variant = "naive"})
    assert.is_true(rel_error(C2:get(), reference{m = m, n = n, k = k, batch = nb, a = a2,
                                                 b = b2}) < 1e-5)
  end)

  it("matrix-vector products run one kernel, both ways, at any offset", function()
    for _, t in ipairs(TYPES) do
      for _, s in ipairs{{1, 1}, {300, 1000}, {37, 41}, {64, 4096}, {5, 3}} do
        local m, k = s[1], s[2]
        for _, ta in ipairs{false, true} do
          for _, views in ipairs{false, true} do
            local _, events = check{t = t, m = m, n = 1, k = k, ta = ta, views = views}
            assert.is_true(#events <= 2)
            -- x^T B: M = 1, the roles swapped
            _, events = check{t = t, m = 1, n = m, k = k, tb = ta, views = views}
            assert.is_true(#events <= 2)
            check{t = t, m = m, n = 1, k = k, ta = ta, views = views, alpha = 2, beta = -0.5}
          end
        end
      end
    end
    -- B a 1-D buffer of K elements, or {K, 1}; C made {M, 1}
    local a, x = random_table(20 * 30), random_table(30)
    local A = dev:buffer("float", {20, 30}, {host = a})
    for _, X in ipairs{dev:buffer("float", 30, {host = x}),
                       dev:buffer("float", {30, 1}, {host = x})} do
      local y, _, events = matmul(A, X)
      assert.same({20, 1}, y.shape)
      assert.equal(1, #events)
      assert.is_true(rel_error(y:get(), reference{m = 20, n = 1, k = 30, a = a, b = x}) < 1e-5)
    end
    -- called again without options: the same result (the remembered steps)
    local X = dev:buffer("float", 30, {host = x})
    local y = dev:buffer("float", 20)
    for _ = 1, 3 do
      y:fill(0 / 0)
      matmul(A, X, y)
      assert.is_true(rel_error(y:get(), reference{m = 20, n = 1, k = 30, a = a, b = x}) < 1e-5)
    end
  end)

  it("a call repeated with the same buffers and options reuses its steps, rightly", function()
    local m, n, k = 12, 10, 8
    local a, b = random_table(m * k), random_table(k * n)
    local A = dev:buffer("float", {k, m}, {host = a})
    local B = dev:buffer("float", {n, k}, {host = b})
    local C = dev:buffer("float", {m, n})
    for round = 1, 3 do
      local c0 = random_table(m * n)
      C:write(c0)
      local opts = {trans_a = true, trans_b = true, alpha = 0.1 * round, beta = 1 / 3}
      matmul(A, B, C, opts)
      local want = reference{m = m, n = n, k = k, a = a, b = b, c = c0, ta = true, tb = true,
                             alpha = opts.alpha, beta = opts.beta}
      assert.is_true(rel_error(C:get(), want) < 1e-5)
      local c1 = C:get():totable()
      matmul(A, B, C, opts)           -- the remembered steps, on the new C
      want = reference{m = m, n = n, k = k, a = a, b = b, c = c1, ta = true, tb = true,
                       alpha = opts.alpha, beta = opts.beta}
      assert.is_true(rel_error(C:get(), want) < 1e-5)
      -- a larger product in between grows the scratch buffers: the steps are made again
      check{m = 40 * round, n = 30, k = 20 * round, ta = true, tb = true, beta = 1}
    end
  end)

  it("a big transposed gemv splits K and adds the slices", function()
    check{m = 1000, n = 1, k = 3000, ta = true, alpha = 2, beta = 0.25}
    check{m = 999, n = 1, k = 3001, ta = true, views = true}
  end)

  it("raises on bad options and shapes, naming the transposed shape", function()
    local A = dev:buffer("float", {3, 5})
    local B = dev:buffer("float", {4, 2})
    has_error("luagpu: matmul: argument #2: B has 4 rows, but A^T has 3 columns",
              matmul, A, B, {trans_a = true})
    has_error("luagpu: matmul: argument #2: B^T has 2 rows, but A has 5 columns",
              matmul, A, B, {trans_b = true})
    has_error("luagpu: matmul: argument #3: C has 4 rows, but A^T has 5 rows",
              matmul, A, dev:buffer("float", {3, 2}), dev:buffer("float", {4, 2}),
              {trans_a = true})
    has_error("luagpu: matmul: argument #1: expected 8 elements (A^T is 2 x 4), got 10",
              matmul, dev:buffer("float", 10), dev:buffer("float", {4, 3}),
              {trans_a = true, m = 2})
    has_error("luagpu: matmul: argument #3: option trans_a: expected a boolean, got 1",
              matmul, A, B, {trans_a = 1})
    has_error("luagpu: matmul: argument #4: option trans_b: expected a boolean, got \"yes\"",
              matmul, A, B, dev:buffer("float", 6), {trans_b = "yes"})
    has_error("luagpu: matmul: argument #3: option alpha: expected a number, got \"2\"",
              matmul, A, B, {alpha = "2"})
    has_error("luagpu: matmul: argument #3: option beta: expected a number, got table",
              matmul, A, B, {beta = {}})
    has_error("luagpu: matmul: argument #3: option beta: 0.5 needs C (the third argument) " ..
              "to add to", matmul, A, dev:buffer("float", {5, 2}), {beta = 0.5})
    has_error("luagpu: matmul: argument #3: option batch: expected an integer >= 0, got -1",
              matmul, A, B, {batch = -1})
    has_error("luagpu: matmul: argument #2: B holds 3 matrices, but A holds 4",
              matmul, dev:buffer("float", {4, 2, 3}), dev:buffer("float", {3, 3, 5}))
    has_error("luagpu: matmul: argument #1: A holds 4 matrices, but option batch is 2",
              matmul, dev:buffer("float", {4, 2, 3}), dev:buffer("float", {3, 5}), {batch = 2})
    has_error("luagpu: matmul: argument #3: C holds 1 matrix, but A holds 4",
              matmul, dev:buffer("float", {4, 2, 3}), dev:buffer("float", {3, 5}),
              dev:buffer("float", {1, 2, 5}))
    has_error("luagpu: matmul: argument #3: C holds 1 matrix, but A holds 4",
              matmul, dev:buffer("float", {4, 2, 3}), dev:buffer("float", {3, 5}),
              dev:buffer("float", {2, 5}))
    has_error("luagpu: matmul: argument #3: expected 40 elements (4 matrices of 2 x 5, as A " ..
              "holds 4 matrices), got 10", matmul, dev:buffer("float", {4, 2, 3}),
              dev:buffer("float", {3, 5}), dev:buffer("float", 10))
    has_error("luagpu: matmul: argument #2: expected 45 elements (3 matrices B of 3 x 5, as " ..
              "option batch is 3) or 15 (one, shared by the batch), got 20", matmul,
              dev:buffer("float", 18), dev:buffer("float", 20), {batch = 3, m = 2, k = 3, n = 5})
    has_error("luagpu: matmul: argument #1: 19 elements do not make 3 matrices (option batch " ..
              "is 3)", matmul, dev:buffer("float", 19), dev:buffer("float", {3, 5}), {batch = 3})
    has_error("luagpu: matmul: argument #1: expected a 2-D or 3-D buffer (or a 1-D one with " ..
              "sizes in opts), got a 4-D one", matmul, dev:buffer("float", {1, 2, 3, 4}), B)
    has_error("luagpu: matmul: argument #3: option variant: a batched product runs \"naive\" " ..
              "or \"reg\", got \"packed\"", matmul, dev:buffer("float", {2, 2, 3}),
              dev:buffer("float", {3, 5}), {variant = "packed"})
    has_error("luagpu: matmul: argument #3: unknown option 'transa' (expected variant, params, " ..
              "m, n, k, wait, queue, precision, trans_a, trans_b, alpha, beta, batch, event)",
              matmul, A, B, {transa = true})
  end)
end)

describe("tensors' mm and bmm", function()
  math.randomseed(SEED + 1)

  -- The bytes of live tensors that a:mm(b) leaves, the collector stopped.
  -- The copies of an operand one product makes (the generated elementwise
  -- kernel, lg_ew, before the product's own commands: the copy's block goes
  -- back to the pool once the product is enqueued, so the pool's bytes in
  -- use cannot tell), and the product.
  local function growth(a, b, method)
    dev:finish()
    gpu.trace(true)
    local ok, c = pcall(a[method or "mm"], a, b)
    local rec = gpu.trace(false)
    assert(ok, c)
    local copies = 0
    for _, r in ipairs(rec) do
      if tostring(r.name):find("^lg_ew") then copies = copies + 1 end
    end
    return copies, c
  end

  local function check_mm(c, ra, rb, m, n, k, nb, ta, tb, ca, cb)
    local want = reference{m = m, n = n, k = k, batch = nb, a = ra, b = rb, ta = ta, tb = tb,
                           ca = ca, cb = cb}
    assert.is_true(rel_error(c:get(), want) < 1e-5)
  end

  it("x:mm reads transposed views in place: no copy", function()
    for _, t in ipairs(TYPES) do
      local m, n, k = 13, 17, 11
      local ra, rb = random_table(m * k), random_table(k * n)
      local a = dev:tensor(t, {m, k}, ra)
      local rat = {}                                   -- A^T, k x m
      for i = 0, m - 1 do
        for x = 0, k - 1 do rat[x * m + i + 1] = ra[i * k + x + 1] end
      end
      local at = dev:tensor(t, {k, m}, rat)
      local b = dev:tensor(t, {k, n}, rb)
      local bt = dev:tensor(t, {n, k})
      bt:set(b:t())
      local plain, c0 = growth(a, b)
      check_mm(c0, ra, rb, m, n, k)
      local g1, c1 = growth(a, bt:t())
      check_mm(c1, ra, rb, m, n, k)
      local g2, c2 = growth(at:t(), b)
      check_mm(c2, ra, rb, m, n, k)
      local g3, c3 = growth(at:t(), bt:t())
      check_mm(c3, ra, rb, m, n, k)
      assert.equal(plain, g1)
      assert.equal(plain, g2)
      assert.equal(plain, g3)
      -- a layout that is not a transpose is copied (the check can tell)
      local wide = dev:tensor(t, {m, 2 * k})
      wide:slice(2, 1, -1, 2):set(a)
      local g4, c4 = growth(wide:slice(2, 1, -1, 2), b)
      check_mm(c4, ra, rb, m, n, k)
      assert.is_true(g4 > plain)
    end
  end)

  it("x:mm and x:bmm take 3-D tensors: batches, broadcast, transposed views", function()
    local nb, m, n, k = 4, 9, 7, 5
    local ra, rb = random_table(nb * m * k), random_table(nb * k * n)
    local a = dev:tensor("float", {nb, m, k}, ra)
    local b = dev:tensor("float", {nb, k, n}, rb)
    local c = a:bmm(b)
    assert.same({nb, m, n}, c.shape)
    check_mm(c, ra, rb, m, n, k, nb)
    check_mm(a:mm(b), ra, rb, m, n, k, nb)
    -- 2-D b shared by the batch; a 3-D of one likewise
    local b2 = dev:tensor("float", {k, n}, {table.unpack(rb, 1, k * n)})
    check_mm(a:mm(b2), ra, rb, m, n, k, nb, false, false, nb, 1)
    check_mm(a:bmm(b2:reshape{1, k, n}), ra, rb, m, n, k, nb, false, false, nb, 1)
    -- a transposed 3-D view (the last two dims swapped) is read in place
    local bt = b:transpose(2, 3):contiguous()        -- {nb, n, k}
    local plain = growth(a, b, "bmm")
    local g, c2 = growth(a, bt:transpose(2, 3), "bmm")
    check_mm(c2, ra, rb, m, n, k, nb)
    assert.equal(plain, g)
    support.has_error("luagpu: tensor:bmm: expected 3-D tensors, got shapes {9, 5} and {4, 5, 7}",
                      a.bmm, a:select(1, 1), b)
    support.has_error("luagpu: tensor:mm: argument #2: takes no options, got table (for a " ..
                      "precision or other options, call luagpu.matmul on the tensors)",
                      a.mm, a, b, {precision = "tf32"})
    support.has_error("luagpu: tensor:bmm: argument #2: takes no options, got number",
                      a.bmm, a, b, 1)
    support.has_error("luagpu: tensor:mm: expected 2-D or 3-D tensors, got shapes {4} and {4, 5}",
                      a.mm, dev:tensor("float", {4}), dev:tensor("float", {4, 5}))
    support.has_error("luagpu: tensor:mm: shapes {4, 9, 5} and {3, 5, 7} do not multiply " ..
                      "(batches of 4 and 3)", a.mm, a, dev:tensor("float", {3, 5, 7}))
    support.has_error("luagpu: tensor:mm: shapes {4, 9, 5} and {4, 4, 7} do not multiply " ..
                      "(dim 3 of the first: 5 vs dim 2 of the second: 4)", a.mm, a,
                      dev:tensor("float", {4, 4, 7}))
    assert.same({4, 9, 0}, a:mm(dev:tensor("float", {5, 0})).shape)
  end)
end)
