-- The on-disk program cache: entries under $XDG_CACHE_HOME/luagpu, hits in
-- the same and in later processes, keys covering defines and included files
-- (however the source spells its #include), damaged or foreign entries
-- falling back to a source build and replaced, LUAGPU_NO_CACHE=1, and
-- concurrent processes, also racing in PoCL's own cache. Each case runs in
-- its own process (lua5.4 with the module under test) with a private cache
-- folder.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. sh_quote(p)))
  return p
end

-- Files in dir (names), sorted.
local function list(dir)
  local p = io.popen("ls -1 " .. sh_quote(dir) .. " 2>/dev/null")
  local names = {}
  for line in p:lines() do names[#names + 1] = line end
  p:close()
  table.sort(names)
  return names
end

-- What every child script starts with: the module under test, and helpers
-- that build a program, run its kernel f once and report.
local PRELUDE = [[
package.cpath = os.getenv("LUAGPU_BUILD") .. "/?.so;" .. package.cpath
local gpu = require "luagpu"
local dev = gpu.device()
local SRC = "__kernel void f(__global int *o) { o[0] = VALUE; }"
local function result(p)
  local o = dev:buffer("int", 1)
  p.f(o):run({1}):wait()
  return o:get()[1]
end
local function report(name, p)
  print(name .. " " .. tostring(p.cached) .. " " .. result(p))
end
]]

-- Runs script (after the prelude) with the cache under home and the extra
-- environment env; returns a table of its "name cached result" lines.
local function child(home, script, env)
  local path = os.tmpname()
  write_file(path, PRELUDE .. script)
  local cmd = string.format("LUAGPU_BUILD=%s XDG_CACHE_HOME=%s %s lua5.4 %s 2>&1",
                            sh_quote(BUILD), sh_quote(home), env or "", sh_quote(path))
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  os.remove(path)
  local r = {}
  for name, cached, value in out:gmatch("(%S+) (%a+) (%-?%d+)\n") do
    r[name] = {cached = cached == "true", value = tonumber(value)}
  end
  r.output = out
  return r
end

-- Writes body to path as a cache entry: followed by its SHA-256, as cache.c
-- writes one (the checksum then holds whatever body a spec forged).
local function write_entry(path, body)
  local tmp = os.tmpname()
  write_file(tmp, body)
  local hex = io.popen("sha256sum " .. sh_quote(tmp)):read("l"):match("^(%x+)")
  os.remove(tmp)
  write_file(path, body .. hex:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

-- Builds the VALUE = 11 program twice in a child with the cache under home:
-- the first build must not take the (bad) entry, the second the one it wrote.
local function rebuilds_over_entry(home, what)
  local r = child(home, [[
    report("bad", dev:build(SRC, {defines = {VALUE = 11}}))
    report("fixed", dev:build(SRC, {defines = {VALUE = 11}}))
  ]])
  what = what and what .. ": " or ""
  assert.same({cached = false, value = 11}, r.bad, what .. r.output)
  assert.same({cached = true, value = 11}, r.fixed, what .. r.output)
end

describe("the program cache", function()
  local home = tmpdir()
  local dir = home .. "/luagpu"
  teardown(function() os.execute("rm -rf " .. sh_quote(home)) end)

  -- On PoCL (whose cache folder luagpu locks): a new folder and the PoCL
  -- cache folder made in it, for POCL_CACHE_DIR; elsewhere nil.
  local function pocl_box()
    local probe = child(home, 'print(dev.platform .. " 0 0")')
    if not probe.output:find("Portable Computing Language", 1, true) then return nil end
    local box = tmpdir()
    local kcache = box .. "/kcache"
    assert(os.execute("mkdir -p " .. sh_quote(kcache)))
    return box, kcache
  end

  local entry_11, entry_12     -- the entries of VALUE = 11 and VALUE = 12

  it("keeps a built program and loads it back, in the same and a later process", function()
    local r = child(home, [[
      report("first", dev:build(SRC, {defines = {VALUE = 11}}))
      report("again", dev:build(SRC, {defines = {VALUE = 11}}))
    ]])
    assert.same({cached = false, value = 11}, r.first, r.output)
    assert.same({cached = true, value = 11}, r.again, r.output)
    local files = list(dir)
    assert.equal(1, #files)
    assert.matches("^%x+%.bin$", files[1])
    entry_11 = dir .. "/" .. files[1]
    r = child(home, [[
      report("later", dev:build(SRC, {defines = {VALUE = 11}}))
      report("other", dev:build(SRC, {defines = {VALUE = 12}}))
    ]])
    assert.same({cached = true, value = 11}, r.later, r.output)
    assert.same({cached = false, value = 12}, r.other, r.output)
    files = list(dir)
    assert.equal(2, #files)
    for _, f in ipairs(files) do
      assert.matches("^%x+%.bin$", f)
      if dir .. "/" .. f ~= entry_11 then entry_12 = dir .. "/" .. f end
    end
  end)

  it("falls back to a source build for damaged or foreign entries, and replaces them", function()
    local good = read_file(entry_11)
    local mid = #good // 2
    local damaged = good:sub(1, mid - 1) .. string.char((good:byte(mid) + 1) % 256)
                    .. good:sub(mid + 1)
    -- damaged in the middle (the checksum catches it), cut short, empty, and
    -- another key's entry under this key's name
    for i, bad in ipairs({damaged, good:sub(1, 200), "", read_file(entry_12)}) do
      write_file(entry_11, bad)
      rebuilds_over_entry(home, "case " .. i)
      local now = read_file(entry_11)       -- replaced by a whole entry
      assert.is_true(now ~= bad and #now > 200, "case " .. i .. ": the entry was not replaced")
    end
  end)

  -- An entry whose PoCL binary has an empty program.bc part (what PoCL
  -- serialises when the program's folder in its cache lacks program.bc)
  -- made PoCL abort every later process that loaded it. Such a binary is
  -- neither loaded nor stored: the program is built again, the entry replaced.
  it("rebuilds over an entry whose PoCL binary PoCL could not load, and replaces it", function()
    local probe = child(home, 'print(dev.platform .. " 0 0")')
    if not probe.output:find("Portable Computing Language", 1, true) then
      return pending("PoCL's binary format only")
    end
    local good = read_file(entry_11)
    local nb = string.unpack("<I8", good, 81)
    local bin = good:sub(105, 104 + nb)
    assert.equal("poclbin\0", bin:sub(1, 8))
    local root = string.unpack("<I8", bin, 78)          -- after the 77-byte header
    assert.is_true(root > 0)
    local bad_bin = bin:sub(1, 77) .. string.pack("<I8", 0) .. bin:sub(86 + root)
    local body = good:sub(1, 80) .. string.pack("<I8", #bad_bin) .. good:sub(89, 104)
                 .. bad_bin .. good:sub(105 + nb, #good - 32)
    write_entry(entry_11, body)
    rebuilds_over_entry(home)
    local now = read_file(entry_11)
    assert.is_true(string.unpack("<I8", now, 105 + 77) > 0, "the entry was not replaced")
  end)

  -- Metadata that calls a pointer a private long let a call write where a number said
  -- (dev:build_binary's crash): an entry whose metadata the driver contradicts is built
  -- again and replaced, as a damaged one is.
  it("rebuilds over an entry whose kernel metadata the driver contradicts", function()
    local good = read_file(entry_11)
    local nb, nl, nm = string.unpack("<I8<I8<I8", good, 81)
    local at = 105 + nb + nl
    local meta = good:sub(at, at + nm - 1)
    assert.equal("kernel\tf\t1\narg\tglobal\tnone\t\tint*\to\n", meta)
    local bad_meta = "kernel\tf\t1\narg\tprivate\tnone\t\tlong\to\n"
    local body = good:sub(1, 96) .. string.pack("<I8", #bad_meta) .. good:sub(105, at - 1)
                 .. bad_meta
    write_entry(entry_11, body)
    rebuilds_over_entry(home)
    local now = read_file(entry_11)
    nb, nl, nm = string.unpack("<I8<I8<I8", now, 81)
    assert.equal(meta, now:sub(105 + nb + nl, 104 + nb + nl + nm), "the entry was not replaced")
  end)

  it("keys on the content of included files, nested ones too", function()
    local src = tmpdir()
    write_file(src .. "/main.cl", '#include "a.h"\n'
               .. "__kernel void f(__global int *o) { o[0] = VALUE; }\n")
    write_file(src .. "/a.h", '#include "b.h"\n')
    write_file(src .. "/b.h", "#define VALUE 31\n")
    local script = string.format('report(arg[1], dev:build_file(%q))', src .. "/main.cl")
    local function run(name)
      local path = os.tmpname()
      write_file(path, PRELUDE .. script)
      local p = io.popen(string.format("LUAGPU_BUILD=%s XDG_CACHE_HOME=%s lua5.4 %s %s 2>&1",
                                       sh_quote(BUILD), sh_quote(home), sh_quote(path), name))
      local out = p:read("a")
      p:close()
      os.remove(path)
      local cached, value = out:match(name .. " (%a+) (%-?%d+)")
      return {cached = cached == "true", value = tonumber(value)}, out
    end
    local r, out = run("first")
    assert.same({cached = false, value = 31}, r, out)
    r, out = run("second")
    assert.same({cached = true, value = 31}, r, out)
    write_file(src .. "/b.h", "#define VALUE 32\n")
    r, out = run("changed")
    assert.same({cached = false, value = 32}, r, out)
    os.execute("rm -rf " .. sh_quote(src))
  end)

  it("sees header changes however the source reaches the header, or does not cache", function()
    local src = tmpdir()
    local KERNEL = "__kernel void f(__global int *o) { o[0] = VALUE; }\n"
    local mains = {
      macro = '#define H "x.h"\n#include H\n',          -- cannot be followed: not cached
      spliced = '#inc\\\nlude "x.h"\n',                  -- a backslash-newline in the name
      comment = '/* c */ #include "x.h"\n',              -- a comment before the directive
      multiline = '/* a\n  b */ #include "x.h"\n',       -- clang takes it: not cached
    }
    local script = {}
    for name, main in pairs(mains) do
      write_file(src .. "/" .. name .. ".cl", main .. KERNEL)
      script[#script + 1] = string.format('report(%q, dev:build_file(%q))', name,
                                          src .. "/" .. name .. ".cl")
    end
    script = table.concat(script, "\n")
    write_file(src .. "/x.h", "#define VALUE 61\n")
    local first = child(home, script)
    write_file(src .. "/x.h", "#define VALUE 62\n")
    local changed = child(home, script)
    local again = child(home, script)
    for name in pairs(mains) do
      local cacheable = name == "spliced" or name == "comment"
      assert.same({cached = false, value = 61}, first[name], name .. ": " .. first.output)
      assert.same({cached = false, value = 62}, changed[name], name .. ": " .. changed.output)
      assert.same({cached = cacheable, value = 62}, again[name], name .. ": " .. again.output)
    end
    os.execute("rm -rf " .. sh_quote(src))
  end)

  it("is off with LUAGPU_NO_CACHE=1", function()
    local before = #list(dir)
    local r = child(home, [[
      report("one", dev:build(SRC, {defines = {VALUE = 12}}))
      report("two", dev:build(SRC, {defines = {VALUE = 13}}))
    ]], "LUAGPU_NO_CACHE=1")
    assert.same({cached = false, value = 12}, r.one, r.output)
    assert.same({cached = false, value = 13}, r.two, r.output)
    assert.equal(before, #list(dir))
    -- the words that mean "no" leave it on (=false turned it off): the first
    -- run builds and keeps the program, the others load it
    for _, v in ipairs{"false", "No", "off", "0"} do
      r = child(home, [[
        report("one", dev:build(SRC, {defines = {VALUE = 14}}))
      ]], "LUAGPU_NO_CACHE=" .. v)
      assert.same({cached = v ~= "false", value = 14}, r.one, v .. ": " .. r.output)
    end
  end)

  it("lets concurrent processes write one entry, leaving no temporary files", function()
    local before = #list(dir)
    local path = os.tmpname()
    write_file(path, PRELUDE .. 'report("p" .. arg[1], dev:build(SRC, {defines = {VALUE = 51}}))')
    local cmd = string.format("LUAGPU_BUILD=%s XDG_CACHE_HOME=%s", sh_quote(BUILD), sh_quote(home))
    local p = io.popen(string.format("(%s lua5.4 %s 1 & %s lua5.4 %s 2 & %s lua5.4 %s 3 & wait) 2>&1",
                                     cmd, sh_quote(path), cmd, sh_quote(path), cmd, sh_quote(path)))
    local out = p:read("a")
    p:close()
    os.remove(path)
    for i = 1, 3 do assert.matches("p" .. i .. " %a+ 51", out) end
    local files = list(dir)
    assert.equal(before + 1, #files)
    for _, f in ipairs(files) do assert.matches("^%x+%.bin$", f) end
    local r = child(home, 'report("after", dev:build(SRC, {defines = {VALUE = 51}}))')
    assert.same({cached = true, value = 51}, r.after, r.output)
  end)

  -- Many processes at once over one cache folder (luagpu's and PoCL's own):
  -- a key-value sort of uint keys (the case that once left an entry PoCL
  -- aborted on) and small programs; then a fresh process, with PoCL's cache
  -- empty, loads every entry, and none is rebuilt or replaced.
  it("leaves only loadable entries after many processes share one cache at once", function()
    local box = tmpdir()
    write_file(box .. "/work.lua", [==[
      package.cpath = os.getenv("LUAGPU_BUILD") .. "/?.so;" .. package.cpath
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      local gpu = require "luagpu"
      local algo = require "luagpu.algo"
      local dev = gpu.device()
      -- the radix sort's programs (rows this short would sort in local memory)
      algo.classes[dev.type == "cpu" and "cpu" or "gpu"].sort_rows_max = 0
      local n = 3000 + 7 * tonumber(arg[1])
      local keys, vals = {}, {}
      for i = 1, n do keys[i] = math.random(0, 4294967295); vals[i] = i end
      local kb = dev:buffer("uint", n, {host = keys})
      local vb = dev:buffer("int", n, {host = vals})
      algo.sort(kb, {values = vb})
      local k, v = kb:get(), vb:get()
      for i = 1, n do
        assert(k[i] == keys[v[i]], "values moved with their keys")
        assert(i == 1 or k[i - 1] <= k[i], "sorted")
      end
      local cached = 0
      for value = 60, 62 do
        local p = dev:build("__kernel void f(__global int *o) { o[0] = VALUE; }",
                            {defines = {VALUE = value}})
        local o = dev:buffer("int", 1)
        p.f(o):run({1}):wait()
        assert(o:get()[1] == value)
        if p.cached then cached = cached + 1 end
      end
      print("ok " .. arg[1] .. " " .. cached)]==])
    local env = string.format("LUAGPU_BUILD=%s XDG_CACHE_HOME=%s", sh_quote(BUILD), sh_quote(box))
    local cmds = {}
    for i = 1, 6 do cmds[i] = env .. " lua5.4 " .. sh_quote(box .. "/work.lua") .. " " .. i .. " &" end
    local p = io.popen("(" .. table.concat(cmds, " ") .. " wait) 2>&1")
    local out = p:read("a")
    p:close()
    for i = 1, 6 do assert.matches("ok " .. i .. " %d\n", out) end
    local function entries()
      local p = io.popen("ls -i " .. sh_quote(box .. "/luagpu"))   -- a replaced entry: a new inode
      local text = p:read("a")
      p:close()
      return text
    end
    local before = entries()
    assert.matches("%.bin", before)
    assert(os.execute("mkdir " .. sh_quote(box .. "/empty")))
    p = io.popen(env .. " POCL_CACHE_DIR=" .. sh_quote(box .. "/empty") .. " lua5.4 "
                 .. sh_quote(box .. "/work.lua") .. " 7 2>&1")
    out = p:read("a")
    p:close()
    local after = entries()
    os.execute("rm -rf " .. sh_quote(box))
    assert.equal("ok 7 3\n", out)
    assert.equal(before, after)
  end)

  -- PoCL 3.1 keeps its own cache, one folder per program shared by every
  -- process building it. A build rewrites the folder's program.bc (unlink,
  -- rename) while the serialisation behind clGetProgramInfo in another
  -- process walks the folder without checking stat or opendir: readdir(NULL)
  -- crashed about one cold run of the case above in 75. luagpu holds a flock
  -- on luagpu.lock in PoCL's cache folder around every build step, so a
  -- rival that makes program.bc vanish and come back as a competing build
  -- does, under that lock, must never hurt a build. Without the lock this
  -- crashes (or fails the build) within a few of the builds below.
  it("never races a competing build in PoCL's own cache folder", function()
    if not io.popen("command -v flock"):read("l") then return pending("no flock(1)") end
    local box, kcache = pocl_box()
    if not box then return pending("PoCL's cache only") end
    -- the rival, in one process that inherits fd 9 on luagpu.lock: under
    -- the lock, as a competing PoCL build, program.bc vanishes for a moment
    -- and comes back, over and over for 50 ms; until told to stop
    write_file(box .. "/rival.lua", [[
      local kcache, stop = arg[1], arg[2]
      local files, deadline = {}, os.time() + 120
      local function gone(path) local f = io.open(path) if f then f:close() end return not f end
      while gone(stop) and os.time() < deadline do
        if #files == 0 then
          for f in io.popen("ls -d " .. kcache .. "/*/*/program.bc 2>/dev/null"):lines() do
            files[#files + 1] = f
          end
          if #files == 0 then os.execute("sleep 0.01") end
        else
          os.execute("flock -x 9")
          local t0 = os.clock()
          repeat
            for _, f in ipairs(files) do
              os.rename(f, f .. ".away")
              local t = os.clock()
              repeat until os.clock() - t > 0.0002
              os.rename(f .. ".away", f)
            end
          until os.clock() - t0 > 0.05
          os.execute("flock -u 9")
        end
      end]])
    write_file(box .. "/rival.sh", 'exec 9>>"$1/luagpu.lock"\n'
               .. 'exec lua5.4 "$(dirname "$0")/rival.lua" "$1" "$2"\n')
    -- sixteen builds of one program in PoCL's cache (a comment apart: each
    -- a miss in luagpu's), each built, extracted, stored and run
    write_file(box .. "/builder.lua", PRELUDE .. [[
      for i = 1, 16 do
        local p = dev:build("__kernel void f(__global int *o) { o[0] = 71; } // " .. i)
        assert(result(p) == 71 and not p.cached)
      end
      print("built 16")]])
    local env = string.format("LUAGPU_BUILD=%s XDG_CACHE_HOME=%s POCL_CACHE_DIR=%s", sh_quote(BUILD),
                              sh_quote(box), sh_quote(kcache))
    local p = io.popen(string.format(
      "(sh %s %s %s & %s lua5.4 %s; echo \"exit $?\"; touch %s; wait) 2>&1",
      sh_quote(box .. "/rival.sh"), sh_quote(kcache), sh_quote(box .. "/stop"), env,
      sh_quote(box .. "/builder.lua"), sh_quote(box .. "/stop")))
    local out = p:read("a")
    p:close()
    os.execute("rm -rf " .. sh_quote(box))
    assert.matches("built 16\nexit 0\n", out, 1, true)
  end)

  -- A build once waited forever, silently, while another process kept the
  -- lock. It names the holder, then goes on without the lock after
  -- LUAGPU_LOCK_TIMEOUT seconds; a lock let go in time is simply waited for.
  it("names the process that keeps PoCL's cache lock, and goes on without it", function()
    if not io.popen("command -v python3"):read("l") then return pending("no python3") end
    local box, kcache = pocl_box()
    if not box then return pending("PoCL's cache lock only") end
    write_file(box .. "/holder.py", "import fcntl, sys, time\n"
               .. "f = open(sys.argv[1] + '/luagpu.lock', 'a')\n"
               .. "fcntl.flock(f, fcntl.LOCK_EX)\n"
               .. "print('locked', flush=True)\n"
               .. "time.sleep(float(sys.argv[2]))\n")
    write_file(box .. "/builder.lua", PRELUDE .. [[
      local p = dev:build("__kernel void f(__global int *o) { o[0] = 72; } // " .. arg[1])
      report("built", p)]])
    -- runs the builder while the holder keeps the lock for hold seconds
    local function race(hold, n, env)
      local held = box .. "/held" .. n
      local cmd = string.format(
        "python3 %s %s %s >%s & h=$!; while ! grep -qs locked %s; do sleep 0.05; done; "
        .. "echo \"holder $h\"; LUAGPU_BUILD=%s XDG_CACHE_HOME=%s POCL_CACHE_DIR=%s %s "
        .. "timeout 25 lua5.4 %s %d; echo \"exit $?\"; kill $h 2>/dev/null; wait",
        sh_quote(box .. "/holder.py"), sh_quote(kcache), hold, sh_quote(held), sh_quote(held),
        sh_quote(BUILD), sh_quote(box), sh_quote(kcache), env, sh_quote(box .. "/builder.lua"), n)
      local p = io.popen("(" .. cmd .. ") 2>&1")
      local out = p:read("a")
      p:close()
      return out, out:match("holder (%d+)")
    end
    local lock = kcache .. "/luagpu.lock"
    local t0 = os.time()
    local out, pid = race(30, 1, "LUAGPU_LOCK_TIMEOUT=2")
    assert.matches("built false 72\nexit 0\n", out, 1, true)
    assert.is_true(os.time() - t0 < 20, out)
    assert.matches("luagpu: waiting for PoCL's cache lock " .. lock .. ", held by process "
                   .. pid .. " (python3) (going on without it after 2 s; LUAGPU_LOCK_TIMEOUT "
                   .. "sets that)\n", out, 1, true)
    assert.matches("luagpu: gave up waiting for PoCL's cache lock " .. lock .. " after 2 s "
                   .. "(held by process " .. pid .. " (python3)): building without it\n",
                   out, 1, true)
    -- held for a second and a half: waited for, and nothing said
    out = race(1.5, 2, "")
    os.execute("rm -rf " .. sh_quote(box))
    assert.matches("^holder %d+\nbuilt false 72\nexit 0\n$", out)
  end)

  -- PoCL's folder may be the shared /tmp/pocl/kcache: a link planted at the
  -- lock's name must not have luagpu create or lock the file it names.
  it("never follows a link at PoCL's cache lock, and builds without the lock", function()
    local box, kcache = pocl_box()
    if not box then return pending("PoCL's cache lock only") end
    assert(os.execute("mkdir -p " .. sh_quote(box .. "/victim")))
    local victim = box .. "/victim/planted"
    assert(os.execute("ln -s " .. sh_quote(victim) .. " " .. sh_quote(kcache .. "/luagpu.lock")))
    local r = child(box, [[
      local p = dev:build("__kernel void f(__global int *o) { o[0] = 73; } // link")
      report("built", p)]], "POCL_CACHE_DIR=" .. sh_quote(kcache))
    local made = io.open(victim)
    if made then made:close() end
    os.execute("rm -rf " .. sh_quote(box))
    assert.same({cached = false, value = 73}, r.built, r.output)
    assert.is_nil(made, "the link's target was created")
  end)
end)
