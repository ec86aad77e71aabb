-- Kernels and calls: binding arguments (buffers, views, scalars of every
-- type, vectors, gpu.localmem), call:run and dev:run in 1 to 3 dimensions
-- with offsets and local sizes, events and profiles, calls keeping their own
-- arguments, and every bad-input message, on the real OpenCL runtime.
local gpu = require "luagpu"

local dev = gpu.device()

local support = require "support"
local errmsg, has_error = support.errmsg, support.has_error

local SCALARS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float"}
if dev.fp64 then SCALARS[#SCALARS + 1] = "double" end

-- One program for the whole spec: PoCL compiles each program in a second or two.
local parts = {[[
__kernel void saxpy(float a, __global const float *x, __global float *y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] += a * x[i];
}
__kernel void ids(__global int *out) {      /* row-major linear id, offsets included */
  size_t w = get_global_size(0) + get_global_offset(0);
  size_t h = get_global_size(1) + get_global_offset(1);
  size_t i = get_global_id(0) + w * (get_global_id(1) + h * get_global_id(2));
  out[i] = (int)(get_global_id(0) * 10000 + get_global_id(1) * 100 + get_global_id(2));
}
__kernel void local_sizes(__global int *out) {
  out[get_global_id(0)] = (int)get_local_size(0);
}
__kernel void group_sum(__global const int *x, __local int *tmp, __global int *out) {
  int l = get_local_id(0);
  tmp[l] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (int i = 0; i < (int)get_local_size(0); i++) s += tmp[i];
    out[get_group_id(0)] = s;
  }
}
__kernel void put4(__global float4 *out, float4 v, float3 w) {
  out[0] = v;
  out[1] = (float4)(w, 0.0f);
}
__kernel void anything(__global void *p, __global int *out) { out[0] = 1; }
__kernel void set_value(__global int *out, int v) { out[get_global_id(0)] = v; }
typedef struct { float a; int b; } pair;
__kernel void by_struct(pair p, __global int *out) { out[0] = p.b; }
]]}
for _, s in ipairs(SCALARS) do
  parts[#parts + 1] = string.format(
    "__kernel void put_%s(%s v, __global %s *out) { out[0] = v; }\n", s, s, s)
end
local prog = dev:build(table.concat(parts))

local function random_floats(n) return support.random_floats(n, 4000, 8) end

describe("k(...)", function()
  it("binds buffers and numbers; a call runs with them (saxpy)", function()
    local n = 1000
    local xs, ys = random_floats(n), random_floats(n)
    local x, y = dev:buffer("float", n), dev:buffer("float", n)
    x:write(xs)
    y:write(ys)
    local call = prog.saxpy(2.5, x, y, n)
    assert.matches("^luagpu.Call %(saxpy%)", tostring(call))
    local ev = call:run({n})
    assert.is_nil(ev:wait())
    local r = y:get()
    for i = 1, n do assert.equal(ys[i] + 2.5 * xs[i], r[i]) end
  end)

  it("runs a call only on a queue of the device its kernel was built for", function()
    -- (on another device's queue PoCL aborted the process: rc 134)
    local out, code = support.two_devices([[
      local d1, d2 = gpu.device(1), gpu.device(2)
      local p = d2:build("kernel void k(global float *x) { x[get_global_id(0)] += 1.0f; }")
      local b = d2:buffer("float", 16)
      for _, q in ipairs{d1:default_queue(), d1:queue()} do
        print(select(2, pcall(function() return p.k(b):run({16}, nil, {queue = q}) end)))
        print(select(2, pcall(function() return d2:run(p.k(b), {16}, nil, {queue = q}) end)))
      end
      print(select(2, pcall(function() return d1:run(p.k(b), {16}) end)))
      p.k(b):run({16}, nil, {queue = d2:queue()}):wait()
      print("ran", b:get()[1])
    ]])
    assert.equal(0, code, out)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(6, #lines, out)
    for i = 1, 4 do
      assert.matches("luagpu: %a+:run: argument #%d: queue: the queue is on another device %(.*%) " ..
                     "than the one the kernel was built for %(.*%)", lines[i])
    end
    assert.matches("luagpu: dev:run: argument #1: the call's kernel was built for another " ..
                   "device %(.*%), not ", lines[5])
    assert.equal("ran\t1.0", lines[6])
  end)

  it("converts numbers to every scalar type, and raises when they do not fit", function()
    local limits = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
                    ushort = {0, 65535}, int = {-2147483648, 2147483647},
                    uint = {0, 4294967295}, long = {math.mininteger, math.maxinteger},
                    ulong = {0, math.maxinteger}, float = {-1.5, 3.25}, double = {-1 / 3, 1e300}}
    for _, s in ipairs(SCALARS) do
      local out = dev:buffer(s, 1)
      for _, v in ipairs(limits[s]) do
        prog["put_" .. s](v, out):run({1}):wait()
        assert.equal(v, out:get()[1])
      end
    end
    -- integral floats take the checking path, and store exactly
    local oi, ou = dev:buffer("int", 1), dev:buffer("ulong", 1)
    prog.put_int(-7.0, oi):run({1}):wait()
    prog.put_ulong(2.0 ^ 63, ou):run({1}):wait()
    assert.same({-7, math.mininteger}, {oi:get()[1], ou:get()[1]})
    has_error("luagpu: kernel put_char: argument #1 (char v): -129 does not fit char (-128 to 127)",
              prog.put_char, -129, dev:buffer("char", 1))
    has_error("luagpu: kernel put_int: argument #1 (int v): 2147483648 does not fit int " ..
              "(-2147483648 to 2147483647)", prog.put_int, 2147483648, oi)
    has_error("luagpu: kernel put_uchar: argument #1 (uchar v): 300 does not fit uchar (0 to 255)",
              prog.put_uchar, 300, dev:buffer("uchar", 1))
    has_error("luagpu: kernel put_uint: argument #1 (uint v): -1 does not fit uint",
              prog.put_uint, -1, dev:buffer("uint", 1))
    has_error("luagpu: kernel put_int: argument #1 (int v): 2.5 is not an integer (int holds "
              .. "integers)", prog.put_int, 2.5, dev:buffer("int", 1))
    has_error("luagpu: kernel put_float: argument #1 (float v): expected a number, got table",
              prog.put_float, {}, dev:buffer("float", 1))
    has_error("luagpu: kernel put_int: argument #1 (int v): expected a number, got string \"7\"",
              prog.put_int, "7", dev:buffer("int", 1))
  end)

  it("takes tables for vector scalars (float3 as three values)", function()
    local out = dev:buffer("float4", 2)
    prog.put4(out, {1, 2, 3, 4}, {5, 6, 7}):run({1}):wait()
    assert.same({1, 2, 3, 4, 5, 6, 7, 0}, out:get():totable())
    has_error("luagpu: kernel put4: argument #2 (float4 v): expected a table of 4 numbers, "
              .. "got a table of 3", prog.put4, out, {1, 2, 3}, {1, 2, 3})
    has_error("luagpu: kernel put4: argument #2 (float4 v): expected a table of 4 numbers, "
              .. "got number", prog.put4, out, 1, {1, 2, 3})
    has_error("luagpu: kernel put4: argument #3 (float3 w)[2]: expected a number, got boolean",
              prog.put4, out, {1, 2, 3, 4}, {1, true, 3})
  end)

  it("refuses a buffer of another element type, naming the argument", function()
    local n = 4
    has_error("luagpu: kernel saxpy: argument #2: expected a Buffer of float for parameter "
              .. "'global const float* x', got a Buffer of int",
              prog.saxpy, 1, dev:buffer("int", n), dev:buffer("float", n), n)
    has_error("luagpu: kernel saxpy: argument #3: expected a Buffer of float for parameter "
              .. "'global float* y', got luagpu.Array",
              prog.saxpy, 1, dev:buffer("float", n), gpu.array("float", n), n)
    has_error("luagpu: kernel saxpy: argument #3: expected a Buffer of float for parameter "
              .. "'global float* y', got nil", prog.saxpy, 1, dev:buffer("float", n), nil, n)
    -- void* takes any buffer
    local out = dev:buffer("int", 1)
    prog.anything(dev:buffer("uchar16", 3), out):run({1}):wait()
    assert.equal(1, out:get()[1])
  end)

  it("raises for too few or too many arguments, listing the parameters", function()
    local x = dev:buffer("float", 4)
    has_error("luagpu: kernel saxpy: expected 4 arguments (a, x, y, n), got 3",
              prog.saxpy, 1, x, x)
    has_error("luagpu: kernel saxpy: expected 4 arguments (a, x, y, n), got 5",
              prog.saxpy, 1, x, x, 4, 5)
    has_error("luagpu: kernel ids: expected 1 argument (out), got 0", prog.ids)
  end)

  it("raises for parameter types it cannot pass", function()
    has_error("luagpu: kernel by_struct: argument #1: parameter 'pair p' has a type luagpu "
              .. "cannot pass", prog.by_struct, 1, dev:buffer("int", 1))
  end)

  it("takes views for pointer parameters", function()
    local align = dev.mem_base_addr_align // 4      -- floats per alignment unit
    local n = 3 * align
    local x, y = dev:buffer("float", n), dev:buffer("float", n)
    local xs = random_floats(n)
    x:write(xs)
    local first, last = align + 1, 2 * align
    prog.saxpy(1, x:sub(first, last), y:sub(first, last), align):run({align}):wait()
    local r = y:get()
    for i = 1, n do
      assert.equal((i >= first and i <= last) and xs[i] or 0, r[i])
    end
  end)

  it("takes values whose metatable converts them (__tobuffer), and keeps what it gives", function()
    local n = 64
    local x, y = dev:buffer("float", n), dev:buffer("float", n)
    local xs = random_floats(n)
    x:write(xs)
    local calls = 0
    local stands_for = {__tobuffer = function(v) calls = calls + 1; return v.b:sub(1, n) end}
    local call = prog.saxpy(2, setmetatable({b = x}, stands_for), setmetatable({b = y}, stands_for), n)
    assert.equal(2, calls)
    collectgarbage()                  -- the views made by __tobuffer are the call's now
    call:run({n}):wait()
    local r = y:get()
    for i = 1, n do assert.equal(2 * xs[i], r[i]) end
    local bad = setmetatable({}, {__tobuffer = function() return 42 end})
    local raising = setmetatable({}, {__tobuffer = function() error("not contiguous", 0) end})
    has_error("luagpu: kernel saxpy: argument #2: expected a Buffer of float for parameter "
              .. "'global const float* x', got number", prog.saxpy, 1, bad, y, n)
    has_error("not contiguous", prog.saxpy, 1, raising, y, n)
    has_error("luagpu: kernel saxpy: argument #2: expected a Buffer of float for parameter "
              .. "'global const float* x', got table", prog.saxpy, 1,
              setmetatable({}, {__tobuffer = "no"}), y, n)
  end)

  it("raises when a bound buffer was released before the run", function()
    local x, y = dev:buffer("float", 8), dev:buffer("float", 8)
    local call = prog.saxpy(1, x, y, 8)
    call:run({8}):wait()
    x:release()
    has_error("luagpu: call:run: argument #2 (x) of kernel saxpy: attempt to use a released "
              .. "buffer", call.run, call, {8})
    has_error("luagpu: kernel saxpy: argument #2: (x): attempt to use a released buffer",
              prog.saxpy, 1, x, y, 8)
  end)
end)

describe("call:with", function()
  it("copies a call with one buffer bound in another's places, the rest as bound", function()
    local n = 300
    local xs, ys, zs = random_floats(n), random_floats(n), random_floats(n)
    local x, y, z = dev:buffer("float", n), dev:buffer("float", n), dev:buffer("float", n)
    x:write(xs); y:write(ys); z:write(zs)
    local call = prog.saxpy(1.5, x, y, n)
    local other = call:with(y, z)                -- y += 1.5 x, now into z
    assert.matches("^luagpu.Call %(saxpy%)", tostring(other))
    other:run({n}):wait()
    call:run({n}):wait()                         -- the first still writes y
    local ry, rz = y:get(), z:get()
    for i = 1, n do
      assert.equal(ys[i] + 1.5 * xs[i], ry[i])
      assert.equal(zs[i] + 1.5 * xs[i], rz[i])
    end
    -- every place old held: x read and written
    local w = dev:buffer("float", n)
    w:write(xs)
    call:with(x, w):with(y, w):run({n}):wait()
    local rw = w:get()
    for i = 1, n do assert.equal(xs[i] + 1.5 * xs[i], rw[i]) end
    -- a view takes a place; the new call keeps its buffer alive
    local skip = dev.mem_base_addr_align // 4          -- a view a kernel takes
    local big = dev:buffer("float", n + skip)
    local bs = random_floats(n + skip)
    big:write(bs)
    local view = big:sub(skip + 1, n + skip)
    local into_view = call:with(y, view)
    view = nil
    collectgarbage()
    into_view:run({n}):wait()
    local rb = big:get()
    for i = 1, skip do assert.equal(bs[i], rb[i]) end
    for i = 1, n do assert.equal(bs[skip + i] + 1.5 * xs[i], rb[skip + i]) end
  end)

  it("checks the buffers as binding does", function()
    local x, y = dev:buffer("float", 8), dev:buffer("float", 8)
    local call = prog.saxpy(1, x, y, 8)
    has_error("luagpu: call:with: argument #1: expected a Buffer, got number", call.with, call, 1, y)
    has_error("luagpu: call:with: argument #2: expected a Buffer, got no value", call.with, call, y)
    assert.equal(call, call:with(dev:buffer("float", 8), y))   -- not an argument: as it is
    has_error("luagpu: kernel saxpy: argument #3: expected a Buffer of float for parameter " ..
              "'global float* y', got a Buffer of int", call.with, call, y, dev:buffer("int", 8))
    local gone = dev:buffer("float", 8)
    gone:release()
    has_error("luagpu: kernel saxpy: argument #3: (y): attempt to use a released buffer",
              call.with, call, y, gone)
    local other = call:with(y, dev:buffer("float", 8))
    x:release()
    has_error("luagpu: call:run: argument #2 (x) of kernel saxpy: attempt to use a released "
              .. "buffer", other.run, other, {8})
  end)
end)

describe("gpu.localmem", function()
  it("sizes __local parameters (per-group sums)", function()
    local n, l = 1024, 64
    local xs = {}
    for i = 1, n do xs[i] = math.random(-1000, 1000) end
    local x, out = dev:buffer("int", n), dev:buffer("int", n // l)
    x:write(xs)
    local lm = gpu.localmem("int", l)
    assert.equal("int", lm.type)
    assert.equal(l, lm.count)
    assert.equal(4 * l, lm.bytes)
    assert.equal("luagpu.LocalMem (int, 64)", tostring(lm))
    prog.group_sum(x, lm, out):run({n}, {l}):wait()
    local r = out:get()
    for g = 1, n // l do
      local s = 0
      for i = (g - 1) * l + 1, g * l do s = s + xs[i] end
      assert.equal(s, r[g])
    end
  end)

  it("is the only thing __local parameters take, and only they take it", function()
    local x, out = dev:buffer("int", 8), dev:buffer("int", 1)
    has_error("luagpu: kernel group_sum: argument #2: expected gpu.localmem(type, count) for "
              .. "parameter 'local int* tmp', got luagpu.Buffer", prog.group_sum, x, x, out)
    has_error("luagpu: kernel group_sum: argument #2: expected gpu.localmem(type, count) for "
              .. "parameter 'local int* tmp', got number", prog.group_sum, x, 64, out)
    has_error("luagpu: kernel group_sum: argument #2: expected gpu.localmem of int for "
              .. "parameter 'local int* tmp', got float",
              prog.group_sum, x, gpu.localmem("float", 8), out)
    has_error("luagpu: kernel group_sum: argument #1: expected a Buffer of int for parameter "
              .. "'global const int* x', got luagpu.LocalMem",
              prog.group_sum, gpu.localmem("int", 8), gpu.localmem("int", 8), out)
    has_error("luagpu: kernel group_sum: the gpu.localmem arguments take "
              .. (dev.local_mem_size + 4) .. " bytes, more than the device's local_mem_size",
              prog.group_sum, x, gpu.localmem("int", dev.local_mem_size // 4 + 1), out)
  end)

  it("raises on bad arguments", function()
    has_error("luagpu: gpu.localmem: argument #1", gpu.localmem, "flot", 4)
    has_error("luagpu: gpu.localmem: argument #2: expected a count of elements >= 1, got 0",
              gpu.localmem, "float", 0)
    has_error("luagpu: gpu.localmem: argument #2: expected a count of elements >= 1, got -1",
              gpu.localmem, "float", -1)
    -- the byte count must not wrap: (2^58 + 4) float16 once made 256 bytes
    has_error("luagpu: gpu.localmem: argument #2: too large: 288230376151711748 elements of "
              .. "float16 (at most 144115188075855871)", gpu.localmem, "float16", (1 << 58) + 4)
    has_error("luagpu: gpu.localmem: argument #2: too large: 1152921504606846976 elements of "
              .. "long2 (at most 576460752303423487)", gpu.localmem, "long2", 1 << 60)
    has_error("luagpu: gpu.localmem: argument #2: too large", gpu.localmem, "float", 1 << 61)
    assert.equal(math.maxinteger, gpu.localmem("char", math.maxinteger).bytes)
  end)
end)

describe("call:run", function()
  it("runs in 1, 2 and 3 dimensions, with global offsets", function()
    local function check(global, offset)
      if type(global) == "number" then global = {global} end
      local dims = #global
      local full = {1, 1, 1}
      for d = 1, dims do full[d] = global[d] + (offset and offset[d] or 0) end
      local out = dev:buffer("int", full[1] * full[2] * full[3])
      out:fill(-1)
      prog.ids(out):run(global, nil, offset and {offset = offset} or nil):wait()
      local r = out:get()
      for k = 0, full[3] - 1 do
        for j = 0, full[2] - 1 do
          for i = 0, full[1] - 1 do
            local inside = true
            local o = offset or {0, 0, 0}
            if i < (o[1] or 0) or (dims > 1 and j < (o[2] or 0)) or (dims > 2 and k < (o[3] or 0))
            then inside = false end
            local want = inside and (i * 10000 + j * 100 + k) or -1
            assert.equal(want, r[1 + i + full[1] * (j + full[2] * k)])
          end
        end
      end
    end
    check({37})
    check({6, 5})
    check({4, 3, 2})
    check({10}, {5})
    check({3, 4}, {2, 1})
    check({2, 2, 2}, {1, 0, 3})
    check(8)                                 -- a number for one dimension
    local out = dev:buffer("int", 8)
    prog.set_value(out, 3):run(8):wait()
    assert.same({3, 3, 3, 3, 3, 3, 3, 3}, out:get():totable())
  end)

  it("uses the given local size, or lets OpenCL choose with nil", function()
    local out = dev:buffer("int", 64)
    prog.local_sizes(out):run({64}, {16}):wait()
    for _, v in ipairs(out:get():totable()) do assert.equal(16, v) end
    prog.local_sizes(out):run({64}):wait()
    local chosen = out:get()[1]
    assert.is_true(chosen >= 1 and 64 % chosen == 0)
  end)

  it("checks local sizes against the global size and the limits, with the numbers", function()
    local call = prog.local_sizes(dev:buffer("int", 1000))
    has_error("luagpu: clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54): local size "
              .. "{300} does not divide global size {1000}", call.run, call, {1000}, {300})
    has_error("local size {10, 3} does not divide global size {10, 10}",
              call.run, call, {10, 10}, {10, 3})
    local max = dev.max_work_group_size
    local big = 2 * max
    has_error("luagpu: clEnqueueNDRangeKernel: CL_INVALID_WORK_ITEM_SIZE (-55): local size {"
              .. (dev.max_work_item_sizes[1] + 1) .. "} exceeds the device's "
              .. "max_work_item_sizes[1] = " .. dev.max_work_item_sizes[1],
              call.run, call, {big}, {dev.max_work_item_sizes[1] + 1})
    local side = 1
    while side * side <= max do side = side * 2 end     -- side^2 > max, side <= item sizes
    if side <= dev.max_work_item_sizes[2] then
      has_error("luagpu: clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54): local size {"
                .. side .. ", " .. side .. "} has " .. side * side .. " work-items, more than "
                .. "the device's max_work_group_size " .. max,
                call.run, call, {side, side}, {side, side})
    end
  end)

  it("raises on bad sizes and options", function()
    local call = prog.local_sizes(dev:buffer("int", 8))
    has_error("luagpu: call:run: argument #1: global size: expected 1 to 3 dimensions, got 4",
              call.run, call, {1, 1, 1, 1})
    has_error("luagpu: call:run: argument #1: global size: expected 1 to 3 dimensions, got 0",
              call.run, call, {})
    has_error("luagpu: call:run: argument #1: global size[2]: expected an integer >= 0, got -1",
              call.run, call, {8, -1})
    has_error("luagpu: call:run: argument #1: global size[1]: expected an integer >= 0, got 2.5",
              call.run, call, {2.5})
    has_error("luagpu: call:run: argument #1: expected global size: a table of 1 to 3 sizes, "
              .. "got nil", call.run, call)
    has_error("luagpu: call:run: argument #2: local size {4, 1} has not the 1 dimension of "
              .. "global size {8}", call.run, call, {8}, {4, 1})
    has_error("luagpu: call:run: offset {1, 1} has not the 1 dimension of global size {8}",
              call.run, call, {8}, nil, {offset = {1, 1}})
    has_error("luagpu: call:run: argument #3: offset[1]: expected an integer >= 0, got -1",
              call.run, call, {8}, nil, {offset = {-1}})
    has_error("luagpu: call:run: argument #3: expected an options table", call.run, call, {8},
              nil, 5)
    has_error("luagpu: call:run: argument #3: unknown option 'ofset' (expected wait, queue, "
              .. "offset, event)", call.run, call, {8}, nil, {ofset = {4}})
    has_error("luagpu: call:run: argument #3: unknown option '1' (expected wait, queue, offset, event)",
              call.run, call, {8}, nil, {dev:queue()})
  end)

  it("runs nothing for a global size with a 0 in it: a marker after the wait list", function()
    local out = dev:buffer("int", 8)
    local empty = dev:buffer("int", 0)
    local q = dev:queue{out_of_order = true}
    local e1 = prog.set_value(out, 7):run({8}, nil, {queue = q})
    -- the empty launch waits for e1 on an out-of-order queue: its event orders after e1
    local e2 = prog.set_value(out, 5):run({#empty}, nil, {queue = q, wait = {e1}})
    assert.matches("kernel set_value", tostring(e2), 1, true)
    e2:wait()
    assert.equal("complete", e1.status)
    assert.same({7, 7, 7, 7, 7, 7, 7, 7}, out:get():totable())
    for _, g in ipairs{{0}, {4, 0}, {0, 4, 4}} do
      assert.is_nil(prog.set_value(out, 1):run(g):wait())
    end
    assert.is_nil(dev:run(prog.set_value(out, 1), {0, 2}, {1, 2}):wait())
    assert.same({7, 7, 7, 7, 7, 7, 7, 7}, out:get():totable())
  end)

  it("enqueues without an Event with {event = false}, and returns nothing", function()
    local out = dev:buffer("int", 8)
    local q = dev:queue()
    assert.equal(0, select("#", prog.set_value(out, 4):run({8}, nil, {event = false, queue = q})))
    assert.equal(0, select("#", dev:run(prog.set_value(out, 6), {4}, nil,
                                        {event = false, offset = {4}, queue = q})))
    assert.equal(0, select("#", prog.set_value(out, 9):run({0}, nil, {event = false})))
    q:finish()
    assert.same({4, 4, 4, 4, 6, 6, 6, 6}, out:get():totable())
    has_error("luagpu: call:run: argument #3: event: expected a boolean, got number",
              prog.set_value(out, 1).run, prog.set_value(out, 1), {8}, nil, {event = 0})
    -- {event = false} alone takes a path of its own: the same launch, on the default queue
    local other = dev:buffer("int", 4)
    assert.equal(0, select("#", prog.set_value(other, 3):run({4}, nil, {event = false})))
    assert.equal(0, select("#", prog.set_value(other, 5):run({2}, nil,
                                                             setmetatable({event = false}, {}))))
    has_error("luagpu: call:run: argument #3: unknown option 'evnt' (expected wait, queue, " ..
              "offset, event)", prog.set_value(other, 1).run, prog.set_value(other, 1), {4}, nil,
              {event = false, evnt = true})
    dev:finish()
    assert.same({5, 5, 3, 3}, other:get():totable())
  end)

  it("raises for a queue that the options' own metamethods released", function()
    local call = prog.set_value(dev:buffer("int", 4), 1)
    local q = dev:queue()
    local opts = setmetatable({queue = q}, {__index = function(_, k)
      if k == "wait" then q:release() end
    end})
    has_error("luagpu: call:run: attempt to use a released queue", call.run, call, {4}, nil, opts)
    local q2 = dev:queue()
    local o2 = setmetatable({}, {__index = function(_, k)
      if k == "wait" then q2:release() end
    end})
    has_error("luagpu: queue:marker: attempt to use a released queue", q2.marker, q2, o2)
  end)

  it("returns an Event whose profile gives the kernel's times", function()
    local ev = prog.local_sizes(dev:buffer("int", 64)):run({64})
    assert.matches("kernel local_sizes", tostring(ev), 1, true)
    local p = ev:profile()
    assert.is_true(p.queued <= p.submit and p.submit <= p.start and p.start <= p["end"])
    assert.equal(p["end"] - p.start, p.duration)
  end)

  it("waits for the events of opts.wait and runs on opts.queue", function()
    local q = dev:queue{out_of_order = true}
    local out = dev:buffer("int", 4)
    local e1 = prog.set_value(out, 5):run({4}, nil, {queue = q})
    local e2 = prog.set_value(out, 6):run({2}, nil, {queue = q, wait = {e1}})
    e2:wait()
    assert.same({6, 6, 5, 5}, out:get():totable())
  end)

  it("keeps each call's arguments: calls run back to back on an out-of-order queue", function()
    local q = dev:queue{out_of_order = true}
    local k = prog.set_value
    local outs, evs = {}, {}
    for i = 1, 6 do
      outs[i] = dev:buffer("int", 16)
      evs[i] = k(outs[i], i * 11):run({16}, nil, {queue = q})
    end
    gpu.wait(evs)
    for i = 1, 6 do
      for _, v in ipairs(outs[i]:get():totable()) do assert.equal(i * 11, v) end
    end
    -- the same call again after another call changed the kernel's arguments
    local a, b = dev:buffer("int", 4), dev:buffer("int", 4)
    local ca, cb = k(a, 1), k(b, 2)
    ca:run({4}, nil, {queue = q})
    -- cb must be done before the fill (on another queue): else it could land after it
    cb:run({4}, nil, {queue = q}):wait()
    b:fill(0):wait()
    ca:run({4}, nil, {queue = q})
    q:finish()
    assert.same({1, 1, 1, 1}, a:get():totable())
    assert.same({0, 0, 0, 0}, b:get():totable())
  end)

  it("raises for a call whose kernel was released", function()
    local p = dev:build("__kernel void f(__global int *o) { o[0] = 1; }")
    local call = p.f(dev:buffer("int", 1))
    p:release()
    has_error("attempt to use a released kernel", call.run, call, {1})
  end)
end)

describe("dev:run", function()
  it("runs a call, waiting for trailing events, with trailing options", function()
    local out = dev:buffer("int", 8)
    local e1 = prog.set_value(out, 3):run({8})
    local e2 = out:fill(0, {wait = {e1}})
    local e3 = dev:run(prog.set_value(out, 4), {4}, nil, e1, e2)
    assert.matches("kernel set_value", tostring(e3), 1, true)
    e3:wait()
    assert.same({4, 4, 4, 4, 0, 0, 0, 0}, out:get():totable())
    dev:run(prog.set_value(out, 9), {4}, {2}, e3, {offset = {4}}):wait()
    assert.same({4, 4, 4, 4, 9, 9, 9, 9}, out:get():totable())
    dev:run(prog.set_value(out, 1), {8}):wait()
    assert.same({1, 1, 1, 1, 1, 1, 1, 1}, out:get():totable())
  end)

  it("raises on bad arguments", function()
    local out = dev:buffer("int", 8)
    has_error("luagpu: dev:run: argument #1: expected a luagpu.Call (k(...)), got no value",
              dev.run, dev)
    has_error("luagpu: dev:run: argument #4", dev.run, dev, prog.set_value(out, 1), {8}, nil, 5)
    has_error("luagpu: dev:run: argument #4: unknown option 'wiat' (expected wait, queue, offset, event)",
              dev.run, dev, prog.set_value(out, 1), {8}, nil, {wiat = {}})
    has_error("luagpu: clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54): local size "
              .. "{3} does not divide global size {8}",
              dev.run, dev, prog.set_value(out, 1), {8}, {3})
  end)
end)

describe("launch sizes past what drivers can count", function()
  local gpu = require "luagpu"
  it("raise before anything is enqueued", function()
    local dev = gpu.device()
    local p = dev:build("kernel void nothing(global int *x) { }")
    local b = dev:buffer("int", 4)
    local ok, err = pcall(function() return p.nothing(b):run({ 1 << 48 }) end)
    assert.is_false(ok)
    assert.matches("luagpu: call:run: argument #1: global size {281474976710656} needs "
      .. "68719476736 work-groups, more than the 2^32 - 1 OpenCL drivers can launch", err, 1, true)
    ok, err = pcall(function() return p.nothing(b):run({ 1 << 40, 1 << 20 }, { 1, 1 }) end)
    assert.is_false(ok)
    assert.matches("needs 1152921504606846976 work-groups", err, 1, true)
    assert.is_nil(p.nothing(b):run({ 1 << 10 }):wait())
  end)
end)
