-- The differential test of tensors against NumPy, fixed seed: random
-- programs (spec/differential/gen.lua: element types, broadcast shapes with
-- size-1 and size-0 dims, views, operator trees with numbers at the type
-- limits, reductions, cumsum/sort/argsort, set into views) run in luagpu and
-- are replayed in NumPy by spec/differential/check.py under the rules of
-- docs/API.md. A mismatch fails with the program as a Lua snippet.
-- `make fuzz-numpy N= SEED=` runs more of them.
local gpu = require "luagpu"
local D = require "differential.gen"
local support = require "support"

-- The fixed run: its seed, programs and families. Each family costs a few
-- kernel builds (about 7, 0.3-0.6 s each with PoCL); its programs vary sizes,
-- views and values at little cost. On the code before issue 27's fixes this
-- seed finds items 10 (the mean of ulong), 11 (the shape of an empty sort or
-- cumsum along a non-last dim) and 42 (ulong set(-1.0), set(2.0^63)).
local SEED, PROGRAMS, FAMILIES = 115, 600, 12
-- The second run, with the ops of issue 32 (tan .. lgamma, round, masks,
-- atan2/hypot/fmod, bitwise and logical ops) among the others.
local EXTRA_SEED, EXTRA_PROGRAMS, EXTRA_FAMILIES = 7, 300, 40
-- The third, of issue 32's indexing, joining and statistics ops only (one
-- per family, gen.lua's OPS32 in turn: 38 families draw each once).
local OPS_SEED, OPS_PROGRAMS, OPS_FAMILIES = 32, 190, 38
-- The fourth, of the ways the calls of the session of 2026-11-27 choose by
-- size (gen.lua's OPSP, one family each): topk's rows sorted whole or
-- selected in local memory and its long rows' histogram passes (at the
-- length where this device's plan turns, and with rows_max lowered), k at
-- 1, L, L / 2 and 1024; x:sort, x:argsort and algo.sort's key-value sort in
-- one sweep a pass (emulated warp ranks) around the tile; softmax,
-- log_softmax and logsumexp in registers and read twice; the constructors,
-- copies and NumPy spellings no other family draws. Few programs:
-- each one-sweep family costs a build of several seconds on PoCL.
local PATHS_SEED, PATHS_PROGRAMS, PATHS_FAMILIES = 3, 33, 11

local function find_python()
  for _, py in ipairs{"python3", "/usr/bin/python3"} do
    if os.execute(py .. ' -c "import numpy" >/dev/null 2>&1') then return py end
  end
end

local py, lines

-- check.py's report on the given JSON lines, and whether it passed.
local function check(list)
  local path = os.tmpname()
  support.write_file(path, table.concat(list, "\n") .. "\n")
  local p = io.popen(py .. " spec/differential/check.py " .. support.shell_quote(path) .. " 2>&1")
  local report = p:read("a")
  local ok = p:close()
  os.remove(path)
  return report, ok
end

-- check.py's report on the lines of n programs says they all agree
local function agree(list, n)
  local report, done = check(list)
  assert.matches("differential: " .. n .. " programs, 0 mismatches", report, 1, true)
  assert(done, report)
end

-- The device the programs run on, or nil (after pending) where they cannot
-- be compared. make test installs python3-numpy: under CI a missing NumPy is
-- a failure.
local function ready()
  assert(py or not os.getenv("CI"), "python3 with numpy not found under CI")
  if not py then return pending("python3 with numpy not found: nothing to compare with") end
  local dev = gpu.devices()[1]
  if not dev.fp64 then
    return pending(dev.name .. " has no fp64: the programs use double (long / 2, means)")
  end
  return dev
end

-- The JSON lines of D.run(opts) (written to a temporary file, removed).
local function run_programs(opts)
  local out = os.tmpname()
  opts.out = out
  local ok, e = pcall(D.run, opts)
  if not ok then os.remove(out); error(e, 0) end
  local list = {}
  for line in io.lines(out) do list[#list + 1] = line end
  os.remove(out)
  return list
end

setup(function()
  py = find_python()
end)

describe("tensors against NumPy", function()
  it("agree on " .. PROGRAMS .. " random programs (seed " .. SEED .. ")", function()
    local dev = ready()
    if not dev then return end
    lines = run_programs{n = PROGRAMS, seed = SEED, families = FAMILIES, device = dev}
    agree(lines, PROGRAMS)
  end)

  it("agree on " .. EXTRA_PROGRAMS .. " programs with the ops of issue 32 (seed " .. EXTRA_SEED ..
     ")", function()
    local dev = ready()
    if not dev then return end
    local list = run_programs{n = EXTRA_PROGRAMS, seed = EXTRA_SEED, families = EXTRA_FAMILIES,
                              device = dev, extra = true, ops = false}
    -- the new ops were drawn: bitwise, shifts, math and masks
    local all = table.concat(list, "\n")
    for _, op in ipairs{"bitwise_and", "lshift", "bitwise_not", "logical_not", "fmod", "tan"} do
      assert.matches('"op":"' .. op .. '"', all, 1, true)
    end
    agree(list, EXTRA_PROGRAMS)
  end)

  it("agree on " .. OPS_PROGRAMS .. " programs of issue 32's indexing, joining and statistics " ..
     "ops (seed " .. OPS_SEED .. ")", function()
    local dev = ready()
    if not dev then return end
    local list = run_programs{n = OPS_PROGRAMS, seed = OPS_SEED, families = OPS_FAMILIES,
                              device = dev, extra = true, ops = "only"}
    local all = table.concat(list, "\n")
    for _, op in ipairs{"index", "setindex", "gather", "index_select", "take", "scatter",
                        "scatter_add", "put", "masked_fill", "masked_select", "nonzero",
                        "searchsorted", "squeeze", "unsqueeze", "flatten", "split", "chunk",
                        "flip", "roll", "tril", "triu", "repeat_tiles", "pad", "cat", "stack",
                        "mreduce", "var", "std", "norm", "median", "topk", "unique", "bincount",
                        "dot", "outer", "einsum", "cumprod", "mm"} do
      assert.matches('"op":"' .. op .. '"', all, 1, true)
    end
    agree(list, OPS_PROGRAMS)
    -- the checker sees a wrong element of an op of issue 32, and a
    -- position out of range that raised nothing
    local spoiled = {}
    for _, line in ipairs(list) do
      if line:find('"kind":"ops"', 1, true) and not line:find('"error"', 1, true) and
         line:find('"op":"[gt][ao][tk]') then     -- gather, take
        local bad = line:gsub('("result":{"shape":%[[%d,]*%],"t":"%a+","vals":%[)(%-?%d+)',
                              function(h, v) return h .. tostring(math.tointeger(v) ~ 1) end, 1)
        if bad ~= line then spoiled[#spoiled + 1] = bad; break end
      end
    end
    for _, line in ipairs(list) do
      if line:find('"kind":"ops"', 1, true) and line:find('is out of range', 1, true) then
        spoiled[#spoiled + 1] = line:gsub('"error":"[^"]*"', '"result":{"number":0}', 1)
        break
      end
    end
    assert.equal(2, #spoiled)
    report = check(spoiled)
    assert.matches("differential: 2 programs, 2 mismatches", report, 1, true)
  end)

  it("agree on " .. PATHS_PROGRAMS .. " programs of topk's, the one-sweep sort's and " ..
     "softmax's ways (seed " .. PATHS_SEED .. ")", function()
    local dev = ready()
    if not dev then return end
    local cls = dev.type == "cpu" and "cpu" or "gpu"
    local C, TKS = gpu.algo.classes[cls], require("luagpu.tensor.topk").sizes[cls]
    local before = {C.sort_onesweep, C.sort_ptx, C.sort_rows_max, TKS.rows_max}
    local list = run_programs{n = PATHS_PROGRAMS, seed = PATHS_SEED, families = PATHS_FAMILIES,
                              device = dev, extra = true, ops = "paths"}
    local all = table.concat(list, "\n")
    -- every way drawn: topk's (as its plan says), the one-sweep sorts, the row ops
    for _, way in ipairs{"whole", "select", "long", "kmax", "natural"} do
      assert.matches('"way":"' .. way .. '"', all, 1, true)
    end
    for _, plan in ipairs{"rows", "long", "sort"} do
      assert.matches('"plan":"' .. plan .. '"', all, 1, true)
    end
    for _, op in ipairs{"algo_sort", "argsort", "softmax", "log_softmax", "logsumexp",
                        "create"} do
      assert.matches('"op":"' .. op .. '"', all, 1, true)
    end
    assert.matches("C.sort_onesweep, C.sort_ptx, C.sort_rows_max = true", all, 1, true)
    -- the settings the programs changed are back
    assert.same(before, {C.sort_onesweep, C.sort_ptx, C.sort_rows_max, TKS.rows_max})
    agree(list, PATHS_PROGRAMS)
  end)

  it("the checker finds a wrong value, a wrong shape, a changed input and a missing error",
     function()
    if not py then return pending("python3 with numpy not found: nothing to compare with") end
    if not lines then return pending("the random programs did not run") end
    -- one program of each case, its recorded result spoiled as a defect would
    local spoiled = {}
    local function spoil(pattern, edit)
      for _, line in ipairs(lines) do
        if line:find(pattern) and not line:find('"error"') then
          local bad = edit(line)
          if bad and bad ~= line then spoiled[#spoiled + 1] = bad; return end
        end
      end
      error("no program to spoil for " .. pattern)
    end
    -- an integer element of a result off by one
    spoil('"result":{"shape":%[[%d,]*%],"t":"%a+","vals":%[%-?%d', function(l)
      return (l:gsub('("result":{"shape":%[[%d,]*%],"t":"%a+","vals":%[)(%-?%d+)', function(h, v)
        return h .. tostring(math.tointeger(v) ~ 1)
      end, 1))
    end)
    -- a result's shape with its dims reversed, of a sort along a dim
    spoil('"kind":"sort".-"result":{"shape":%[%d+,%d+', function(l)
      return (l:gsub('"result":{"shape":%[(%d+),(%d+)', function(a, b)
        if a == b then return nil end
        return '"result":{"shape":[' .. b .. "," .. a
      end, 1))
    end)
    -- an input that reads back changed
    spoil('"post":%[%[%-?%d+', function(l)
      return (l:gsub('("post":%[%[)(%-?%d+)', function(h, v)
        return h .. tostring(math.tointeger(v) ~ 2)
      end, 1))
    end)
    -- a number that does not fit raised nothing
    local raised
    for _, line in ipairs(lines) do
      local fits = '"error":"program:%d+: luagpu: tensor:%a+: argument #%d: %-?%d+ does not fit'
      if line:find(fits) then
        raised = line
        break
      end
    end
    if raised then
      spoiled[#spoiled + 1] = raised:gsub('"error":"[^"]*"', '"result":{"number":0}', 1)
    end
    local report, ok = check(spoiled)
    assert.is_not_true(ok, report)
    assert.matches(("differential: %d programs, %d mismatches"):format(#spoiled, #spoiled),
                   report, 1, true)
  end)
end)
