-- luagpu.tensor.help: what the REPL's help(x) and Tab show of a Tensor,
-- made from the tables that define the type: the method names from the
-- method table (luagpu.tensor.object's, filled by luagpu.tensor), the
-- field names from its field readers, the elementwise ops' lines from the
-- op table (luagpu.tensor.ops), the other methods' lines from DESCRIBE
-- below (a spec checks that every method has one).
--
--   M.class()    {fields = {names, sorted}, methods = {[name] = line}}, as
--                host/help.lua gives the C classes'; a method without a
--                line in DESCRIBE gets "x:NAME(...)" (and the spec fails)
--   M.DESCRIBE   name -> line, for the methods that are no elementwise op

local O = require "luagpu.tensor.object"
local OPS = require "luagpu.tensor.ops"

local pairs, ipairs, sort, format = pairs, ipairs, table.sort, string.format

local M = {}

M.DESCRIBE = {
  all = "x:all([dim [, keepdim]]): 1 where every element is nonzero (uchar)",
  any = "x:any([dim [, keepdim]]): 1 where some element is nonzero (uchar)",
  argmax = "x:argmax([dim [, keepdim]]): the 1-based position of the largest (long)",
  argmin = "x:argmin([dim [, keepdim]]): the 1-based position of the smallest (long)",
  argsort = "x:argsort([dim] [, {descending =}]): the 1-based positions that sort x",
  astype = "x:astype(type): a copy converted to type (\"float\", \"int\", ...)",
  bincount = "x:bincount([bins]): counts of each value 0, 1, ... of a 1-D integer tensor (max(bins, max(x) + 1) of them)",
  bmm = "x:bmm(y): batched matrix product, {b, n, k} by {b, k, m}",
  chunk = "x:chunk(n [, dim]): a list of n views along dim",
  clamp = "x:clamp(lo, hi): x limited to lo..hi (either may be nil)",
  clone = "x:clone(): a copy with its own storage",
  contiguous = "x:contiguous(): x, or a row-major copy of a strided view",
  cumprod = "x:cumprod([dim]): running products along dim",
  cumsum = "x:cumsum([dim]): running sums along dim",
  dot = "x:dot(y): the dot product of two 1-D tensors (a number)",
  eval = "x:eval(): runs a lazy expression's kernel now; returns x",
  expand = "x:expand(shape): a broadcast view (size-1 dims repeated, stride 0)",
  flatten = "x:flatten(): x as one dim (a view when the strides allow)",
  flip = "x:flip(dim_or_dims): a view reversed along the dims",
  full_like = "x:full_like(v [, type]): a new tensor of x's shape filled with v",
  gather = "x:gather(dim, idx): the elements idx picks along dim",
  get = "x:get(): the values as a host array of x's shape",
  index_select = "x:index_select(dim, idx): the slices idx lists along dim",
  is_contiguous = "x:is_contiguous(): true for a row-major view without gaps",
  item = "x:item(): the one value of a one-element tensor",
  log_softmax = "x:log_softmax([dim]): log of softmax along dim (the last by default)",
  logsumexp = "x:logsumexp([dim [, keepdim]]): log(sum(exp(x))), computed stably",
  map = "x:map(expr [, vars]): an elementwise OpenCL C expression in x (and vars)",
  masked_fill = "x:masked_fill(mask, v): x with v where mask is nonzero",
  masked_select = "x:masked_select(mask): a 1-D tensor of the elements where mask is nonzero",
  max = "x:max([dim [, keepdim]]) | x:max(y): the largest (argmax gives positions), or elementwise",
  mean = "x:mean([dim [, keepdim]]): the mean (in the floating type)",
  median = "x:median([dim]): the median (the lower of the middle two)",
  min = "x:min([dim [, keepdim]]) | x:min(y): the smallest (argmin gives positions), or elementwise",
  mm = "x:mm(y): the matrix product of 2-D tensors (luagpu.matmul)",
  nonzero = "x:nonzero(): the 1-based positions of the nonzero elements, {n, ndim}",
  norm = "x:norm([p] [, dims]): the p-norm (2 by default)",
  ones_like = "x:ones_like([type]): a new tensor of x's shape filled with 1",
  pad = "x:pad(widths [, value]): a copy with value around it, widths per dim",
  permute = "x:permute(dims): a view with the dims reordered",
  prod = "x:prod([dim [, keepdim]]): the product of the elements",
  put = "x:put(idx, v): sets the elements at flat 1-based positions idx to v",
  release = "x:release(): frees the storage now (also __close); later uses raise",
  repeat_tiles = "x:repeat_tiles(reps): x repeated reps[d] times along each dim",
  reshape = "x:reshape(shape): the same elements in another shape (a view when it can)",
  roll = "x:roll(shift [, dim]): the elements rotated along dim (without: in row-major order)",
  save = "x:save(path): writes a NumPy .npy file",
  scatter = "x:scatter(dim, idx, src): x with src's elements placed where idx says",
  scatter_add = "x:scatter_add(dim, idx, src): x with src's elements added where idx says",
  select = "x:select(dim, i): the view at position i of dim (one dim fewer)",
  set = "x:set(v): writes v (a number or a tensor) into x's elements; returns x",
  slice = "x:slice(dim, first [, last [, step]]): a view of positions first..last",
  softmax = "x:softmax([dim]): exp normalised to sum 1 along dim (the last by default)",
  sort = "x:sort([dim] [, {descending =}]): the values sorted along dim",
  split = "x:split(size | {n1, n2, ...} [, dim]): a list of views along dim",
  squeeze = "x:squeeze([dim]): a view without the size-1 dims",
  std = "x:std([dims] [, {correction =, keepdim =}]): the standard deviation",
  sum = "x:sum([dim [, keepdim]] [, {type =}]): the sum of the elements (or along dims)",
  t = "x:t(): the transposed view of a 2-D tensor",
  take = "x:take(idx): the elements at flat 1-based positions idx",
  to = "x:to(dev): a copy on another device",
  topk = "x:topk(k [, dim] [, {largest =}]): the k largest values and their positions",
  totable = "x:totable(): nested Lua tables of the values",
  transpose = "x:transpose(d1, d2): a view with two dims swapped",
  tril = "x:tril([k]): a copy with the elements above diagonal k zeroed",
  triu = "x:triu([k]): a copy with the elements below diagonal k zeroed",
  unique = "x:unique(): the distinct values, sorted",
  unsqueeze = "x:unsqueeze(dim): a view with a size-1 dim inserted",
  var = "x:var([dims] [, {correction =, keepdim =}]): the variance",
  zeros_like = "x:zeros_like([type]): a new tensor of x's shape filled with 0",
}

-- What an op's rule says of its result.
local RESULT = {
  promote = "in the promoted type",
  floating = "in the floating type",
  compare = "0 or 1 (uchar)",
}

-- The Lua operator of each metamethod.
local OPERATOR = {
  __add = "x + y", __sub = "x - y", __mul = "x * y", __div = "x / y", __mod = "x % y",
  __pow = "x ^ y", __idiv = "x // y", __unm = "-x", __band = "x & y", __bor = "x | y",
  __bxor = "x ~ y", __bnot = "~x", __shl = "x << y", __shr = "x >> y",
}

-- The line of op row under method name (an alias names the op's own).
local function op_line(row, name)
  local call = row.arity == 1 and format("x:%s()", name) or format("x:%s(y)", name)
  local what = name == row.name and "elementwise " .. row.name
               or "the same as x:" .. row.name
  local meta = row.meta and name == row.name
               and format(" (also %s)", OPERATOR[row.meta] or row.meta) or ""
  return format("%s: %s, %s%s", call, what, RESULT[row.rule] or row.rule, meta)
end

function M.class()
  local methods, fields = {}, {}
  local ops = {}
  for _, row in ipairs(OPS.list) do
    if row.method then
      ops[row.name] = row
      for _, a in ipairs(row.aliases) do ops[a] = row end
    end
  end
  for name in pairs(O.methods) do
    local row = ops[name]
    methods[name] = M.DESCRIBE[name] or (row and op_line(row, name)) or nil
  end
  for name in pairs(O.fields) do fields[#fields + 1] = name end
  sort(fields)
  return {fields = fields, methods = methods}
end

return M
