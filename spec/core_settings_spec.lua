-- luagpu.core.settings: the checked settings a helper reads follow every
-- change a script makes to them, by assignment, by rawset or by replacing
-- a class's table, and are not checked again while nothing changed.
local SET = require "luagpu.core.settings"

describe("luagpu.core.settings", function()
  local function reader_of()
    local classes = {gpu = SET.watched{items = 8, fast = true},
                     cpu = SET.watched{items = 2, fast = false}}
    local read = SET.reader("demo.classes", classes,
                            {{"items", SET.int_in(1, 64)}, {"fast", SET.boolean()}})
    return classes, read
  end
  local gpu_dev, cpu_dev = {type = "gpu"}, {type = "cpu"}

  it("reads a watched table as the table it was made from", function()
    local t = SET.watched{a = 1, b = "x"}
    assert.equal(1, t.a)
    assert.equal("x", t.b)
    local seen = {}
    for k, v in pairs(t) do seen[k] = v end
    assert.same({a = 1, b = "x"}, seen)
    t.a = 5
    assert.equal(5, t.a)
    assert.is_nil(rawget(t, "a"))           -- the values live behind it
    assert.has_error(function() setmetatable(t, nil) end)
  end)

  it("returns the same checked table while nothing changed", function()
    local _, read = reader_of()
    local c1, sig1 = read("demo.f", gpu_dev)
    local c2, sig2 = read("demo.f", gpu_dev)
    assert.equal(c1, c2)
    assert.equal(sig1, sig2)
    assert.same({items = 8, fast = true}, c1)
    assert.same({items = 2, fast = false}, (read("demo.f", cpu_dev)))
  end)

  it("sees an assignment, a rawset and a replaced table", function()
    local classes, read = reader_of()
    local c0, sig0 = read("demo.f", gpu_dev)
    classes.gpu.items = 16
    local c1, sig1 = read("demo.f", gpu_dev)
    assert.equal(16, c1.items)
    assert.are_not.equal(sig0, sig1)
    assert.equal(8, c0.items)                -- a checked table is never changed
    -- rawset puts the value on the table itself, where reads find it first
    rawset(classes.gpu, "items", 32)
    assert.equal(32, (read("demo.f", gpu_dev)).items)
    rawset(classes.gpu, "items", nil)
    assert.equal(16, (read("demo.f", gpu_dev)).items)
    classes.gpu = {items = 4, fast = false}
    local c3 = read("demo.f", gpu_dev)
    assert.same({items = 4, fast = false}, c3)
    classes.gpu.items = 40                   -- a plain table: its values compared
    assert.equal(40, (read("demo.f", gpu_dev)).items)
  end)

  it("checks a changed value where the helper reads it, naming the setting", function()
    local classes, read = reader_of()
    read("demo.f", gpu_dev)
    classes.gpu.items = 0
    assert.equal("luagpu: demo.f: demo.classes.gpu.items: expected an integer from 1 to 64, got 0",
                 select(2, pcall(read, "demo.f", gpu_dev)))
    classes.gpu.items = nil
    assert.equal("luagpu: demo.f: demo.classes.gpu.items: expected an integer from 1 to 64, " ..
                 "got nil", select(2, pcall(read, "demo.f", gpu_dev)))
    classes.gpu.items = 8
    assert.equal(8, (read("demo.f", gpu_dev)).items)
    -- a class a device type has no table of reads the gpu one
    assert.equal(8, (read("demo.f", {type = "accelerator"})).items)
  end)

  it("makes algo.classes and reduce.classes watched tables", function()
    local algo, reduce = require "luagpu.algo", require "luagpu.reduce"
    for _, cls in ipairs{algo.classes.gpu, algo.classes.cpu, reduce.classes.gpu,
                         reduce.classes.cpu} do
      assert.equal("luagpu settings", getmetatable(cls))
      assert.is_nil(next(cls))
    end
    assert.equal(algo.classes.gpu, algo.classes.accelerator)
    assert.equal(256, algo.classes.gpu.sort_ptx_local)
  end)
end)
