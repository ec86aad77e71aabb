-- The Jupyter kernel (packaging/jupyter/luagpu_kernel.py over
-- lua/luagpu/notebook.lua): examples/tour.ipynb runs headless with
-- `jupyter nbconvert --to notebook --execute`, through a kernelspec made by
-- `make kernelspec` in a temporary JUPYTER_PATH (never the user's home),
-- and its outputs are checked: tables came back as text/html, pictures as
-- image/png of the right size and image/svg+xml, printed text as a stream.
-- A notebook made here checks errors, persistence and a restart.
local support = require "support"
local shell_quote = support.shell_quote
local BUILD = os.getenv("LUAGPU_BUILD") or "build"

local sh = support.sh

local tmpdir = support.tmpdir

local PY = "/usr/bin/python3"
local HAVE = os.execute("command -v jupyter-nbconvert >/dev/null 2>&1") and
             os.execute(PY .. " -c 'import ipykernel, nbformat' >/dev/null 2>&1")

-- A summary of an executed notebook, one line per output of each code cell:
-- "CELL TYPE KEYS..." with, for an image/png, its width and height, and
-- for an error, its ename and first line.
local SUMMARY = [[
import sys, json, base64, struct
nb = json.load(open(sys.argv[1]))
n = 0
for c in nb["cells"]:
    if c["cell_type"] != "code":
        continue
    n += 1
    for o in c.get("outputs", []):
        t = o["output_type"]
        if t == "stream":
            print(n, t, o["name"], json.dumps("".join(o["text"])))
        elif t == "error":
            print(n, t, o["ename"], json.dumps(o["evalue"]))
        else:
            d = o["data"]
            extra = ""
            if "image/png" in d:
                png = base64.b64decode(d["image/png"])
                assert png[:8] == b"\x89PNG\r\n\x1a\n"
                extra = " %dx%d" % struct.unpack(">II", png[16:24])
            if "image/svg+xml" in d:
                assert "".join(d["image/svg+xml"]).startswith("<svg")
            if "text/html" in d:
                extra += " " + json.dumps("".join(d["text/html"])[:60])
            print(n, t, ",".join(sorted(d)) + extra)
]]

-- A temporary folder with a kernelspec for the build under test, and the
-- environment that makes Jupyter use it and nothing of the user's.
local function jupyter_dir()
  local dir = tmpdir()
  local out, code = sh("env -u LD_PRELOAD make --no-print-directory BUILD=" .. shell_quote(BUILD) ..
                       " kernelspec KERNELSPEC_DIR=" .. shell_quote(dir .. "/data/kernels/luagpu"))
  assert.equals(0, code, out)
  local env = ("env -u LD_PRELOAD HOME=%s JUPYTER_PATH=%s JUPYTER_DATA_DIR=%s " ..
               "JUPYTER_RUNTIME_DIR=%s JUPYTER_CONFIG_DIR=%s IPYTHONDIR=%s PYDEVD_DISABLE_FILE_VALIDATION=1 ")
              :format(shell_quote(dir), shell_quote(dir .. "/data"), shell_quote(dir .. "/data"),
                      shell_quote(dir .. "/runtime"), shell_quote(dir .. "/config"),
                      shell_quote(dir .. "/ipython"))
  return dir, env
end

-- Runs nbconvert on a notebook with a kernelspec for the build under test;
-- returns the summary's lines.
local function execute(notebook, allow_errors)
  local dir, env = jupyter_dir()
  local out, code
  out, code = sh(env .. "timeout 300 jupyter-nbconvert --to notebook --execute " ..
                 (allow_errors and "--allow-errors " or "") ..
                 "--ExecutePreprocessor.timeout=240 --output-dir " .. shell_quote(dir) ..
                 " --output out.ipynb " .. shell_quote(notebook))
  assert.equals(0, code, out)
  local script = dir .. "/summary.py"
  support.write_file(script, SUMMARY)
  local summary
  summary, code = sh(env .. PY .. " " .. shell_quote(script) .. " " .. shell_quote(dir .. "/out.ipynb"))
  assert.equals(0, code, summary)
  os.execute("rm -rf " .. shell_quote(dir))
  return summary
end

describe("the Jupyter kernel", function()
  local function needs_jupyter()
    if HAVE then return true end
    assert(not os.getenv("CI"), "jupyter-nbconvert or python3-ipykernel missing under CI")
    pending("jupyter-nbconvert and python3-ipykernel are not installed (make deps-test installs them)")
  end

  it("runs examples/tour.ipynb headless: tables, a stream, PNG images and SVG plots came back", function()
    if not needs_jupyter() then return end
    local s = execute("examples/tour.ipynb")
    local lines = {}
    for line in s:gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.matches("^1 execute_result text/plain$", lines[1], nil, false)
    assert.matches('2 execute_result text/html,text/plain "<table class=\\"luagpu\\"><caption>Tensor&lt;float&gt; {3, 4}',
                   s, 1, true)
    assert.matches('3 stream stdout "sum of each column:\\tluagpu.Tensor<float>{4}:\\n[15., 18., 21., 24.]\\n"',
                   s, 1, true)
    assert.matches('3 execute_result text/html,text/plain "<table class=\\"luagpu\\"><caption>Tensor&lt;float&gt; {4, 3}',
                   s, 1, true)
    assert.matches('4 execute_result text/html,text/plain "<table class=\\"luagpu\\"><caption>Array&lt;int&gt; {6}',
                   s, 1, true)
    assert.matches("\n5 display_data image/png 160x110\n", s, 1, true)
    assert.matches("\n6 display_data image/png 180x120\n", s, 1, true)
    assert.matches("\n7 display_data image/svg+xml\n", s, 1, true)
    assert.matches("\n8 display_data image/svg+xml\n", s, 1, true)
    assert.is_nil(s:find(" error ", 1, true), s)
    assert.equals(9, #lines, s)
  end)

  it("reports a Lua error as the cell's error, keeps globals, and restarts a program that ended", function()
    if not needs_jupyter() then return end
    local dir = tmpdir()
    local nb = dir .. "/t.ipynb"
    local out, code = sh("env -u LD_PRELOAD " .. PY .. " -c " .. shell_quote([[
import sys, nbformat
from nbformat.v4 import new_notebook, new_code_cell
cells = ["n = 41", "error('boom')", "n + 1", "local t = {}\nfor i = 1, 3 do t[i] = i * i end\nprint(table.concat(t, ' '), io.read('l'))\nio.stderr:write('to stderr\\n')",
         "1 +", "os.exit(3)", "n", "gpu.show({1, 2}, '/nonexistent-folder/x.svg')"]
nb = new_notebook(cells=[new_code_cell(c) for c in cells],
                  metadata={"kernelspec": {"name": "luagpu", "display_name": "luagpu", "language": "lua"}})
nbformat.write(nb, sys.argv[1])
]]) .. " " .. shell_quote(nb))
    assert.equals(0, code, out)
    local s = execute(nb, true)
    os.execute("rm -rf " .. shell_quote(dir))
    local want = {
      '2 error LuaError "[cell 2]:1: boom"',
      "3 execute_result text/plain",
      '4 stream stdout "1 4 9\\tnil\\n"',
      '4 stream stderr "to stderr\\n"',
      "5 error LuaError \"[cell 5]:1: unexpected symbol near '1'\"",
      '6 error LuaError "luagpu ended (exit status 3) during this cell; the next cell starts a new one (globals are gone)"',
      "8 error LuaError \"luagpu: show: cannot write '/nonexistent-folder/x.svg': No such file or directory\"",
    }
    for _, line in ipairs(want) do assert.matches("\n" .. line .. "\n", "\n" .. s, 1, true) end
    -- after the restart, n is gone: cell 7 shows nothing
    assert.is_nil(s:find("\n7 ", 1, true), s)
  end)

  it("an interrupt stops the running cell with 'interrupted!', again and again, keeping globals", function()
    if not needs_jupyter() then return end
    local dir, env = jupyter_dir()
    local script = dir .. "/interrupt.py"
    support.write_file(script, [[
import time, jupyter_client
km, kc = jupyter_client.manager.start_new_kernel(kernel_name="luagpu")
def run(code, interrupt_after=None):
    # stop_on_error=False: after a cell's error ipykernel aborts the requests
    # that reach it before its event loop turns once more (a race on a busy
    # machine); a notebook run with --allow-errors asks the same
    msg_id = kc.execute(code, stop_on_error=False)
    if interrupt_after:
        time.sleep(interrupt_after)
        km.interrupt_kernel()
    outs = []
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "status" and c["execution_state"] == "idle":
            break
        if t == "error":
            outs.append("error " + c["evalue"])
        elif t == "execute_result":
            outs.append("result " + c["data"]["text/plain"])
    while True:
        m = kc.get_shell_msg(timeout=60)
        if m["parent_header"].get("msg_id") == msg_id:
            break
    if m["content"]["status"] == "aborted":
        outs.append("aborted")
    print(" | ".join(outs))
run("n = 5")
run("while true do end", 2)
run("n")
run("while true do n = n end", 2)
run("n + 1")
kc.stop_channels()
km.shutdown_kernel(now=True)
]])
    local out, code = sh(env .. "timeout 120 " .. PY .. " " .. shell_quote(script))
    os.execute("rm -rf " .. shell_quote(dir))
    assert.equals(0, code, out)
    assert.matches("\nerror interrupted!\nresult 5\nerror interrupted!\nresult 6\n", out, 1, true)
  end)
end)

describe("a notebook's tables", function()
  it("bring to the host only what they show of a large tensor", function()
    local gpu = require "luagpu"
    local NB = require "luagpu.notebook"
    local dev = gpu.device()
    local x = dev:arange("int", 3000 * 50):reshape{3000, 50}:eval()
    gpu.trace(true)
    local bundle = NB.bundle(x)
    local rec = gpu.trace(false)
    local read = 0
    for _, c in ipairs(rec) do if c.kind == "read" then read = read + c.bytes end end
    assert.is_true(read < 2000, read .. " bytes read of " .. 3000 * 50 * 4)
    local html = bundle[2][2]
    assert.equal("text/html", bundle[2][1])
    -- the first row, the last, and the columns on both sides of the ellipsis
    assert.matches("<tr><th>1</th><td>1</td><td>2</td>", html, 1, true)
    assert.matches("<td>&hellip;</td><td>45</td>", html, 1, true)
    assert.matches("<tr><th>3000</th><td>149951</td>", html, 1, true)
    assert.matches("<td>150000</td></tr></table>", html, 1, true)
    local small = NB.bundle(dev:arange("float", 12):reshape{3, 4})[2][2]
    assert.matches("<tr><th>3</th><td>9</td><td>10</td><td>11</td><td>12</td></tr>", small, 1,
                   true)
  end)
end)
