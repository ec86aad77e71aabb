-- luagpu.mpi: jobs of 1 to 3 ranks under mpirun, with the program and with
-- a stock lua5.4; every call against references (spec/mpi_check.lua), the
-- examples against one process, the errors all ranks raise together, and
-- jobs that end badly ending instead of hanging.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"

local support = require "support"
local shell_quote, write_file = support.shell_quote, support.write_file

-- make test installs Open MPI and builds luagpu_mpi.so: under CI missing
-- either is a failure; elsewhere the specs are pending
local HAVE = support.have_mpi(BUILD)
local mpirun = support.mpirun

local function needs_mpi()
  assert(HAVE or not os.getenv("CI"), "mpirun or " .. BUILD .. "/luagpu_mpi.so not found under CI")
  if not HAVE then pending("Open MPI or luagpu_mpi.so not found: luagpu.mpi not checked") end
  return HAVE
end

local LUA = ("env LUA_PATH=%s LUA_CPATH=%s lua5.4"):format(
  shell_quote("lua/?.lua;lua/?/init.lua;;"), shell_quote(BUILD .. "/?.so;;"))

describe("luagpu.mpi", function()
  it("passes every check of spec/mpi_check.lua on 3 ranks (the program)", function()
    if not needs_mpi() then return end
    local out, code = mpirun(3, shell_quote(PROG) .. " spec/mpi_check.lua")
    assert.equal(0, code, out)
    local n = tonumber(out:match("checked (%d+)"))
    assert(n and n > 500, out)
  end)

  it("passes them on 2 ranks under a stock lua5.4, and on 1", function()
    if not needs_mpi() then return end
    for _, np in ipairs{2, 1} do
      local out, code = mpirun(np, LUA .. " spec/mpi_check.lua")
      assert.equal(0, code, out)
      assert.matches("checked %d+", out)
    end
  end)

  it("runs the distributed sum and matmul examples, equal to one process", function()
    if not needs_mpi() then return end
    for _, case in ipairs{{2, "examples/mpi_sum.lua 100003"}, {3, "examples/mpi_sum.lua 2"},
                          {2, "examples/mpi_matmul.lua 64"}, {3, "examples/mpi_matmul.lua 70"}} do
      local out, code = mpirun(case[1], shell_quote(PROG) .. " " .. case[2])
      assert.equal(0, code, out)
      assert.matches("ok: equal", out)
    end
  end)

  it("loads from luagpu -e and the REPL, in any folder (issue 27 item 34)", function()
    if not needs_mpi() then return end
    local prog = PROG:sub(1, 1) == "/" and PROG or os.getenv("PWD") .. "/" .. PROG
    -- no $LUAGPU_BUILD, no arg[-1], another folder: the module's own place finds it
    local out, code = mpirun(1, "env -u LUAGPU_BUILD sh -c " .. shell_quote(
      "cd / && " .. shell_quote(prog) .. " -e " .. shell_quote(
        "local mpi = require 'luagpu.mpi'; print('size ' .. mpi.size .. ' rank ' .. mpi.rank)")))
    assert.equal(0, code, out)
    assert.matches("size 1 rank 0", out, 1, true)
    out, code = mpirun(1, "env -u LUAGPU_BUILD sh -c " .. shell_quote(
      "cd / && printf 'mpi = require \"luagpu.mpi\"\\nprint(\"ranks \" .. mpi.size)\\n' | "
      .. shell_quote(prog)))
    assert.equal(0, code, out)
    assert.matches("ranks 1", out, 1, true)
    assert.not_matches("not built", out, 1, true)
  end)

  it("raises a clear error for each hostile argument of shard, sharded, reduce_scatter and " ..
     "mpi.chunk_bytes (one rank), and cuts pieces of any byte count right", function()
    if not needs_mpi() then return end
    local path = os.tmpname()
    write_file(path, [==[
      local gpu = require "luagpu"
      local mpi = require "luagpu.mpi"
      local dev = gpu.device()
      local bad = 0
      local function shown(v)
        if type(v) == "number" then return v ~= v and "nan" or tostring(v) end
        if type(v) == "string" then return string.format("%q", v) end
        return type(v) == "boolean" and tostring(v) or type(v)
      end
      -- f(...) raises an error containing text
      local function raises(text, f, ...)
        local ok, e = pcall(f, ...)
        if ok or not tostring(e):find(text, 1, true) then
          bad = bad + 1
          print("FAIL: expected " .. text .. ", got " .. (ok and "no error" or tostring(e)))
        end
      end
      local x = dev:tensor("float", {4, 3})
      for _, d in ipairs{0, 3, -3, 2.0^63} do
        for _, fn in ipairs{"shard", "sharded"} do
          raises("luagpu: mpi." .. fn .. ": argument #2: dim " .. shown(d) .. " is out of " ..
                 "range (1 to 2, or -2 to -1)", mpi[fn], x, d)
        end
      end
      for _, d in ipairs{1.5, 0 / 0, "1", true} do
        for _, fn in ipairs{"shard", "sharded"} do
          raises("luagpu: mpi." .. fn .. ": argument #2: expected an integer dim, got " ..
                 shown(d), mpi[fn], x, d)
        end
      end
      local rt = dev:tensor("float", {4})
      rt:release()
      local rb = dev:buffer("float", 4)
      rb:release()
      for _, fn in ipairs{"shard", "sharded"} do
        raises("luagpu: mpi." .. fn .. ": argument #1: expected a tensor, got nil", mpi[fn])
        raises("luagpu: mpi." .. fn .. ": argument #1: expected a tensor, got luagpu.Buffer",
               mpi[fn], dev:buffer("float", 4))
        raises("luagpu: mpi." .. fn .. ": argument #1: a 0-d tensor has no dim to shard",
               mpi[fn], dev:tensor("float", {}))
        raises("luagpu: mpi." .. fn .. ": argument #1: attempt to use a released tensor", mpi[fn],
               rt)
      end
      for _, v in ipairs{{"nil"}, {"table", {1, 2}}, {"boolean", true}, {"string", "x"}} do
        raises("luagpu: mpi.reduce_scatter: argument #1: expected a number, a host array, a " ..
               "Buffer or a Tensor, got " .. v[1], mpi.reduce_scatter, v[2], "sum")
      end
      -- a released tensor is named as reduce_scatter's (it raised from tensor:contiguous)
      raises("luagpu: mpi.reduce_scatter: argument #1: attempt to use a released tensor",
             mpi.reduce_scatter, rt, "sum")
      raises("luagpu: mpi.reduce_scatter: argument #1: attempt to use a released buffer",
             mpi.reduce_scatter, rb, "sum")
      for _, op in ipairs{{"\"bogus\"", "bogus"}, {"number", 1}, {"nil"}, {"number", 0 / 0}} do
        raises("luagpu: mpi.reduce_scatter: argument #2: expected \"sum\", \"prod\", \"min\" " ..
               "or \"max\", got " .. op[1], mpi.reduce_scatter, x, op[2])
      end
      -- a 0-d tensor on one rank stays 0-d (it came back of shape {1})
      local z = mpi.reduce_scatter(dev:tensor("float", {}, 2.5), "sum")
      if #z.shape ~= 0 or z:item() ~= 2.5 then
        bad = bad + 1
        print("FAIL: reduce_scatter of a 0-d tensor: shape {" .. table.concat(z.shape, ", ") ..
              "}")
      end
      for _, c in ipairs{0 / 0, -1, "8", 2.0^70, math.huge, 1.5, true, {}, math.mininteger} do
        mpi.chunk_bytes = c
        for _, fn in ipairs{"allreduce", "bcast"} do
          raises("luagpu: mpi." .. fn .. ": mpi.chunk_bytes: expected an integer >= 0 (0 or " ..
                 "false: no pieces), got " .. shown(c), mpi[fn], dev:buffer("float", 1000),
                 fn == "allreduce" and "sum" or 0)
        end
      end
      -- pieces of any byte count (below an element, odd, 0 and false: none)
      for _, c in ipairs{1, 3, 5, 7, 4099, 0, false} do
        mpi.chunk_bytes = c
        for _, t in ipairs{"float", "double", "short", "int"} do
          local n = 1000
          local vals = {}
          for i = 1, n do vals[i] = i end
          local b = dev:buffer(t, n, {host = vals})
          local y = dev:tensor(t, {n}, gpu.array(t, vals))
          for what, got in pairs{allreduce = mpi.allreduce(b, "sum"):get(),
                                 bcast = mpi.bcast(y, 0):get()} do
            for i = 1, n do
              if got[i] ~= i then
                bad = bad + 1
                print(("FAIL: %s of %s with mpi.chunk_bytes = %s: [%d] = %s"):format(what, t,
                      tostring(c), i, tostring(got[i])))
                break
              end
            end
          end
        end
      end
      print("hostile mpi: " .. bad .. " failed")
    ]==])
    local out, code = mpirun(1, shell_quote(PROG) .. " " .. shell_quote(path))
    os.remove(path)
    assert.equal(0, code, out)
    assert.matches("hostile mpi: 0 failed", out, 1, true)
  end)

  it("ends a job whose rank fails, and one that calls os.exit, without hanging", function()
    if not needs_mpi() then return end
    local path = os.tmpname()
    write_file(path, [[
      local mpi = require "luagpu.mpi"
      if mpi.rank == 1 then error("rank one gives up") end
      mpi.barrier()                       -- rank 0 would wait here for ever
    ]])
    local out, code = mpirun(2, shell_quote(PROG) .. " " .. shell_quote(path))
    assert.not_equal(0, code)
    assert.not_equal(124, code, "the job hung")
    assert.matches("rank one gives up", out)
    -- under a stock lua5.4, mpi.run aborts the job when its function raises
    write_file(path, [[
      local mpi = require "luagpu.mpi"
      mpi.run(function(who)
        if mpi.rank == 1 then error(who .. " gives up") end
        mpi.barrier()
      end, "rank one")
    ]])
    out, code = mpirun(2, LUA .. " " .. shell_quote(path))
    assert.not_equal(0, code)
    assert.not_equal(124, code, "the job hung")
    assert.matches("rank one gives up", out)
    write_file(path, [[
      local mpi = require "luagpu.mpi"
      mpi.barrier()
      print("rank " .. mpi.rank .. " done")
      os.exit(0)                          -- no lua_close: MPI is finalized at exit
    ]])
    out, code = mpirun(2, shell_quote(PROG) .. " " .. shell_quote(path))
    os.remove(path)
    assert.equal(0, code, out)
    assert.matches("rank 0 done", out)
    assert.matches("rank 1 done", out)
    assert.not_matches("finalize", out)
  end)

  it("ends a job whose rank calls os.exit with a failure status while another waits in a " ..
     "collective, without hanging", function()
    if not needs_mpi() then return end
    local path = os.tmpname()
    -- MPI_Finalize at exit waited for rank 0, which waited in the barrier for rank 1
    write_file(path, [[
      local mpi = require "luagpu.mpi"
      if mpi.rank == 1 then os.exit(3) end
      mpi.barrier()
      print("rank 0 went on alone")
    ]])
    for _, runner in ipairs{shell_quote(PROG), LUA} do
      local out, code = mpirun(2, runner .. " " .. shell_quote(path), 30)
      assert.not_equal(0, code, out)
      assert.not_equal(124, code, "the job hung: " .. out)
      assert.not_matches("went on alone", out)
    end
    -- one rank alone exits with its own status, and MPI finalized
    local out, code = mpirun(1, shell_quote(PROG) .. " " .. shell_quote(path), 30)
    os.remove(path)
    assert.equal(0, code, out)
    assert.matches("went on alone", out)
  end)
end)
