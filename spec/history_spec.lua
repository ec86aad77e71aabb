-- The REPL's history file, ~/.luagpu_history, when it is not a plain file:
-- a relative symlink (as GNU stow makes), a link in a loop, a FIFO; and how
-- much of it is kept. luagpu runs in a pseudo-terminal
-- (util-linux's `script`) as in repl_spec.lua, with a temporary HOME and a
-- current directory of its own, so that a file written in the wrong place
-- shows.
local BUILD = os.getenv("LUAGPU_BUILD") or "build"
local PROG = BUILD .. "/luagpu"
if PROG:sub(1, 1) ~= "/" then PROG = io.popen("pwd"):read("l") .. "/" .. PROG end

local support = require "support"
local shell_quote, write_file, read_file, tmpdir = support.shell_quote, support.write_file,
                                                   support.read_file, support.tmpdir

-- The REPL in a pseudo-terminal with HOME=home, in the folder cwd
-- (support.repl_session).
local function session(home, cwd, steps, limit)
  return support.repl_session(PROG, home, steps, cwd, limit)
end

-- n history entries as readline writes them: "#<time>\n<line>\n", the
-- entry i (from 0) being "line<i>", or with multi, every other entry a
-- chunk of two lines.
local function entries(n, multi)
  local t = {}
  for i = 0, n - 1 do
    t[#t + 1] = string.format("#%d\nline%d\n", 1700000000 + i, i)
    if multi and i % 2 == 1 then t[#t + 1] = "  more" .. i .. "\n" end
  end
  return table.concat(t)
end

describe("the REPL's history file", function()
  it("behind a relative symlink is the link's target, not a file of that name here", function()
    local home, cwd = tmpdir(), tmpdir()
    -- past 4000 entries, the old trimming wrote the file it kept to the
    -- link's text in the current directory
    write_file(home .. "/notes.txt", entries(4500))
    os.execute("ln -s notes.txt " .. shell_quote(home .. "/.luagpu_history"))
    write_file(cwd .. "/notes.txt", "my own notes\n")
    session(home, cwd, {
      {prompts = 1, keys = "x = 1\n"},
      {prompts = 2, keys = "\4"},
    })
    local mine, hist = read_file(cwd .. "/notes.txt"), read_file(home .. "/notes.txt")
    os.execute("rm -r " .. shell_quote(home) .. " " .. shell_quote(cwd))
    assert.equals("my own notes\n", mine)
    -- the target trimmed to the last 1000 entries, then the new one
    assert.matches("^#1700003500\nline3500\n#1700003501\n", hist)
    assert.matches("\nline4499\n#%d+\nx = 1\n$", hist)
  end)

  it("behind a link that cannot be resolved (a loop) is off, and says so", function()
    local home, cwd = tmpdir(), tmpdir()
    os.execute("ln -s .luagpu_history " .. shell_quote(home .. "/.luagpu_history"))
    local out = session(home, cwd, {
      {prompts = 1, keys = "x = 1\n"},
      {prompts = 2, keys = "\4"},
    })
    os.execute("rm -r " .. shell_quote(home) .. " " .. shell_quote(cwd))
    assert.matches("/.luagpu_history: cannot resolve: Too many levels of symbolic links: "
                   .. "history off\n", out, 1, true)
  end)

  it("that is a FIFO is off: the REPL starts and never opens it", function()
    local home, cwd = tmpdir(), tmpdir()
    os.execute("mkfifo " .. shell_quote(home .. "/.luagpu_history"))
    -- reading it blocked before the first prompt: give up long before
    -- repl_spec's 60 s
    local out, status = session(home, cwd, {
      {prompts = 1, keys = "print(6 * 7)\n"},
      {prompts = 2, keys = "\4"},
    }, 20)
    os.execute("rm -r " .. shell_quote(home) .. " " .. shell_quote(cwd))
    assert.equals("rc 0\n", status)
    assert.matches("\n42\n", out, 1, true)
    assert.matches("luagpu_history: not a regular file: history off\n", out, 1, true)
  end)

  it("keeps the last 1000 entries, a multi-line chunk counted once", function()
    local home, cwd = tmpdir(), tmpdir()
    write_file(home .. "/.luagpu_history", entries(5000, true))
    session(home, cwd, {{prompts = 1, keys = "\4"}})
    local hist = read_file(home .. "/.luagpu_history")
    os.execute("rm -r " .. shell_quote(home) .. " " .. shell_quote(cwd))
    local n = select(2, hist:gsub("#%d+\n", ""))
    assert.equals(1000, n)
    -- whole entries, from entry 4000 (the last 1000 of 0..4999) on
    assert.equals(entries(5000, true):sub(#entries(4000, true) + 1), hist)
  end)
end)
