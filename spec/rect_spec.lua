-- Rectangular transfers (ports of PyOpenCL's test_enqueue_copy_rect_2d/3d):
-- b:read_rect, b:write_rect, b:copy_rect_to on 1-, 2- and 3-D regions of
-- random data, checked against the same boxes cut out in plain Lua; views,
-- host_shape/host_origin, and every bad-input message.
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local has_error = support.has_error

-- The flat 1-based index of position p (1-based, row-major) in shape s.
local function flat(s, p)
  local i = 0
  for d = 1, #s do i = i * s[d] + (p[d] - 1) end
  return i + 1
end

-- Calls f(pos) for every position of the box origin..origin+region-1.
local function each(origin, region, f)
  local nd = #region
  local pos = {}
  local function go(d)
    if d > nd then return f(pos) end
    for k = 0, region[d] - 1 do
      pos[d] = origin[d] + k
      go(d + 1)
    end
  end
  go(1)
end

-- The values of the box of t (of shape s), in row-major order.
local function cut(t, s, origin, region)
  local out = {}
  each(origin, region, function(p) out[#out + 1] = t[flat(s, p)] end)
  return out
end

local function random_box(shape)
  local origin, region = {}, {}
  for d = 1, #shape do
    origin[d] = math.random(1, shape[d])
    region[d] = math.random(1, shape[d] - origin[d] + 1)
  end
  return origin, region
end

local function random_ints(n) return support.random_ints(n, -1000000, 1000000) end

-- Runs code in a child `luagpu -e` (a crash there is not ours); returns its
-- output and exit code.
local function child(code)
  local prog = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"
  local p = io.popen(prog .. " -e " .. support.shell_quote(code) .. " 2>&1")
  local out = p:read("a")
  local _, _, rc = p:close()
  return out, rc
end

describe("b:read_rect and b:write_rect", function()
  for _, shape in ipairs({{37}, {13, 29}, {5, 7, 11}}) do
    it("move random boxes of a buffer of shape {" .. table.concat(shape, ", ") .. "}", function()
      local n = 1
      for d = 1, #shape do n = n * shape[d] end
      local ref = random_ints(n)
      local b = dev:buffer("int", shape)
      b:write(ref)
      for _ = 1, 20 do
        local origin, region = random_box(shape)
        local a = b:read_rect(origin, region):wait()
        assert.same(region, a.shape)
        assert.same(cut(ref, shape, origin, region), a:totable())
        -- write a random box, mirror it in ref
        origin, region = random_box(shape)
        local count = 1
        for d = 1, #region do count = count * region[d] end
        local vals = random_ints(count)
        local k = 0
        b:write_rect(origin, region, vals)
        each(origin, region, function(p) k = k + 1; ref[flat(shape, p)] = vals[k] end)
      end
      assert.same(ref, b:get():totable())
    end)
  end

  it("place the box inside a larger host array with host_shape and host_origin", function()
    local shape, hshape = {6, 9}, {10, 4}
    local ref = random_ints(54)
    local b = dev:buffer("double", shape)
    b:write(ref)
    local h = gpu.array("double", 40)
    local ev = b:read_rect({2, 5}, {3, 4}, h, {host_shape = hshape, host_origin = {7, 1}})
    assert.equal(h, ev:wait())
    local want = {}
    for i = 1, 40 do want[i] = 0 end
    local box = cut(ref, shape, {2, 5}, {3, 4})
    local k = 0
    each({7, 1}, {3, 4}, function(p) k = k + 1; want[flat(hshape, p)] = box[k] end)
    assert.same(want, h:totable())
    -- and back: write the host box to another place
    b:write_rect({4, 1}, {3, 4}, h, {host_shape = hshape, host_origin = {7, 1}})
    k = 0
    each({4, 1}, {3, 4}, function(p) k = k + 1; ref[flat(shape, p)] = box[k] end)
    assert.same(ref, b:get():totable())
    -- a new array of host_shape is zero outside the box
    local z = b:read_rect({1, 1}, {1, 2}, {host_shape = {2, 2}}):wait()
    assert.same({ref[1], ref[2], 0, 0}, z:totable())
  end)

  it("see a view or a flat buffer through opts.shape; vector types move whole", function()
    local ref = random_ints(100)
    local b = dev:buffer("int", 100)
    b:write(ref)
    local v = b:sub(11, 70)                   -- 60 elements seen as {6, 10}
    local a = v:read_rect({2, 3}, {4, 5}, {shape = {6, 10}}):wait()
    local sub = {}
    for i = 11, 70 do sub[#sub + 1] = ref[i] end
    assert.same(cut(sub, {6, 10}, {2, 3}, {4, 5}), a:totable())
    local f = dev:buffer("float4", {3, 4})
    local fl = {}
    for i = 1, 48 do fl[i] = i / 4 end
    f:write(fl)
    local got = f:read_rect({2, 2}, {2, 2}):wait()
    assert.equal("float4", got.type)
    assert.same({5.25, 5.5, 5.75, 6, 6.25, 6.5, 6.75, 7,
                 9.25, 9.5, 9.75, 10, 10.25, 10.5, 10.75, 11}, got:totable())
  end)

  it("wait for the events of their options", function()
    local u = gpu.user_event(dev)
    local b = dev:buffer("int", {4, 4})
    local w = b:write_rect({1, 1}, {2, 2}, {1, 2, 3, 4}, {wait = u})
    local r = b:read_rect({1, 1}, {2, 2}, {wait = {w}})
    assert.are_not.equal("complete", r.status)
    u:complete()
    assert.same({1, 2, 3, 4}, r:wait():totable())
  end)
end)

describe("b:copy_rect_to", function()
  it("copies random 3-D boxes between buffers seen in other shapes", function()
    local sshape, dshape = {4, 6, 5}, {7, 3, 8}
    local sref, dref = random_ints(120), random_ints(168)
    local s = dev:buffer("int", 120)
    local d = dev:buffer("int", dshape)
    s:write(sref)
    d:write(dref)
    for _ = 1, 20 do
      local region, so, dso = {}, {}, {}
      for k = 1, 3 do
        region[k] = math.random(1, math.min(sshape[k], dshape[k]))
        so[k] = math.random(1, sshape[k] - region[k] + 1)
        dso[k] = math.random(1, dshape[k] - region[k] + 1)
      end
      s:copy_rect_to(d, so, dso, region, {shape = sshape})
      local box, k = cut(sref, sshape, so, region), 0
      each(dso, region, function(p) k = k + 1; dref[flat(dshape, p)] = box[k] end)
    end
    assert.same(dref, d:get():totable())
  end)

  it("copies within one buffer when the boxes do not overlap", function()
    local ref = random_ints(64)
    local b = dev:buffer("int", {8, 8})
    b:write(ref)
    b:copy_rect_to(b, {1, 1}, {5, 5}, {4, 4}):wait()
    local box, k = cut(ref, {8, 8}, {1, 1}, {4, 4}), 0
    each({5, 5}, {4, 4}, function(p) k = k + 1; ref[flat({8, 8}, p)] = box[k] end)
    assert.same(ref, b:get():totable())
  end)
end)

describe("rectangular transfers", function()
  it("refuse a host_shape whose count would wrap (issue 27 item 17), in a child", function()
    for _, call in ipairs({
      "b:read_rect({1, 1}, {1, 4}, gpu.array(\"int\", 4), {host_shape = {(1 << 62) + 1, 4}, "
        .. "host_origin = {(1 << 62) + 1, 1}})",
      "b:write_rect({1, 1}, {1, 4}, {1, 2, 3, 4}, {host_shape = {(1 << 62) + 1, 4}, "
        .. "host_origin = {(1 << 62) + 1, 1}})",
      "b:read_rect({1, 1}, {1, 4}, {host_shape = {(1 << 62) + 1, 4}, "
        .. "host_origin = {(1 << 62) + 1, 1}})",
    }) do
      local out, rc = child("local gpu = require \"luagpu\"; local b = gpu.device():buffer("
                            .. "\"int\", {4, 4}); " .. call .. ":wait()")
      assert.equal(1, rc, out)
      local fn = call:match("^b:([%w_]+)")
      -- the program's message: "luagpu: (command line):1: buffer:..." (the prefix once)
      assert.matches(": buffer:" .. fn .. ": argument #4: host_shape: "
                     .. "{4611686018427387905, 4} is too large (at most 1152921504606846975 "
                     .. "elements of 4 bytes)", out, 1, true)
    end
  end)

  it("raise on bad input, with the numbers", function()
    local b = dev:buffer("int", {5, 7})
    has_error("luagpu: buffer:read_rect: region out of range: buffer dimension 1: "
              .. "elements 4..6 of 5", b.read_rect, b, {4, 5}, {3, 2})
    has_error("luagpu: buffer:read_rect: region out of range: buffer dimension 2: "
              .. "elements 5..8 of 7", b.read_rect, b, {1, 5}, {3, 4})
    has_error("luagpu: buffer:read_rect: argument #1: origin: expected 2 integers "
              .. "(one per dimension), got 3", b.read_rect, b, {1, 1, 1}, {3, 4})
    has_error("luagpu: buffer:read_rect: argument #2: region[2]: expected an integer >= 1, "
              .. "got 0", b.read_rect, b, {1, 1}, {3, 0})
    has_error("luagpu: buffer:read_rect: argument #1: origin[1]: expected an integer >= 1, "
              .. "got 0", b.read_rect, b, {0, 1}, {3, 1})
    -- a string is no size (as every other size argument says)
    has_error("luagpu: buffer:read_rect: argument #1: origin[1]: expected an integer >= 1, "
              .. "got 1", b.read_rect, b, {"1", 1}, {3, 1})
    has_error("luagpu: buffer:read_rect: argument #2: region: expected a table of 2 "
              .. "integers, got nil", b.read_rect, b, {1, 1})
    has_error("luagpu: buffer:write_rect: argument #3: expected 4 values, got 3",
              b.write_rect, b, {1, 1}, {2, 2}, {1, 2, 3})
    has_error("luagpu: buffer:write_rect: argument #3: expected a host array or a table, "
              .. "got nil", b.write_rect, b, {1, 1}, {2, 2})
    has_error("luagpu: buffer:read_rect: argument #4: unknown option 'shap'",
              b.read_rect, b, {1, 1}, {2, 2}, {shap = {1}})
    has_error("luagpu: buffer:read_rect: argument #4: shape: 40 elements, more than the "
              .. "buffer's 35", b.read_rect, b, {1, 1}, {2, 2}, {shape = {5, 8}})
    has_error("luagpu: buffer:read_rect: region out of range: host dimension 2: "
              .. "elements 2..3 of 2", b.read_rect, b, {1, 1}, {2, 2},
              {host_shape = {2, 2}, host_origin = {1, 2}})
    has_error("luagpu: buffer:read_rect: argument #3: expected 4 values, got 5",
              b.read_rect, b, {1, 1}, {2, 2}, gpu.array("int", 5))
    local d = dev:buffer("float", {5, 7})
    has_error("luagpu: buffer:copy_rect_to: argument #1: expected a buffer of int, got one "
              .. "of float", b.copy_rect_to, b, d, {1, 1}, {1, 1}, {2, 2})
    local e = dev:buffer("int", {2, 2, 2})
    has_error("luagpu: buffer:copy_rect_to: the source is seen in 2 dimensions, the "
              .. "destination in 3", b.copy_rect_to, b, e, {1, 1}, {1, 1, 1}, {2, 2})
    has_error("luagpu: buffer:copy_rect_to: region out of range: destination dimension 1: "
              .. "elements 2..3 of 2", b.copy_rect_to, b, e, {1, 1, 1}, {2, 1, 1}, {2, 1, 1},
              {shape = {5, 7, 1}})
    has_error("luagpu: buffer:copy_rect_to: argument #1: source and destination regions "
              .. "overlap", b.copy_rect_to, b, b, {1, 1}, {2, 2}, {3, 3})
    local o = dev:buffer("int", 4, {access = "out"})
    has_error("luagpu: buffer:write_rect: the buffer has access \"out\"", o.write_rect, o,
              {1}, {1}, {1})
    local i = dev:buffer("int", 4, {access = "in"})
    has_error("luagpu: buffer:read_rect: the buffer has access \"in\"", i.read_rect, i,
              {1}, {1})
    -- issue 27 item 15: counts that would wrap name the shape, not row 1
    local big = (1 << 60) + 1
    local f = dev:buffer("int", 16)
    has_error("luagpu: buffer:read_rect: argument #4: shape: {1152921504606846977, 16} is "
              .. "more elements than the buffer's 16", f.read_rect, f, {big, 1}, {1, 16},
              {shape = {big, 16}})
    has_error("luagpu: buffer:write_rect: argument #4: shape: {1152921504606846977, 16} is "
              .. "more elements than the buffer's 16", f.write_rect, f, {big, 1}, {1, 16},
              support.random_ints(16, 1, 9), {shape = {big, 16}})
    has_error("luagpu: buffer:copy_rect_to: argument #5: dst_shape: {16, 1152921504606846977} "
              .. "is more elements than the buffer's 16", f.copy_rect_to, f, f, {1, 1},
              {1, big}, {1, 1}, {shape = {16, 1}, dst_shape = {16, big}})
    has_error("luagpu: buffer:read_rect: argument #4: shape: {4, 4, 1152921504606846977} is "
              .. "more elements than the buffer's 16", f.read_rect, f, {1, 1, big}, {1, 1, 1},
              {shape = {4, 4, big}})
    -- an origin and a region whose sum would wrap
    has_error("luagpu: buffer:read_rect: region out of range: buffer dimension 1: "
              .. "elements 9223372036854775807..18446744073709551613 of 16", f.read_rect, f, {math.maxinteger},
              {math.maxinteger})
    b:release()
    has_error("luagpu: buffer:read_rect: attempt to use a released buffer", b.read_rect, b,
              {1, 1}, {1, 1})
  end)
end)
