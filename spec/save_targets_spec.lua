-- Where and how a:save, gpu.write_file and trace files write (host/savefile.c):
-- /dev/stdout and other open files of the process written in place, a
-- replaced file keeping its inode's owner, group and mode (or written in
-- place when its folder cannot take a temporary file), no temporary file
-- left behind by SIGTERM or SIGHUP, fs.protected_symlinks obeyed, and
-- gpu.load's message for a header cut short (a file that shrinks while it
-- is read says "the file ended before its data" too, which no spec can
-- make happen on time). Each case runs the program in
-- a child (its own stdout, umask, user or signal).
local gpu = require "luagpu"
local support = require "support"

local PROG = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"
if PROG:sub(1, 1) ~= "/" then PROG = os.getenv("PWD") .. "/" .. PROG end   -- run from elsewhere
local q, sh, read_file, write_file = support.shell_quote, support.sh, support.read_file,
                                     support.write_file
local ROOT = io.popen("id -u"):read("l") == "0"
local AS_NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups "

local dir
setup(function() dir = support.tmpdir() end)
teardown(function() if dir then os.execute("rm -rf " .. q(dir)) end end)

-- Runs the program on a script given with -e, in folder d; returns its
-- output (stderr included) and exit code.
local function run(d, script, prefix)
  return sh("cd " .. q(d) .. " && " .. (prefix or "") .. q(PROG) .. " -e " .. q(script))
end

local function stat(path, fmt) return io.popen("stat -c " .. q(fmt) .. " " .. q(path)):read("l") end

-- 3 floats: a header of 128 bytes and 12 of data
local SAVE3 = "gpu.array('float', {1, 2, 3}):save('/dev/stdout')"

describe("writing to", function()
  -- /dev/stdout was followed by hand to /proc/self/fd/1 and then to
  -- "pipe:[N]" as a path; a redirected stdout was replaced by a new file
  it("/dev/stdout writes into the process's stdout: a pipe, or the file it is", function()
    local out, code = sh(q(PROG) .. " -e " .. q(SAVE3) .. " | wc -c")
    assert.equals(0, code, out)
    assert.equals("140", out:match("%d+"), out)
    local file = dir .. "/stdout.txt"
    write_file(file, "")
    local inode = stat(file, "%i")
    out, code = sh(q(PROG) .. " -e " .. q(SAVE3) .. " > " .. q(file))
    assert.equals(0, code, out)
    assert.equals(inode, stat(file, "%i"))           -- the same file, not a new one
    assert.equals(140, #read_file(file))
    assert.same({1, 2, 3}, gpu.load(file):totable())
    -- /dev/fd/1 too, and gpu.write_file still refuses a link
    out, code = sh(q(PROG) .. " -e " .. q("gpu.array('int', 2):save('/dev/fd/1')") .. " | wc -c")
    assert.equals(0, code, out)
    assert.equals("136", out:match("%d+"), out)
  end)

  it("--trace /dev/stdout writes the trace into the pipe", function()
    local out, code = sh(q(PROG) .. " --trace /dev/stdout -e 'print(1)' | cat")
    assert.equals(0, code, out)
    assert.matches('^1\n{"displayTimeUnit"', out)
    -- a link of the user's own is still refused (trace_spec.lua)
    local link = dir .. "/tlink.json"
    assert(os.execute("ln -sf /dev/null " .. q(link)))
    out = sh(q(PROG) .. " --trace " .. q(link) .. " -e 'print(1)'")
    assert.matches("refusing to write a trace through the symbolic link", out, 1, true)
  end)
end)

describe("replacing a file", function()
  it("keeps the old file's owner, group and mode (as root)", function()
    if not ROOT then return pending("needs root to give files to another user") end
    local d = support.tmpdir()
    for _, name in ipairs {"o.npy", "o.png", "o.json"} do
      write_file(d .. "/" .. name, "")
      assert(os.execute("chown nobody:nogroup " .. q(d .. "/" .. name) .. " && chmod 640 " ..
                        q(d .. "/" .. name)))
    end
    local out, code = run(d, "gpu.array('int', {1, 2}):save('o.npy'); " ..
                             "gpu.write_file('o.png', 'X'); gpu.trace(true); gpu.trace('o.json')")
    assert.equals(0, code, out)
    for _, name in ipairs {"o.npy", "o.png", "o.json"} do
      assert.equals("nobody:nogroup 640", stat(d .. "/" .. name, "%U:%G %a"), name)
    end
    assert.same({1, 2}, gpu.load(d .. "/o.npy"):totable())
    os.execute("rm -rf " .. q(d))
  end)

  -- the temporary file could not be made in a folder its user may not
  -- write, though the file itself he may: "Permission denied"
  it("writes in place a file its user may write in a folder he may not", function()
    local d = support.tmpdir()
    local prefix = ""
    assert(os.execute("chmod 755 " .. q(d)))
    for _, name in ipairs {"w.npy", "w.png", "w.json"} do
      write_file(d .. "/" .. name, "")
      assert(os.execute("chmod 666 " .. q(d .. "/" .. name)))
    end
    if ROOT then prefix = AS_NOBODY
    else assert(os.execute("chmod 555 " .. q(d))) end
    local out, code = run(d, "gpu.array('int', {4, 5}):save('w.npy'); " ..
                             "gpu.write_file('w.png', 'PNG'); gpu.trace(true); gpu.trace('w.json')",
                          prefix)
    assert.equals(0, code, out)
    assert.same({4, 5}, gpu.load(d .. "/w.npy"):totable())
    assert.equals("PNG", read_file(d .. "/w.png"))
    assert.matches('^{"displayTimeUnit"', read_file(d .. "/w.json"))
    -- and a file he may not write is still refused
    assert(os.execute("chmod 444 " .. q(d .. "/w.npy")))
    out = run(d, "gpu.array('int', 1):save('w.npy')", prefix)
    assert.matches("array:save: w.npy: Permission denied", out, 1, true)
    os.execute("chmod 755 " .. q(d) .. "; rm -rf " .. q(d))
  end)

  -- trace files were made 0644 whatever the umask, and an old one reset to 0644
  it("gives a new trace file 0666 less the umask, and an old one keeps its mode", function()
    local d = support.tmpdir()
    local out, code = sh("cd " .. q(d) .. " && umask 077 && " .. q(PROG) ..
                         " -e 'gpu.trace(true) gpu.trace(\"t.json\")'")
    assert.equals(0, code, out)
    assert.equals("600", stat(d .. "/t.json", "%a"))
    assert(os.execute("chmod 664 " .. q(d .. "/t.json")))
    out, code = run(d, "gpu.trace(true) gpu.trace('t.json')")
    assert.equals(0, code, out)
    assert.equals("664", stat(d .. "/t.json", "%a"))
    os.execute("rm -rf " .. q(d))
  end)
end)

describe("a temporary file", function()
  -- a SIGTERM or SIGHUP during a long save left .luagpu-XXXXXX behind
  it("is removed when SIGTERM or SIGHUP ends the process mid-save", function()
    for _, sig in ipairs {"TERM", "HUP"} do
      -- (the kill follows the sight of the temporary file; a save that
      -- ended between the two, "saved", is tried again: what must never
      -- happen is a temporary file left after a kill mid-save)
      local killed
      for _ = 1, 10 do
        local d = support.tmpdir()
        local script = "local a = gpu.array('float3', 8000000) a:save('big.npy') print('saved')"
        local out = sh("cd " .. q(d) .. " && { " .. q(PROG) .. " -e " .. q(script) ..
                       " & pid=$!; until ls -A | grep -q luagpu- || ! kill -0 $pid; do :; done; kill -" .. sig ..
                       " $pid; wait $pid; echo \"rc=$?\"; }")
        if not out:find("saved", 1, true) then
          killed = true
          assert.matches("rc=" .. (sig == "TERM" and 143 or 129), out, 1, true)
          assert.equals("", io.popen("ls -A " .. q(d)):read("a"), sig)
        end
        os.execute("rm -rf " .. q(d))
        if killed then break end
      end
      assert.is_true(killed, "no save was killed midway in 10 tries")
    end
  end)
end)

describe("following links by hand", function()
  -- as the kernel's fs.protected_symlinks: in a sticky world-writable
  -- folder only a link of the follower's or of the folder's owner is followed
  it("refuses another user's link in a sticky world-writable folder", function()
    if not ROOT then return pending("needs root to make another user's link") end
    local d = support.tmpdir()
    assert(os.execute("chmod 1777 " .. q(d)))
    assert(os.execute("cd " .. q(d) .. " && ln -s target.npy theirs.npy && " ..
                      "chown -h nobody theirs.npy && ln -s mine_t.npy mine.npy"))
    local out = run(d, "gpu.array('int', 1):save('theirs.npy')")
    assert.matches("array:save: theirs.npy: refusing to follow a symbolic link in a sticky " ..
                   "world-writable directory owned by another user", out, 1, true)
    assert.is_nil(io.open(d .. "/target.npy"))
    local code
    out, code = run(d, "gpu.array('int', {3}):save('mine.npy')")   -- one's own: followed
    assert.equals(0, code, out)
    assert.same({3}, gpu.load(d .. "/mine_t.npy"):totable())
    os.execute("rm -rf " .. q(d))
  end)
end)

describe("gpu.load of a file cut short", function()
  it("says the header is truncated when the magic string is there", function()
    local f = write_file(dir .. "/seven.npy", "\x93NUMPY\x01")
    support.has_error("luagpu: gpu.load: " .. f .. ": truncated header", gpu.load, f)
    write_file(f, "\x93NUM")
    support.has_error("luagpu: gpu.load: " .. f .. ": truncated header", gpu.load, f)
    write_file(f, "PK\3\4xyzw")
    support.has_error("not a .npy file (no \\x93NUMPY magic string)", gpu.load, f)
  end)
end)
