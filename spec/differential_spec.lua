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

-- The fixed run: its families (each a few kernels to build) and programs.
local SEED, PROGRAMS, FAMILIES = 27, 240, 30

local function find_python()
  for _, py in ipairs{"python3", "/usr/bin/python3"} do
    if os.execute(py .. ' -c "import numpy" >/dev/null 2>&1') then return py end
  end
end

describe("tensors against NumPy", function()
  it("agree on " .. PROGRAMS .. " random programs (seed " .. SEED .. ")", function()
    local py = find_python()
    -- make test installs python3-numpy: under CI a missing NumPy is a failure
    assert(py or not os.getenv("CI"), "python3 with numpy not found under CI")
    if not py then return pending("python3 with numpy not found: nothing to compare with") end
    local out = os.tmpname()
    local ok, e = pcall(D.run, {n = PROGRAMS, seed = SEED, families = FAMILIES, out = out,
                                device = gpu.devices()[1]})
    if not ok then os.remove(out); error(e, 0) end
    local p = io.popen(py .. " spec/differential/check.py " .. support.shell_quote(out) .. " 2>&1")
    local report = p:read("a")
    local done = p:close()
    os.remove(out)
    assert.matches("differential: %d+ programs, 0 mismatches", report)
    assert(done, report)
  end)
end)
