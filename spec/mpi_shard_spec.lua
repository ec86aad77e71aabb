-- Sharded tensors over MPI (mpi.shard, mpi.sharded): jobs of 1 to 3 ranks
-- under mpirun run spec/mpi_shard_check.lua, which checks every operation
-- against the same one on the whole tensor on one device, and the errors
-- every rank raises together.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local support = require "support"
local shell_quote = support.shell_quote

local HAVE = support.have_mpi(BUILD)

describe("mpi.shard", function()
  it("runs every operation on 1, 2 and 3 ranks as on one device", function()
    assert(HAVE or not os.getenv("CI"), "mpirun or " .. BUILD .. "/luagpu_mpi.so not found under CI")
    if not HAVE then return pending("Open MPI or luagpu_mpi.so not found: mpi.shard not checked") end
    for _, np in ipairs{3, 2, 1} do
      local out, code = support.mpirun(np, shell_quote(PROG) .. " spec/mpi_shard_check.lua", 300)
      assert.equal(0, code, out)
      local n = tonumber(out:match("checked (%d+)"))
      assert(n and n > 2000, out)
    end
  end)
end)
