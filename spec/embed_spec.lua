-- Embedding (luagpu.h): the example application of examples/embed and the C
-- checks of spec/embed_check.c, both built by `make` beside the module.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"

-- Runs a program (killed after limit seconds, default 300); returns its output
-- (stdout and stderr) and exit status.
local function run(cmd, limit)
  local p = io.popen("timeout " .. (limit or 300) .. " " .. cmd .. " 2>&1; echo \"exit $?\"")
  local out = p:read("a")
  p:close()
  local body, status = out:match("^(.*)exit (%d+)\n$")
  return body, tonumber(status)
end

describe("embedding", function()
  it("examples/embed: a C application's buffers transformed by a script, read back in C", function()
    local out, status = run(BUILD .. "/embed_demo")
    assert.equal(0, status, out)
    assert.matches("embed_demo: 100000 elements, y = 2x^2 + 1 and z = y + 1 computed by the "
                   .. "script on the app's queue; max error", out, 1, true)
    assert.matches("y's reference count after lua_close: 1\nembed_demo: ok\n", out, 1, true)
  end)

  it("the demo runs a script file given to it, and reports the script's error", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write("y:fill(2.5, {wait = ready}) local z = dev:buffer('float', #y) "
            .. "y:copy_to(z) return z:fill(3.5), z\n")
    f:close()
    local out, status = run(BUILD .. "/embed_demo " .. script)
    -- the file's script computes something else: the demo's check fails, cleanly
    assert.equal(1, status, out)
    assert.matches("embed_demo: FAILED", out, 1, true)
    f = assert(io.open(script, "w"))
    f:write("return x:write({1, 2, 3})\n")
    f:close()
    out, status = run(BUILD .. "/embed_demo " .. script)
    os.remove(script)
    assert.equal(1, status, out)
    assert.matches("embed_demo: [^\n]*: luagpu: buffer:write: argument #1: expected 100000 "
                   .. "values, got 3", out)
  end)

  it("reference counts, errors returned not raised, views, events, teardown, two states "
     .. "(C checks)", function()
    local out, status = run(BUILD .. "/embed_check")
    assert.equal(0, status, out)
    assert.not_matches("not ok", out, 1, true)
    local n = select(2, out:gsub("\nok %- ", "\n")) + (out:match("^ok %- ") and 1 or 0)
    assert.matches("\n" .. n .. " checks, 0 failed\n", out, 1, true)
    assert.is_true(n >= 40, out)
    -- two Lua states at once trace and debug independently (issue 27 item 45)
    for _, name in ipairs {"state B does not trace when A does",
                           "state A's trace lacks B's commands",
                           "B's debug mode leaves A's off",
                           "closing B leaves A's trace recording",
                           "A's trace after B closed"} do
      assert.matches("\nok %- " .. name:gsub("%p", "%%%0") .. "\n", out)
    end
  end)

  it("states opened at the same moment in three threads find the device and build at once, "
     .. "with the cache on (C check)", function()
    -- PoCL's first discovery raced (a crash, or no device), and a thread's build held
    -- PoCL's cache lock across its steps so the other's waited for the lock's timeout
    -- (60 s) and then built without it; each run starts from fresh caches
    -- under AddressSanitizer: the compiler (LLVM) swaps the alternate signal stack of the
    -- threads that build, and ASan then fails to unmap its own one at their exit
    local asan = os.getenv("ASAN_OPTIONS")
    asan = asan and "ASAN_OPTIONS='" .. asan .. ":use_sigaltstack=0' " or ""
    for round = 1, 3 do
      local dir = os.tmpname()
      os.remove(dir)
      local t0 = os.time()
      local out, status = run("env " .. asan .. "XDG_CACHE_HOME=" .. dir .. " LUAGPU_LOCK_TIMEOUT=60 "
                              .. BUILD .. "/embed_check threads " .. math.random(1, 1e9), 40)
      local took = os.time() - t0
      os.execute("rm -rf '" .. dir .. "'")
      assert.equal(0, status, "round " .. round .. ":\n" .. out)
      assert.matches("\n3 checks, 0 failed\n", out, 1, true)
      assert.not_matches("waiting for PoCL's cache lock", out, 1, true)
      assert.is_true(took < 20, "round " .. round .. " took " .. took .. " s:\n" .. out)
    end
  end)
end)
