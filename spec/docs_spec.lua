-- Every ```lua block of README.md and docs/*.md runs, so the docs cannot drift.
--
-- The convention: a ```lua block is a complete program, run as written by the
-- luagpu program in a fresh process from the repository's root (it has its
-- own `local gpu = require "luagpu"` and its own device), small enough to
-- take a few seconds on PoCL; it passes when it exits 0. A block that cannot
-- run (a signature list, a fragment) has the line `<!-- doc: no-run -->` right
-- before its fence. REPL transcripts and shell sessions are ```text and ```sh
-- blocks, which this spec does not run. Each file's test names say how many of
-- its blocks ran and how many are marked no-run.
local build = os.getenv("LUAGPU_BUILD") or "build"
local MARK = "<!-- doc: no-run -->"
local LIMIT = 60         -- seconds a block may take before `timeout` ends it

-- Blocks that require luagpu.mpi need build/luagpu_mpi.so (make builds it where
-- mpicc is found, make test installs Open MPI): under CI its absence is a
-- failure, elsewhere those blocks are pending, as in mpi_spec.lua.
local HAVE_MPI = false
do
  local f = io.open(build .. "/luagpu_mpi.so")
  if f then f:close(); HAVE_MPI = true end
end
local function needs_mpi(code)
  return code:find("require%s*%(?%s*[\"']luagpu%.mpi[\"']") ~= nil
end

-- The ```lua blocks of one markdown file: { line = fence line, code = text,
-- run = false when marked no-run }. Other fences are skipped whole, so a
-- ```lua line inside a ```text block is not taken for a block.
local function blocks(path)
  local out, open, prev, n = {}, nil, nil, 0
  for line in io.lines(path) do
    n = n + 1
    local fence, lang = line:match("^(%s*```+)%s*(%S*)")
    if open then
      if fence and lang == "" and #fence:match("`+") >= open.ticks then
        if open.block then out[#out + 1] = open.block end
        open = nil
      elseif open.block then
        open.block.code[#open.block.code + 1] = line:sub(open.indent + 1)
      end
    elseif fence then
      local indent = #fence:match("^%s*")
      open = { ticks = #fence:match("`+"), indent = indent }
      if lang == "lua" then
        open.block = { line = n, code = {}, run = prev ~= MARK }
      end
    end
    prev = line:match("^%s*(.-)%s*$")
  end
  assert(not open, path .. ": a code fence is not closed")
  for _, b in ipairs(out) do b.code = table.concat(b.code, "\n") .. "\n" end
  return out
end

local files = { "README.md" }
do
  local p = io.popen("ls docs/*.md")
  for f in p:lines() do files[#files + 1] = f end
  p:close()
end

-- Write every block to be run into a scratch folder, then run them all, two
-- at a time (each in its own process, stdin closed), keeping each one's
-- output and exit status beside it.
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local jobs, all = {}, {}
for _, f in ipairs(files) do
  local list = blocks(f)
  all[f] = list
  for _, b in ipairs(list) do
    if b.run and (HAVE_MPI or not needs_mpi(b.code)) then
      jobs[#jobs + 1] = b
      b.script = ("%s/b%03d.lua"):format(dir, #jobs)
      local h = assert(io.open(b.script, "w"))
      h:write(b.code)
      h:close()
    end
  end
end
local luagpu = build .. "/luagpu"
if #jobs > 0 then
  os.execute(("ls %s/*.lua | xargs -P 2 -I{} sh -c 't0=$(date +%%s.%%N); " ..
              "timeout %d %s {} </dev/null >{}.out 2>&1; echo $? >{}.rc; " ..
              "echo \"$t0 $(date +%%s.%%N)\" >{}.t'")
             :format(dir, LIMIT, luagpu))
end

local function slurp(p)
  local h = io.open(p)
  if not h then return nil end
  local s = h:read("a")
  h:close()
  return s
end

describe("docs: every ```lua block runs", function()
  teardown(function() os.execute("rm -rf " .. dir) end)

  for _, f in ipairs(files) do
    local list, ran, skipped = all[f], 0, 0
    for _, b in ipairs(list) do
      if b.run then ran = ran + 1 else skipped = skipped + 1 end
    end
    describe(("%s (%d run, %d no-run)"):format(f, ran, skipped), function()
      for _, b in ipairs(list) do
        if b.run then
          local t0, t1 = (b.script and slurp(b.script .. ".t") or ""):match("(%S+) (%S+)")
          local took = t0 and (" (%.1f s)"):format(tonumber(t1) - tonumber(t0)) or ""
          it(("the block at line %d%s"):format(b.line, took), function()
            if not b.script then
              assert(not os.getenv("CI"), build .. "/luagpu_mpi.so not found under CI")
              pending(build .. "/luagpu_mpi.so not found: a block that requires luagpu.mpi")
              return
            end
            local rc = tonumber(slurp(b.script .. ".rc") or "")
            local out = slurp(b.script .. ".out") or ""
            local why = rc == 124 and ("timed out after %d s"):format(LIMIT)
                        or ("exit %s"):format(rc)
            assert(rc == 0, ("%s:%d: the block failed (%s):\n%s"):format(f, b.line, why, out))
          end)
        end
      end
    end)
  end

  it("a no-run mark stands right before a ```lua fence", function()
    for _, f in ipairs(files) do
      local prev, n = nil, 0
      for line in io.lines(f) do
        n = n + 1
        if prev == MARK then
          assert(line:match("^%s*```lua%s*$"),
                 ("%s:%d: %s is not followed by a ```lua fence"):format(f, n - 1, MARK))
        end
        prev = line:match("^%s*(.-)%s*$")
      end
    end
  end)
end)
