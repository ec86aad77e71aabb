-- host/help.lua: the REPL's help(obj) and what Tab completes of luagpu's
-- objects, embedded into the program. One line per method and the field
-- names of each class, written from docs/API.md (a spec checks that every
-- method a class has is here). Returns {classes = {[metatable name] =
-- {fields =, methods =}}, module = {[name] = line}}.
local H = {classes = {}}

H.module = {
  version = "gpu.version: the version string, \"x.y.z\"",
  now = "gpu.now(): monotonic wall-clock seconds (a float)",
  root = "gpu.root: the checkout or install folder of the helpers and kernels (nil if none)",
  code_dir = "gpu.code_dir: the folder of luagpu.so (or of the program linking luagpu in)",
  platforms = "gpu.platforms(): {Platform, ...}, tables with name, vendor, version, devices",
  devices = "gpu.devices([kind]): {Device, ...}; kind \"gpu\", \"cpu\", \"accelerator\" or \"all\"",
  device = "gpu.device([spec]): one Device: $LUAGPU_DEVICE, else the first GPU, else the first CPU",
  type = "gpu.type(v): \"Device\", \"Buffer\", \"Tensor\", ... for luagpu's objects, nil for anything else",
  released = "gpu.released(v): true for a released luagpu object, false for a live one, nil else",
  extend = "gpu.extend(class, methods): adds Lua methods to a luagpu class (\"Device\", ...)",
  kernel_source = "gpu.kernel_source(name): the source of a built-in kernels/NAME.cl",
  array = "gpu.array(type, n | table | shape): a typed host array, zero-filled or from a table",
  load = "gpu.load(path [, type | dev]): a host array (or a tensor on dev) from a NumPy .npy file",
  localmem = "gpu.localmem(type, count): local memory per work-group, for a __local parameter",
  wait = "gpu.wait(ev, ...): waits for all, raises if one failed, returns their results",
  user_event = "gpu.user_event(dev): an Event the script sets with :complete() or :fail(msg)",
  poll = "gpu.poll(): runs the on_complete callbacks of commands now done; how many ran",
  await = "gpu.await(ev): in a gpu.run_loop task, yields until ev is done; else ev:wait()",
  run_loop = "gpu.run_loop(fn, ...): runs fn(...) and spawned tasks as coroutines until all end",
  spawn = "gpu.spawn(fn, ...): adds a task to the running gpu.run_loop",
  trace = "gpu.trace(true | false | path): record every command; stop (and write JSON or SVG)",
  tracing = "gpu.tracing(): true while gpu.trace records",
  debug = "gpu.debug([on]): wait after each command, guard buffers with canaries; the old state",
  warmup = "gpu.warmup(dev [, types]): builds the helpers' common kernels now; count, seconds",
  cat = "gpu.cat(list [, dim]): the tensors joined along dim",
  stack = "gpu.stack(list [, dim]): the tensors stacked along a new dim",
  outer = "gpu.outer(x, y): the outer product of two 1-D tensors",
  searchsorted = "gpu.searchsorted(sorted, v [, {right =}]): insertion positions (1-based)",
  einsum = "gpu.einsum(spec, x, ...): Einstein summation (\"ij,jk->ik\")",
  shard = "gpu.shard(x, devices [, dim]) | gpu.shard(list [, dim]): a tensor in parts, one per device",
  replicate = "gpu.replicate(x, devices): x whole on each device (a sharded tensor of dim nil)",
  show = "gpu.show(x [, path] [, opts]): a 2-D tensor as an image, 1-D as a plot (PNG or SVG)",
  encode_png = "gpu.encode_png(width, height, channels, pixels): PNG bytes of 8-bit pixels",
  write_file = "gpu.write_file(path, data): data written as gpu.show writes (no links); path",
}

-- The helper modules, for help(gpu): {gpu field or nil, line}; those with
-- a field load on first use of it, the others with require "luagpu.NAME".
H.helpers = {
  {"tensor", "gpu.tensor: device n-d arrays (dev:tensor, dev:zeros, x + y, x:sum(), x:mm(y), ...)"},
  {"reduce", "gpu.reduce: sum, min, max and custom reductions of buffers"},
  {"matmul", "gpu.matmul(A, B [, C] [, opts]): C = A * B of 2-D buffers, float or double"},
  {"where", "gpu.where(mask, a, b): a where mask is nonzero, else b (tensors or numbers)"},
  {"algo", "gpu.algo: scan, scanner, sort, argsort, copy_if, histogram of buffers"},
  {nil, "luagpu.split: matmul and reduce over several devices of one platform"},
  {nil, "luagpu.trace: gpu.trace's record as Chrome JSON or an SVG timeline"},
  {nil, "luagpu.mpi: ranks, messages and collectives past one machine (Open MPI)"},
}

local function class(name, fields, methods)
  H.classes["luagpu." .. name] = {fields = fields, methods = methods}
end

class("Device", {
  "name", "vendor", "type", "platform", "version", "driver_version", "opencl_c_version",
  "profile", "compute_units", "clock_mhz", "global_mem_size", "local_mem_size",
  "max_alloc_size", "constant_buffer_size", "max_work_group_size", "max_work_item_sizes",
  "address_bits", "mem_base_addr_align", "fp64", "available", "host_unified_memory",
  "max_constant_args", "timer_resolution_ns", "extensions", "preferred_vector_width",
  "parent", "image_support",
}, {
  buffer = "dev:buffer(type, n | shape [, {access =, host =, use_host =, pinned =, init =, collect =}]): a device buffer",
  scalar = "dev:scalar(type [, value]): a one-element buffer; its read gives the number",
  build = "dev:build(source [, {options =, defines =}]): compiles OpenCL C into a Program",
  build_file = "dev:build_file(path [, opts]): the same for a file",
  queue = "dev:queue([{out_of_order =, profiling =}]): a new command queue",
  default_queue = "dev:default_queue(): the in-order queue commands go to by default",
  set_profiling = "dev:set_profiling(on): the default queue profiles from now on, or not",
  finish = "dev:finish(): blocks until the default queue's commands are done",
  partition = "dev:partition{equally = n} | {counts = {...}} | {affinity = domain}: sub-Devices sharing a new context",
  image = "dev:image({order =, type =}, {w [, h [, d]]} [, {access =, host =, array =}]): an Image",
  image_formats = "dev:image_formats([dims]): {{order =, type =}, ...} the device supports",
  sampler = "dev:sampler{normalized =, address =, filter =}: a Sampler for kernel arguments",
  flush = "dev:flush(): submits the default queue's commands without waiting",
  run = "dev:run(call, global [, local] [, ev...] [, opts]): call:run after the events",
  summary = "dev:summary(): every field, one per line",
  build_binary = "dev:build_binary(bytes): a Program from prog.binary (or a driver's binary), not compiled",
  info = "dev:info(name): any clGetDeviceInfo query by name (\"CL_DEVICE_...\" or \"max_compute_units\")",
  -- added by luagpu.tensor (loaded on first use of one)
  tensor = "dev:tensor(type, shape [, init]): a Tensor, from a number, a table, a host array or a buffer",
  zeros = "dev:zeros(type, shape): a Tensor of zeros",
  ones = "dev:ones(type, shape): a Tensor of ones",
  full = "dev:full(type, shape, v): a Tensor filled with v",
  eye = "dev:eye(type, n [, m]): an identity matrix",
  arange = "dev:arange(type, n) | dev:arange(type, first, last [, step]): 1..n, or first, first + step, ... to last",
  linspace = "dev:linspace(type, first, last, count): count evenly spaced values",
  rand = "dev:rand(type, shape [, seed]): uniform random values in [0, 1)",
  randn = "dev:randn(type, shape [, seed]): normal random values (mean 0, sd 1)",
  randint = "dev:randint(type, lo, hi, shape [, seed]): random integers from lo to hi",
  uniform = "dev:uniform(type, shape [, lo [, hi [, seed]]]): uniform random values in [lo, hi)",
  normal = "dev:normal(type, shape [, mean [, std [, seed]]]): normal random values",
  randperm = "dev:randperm(n [, seed]): a random permutation of 1..n",
  memory = "dev:memory(): the tensor memory pool's figures (in use, cached, ...)",
  empty_cache = "dev:empty_cache(): releases the memory pool's free blocks now; returns their bytes",
})

class("Queue", {"device", "profiling", "out_of_order", "default"}, {
  finish = "q:finish(): blocks until every command on q is done",
  flush = "q:flush(): submits the queued commands without waiting",
  marker = "q:marker([{wait =}]): an Event done when the waited events (or all before) are",
  barrier = "q:barrier([{wait =}]): a marker that later commands on q wait for too",
  release = "q:release(): lets the queue go; pending commands still complete",
})

class("Array", {"type", "count", "shape", "bytes"}, {
  totable = "a:totable(): a flat Lua table of every value (row-major)",
  fill = "a:fill(v): sets every value; returns a",
  copy = "a:copy([type]): a new array of the same shape, converted to type",
  sub = "a:sub(first [, last]): a 1-D view of elements first..last (shares a's memory)",
  save = "a:save(path): writes a NumPy .npy file",
})

class("Buffer", {"type", "shape", "count", "bytes", "device", "access", "parent", "offset",
                 "root"}, {
  write = "b:write(src [, opts]): Event; src a host array, a flat table, or a number",
  read = "b:read([dst] [, opts]): Event whose wait() gives the host array",
  get = "b:get([dst] [, opts]): blocking read: the host array (or the number)",
  fill = "b:fill(value [, opts]): Event; every element set to value",
  copy_to = "b:copy_to(dst [, opts]): Event; device to device, same type and count",
  read_rect = "b:read_rect(origin, region [, dst] [, opts]): Event giving a box of the buffer",
  write_rect = "b:write_rect(origin, region, src [, opts]): Event; writes a box of the buffer",
  copy_rect_to = "b:copy_rect_to(dst, origin, dst_origin, region [, opts]): Event; box to box",
  map = "b:map(mode [, first [, last]] [, opts]): a host array aliasing the mapped elements (and the map's Event, with {blocking = false})",
  unmap = "b:unmap(a [, opts]): Event; ends b:map's array a, whose use then raises",
  sub = "b:sub(first, last): a view of elements first..last (1-based, inclusive)",
  release = "b:release(): frees the device memory now (also __gc, __close)",
})

class("Event", {"status", "duration", "command"}, {
  wait = "ev:wait(): blocks; the command's result (a read's array), raises if it failed",
  profile = "ev:profile(): {queued =, submit =, start =, [\"end\"] =, duration =} in ns",
  release = "ev:release(): waits for the command, then lets the event go",
  complete = "ev:complete(): sets a user event complete; commands waiting for it run",
  fail = "ev:fail([msg]): sets a user event failed; waits on it raise msg",
  on_complete = "ev:on_complete(fn): fn(ev, status) runs on the Lua thread once it is done",
})

class("Image", {"width", "height", "depth", "kind", "order", "channel_type", "channels",
                "device", "access"}, {
  read = "img:read([dst] [, origin, region] [, opts]): Event giving the pixels' host array (the array, with {blocking = true})",
  write = "img:write(src [, origin, region] [, opts]): Event (nothing, with {blocking = true}); pixels from a host array or table",
  fill = "img:fill({c1, c2, c3, c4} [, origin, region] [, opts]): Event; the pixels set to the color",
  copy_to = "img:copy_to(dst [, src_origin, dst_origin, region] [, opts]) | img:copy_to(buffer [, origin, region] [, offset] [, opts]): Event",
  copy_from = "img:copy_from(buffer [, origin, region] [, offset] [, opts]): Event; pixels from a buffer's elements",
})

class("Sampler", {}, {})

class("Program", {"kernels", "log", "options", "file", "device", "cached", "binary"}, {
  kernel = "prog:kernel(name): the Kernel name (prog.NAME also works)",
  release = "prog:release(): lets the program and its kernels go",
})

class("Kernel", {"name", "nargs", "program", "args", "work_group_size",
                 "preferred_work_group_size_multiple", "local_mem_size",
                 "private_mem_size"}, {})

class("Call", {}, {
  run = "call:run(global [, local] [, opts]): enqueues the kernel; returns an Event",
  with = "call:with(old, new): a copy of the call with Buffer new bound where old was",
})

class("LocalMem", {}, {})

return H
