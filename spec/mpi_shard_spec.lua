-- Sharded tensors over MPI (mpi.shard, mpi.sharded): jobs of 1 to 3 ranks
-- under mpirun run spec/mpi_shard_check.lua, which checks every operation
-- against the same one on the whole tensor on one device, and the errors
-- every rank raises together.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local support = require "support"
local shell_quote = support.shell_quote

local function have_mpi()
  local f = io.open(BUILD .. "/luagpu_mpi.so")
  if f then f:close() end
  return f ~= nil and os.execute("command -v mpirun >/dev/null 2>&1")
end
local HAVE = have_mpi()
local PRELOAD = os.getenv("LD_PRELOAD")

-- `mpirun -np n command` within a time limit: its output and exit code
local function mpirun(n, command)
  local env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " ..
              "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1"
  local x = ""
  if PRELOAD and PRELOAD ~= "" then
    x = "-x LD_PRELOAD=" .. shell_quote(PRELOAD) .. " -x ASAN_OPTIONS -x UBSAN_OPTIONS "
  end
  local p = io.popen(("env -u LD_PRELOAD %s timeout 300 mpirun %s-np %d %s 2>&1")
                     :format(env, x, n, command))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

describe("mpi.shard", function()
  it("runs every operation on 1, 2 and 3 ranks as on one device", function()
    assert(HAVE or not os.getenv("CI"), "mpirun or " .. BUILD .. "/luagpu_mpi.so not found under CI")
    if not HAVE then return pending("Open MPI or luagpu_mpi.so not found: mpi.shard not checked") end
    for _, np in ipairs{3, 2, 1} do
      local out, code = mpirun(np, shell_quote(PROG) .. " spec/mpi_shard_check.lua")
      assert.equal(0, code, out)
      local n = tonumber(out:match("checked (%d+)"))
      assert(n and n > 2000, out)
    end
  end)
end)
