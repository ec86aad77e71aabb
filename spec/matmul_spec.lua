-- luagpu.matmul: every variant against a product computed in Lua, on random
-- data, at sizes that hit the edge cases (1x1x1, primes, tall and thin), in
-- float and double, with views as operands; and every bad-input message.
-- Sizes are chosen so that few programs are built (PoCL compiles slowly).
local gpu = require "luagpu"
local matmul = require "luagpu.matmul"

local dev = gpu.device()

local function random_table(n)
  local t = {}
  for i = 1, n do t[i] = math.random() * 2 - 1 end
  return t
end

-- C = A * B in Lua, row-major, as a flat table.
local function reference(a, b, m, n, k)
  local c = {}
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local s = 0
      for x = 0, k - 1 do s = s + a[i * k + x + 1] * b[x * n + j + 1] end
      c[i * n + j + 1] = s
    end
  end
  return c
end

-- The largest difference over the largest magnitude of the reference
-- (elements near zero make element-wise relative errors meaningless).
local function rel_error(got, want, first, count)
  first = first or 1
  local diff, scale = 0, 0
  for i = 1, count or #want do
    diff = math.max(diff, math.abs(got[first + i - 1] - want[i]))
    scale = math.max(scale, math.abs(want[i]))
  end
  return diff / math.max(scale, 1e-30)
end

local function expect_error(msg, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok)
  assert.matches(msg, tostring(err), 1, true)
end

local errmsg = require("support").errmsg

-- "spec/matmul_spec.lua:LINE: ", the position Lua gives an error raised by
-- a call on the line that calls here().
local function here()
  local info = debug.getinfo(2, "Sl")
  return ("%s:%d: "):format(info.short_src, info.currentline)
end

-- Multiplies random m x k and k x n matrices with opts; checks C.
local function check(m, n, k, t, opts)
  local a, b = random_table(m * k), random_table(k * n)
  local A = dev:buffer(t, {m, k}, {host = a})
  local B = dev:buffer(t, {k, n}, {host = b})
  local C, ev = matmul(A, B, opts)
  assert.are.same({m, n}, C.shape)
  assert.are.equal(t, C.type)
  assert.is_nil(ev:wait())
  local err = rel_error(C:get(), reference(a, b, m, n, k))
  assert.is_true(err < 1e-4, ("%s %dx%dx%d %s: relative error %g")
                 :format(opts and opts.variant or "auto", m, n, k, t, err))
end

describe("matmul", function()
  -- 1x1x1; primes (no vector loads); tall and thin; multiples of the CPU
  -- tiles; K past a multiple of the tile with vector loads
  local sizes = {{1, 1, 1}, {37, 41, 43}, {130, 3, 5}, {64, 64, 64}, {33, 36, 20}}
  for _, variant in ipairs(matmul.variants) do
    it(variant .. " gives A * B in float at edge sizes", function()
      for _, s in ipairs(sizes) do check(s[1], s[2], s[3], "float", {variant = variant}) end
    end)
  end

  it("gives A * B in double with every variant", function()
    if not dev.fp64 then return pending("no fp64 on " .. dev.name .. ": double not checked") end
    for _, variant in ipairs(matmul.variants) do check(5, 19, 7, "double", {variant = variant}) end
  end)

  it("picks a variant by itself, and a tall, thin product works", function()
    check(300, 2, 40, "float")
    check(3, 3, 3, "float")
    local variant = matmul.plan(dev, 3, 3, 3).variant
    assert.are.equal("naive", variant)
  end)

  it("builds each program once", function()
    check(37, 41, 43, "float", {variant = "reg"})
    local built = matmul.programs_built
    check(37, 41, 43, "float", {variant = "reg"})
    check(41, 43, 37, "float", {variant = "reg"})
    assert.are.equal(built, matmul.programs_built)
  end)

  it("writes into a given C and returns it", function()
    local a, b = random_table(6 * 4), random_table(4 * 5)
    local A = dev:buffer("float", {6, 4}, {host = a})
    local B = dev:buffer("float", {4, 5}, {host = b})
    local C = dev:buffer("float", {6, 5})
    local C2, ev = matmul(A, B, C, {variant = "tiled"})
    assert.are.equal(C, C2)
    ev:wait()
    assert.is_true(rel_error(C:get(), reference(a, b, 6, 5, 4)) < 1e-4)
  end)

  it("takes views and 1-D buffers with their sizes in opts", function()
    local m, n, k = 9, 11, 13
    local a, b = random_table(m * k), random_table(k * n)
    local want = reference(a, b, m, n, k)
    -- A at an odd offset of a larger buffer, B 1-D, C a view in the middle
    local bigA = dev:buffer("float", m * k + 3)
    bigA:sub(4, m * k + 3):write(a)
    local B = dev:buffer("float", k * n, {host = b})
    local bigC = dev:buffer("float", m * n + 40)
    bigC:fill(7)
    for _, variant in ipairs(matmul.variants) do
      local C = bigC:sub(21, 20 + m * n)
      local _, ev = matmul(bigA:sub(4, m * k + 3), B, C, {m = m, n = n, variant = variant})
      ev:wait()
      local got = bigC:get()
      assert.is_true(rel_error(got, want, 21, m * n) < 1e-4, variant)
      assert.are.equal(7, got[20])
      assert.are.equal(7, got[21 + m * n])
    end
    -- sizes inferred from the other operands: only m given, C made
    local C = matmul(bigA:sub(4, m * k + 3), dev:buffer("float", {k, n}, {host = b}), {m = m})
    assert.are.same({m, n}, C.shape)
    assert.is_true(rel_error(C:get(), want) < 1e-4)
  end)

  it("takes values that stand for buffers (__tobuffer), C among them", function()
    local m, n, k = 7, 5, 6
    local a, b = random_table(m * k), random_table(k * n)
    local function stands_for(buf)
      return setmetatable({}, {__tobuffer = function() return buf end})
    end
    local A = dev:buffer("float", {m, k}, {host = a})
    local B = dev:buffer("float", {k, n}, {host = b})
    local C = dev:buffer("float", {m, n})
    local got, ev = matmul(stands_for(A), stands_for(B), stands_for(C))
    assert.are.equal(C, got)
    ev:wait()
    assert.is_true(rel_error(C:get(), reference(a, b, m, n, k)) < 1e-4)
    local made = matmul(stands_for(A), stands_for(B), {variant = "tiled"})
    assert.is_true(rel_error(made:get(), reference(a, b, m, n, k)) < 1e-4)
  end)

  it("gives only its last Event on an in-order queue without profiling", function()
    local m, n, k = 37, 41, 43
    local a, b = random_table(m * k), random_table(k * n)
    local A = dev:buffer("float", {m, k}, {host = a})
    local B = dev:buffer("float", {k, n}, {host = b})
    local q = dev:queue{profiling = false}
    local C, ev, events = matmul(A, B, {variant = "packed", queue = q})
    assert.are.same({ev}, events)
    ev:wait()
    assert.is_true(rel_error(C:get(), reference(a, b, m, n, k)) < 1e-4)
    local _, _, all = matmul(A, B, {variant = "packed"})      -- profiling: all three
    assert.are.equal(3, #all)
  end)

  it("waits for opts.wait and runs on opts.queue", function()
    local q = dev:queue{out_of_order = true}
    local a, b = random_table(20 * 30), random_table(30 * 10)
    local A, B = dev:buffer("float", {20, 30}), dev:buffer("float", {30, 10})
    local ea = A:write(a, {queue = q})
    local eb = B:write(b, {queue = q})
    for _, variant in ipairs{"packed", "naive"} do
      local C, ev = matmul(A, B, {wait = {ea, eb}, queue = q, variant = variant})
      ev:wait()
      assert.is_true(rel_error(C:get(), reference(a, b, 20, 10, 30)) < 1e-4)
    end
  end)

  it("gives zeros for K = 0 and an empty C for M = 0", function()
    local C, ev = matmul(dev:buffer("float", {3, 0}), dev:buffer("float", {0, 2}))
    ev:wait()
    assert.are.same({0, 0, 0, 0, 0, 0}, C:get():totable())
    local E = matmul(dev:buffer("float", {0, 4}), dev:buffer("float", {4, 2}))
    assert.are.same({0, 2}, E.shape)
  end)

  it("splits K into slices and adds them", function()
    check(33, 36, 200, "float", {variant = "reg", params = {splitk = 3}})
    check(17, 20, 131, "float", {variant = "reg", params = {splitk = 4}})
    local plan = matmul.plan(dev, 17, 20, 131, "float", "reg", {splitk = 4})
    assert.are.equal(4, plan.slices)
    assert.are.equal(40, plan.slice_k)   -- 131 / 4 rounded up to a multiple of BK = 8
  end)

  it("runs a tile-aligned core apart from thin edges (the GPU split)", function()
    -- reg with the CPU's small tiles (16 x 16) and edges of up to 16: the
    -- core at 128 x 128 (240 x 240), the rest in matmul_rows and matmul_cols
    local opts = {variant = "reg", params = {edge = 16}}
    local plan = matmul.plan(dev, 129, 131, 70, "float", "reg", opts.params)
    assert.are.same({m0 = 128, n0 = 128}, plan.edges)
    assert.are.equal(1, plan.slices)
    check(129, 131, 70, "float", opts)
    check(257, 255, 300, "float", opts)
    check(128, 135, 33, "float", opts)    -- edge columns only
    check(133, 128, 32, "float", opts)    -- edge rows only, an even core
    if dev.fp64 then check(129, 131, 70, "double", opts) end
    -- operands at odd offsets (views), C given
    local m, n, k = 130, 129, 41
    local a, b = random_table(m * k), random_table(k * n)
    local pad = {0, 0, 0}
    local A = dev:buffer("float", 3 + m * k, {host = table.move(a, 1, m * k, 4, pad)})
    local B = dev:buffer("float", k * n + 1, {host = table.move(b, 1, k * n, 2, {0})})
    local Cb = dev:buffer("float", m * n + 5)
    local C, ev, events = matmul(A:sub(4, 3 + m * k), B:sub(2, 1 + k * n), Cb:sub(6, 5 + m * n),
                                 {variant = "reg", params = {edge = 16}, m = m, n = n, k = k})
    assert.are.equal(3, #events)
    assert.are.equal(events[3], ev)
    ev:wait()
    local err = rel_error(Cb:get(), reference(a, b, m, n, k), 6)
    assert.is_true(err < 1e-4, ("views: relative error %g"):format(err))
    -- an out-of-order queue: each kernel waits for the one before
    local q = dev:queue{out_of_order = true}
    local A3 = dev:buffer("float", {m, k}, {host = a})
    local B3 = dev:buffer("float", {k, n}, {host = b})
    local C3, ev3 = matmul(A3, B3, {variant = "reg", params = {edge = 16}, queue = q})
    ev3:wait()
    err = rel_error(C3:get(), reference(a, b, m, n, k))
    assert.is_true(err < 1e-4, ("out of order: relative error %g"):format(err))
    -- edges past the limit, or a forced split of K: the one-kernel path
    assert.is_nil(matmul.plan(dev, 129, 131, 70, "float", "reg", {edge = 2}).edges)
    assert.is_nil(matmul.plan(dev, 129, 131, 70, "float", "reg", {edge = 16, splitk = 2}).edges)
    assert.is_nil(matmul.plan(dev, 129, 131, 70, "float", "reg").edges)
    local A2 = dev:buffer("float", {8, 8})
    expect_error("luagpu: matmul: reg parameters: edge: expected an integer >= 0, got 1.5",
                 matmul, A2, A2, {variant = "reg", params = {edge = 1.5}})
  end)

  it("lays a device entry over its class's parameters", function()
    local key = dev.name:sub(1, 12)
    matmul.params[key] = {packed = {TM = 4}, auto = "reg"}
    local ok, err = pcall(function()
      local plan = matmul.plan(dev, 100, 100, 100)
      assert.are.equal("reg", plan.variant)
      local packed = matmul.param_set(dev, "packed")
      assert.are.equal(4, packed.TM)
      assert.are.equal(matmul.params[dev.type].packed.TN, packed.TN)
    end)
    matmul.params[key] = nil
    assert(ok, err)
  end)

  it("takes parameter overrides and checks them", function()
    check(33, 35, 20, "float", {variant = "reg", params = {BM = 8, BN = 8, BK = 4, TM = 2,
                                TN = 2, VWM = 2, VWN = 2, VLA = 2, VLB = 2, DB = 2}})
    local A, B = dev:buffer("float", {8, 8}), dev:buffer("float", {8, 8})
    expect_error("luagpu: matmul: reg parameters: BM (8) and BN (12) must be multiples of TM (8) and TN (8)",
                 matmul, A, B, {variant = "reg", params = {BM = 8, BN = 12, TM = 8, TN = 8}})
    expect_error("luagpu: matmul: tiled parameters: work-groups of 100 x 100 = 10000 work-items, the device allows",
                 matmul, A, B, {variant = "tiled", params = {TS = 100}})
    expect_error("luagpu: matmul: packed parameters: VW: expected a vector width (1, 2, 4, 8 or 16), got 3",
                 matmul, A, B, {variant = "packed", params = {VW = 3}})
    expect_error("luagpu: matmul: reg parameters: splitk: expected a positive integer, got 0",
                 matmul, A, B, {variant = "reg", params = {splitk = 0}})
  end)

  it("bounds every parameter before it builds anything", function()
    local A = dev:buffer("float", {8, 8})
    local built = matmul.programs_built
    local function param_error(msg, variant, params)
      assert.equal("luagpu: matmul: " .. variant .. " parameters: " .. msg,
                   errmsg(matmul, A, A, {variant = variant, params = params}))
    end
    param_error("TM: 1048576 is too large (at most 64)", "packed", {TM = 1 << 20})
    param_error("TN: expected a positive integer, got -8", "packed", {TN = -8})
    param_error("TM: expected a positive integer, got \"8\"", "packed", {TM = "8"})
    param_error("TM: expected a positive integer, got " .. "nan", "packed",
                {TM = 0 / 0})
    param_error("TM x TN = 64 x 32 = 2048 sums per work-item, at most 1024", "packed",
                {TM = 64, TN = 32})
    param_error("unroll (64) x TM (8) x TN (32) = 16384 multiply-adds unrolled, at most 8192",
                "packed", {TM = 8, TN = 32, VW = 16, unroll = 64})
    param_error("BK (1024) x TM (4) x TN (4) = 16384 multiply-adds unrolled, at most 8192",
                "reg", {BM = 16, BN = 16, BK = 1024, TM = 4, TN = 4, VWM = 4, VWN = 4, VLA = 4,
                        VLB = 4})
    param_error("the A and B tiles take 16 and 1024 vector loads per work-item, at most 256",
                "reg", {BM = 4, BN = 1024, BK = 64, TM = 4, TN = 64, VWN = 4, VLA = 1, VLB = 4,
                        unroll = 1})
    param_error("lx: 1099511627776 is too large (at most 4096)", "naive",
                {lx = 1 << 40, ly = 1 << 40})
    param_error("work-groups of 4096 x 4096 = 16777216 work-items, the device allows " ..
                dev.max_work_group_size, "naive", {lx = 4096, ly = 4096})
    param_error("DB: expected 0, 1 or 2, got 1.5", "reg", {DB = 1.5})
    param_error("PADA: expected an integer >= 0, got -4", "reg", {PADA = -4})
    param_error("splitk: 65 is too large (at most 64)", "reg", {splitk = 65})
    param_error("groups_per_cu: expected a positive integer, got true", "reg",
                {groups_per_cu = true})
    param_error("fma: expected true or false, got 1", "packed", {fma = 1})
    param_error("options: expected a string of build options, got table", "naive",
                {options = {}})
    -- (a -D turned on the kernels' own switches: -DEVEN wrote past C)
    for _, c in ipairs{{"-DEVEN", "-DEVEN"}, {"-cl-mad-enable -UX", "-UX"}, {"-I/tmp", "-I/tmp"},
                       {"-w", "-w"}, {"-cl-x\0", "-cl-x\\0"}} do
      param_error("options: expected OpenCL compiler options (-cl-...), got \"" .. c[2] .. "\"",
                  "reg", {options = c[1]})
    end
    assert.equal("luagpu: matmul: argument #3: option params: unknown parameter 'tm' " ..
                 "(expected lx, ly, TS, BM, BN, BK, TM, TN, VWM, VWN, VLA, VLB, PADA, PADB, " ..
                 "DB, groups_per_cu, splitk, edge, VW, unroll, fma, options)",
                 errmsg(matmul, A, A, {params = {tm = 8}}))
    -- names are read raw: a __pairs cannot hide one
    local hidden = setmetatable({tm = 8}, {__pairs = function() return next, {} end})
    expect_error("option params: unknown parameter 'tm'", matmul, A, A, {params = hidden})
    assert.equal(built, matmul.programs_built)
    -- integral floats are integers
    check(9, 10, 11, "float", {variant = "tiled", params = {TS = 4.0}})
  end)

  it("checks the parameter table where it reads it", function()
    local A = dev:buffer("float", {8, 8})
    local cls = matmul.params[dev.type] and dev.type or "gpu"
    local saved = {}
    for k, v in pairs(matmul.params[cls]) do saved[k] = v end
    finally(function()
      for k, v in pairs(saved) do matmul.params[cls][k] = v end
    end)
    matmul.params[cls].tiny = 0 / 0
    assert.equal("luagpu: matmul: parameter tiny: expected an integer >= 0, got " ..
                 "nan", errmsg(matmul, A, A))
    matmul.params[cls].tiny = saved.tiny
    matmul.params[cls].auto = "fast"
    assert.equal("luagpu: matmul: parameter auto: expected \"naive\", \"tiled\", \"reg\" " ..
                 "or \"packed\", got \"fast\"", errmsg(matmul.plan, dev, 100, 100, 100))
    matmul.params[cls].auto = saved.auto
    matmul.params[cls].packed = 5
    assert.equal("luagpu: matmul: packed parameters: expected a table, got number",
                 errmsg(matmul, A, A, {variant = "packed"}))
  end)

  it("checks sizes without overflow, and reports the real numbers", function()
    local B3 = dev:buffer("float", {3, 5})
    local a6 = dev:buffer("float", 6)
    assert.equal("luagpu: matmul: argument #3: option m: 4611686018427387904 is too large " ..
                 "(sizes must be below 2^31)", errmsg(matmul, a6, B3, {m = 1 << 62}))
    assert.equal("luagpu: matmul: argument #1: expected 6442450941 elements (A is " ..
                 "2147483647 x 3), got 6", errmsg(matmul, a6, B3, {m = (1 << 31) - 1}))
    assert.equal("luagpu: matmul: argument #3: option k: expected an integer >= 0, got 2.5",
                 errmsg(matmul, a6, B3, {k = 2.5}))
    assert.equal("luagpu: matmul: argument #3: option n: expected an integer >= 0, got \"5\"",
                 errmsg(matmul, a6, B3, {n = "5"}))
    assert.equal("luagpu: matmul: argument #3: option m: expected an integer >= 0, got " ..
                 "nan", errmsg(matmul, a6, B3, {m = 0 / 0}))
    local C = matmul(a6, B3, {m = 2.0})
    assert.are.same({2, 5}, C.shape)
    assert.equal("luagpu: matmul.plan: argument #2: 1099511627776 is too large (sizes must " ..
                 "be below 2^31)", errmsg(matmul.plan, dev, 1 << 40, 1, 1))
    -- 2^21 cubed wraps to a negative product: still not a "tiny" one
    local big = 1 << 21
    assert.are.equal(matmul.plan(dev, 64, 64, 64).variant, matmul.plan(dev, big, big, big).variant)
    assert.equal("luagpu: matmul.plan: argument #1: expected a luagpu.Device, got nil",
                 errmsg(matmul.plan, nil, 1, 1, 1))
    assert.equal("luagpu: matmul.plan: argument #5: expected \"float\" or \"double\", got " ..
                 "\"half\"", errmsg(matmul.plan, dev, 1, 1, 1, "half"))
    assert.equal("luagpu: matmul.param_set: argument #2: expected \"naive\", \"tiled\", " ..
                 "\"reg\", \"small\", \"smaller\" or \"packed\", got nil",
                 errmsg(matmul.param_set, dev))
  end)

  it("checks every option itself and reports it under its own name", function()
    local A = dev:buffer("float", {8, 8})
    local ev = A:fill(1)
    local gone_q, gone_ev = dev:queue(), A:fill(1)
    gone_ev:wait()
    gone_q:release()
    gone_ev:release()
    local function opt_error(msg, opts)
      assert.equal("luagpu: matmul: argument #3: option " .. msg, errmsg(matmul, A, A, opts))
    end
    opt_error("queue: attempt to use a released queue", {queue = gone_q})
    opt_error("queue: expected a luagpu.Queue, got luagpu.Event", {queue = ev})
    opt_error("wait: expected a luagpu.Event, got number", {wait = 5})
    opt_error("wait[2]: expected a luagpu.Event, got table", {wait = {ev, {}}})
    opt_error("wait: attempt to use a released event", {wait = gone_ev})
    opt_error("wait[1]: attempt to use a released event", {wait = {gone_ev}})
    -- K = 0 fills C: its wait list is checked all the same
    assert.equal("luagpu: matmul: argument #4: option wait: expected a luagpu.Event, got number",
                 errmsg(matmul, dev:buffer("float", {2, 0}), dev:buffer("float", {0, 2}),
                        dev:buffer("float", {2, 2}), {wait = 5}))
    -- a list of 65536 events is one too many (the scratch buffers may need a wait)
    local many = {}
    for i = 1, 65536 do many[i] = ev end
    opt_error("wait: 65536 events are too many (at most 65535)", {wait = many})
  end)

  it("points at the line that called it, in the caller's file", function()
    local A, B = dev:buffer("float", {2, 3}), dev:buffer("float", {4, 5})
    local e, at = errmsg(function() matmul(nil, B) end), here()
    assert.matches("matmul_spec%.lua:%d+: $", at)
    assert.equal(at .. "luagpu: matmul: argument #1: expected a buffer, got nil", e)
    e, at = errmsg(function() matmul(A, B) end), here()
    assert.equal(at .. "luagpu: matmul: argument #2: B has 4 rows, but A has 3 columns", e)
    e, at = errmsg(function() gpu.matmul(A, A, {queue = 1}) end), here()
    assert.equal(at .. "luagpu: matmul: argument #3: option queue: expected a luagpu.Queue, " ..
                 "got number", e)
    local S = dev:buffer("float", {3, 3})
    e, at = errmsg(function() matmul(S, S, {variant = "packed", params = {VW = 3}}) end), here()
    assert.equal(at .. "luagpu: matmul: packed parameters: VW: expected a vector width (1, 2, " ..
                 "4, 8 or 16), got 3", e)
    e, at = errmsg(function() matmul.plan(dev, -1, 1, 1) end), here()
    assert.equal(at .. "luagpu: matmul.plan: argument #2: expected an integer >= 0, got -1", e)
  end)

  it("runs examples/matmul.lua, which checks itself", function()
    local prog = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"
    local p = io.popen(prog .. " examples/matmul.lua 40 2>&1; echo \"exit=$?\"")
    local out = p:read("a")
    p:close()
    assert.matches("exit=0\n$", out)
    assert.matches("\nok\n", out)
    for _, name in ipairs{"naive", "tiled", "reg", "own choice"} do
      assert.matches(name, out, 1, true)
    end
  end)

  it("rejects bad input with messages that say what was expected", function()
    local A = dev:buffer("float", {2, 3})
    local B = dev:buffer("float", {4, 5})
    local B3 = dev:buffer("float", {3, 5})
    expect_error("luagpu: matmul: argument #1: expected a buffer, got nil", matmul, nil, B)
    expect_error("luagpu: matmul: argument #2: expected a buffer, got table", matmul, A, {})
    expect_error("luagpu: matmul: argument #1: expected a buffer of float or double, got one of int",
                 matmul, dev:buffer("int", {2, 3}), B3)
    expect_error("luagpu: matmul: argument #2: expected a buffer of float (as A), got one of double",
                 matmul, A, dev:buffer("double", {3, 5}))
    expect_error("luagpu: matmul: argument #2: B has 4 rows, but A has 3 columns", matmul, A, B)
    expect_error("luagpu: matmul: argument #3: C has 3 rows, but A has 2 rows",
                 matmul, A, B3, dev:buffer("float", {3, 5}))
    expect_error("luagpu: matmul: argument #3: expected 10 elements (C is 2 x 5), got 9",
                 matmul, A, B3, dev:buffer("float", 9))
    expect_error("luagpu: matmul: argument #1: a 1-D buffer needs its sizes: give opts.m and opts.k, or a 2-D buffer",
                 matmul, dev:buffer("float", 6), dev:buffer("float", 15))
    expect_error("luagpu: matmul: argument #1: 7 elements do not make rows of 3 (B has 3 rows)",
                 matmul, dev:buffer("float", 7), B3)
    expect_error("luagpu: matmul: argument #1: expected a 2-D or 3-D buffer (or a 1-D one with sizes in opts), got a 4-D one",
                 matmul, dev:buffer("float", {2, 3, 1, 1}), B3)
    expect_error("luagpu: matmul: argument #1: A has 3 columns, but option k is 4", matmul, A, B3, {k = 4})
    expect_error("luagpu: matmul: argument #3: unknown option 'varaint' (expected variant, params, m, n, k, wait, queue, precision, trans_a, trans_b, alpha, beta, batch, event)",
                 matmul, A, B3, {varaint = "reg"})
    expect_error("luagpu: matmul: argument #4: option variant: expected \"naive\", \"tiled\", \"reg\" or \"packed\", got \"fast\"",
                 matmul, A, B3, dev:buffer("float", {2, 5}), {variant = "fast"})
    expect_error("luagpu: matmul: argument #3: option m: expected an integer >= 0, got -1",
                 matmul, A, B3, {m = -1})
    expect_error("luagpu: matmul: argument #3: option queue: expected a luagpu.Queue, got number",
                 matmul, A, B3, {queue = 1})
    expect_error("luagpu: matmul: argument #4: expected an options table, got string",
                 matmul, A, B3, dev:buffer("float", {2, 5}), "reg")
    local shared = dev:buffer("float", 6 + 10)
    expect_error("luagpu: matmul: argument #3: C overlaps A (they share memory)",
                 matmul, shared:sub(1, 6), B3, shared:sub(5, 14), {m = 2})
    local gone = dev:buffer("float", {3, 5})
    gone:release()
    expect_error("luagpu: matmul: argument #2: attempt to use a released buffer", matmul, A, gone)
    if not dev.fp64 then
      expect_error("has no double precision (fp64)", matmul,
                   dev:buffer("double", {2, 3}), dev:buffer("double", {3, 5}))
    end
  end)
end)

describe("matmul called again with the same buffers", function()
  it("reuses its bound kernels, and notices released buffers and changed params", function()
    local m, n, k = 33, 40, 17
    local a, b = random_table(m * k), random_table(k * n)
    local A = dev:buffer("float", {m, k}, {host = a})
    local B = dev:buffer("float", {k, n}, {host = b})
    local C = dev:buffer("float", {m, n})
    local want = reference(a, b, m, n, k)
    local _, ev1, events1 = matmul(A, B, C)
    ev1:wait()
    assert.is_true(rel_error(C:get(), want) < 1e-4)
    C:fill(0):wait()
    local C2, ev2, events2 = matmul(A, B, C)
    assert.are.equal(C, C2)
    assert.are.equal(#events1, #events2)
    assert.are_not.equal(ev1, ev2)
    ev2:wait()
    assert.is_true(rel_error(C:get(), want) < 1e-4)
    -- a changed parameter table gives a new plan: here the naive kernel
    local cls = matmul.params[dev.type] and dev.type or "gpu"
    local saved = matmul.params[cls].auto
    finally(function() matmul.params[cls].auto = saved end)
    matmul.params[cls].auto = "naive"
    local built = matmul.programs_built
    C:fill(0):wait()
    local _, ev3, events3 = matmul(A, B, C)
    ev3:wait()
    assert.are.equal(1, #events3)
    assert.is_true(matmul.programs_built >= built)
    assert.is_true(rel_error(C:get(), want) < 1e-4)
    matmul.params[cls].auto = saved
    B:release()
    expect_error("luagpu: matmul: argument #2: attempt to use a released buffer", matmul, A, B, C)
    C:release()
    expect_error("luagpu: matmul: argument #3: attempt to use a released buffer",
                 matmul, A, dev:buffer("float", {k, n}), C)
  end)
  it("runs a remembered product into another C of its size rebound, checking what differs",
     function()
    local m, n, k = 21, 36, 13
    local a, b = random_table(m * k), random_table(k * n)
    local A = dev:buffer("float", {m, k}, {host = a})
    local B = dev:buffer("float", {k, n}, {host = b})
    local want = reference(a, b, m, n, k)
    -- count the rebindings (call:with)
    local probe = dev:build("__kernel void nop(__global float *x) { }").nop(A)
    local methods = debug.getmetatable(probe).__index
    local with, rebinds = methods.with, 0
    methods.with = function(...) rebinds = rebinds + 1; return with(...) end
    finally(function() methods.with = with end)
    local C1 = dev:buffer("float", {m, n})
    matmul(A, B, C1)
    local C2 = dev:buffer("float", {m, n})
    C2:fill(5):wait()
    local before = rebinds
    local _, ev = matmul(A, B, C2)
    ev:wait()
    assert.is_true(rebinds > before)                 -- taken from C1's entry
    assert.is_true(rel_error(C2:get(), want) < 1e-4)
    C1:fill(7):wait()
    matmul(A, B, C2):get()                           -- C2's own entry now
    for _, v in ipairs(C1:get():totable()) do assert.equal(7, v) end
    -- a view at offset 0 of a larger buffer takes it; one elsewhere is checked afresh
    local big = dev:buffer("float", m * n + 64)
    big:fill(3):wait()
    local skip = dev.mem_base_addr_align // 4
    for _, first in ipairs {1, skip + 1} do
      local view = big:sub(first, first + m * n - 1)
      local _, e = matmul(A, B, view, {m = m, n = n, k = k})
      e:wait()
      local got = big:get():totable()
      assert.is_true(rel_error(got, want, first) < 1e-4)
      assert.equal(3, got[first + m * n])
      matmul(A, B, big:sub(first, first + m * n - 1), {m = m, n = n, k = k})
    end
    -- what the full path raises, it still raises
    local whole = dev:buffer("float", m * k + m * n, {host = random_table(m * k + m * n)})
    local A2, C3 = whole:sub(1, m * k), whole:sub(m * k + 1, m * k + m * n)
    matmul(A2, B, dev:buffer("float", {m, n}), {m = m, n = n, k = k})
    expect_error("luagpu: matmul: argument #3: C overlaps A",
                 matmul, A2, B, whole:sub(1, m * n), {m = m, n = n, k = k})
    matmul(A2, B, C3, {m = m, n = n, k = k}):get()   -- shares A's root, apart: right
    assert.is_true(rel_error(C3:get(), reference(whole:get():totable(), b, m, n, k)) < 1e-4)
    local gone = dev:buffer("float", {m, n})
    gone:release()
    expect_error("luagpu: matmul: argument #3: attempt to use a released buffer",
                 matmul, A, B, gone)
    expect_error("luagpu: matmul: argument #3: expected a buffer of float or double, got one of int",
                 matmul, A, B, dev:buffer("int", {m, n}))
    expect_error("luagpu: matmul: argument #3: C", matmul, A, B, dev:buffer("float", {m, n - 1}))
    -- event = false: C alone, no Event
    local C4 = dev:buffer("float", {m, n})
    assert.equal(1, select("#", matmul(A, B, C4, {event = false})))
    assert.equal(C4, matmul(A, B, C4, {event = false}))
    assert.is_true(rel_error(C4:get(), want) < 1e-4)
    expect_error("luagpu: matmul: argument #4: option event: expected a boolean, got 1",
                 matmul, A, B, C4, {event = 1})
  end)

  it("notices keys added to matmul.params since its last plan", function()
    local m, n, k = 70, 50, 40                     -- past matmul.params' tiny
    local a, b = random_table(m * k), random_table(k * n)
    local A = dev:buffer("float", {m, k}, {host = a})
    local B = dev:buffer("float", {k, n}, {host = b})
    local C = dev:buffer("float", {m, n})
    local want = reference(a, b, m, n, k)
    local cls = matmul.params[dev.type] and dev.type or "gpu"
    local saved = matmul.params[cls].auto
    finally(function()
      matmul.params[dev.name] = nil
      matmul.params[cls].auto = saved
    end)
    matmul.params[cls].auto = "tiled"             -- one kernel
    local function steps_now()
      C:fill(0):wait()
      local _, ev, events = matmul(A, B, C)
      ev:wait()
      assert.is_true(rel_error(C:get(), want) < 1e-4)
      return #events, events[#events].command
    end
    local steps, command = steps_now()
    assert.are.equal(1, steps)
    -- a device entry, then a key added to it, then the entry removed
    matmul.params[dev.name] = {}
    assert.are.same({1, command}, {steps_now()})
    matmul.params[dev.name].auto = "naive"              -- a key added
    local _, naive = steps_now()
    assert.are_not.equal(command, naive)
    matmul.params[dev.name].auto = "tiled"              -- values changed only
    assert.are.same({1, command}, {steps_now()})
    matmul.params[dev.name].auto = "naive"
    assert.are.same({1, naive}, {steps_now()})
    matmul.params[dev.name] = nil
    assert.are.same({1, command}, {steps_now()})
  end)
end)

describe("matmul.internal_options", function()
  local matmul = require "luagpu.matmul"
  it("refuses what luagpu's own callers never pass, with a clear error", function()
    local msg = "luagpu: matmul.internal_options: expected integer sizes, two booleans and an " ..
                "integer batch or nil (for luagpu's own callers, which checked them)"
    for _, args in ipairs {{nil, 1, 1, false, false}, {0 / 0, 1, 1, false, false},
                           {2, 3, 4, 1, false}, {2, 3, 4, false, false, 1.5}} do
      local ok, err = pcall(matmul.internal_options, table.unpack(args, 1, 6))
      assert.is_false(ok)
      assert.matches(msg, err, 1, true)
    end
    local a = matmul.internal_options(2, 3, 4, false, true, 5)
    assert.same({m = 2, n = 3, k = 4, trans_a = false, trans_b = true, batch = 5, event = false}, a)
  end)

  it("remembers no product under the key of a table a script wrote", function()
    local m, n, k = 5, 6, 7
    local ad, bd = random_table(m * k), random_table(k * n)
    local want = reference(ad, bd, m, n, k)
    local function product()
      local x, y = dev:tensor("float", {m, k}, ad), dev:tensor("float", {k, n}, bd)
      local out = {}
      for _, row in ipairs(x:mm(y):totable()) do
        for _, v in ipairs(row) do out[#out + 1] = v end
      end
      return out
    end
    -- the tables x:mm keeps are its own: a script asking gets a new one,
    -- and what it writes there changes no x:mm
    local o = matmul.internal_options(m, n, k, false, false)
    assert.are_not.equal(o, matmul.internal_options(m, n, k, false, false))
    o.alpha, o.m = 3, 2
    assert.is_true(rel_error(product(), want) < 1e-5)
    -- a written table passed to matmul itself runs as what it holds now,
    -- and is not remembered under the key of what it held
    local A = dev:buffer("float", m * k, {host = ad})
    local B = dev:buffer("float", k * n, {host = bd})
    local C = dev:buffer("float", m * n)
    o = matmul.internal_options(m, n, k, false, false)
    matmul(A, B, C, o)
    assert.is_true(rel_error(C:get(), want) < 1e-5)
    o.alpha = 2
    matmul(A, B, C, o)
    local twice = {}
    for i, v in ipairs(want) do twice[i] = 2 * v end
    assert.is_true(rel_error(C:get(), twice) < 1e-5)
    matmul(A, B, C, matmul.internal_options(m, n, k, false, false))
    assert.is_true(rel_error(C:get(), want) < 1e-5)
  end)
end)
