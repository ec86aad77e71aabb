-- spec/lazy_fuzz.lua: a differential fuzzer of lazy chains against the same
-- program run eagerly (require("luagpu.tensor").lazy = false):
--
--   luagpu spec/lazy_fuzz.lua [seed [programs [verbose | quick]]]
--
-- (quick: int tensors, two operators and shallow trees, so that few kernels
-- are compiled, for spec/lazy_fuzz_spec.lua on a fresh cache)
--
-- Each program is Lua source over a few tensors of one square shape: a
-- random chain of elementwise results kept alive (operators, methods,
-- numbers, broadcast rows, astype there and back), writes into tensors
-- that lazy results read (x:set of a tensor or a number, through views:
-- slices, flips, transposes, selects, the same memory seen twice), views
-- of lazy results, eval, reads (get, sum, item) midway and release. Every
-- value read and every tensor's final values must be the eager run's
-- (NaN = NaN). Prints the program of each mismatch (a reproducer that runs
-- as printed after `local gpu = require "luagpu"; local dev = gpu.device()`)
-- and "programs N mismatches M" at the end (exit status 1 on a mismatch).
local gpu = require "luagpu"
local T = require "luagpu.tensor"

local seed = tonumber(arg and arg[1]) or 1
local count = tonumber(arg and arg[2]) or 100
local verbose, quick = arg and arg[3] == "verbose", arg and arg[3] == "quick"
local dev = gpu.device()
math.randomseed(seed)
local random = math.random
local format, concat = string.format, table.concat

local function pick(list) return list[random(#list)] end

-- One program's source: n tensors of type t and shape {m, m}.
local TYPES = {"int", "int", "long", "float", "double", "short", "uint"}
local OPS = {"+", "-", "*", "min", "max"}
local UNARY = {"neg", "abs"}
local DEPTH, DEEP = 3, 7
if quick then TYPES, OPS, UNARY, DEPTH, DEEP = {"int"}, {"+", "*"}, {"neg"}, 2, 3 end
local function program()
  local t = pick(TYPES)
  local m = random(1, 4)
  local lines = {format("local t, m = %q, %d", t, m)}
  local names, made = {}, 0  -- live tensors of shape {m, m}
  local function fresh()
    made = made + 1
    names[#names + 1] = "x" .. made
    return "x" .. made
  end
  local function val() return t == "uint" and random(0, 7) or random(-3, 5) end
  local function new_input()
    local v = {}
    for i = 1, m * m do v[i] = val() end
    lines[#lines + 1] = format("local %s = dev:tensor(t, {m, m}, {%s})", fresh(), concat(v, ", "))
  end
  for _ = 1, random(1, 3) do new_input() end
  -- a view of tensor name of the same shape {m, m}, or of a part of it
  local function view(name, part)
    local r = random()
    if part and m > 1 and r < 0.3 then
      local d, a = random(1, 2), random(1, m)
      local b = random(a, m)
      local v = format(":slice(%d, %d, %d)", d, a, b)
      return name .. v, v
    elseif part and r < 0.45 then
      local v = format(":select(%d, %d)", random(1, 2), random(1, m))
      return name .. v, v
    elseif r < 0.6 then
      return format("%s:flip(%d)", name, random(1, 2))
    elseif r < 0.75 then
      return name .. ":t()"
    elseif r < 0.8 then
      return format("%s:slice(1, %d, 1, -1)", name, m)
    end
    return name
  end
  local function operand()
    local r = random()
    if r < 0.15 then return tostring(val()) end
    local name = pick(names)
    if r < 0.2 then return format("%s:select(1, %d)", name, random(1, m)) end  -- a row, broadcast
    if r < 0.25 then                                  -- positions, broadcast (a row or a column)
      local a = format("dev:arange(t, %d, %d)", val(), 0)
      a = format("(dev:arange(t, %d) + %d)", m, t == "uint" and random(0, 3) or random(-3, 3))
      return random() < 0.5 and a or a .. format(":reshape{%d, 1}", m)
    end
    if r < 0.45 then return (view(name)) end
    return name
  end
  local function expr(depth)
    if depth == 0 or random() < 0.25 then
      local a = operand()
      if a:match("^%-?%d") then a = pick(names) end
      return a
    end
    local r = random()
    if r < 0.6 then
      local op = pick(OPS)
      local a, b = expr(depth - 1), operand()
      if random() < 0.3 then a, b = b, a end
      if a:match("^%-?%d") and b:match("^%-?%d") then a = pick(names) end
      if op == "min" or op == "max" then
        if a:match("^%-?%d") then a, b = b, a end
        if b:match("^%-?%d") then b = pick(names) end
        return format("%s:%s(%s)", a, op, b)
      end
      return format("(%s %s %s)", a, op, b)
    elseif r < 0.8 then
      return format("%s:%s()", expr(depth - 1), pick(UNARY))
    elseif r < 0.9 and not quick then
      local other = t == "double" and "float" or "double"
      return format("%s:astype(%q):astype(t)", expr(depth - 1), other)
    end
    if random() < 0.5 then
      return format("%s:clamp(%d, %s)", expr(depth - 1), val() - 2, operand())
    end
    return format("gpu.where(%s:gt(%d), %s, %s)", expr(depth - 1), val(), operand(), expr(depth - 1))
  end
  local reads = 0
  for _ = 1, random(3, 12) do
    local r = random()
    if r < 0.35 then                                  -- a new lazy result
      local e = expr(random() < 0.2 and random(DEPTH + 1, DEEP) or random(1, DEPTH))
      if not e:find("[%(%+%*%-]") then e = e .. " + 0" end    -- (a node, not the tensor)
      lines[#lines + 1] = format("local %s = %s", fresh(), e)
    elseif r < 0.55 then                              -- a write of a tensor
      local target, part = view(pick(names), true)
      local v = expr(random(0, 2))
      if part then v = format("(%s)%s", v, random() < 0.5 and part or ":select(1, 1)") end
      lines[#lines + 1] = format("%s:set((%s):astype(t))", target, v)
    elseif r < 0.7 then                               -- a write of a number
      lines[#lines + 1] = format("%s:set(%d)", (view(pick(names), true)), val())
    elseif r < 0.74 then
      lines[#lines + 1] = format("%s:eval()", pick(names))
    elseif r < 0.82 then                              -- a read midway
      reads = reads + 1
      local name = pick(names)
      local what = pick{"%s:sum()", "%s:get():totable()", "%s:max()", "(%s):flip(1):get():totable()",
                        "%s:sum(2):get():totable()", "%s:cumsum(1):get():totable()",
                        "%s:min(1):get():totable()"}
      lines[#lines + 1] = format("seen[%d] = " .. what, reads, name)
    elseif r < 0.9 then                               -- a view of a result, as a new tensor
      local v = view(pick(names))
      lines[#lines + 1] = format("local %s = %s", fresh(), v)
    elseif r < 0.95 and #names > 1 then               -- release (the name leaves the list)
      local i = random(#names)
      lines[#lines + 1] = format("%s:release()", names[i])
      table.remove(names, i)
    else
      new_input()
    end
  end
  local list = {}
  for i, n in ipairs(names) do list[i] = n end
  lines[#lines + 1] = "return {" .. concat(list, ", ") .. "}"
  return concat(lines, "\n")
end

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "table" then
    for k, v in pairs(a) do if not same(v, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
  end
  return a == b or (a ~= a and b ~= b)
end

local function run(src, lazy)
  T.lazy = lazy
  local seen = {}
  local f = assert(load("local gpu, dev, seen = ...\n" .. src, "=program", "t"))
  local ok, out = pcall(f, gpu, dev, seen)
  T.lazy = true
  if not ok then return {error = tostring(out)} end
  local vals = {}
  for i, x in ipairs(out) do
    local ok2, v = pcall(function() return x:get():totable() end)
    vals[i] = ok2 and v or {error = tostring(v)}
  end
  return {seen = seen, vals = vals}
end

local function show(v)
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for i, x in ipairs(v) do parts[i] = show(x) end
  for k, x in pairs(v) do
    if type(k) ~= "number" then parts[#parts + 1] = k .. " = " .. show(x) end
  end
  return "{" .. concat(parts, ", ") .. "}"
end

local mismatches, errors = 0, 0
for i = 1, count do
  local src = program()
  if verbose then print("-- program " .. i .. "\n" .. src) end
  local lazy, eager = run(src, true), run(src, false)
  if lazy.error then errors = errors + 1; if verbose then print("-- error: " .. lazy.error) end end
  if not same(lazy, eager) then
    mismatches = mismatches + 1
    print(format("MISMATCH seed %d program %d\n%s\n-- lazy:  %s\n-- eager: %s", seed, i, src,
                 show(lazy), show(eager)))
  end
  if i % 50 == 0 then collectgarbage() end
end
print(format("programs %d mismatches %d (errors in both: %d)", count, mismatches, errors))
os.exit(mismatches == 0 and 0 or 1)
