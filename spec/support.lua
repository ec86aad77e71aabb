-- Shared by the specs: checking that a call raises, and with what message;
-- files, shell quoting and random data.
local assert = require "luassert"

local support = {}

-- Calls f(...), asserts that it raised, and returns the message.
function support.errmsg(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

-- Asserts that f(...) raises a message containing text (plain, not a pattern).
function support.has_error(text, f, ...)
  assert.matches(text, support.errmsg(f, ...), 1, true)
end

-- s quoted for sh.
function support.shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

function support.write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

function support.read_file(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

-- n random integers in [lo, hi].
function support.random_ints(n, lo, hi)
  local t = {}
  for i = 1, n do t[i] = math.random(lo, hi) end
  return t
end

-- n random multiples of 1/scale in [-range, range]: exact in float.
function support.random_floats(n, range, scale)
  local t = {}
  for i = 1, n do t[i] = math.random(-range, range) / scale end
  return t
end

-- alpha op(a) op(b) + beta c0 in Lua (doubles), a m x k (k x m with ta), b
-- k x n (n x k with tb), all row-major tables; and sum |.| of each
-- element's terms (the scale of its rounding error).
function support.matmul_reference(a, b, c0, m, n, k, ta, tb, alpha, beta)
  local want, scale = {}, {}
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local s, sa = 0, 0
      for q = 0, k - 1 do
        local x = ta and a[q * m + i + 1] or a[i * k + q + 1]
        local y = tb and b[j * k + q + 1] or b[q * n + j + 1]
        s, sa = s + x * y, sa + math.abs(x * y)
      end
      local e = i * n + j + 1
      want[e] = alpha * s + beta * c0[e]
      scale[e] = math.abs(alpha) * sa + math.abs(beta * c0[e])
    end
  end
  return want, scale
end

-- Runs a shell command; returns its output (stderr included) and exit code.
function support.sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

-- Runs the Lua program text under BUILD's luagpu with two PoCL devices
-- (POCL_DEVICES="pthread pthread"); returns its output and exit code.
-- (Without the lines of a notice that PoCL's cache lock is held: a spec
-- running beside this one may hold it while the program builds.)
function support.two_devices(text)
  local build = os.getenv("LUAGPU_BUILD") or "build"
  local out, code = support.sh("POCL_DEVICES='pthread pthread' " ..
                               support.shell_quote(build .. "/luagpu") .. " -e " ..
                               support.shell_quote(text))
  out = out:gsub("[^\n]*waiting for PoCL's cache lock[^\n]*\n", "")
  return out, code
end

-- Runs the differential fuzzer script (spec/lazy_fuzz.lua, spec/shard_fuzz.lua)
-- in its quick mode under BUILD's luagpu, in a child process: seed, programs
-- random programs; with opts.two_devices on two PoCL devices (POCL_DEVICES=
-- "pthread pthread"). Asserts that it exited 0 and that its last line is
-- "programs N mismatches 0" followed by opts.more (a pattern), and returns
-- its output.
function support.run_fuzzer(script, seed, programs, opts)
  opts = opts or {}
  local build = os.getenv("LUAGPU_BUILD") or "build"
  local env = opts.two_devices and "POCL_DEVICES='pthread pthread' " or ""
  local out, code = support.sh(("%s%s %s %d %d quick"):format(env,
    support.shell_quote(build .. "/luagpu"), support.shell_quote(script), seed, programs))
  assert(code == 0, out)
  assert.matches("programs " .. programs .. " mismatches 0" .. (opts.more or "") .. "\n$", out)
  return out
end

-- A new empty folder under the temporary directory; returns its path.
function support.tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir " .. support.shell_quote(dir)))
  return dir
end

-- Whether Open MPI's mpirun and BUILD's luagpu_mpi.so are here (make test
-- installs and builds both).
function support.have_mpi(build)
  local f = io.open(build .. "/luagpu_mpi.so")
  if f then f:close() end
  return f ~= nil and os.execute("command -v mpirun >/dev/null 2>&1") == true
end

-- Runs `mpirun -np n command` (command quoted for sh) within limit seconds
-- (120 by default), as root where need be; returns stdout and stderr
-- together, and the exit code. The sanitizer runtimes (LD_PRELOAD) go to
-- the ranks (-x), not to mpirun itself.
function support.mpirun(n, command, limit)
  local env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " ..
              "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1"
  local preload, x = os.getenv("LD_PRELOAD"), ""
  if preload and preload ~= "" then
    x = "-x LD_PRELOAD=" .. support.shell_quote(preload) .. " -x ASAN_OPTIONS -x UBSAN_OPTIONS "
  end
  local p = io.popen(("env -u LD_PRELOAD %s timeout %d mpirun %s-np %d %s 2>&1")
                     :format(env, limit or 120, x, n, command))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

-- Runs the REPL prog in a pseudo-terminal (util-linux's `script`) with
-- HOME=home, in the folder cwd (default: a temporary one), each keystroke
-- sequence typed only once the output shows what it waits for, so that no
-- step depends on timing. steps: a list of {prompts = n, text = s, delay =
-- d, keys = bytes}: the keys are typed once the output holds n prompts
-- "gpu> " and the text s (either may be left out), and d seconds more have
-- passed (default 0). A step that waits more than limit seconds (default
-- 60) ends the session. The output and the script's FIFO live outside cwd.
-- Returns the output with carriage returns taken out, and the exit status
-- line ("rc 0"), or "step N timed out".
function support.repl_session(prog, home, steps, cwd, limit)
  local dir = support.tmpdir()
  local q = support.shell_quote
  local out, fifo = q(dir .. "/out.txt"), q(dir .. "/in.fifo")
  local sh = {
    "cd " .. q(cwd or dir),
    "mkfifo " .. fifo,
    string.format("HOME=%s TERM=dumb script -qfec %s /dev/null <%s >%s 2>&1 & pid=$!",
                  q(home), q(prog), fifo, out),
    "exec 3>" .. fifo,
    -- step CONDITION N: types keysN once CONDITION holds; after limit
    -- seconds without, ends the session (the assertions then say what was
    -- missing)
    "step() { i=0; until eval \"$1\"; do sleep 0.05; i=$((i+1)); if [ $i -gt "
      .. math.floor((limit or 60) * 20) .. " ]; then echo \"step $2 timed out\"; kill $pid; "
      .. "exec 3>&-; wait $pid; exit 0; fi; done; sleep \"${3:-0}\"; cat "
      .. q(dir .. "/keys") .. "$2 >&3; }",
  }
  for i, step in ipairs(steps) do
    support.write_file(dir .. "/keys" .. i, step.keys)
    local conds = {}
    if step.text then conds[#conds + 1] = "grep -qF " .. q(step.text) .. " " .. out end
    if step.prompts then
      conds[#conds + 1] = "[ \"$(grep -o 'gpu> ' " .. out .. " | wc -l)\" -ge " .. step.prompts
                          .. " ]"
    end
    sh[#sh + 1] = "step " .. q(table.concat(conds, " && ")) .. " " .. i .. " " .. (step.delay or 0)
  end
  sh[#sh + 1] = "exec 3>&-"
  sh[#sh + 1] = "wait $pid; echo \"rc $?\""
  local p = io.popen(table.concat(sh, "\n"))
  local status = p:read("a")
  p:close()
  local text = support.read_file(dir .. "/out.txt"):gsub("\r", "")
  os.execute("rm -r " .. q(dir))
  return text, status
end

return support
