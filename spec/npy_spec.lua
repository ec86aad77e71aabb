-- NumPy .npy files: a:save and gpu.load, against hand-made files and, when
-- python3 with numpy is installed, against NumPy itself.
local gpu = require "luagpu"

local SCALARS = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                 "float", "double"}
local DESCR = {char = "|i1", uchar = "|u1", short = "<i2", ushort = "<u2", int = "<i4",
               uint = "<u4", long = "<i8", ulong = "<u8", float = "<f4", double = "<f8"}
local PACK = {char = "i1", uchar = "I1", short = "i2", ushort = "I2", int = "i4",
              uint = "I4", long = "i8", ulong = "I8", float = "f", double = "d"}
local RANGE = {char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767},
               ushort = {0, 65535}, int = {-2147483648, 2147483647}, uint = {0, 4294967295},
               long = {math.mininteger, math.maxinteger}, ulong = {math.mininteger, math.maxinteger}}

local function random_values(s, n)
  local t = {}
  for i = 1, n do
    if s == "float" or s == "double" then
      t[i] = math.random(-100000, 100000) / 64
    elseif s == "ulong" then
      t[i] = math.random(0, math.maxinteger)
    else
      local r = RANGE[s]
      t[i] = (i == 1 and r[1]) or (i == 2 and r[2]) or math.random(r[1], r[2])
    end
  end
  if s == "ulong" and n >= 2 then t[2] = 2.0^63 end   -- the top bit set
  return t
end

-- The values as a[i] reads them back: ulongs past 2^63-1 wrap, as in Lua's
-- own unsigned arithmetic.
local function as_read(t)
  local r = {}
  for i, v in ipairs(t) do r[i] = v >= 2.0^63 and math.tointeger(v - 2.0^64) or v end
  return r
end

local support = require "support"
local err, has_error = support.errmsg, support.has_error

local dir
local function tmp(name) return dir .. "/" .. name end

local readfile, writefile = support.read_file, support.write_file

-- A .npy file with the given header dict and data, padded as NumPy pads.
local function npy(name, dict, data, version)
  version = version or 1
  local lensize = version == 1 and 2 or 4
  local h = dict .. "\n"
  h = dict .. string.rep(" ", (64 - (8 + lensize + #h) % 64) % 64) .. "\n"
  local len = string.pack(version == 1 and "<I2" or "<I4", #h)
  return writefile(tmp(name), "\x93NUMPY" .. string.char(version, 0) .. len .. h .. (data or ""))
end

local function pack_all(fmt, values)
  local parts = {}
  for i, v in ipairs(values) do parts[i] = string.pack(fmt, v) end
  return table.concat(parts)
end

local PY
local function find_python()
  for _, py in ipairs{"python3", "/usr/bin/python3"} do
    if os.execute(py .. ' -c "import numpy" >/dev/null 2>&1') then return py end
  end
end

setup(function()
  dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  PY = find_python()
end)

teardown(function()
  if dir then os.execute("rm -rf '" .. dir .. "'") end
end)

describe("a:save and gpu.load", function()
  it("round-trip every scalar type, keeping the shape", function()
    for _, s in ipairs(SCALARS) do
      local t = random_values(s, 12)
      for _, shape in ipairs{{12}, {3, 4}, {2, 3, 2}} do
        local a = gpu.array(s, t, {shape = shape})
        a:save(tmp("rt.npy"))
        local b = gpu.load(tmp("rt.npy"))
        assert.equal(s, b.type)
        assert.same(shape, b.shape)
        assert.same(as_read(t), b:totable())
      end
    end
  end)

  it("writes version 1.0 headers, little-endian, C order, padded to 64 bytes", function()
    for _, s in ipairs(SCALARS) do
      local t = random_values(s, 6)
      gpu.array(s, t, {shape = {2, 3}}):save(tmp("h.npy"))
      local bytes = readfile(tmp("h.npy"))
      assert.equal("\x93NUMPY\1\0", bytes:sub(1, 8))
      local hlen = string.unpack("<I2", bytes, 9)
      assert.equal(0, (10 + hlen) % 64)
      local header = bytes:sub(11, 10 + hlen)
      local dict = "{'descr': '" .. DESCR[s] .. "', 'fortran_order': False, 'shape': (2, 3), }"
      assert.equal(dict, header:sub(1, #dict))
      assert.matches("^ *\n$", header:sub(#dict + 1))
      assert.equal(pack_all("<" .. PACK[s], as_read(t)), bytes:sub(11 + hlen))
    end
    gpu.array("int", 5):save(tmp("h1.npy"))
    assert.matches("'shape': (5,), }", readfile(tmp("h1.npy")), 1, true)
  end)

  it("saves vectors with a trailing dimension of their width (float3: 3)", function()
    local t = random_values("float", 12)
    gpu.array("float4", t):save(tmp("v4.npy"))
    local b = gpu.load(tmp("v4.npy"))
    assert.equal("float", b.type)
    assert.same({3, 4}, b.shape)
    assert.same(t, b:totable())
    local c = gpu.load(tmp("v4.npy"), "float4")
    assert.equal("float4", c.type)
    assert.same({3}, c.shape)
    assert.same(t, c:totable())

    gpu.array("float3", t):save(tmp("v3.npy"))
    assert.equal(readfile(tmp("v3.npy")):sub(-48), pack_all("<f", t))   -- no padding lanes
    b = gpu.load(tmp("v3.npy"))
    assert.same({4, 3}, b.shape)
    c = gpu.load(tmp("v3.npy"), "float3")
    assert.equal(4, c.count)
    assert.equal(64, c.bytes)
    assert.same(t, c:totable())

    local u = random_values("ushort", 20)
    gpu.array("ushort2", u, {shape = {2, 5}}):save(tmp("v2.npy"))
    assert.matches("'shape': (2, 5, 2), }", readfile(tmp("v2.npy")), 1, true)
    c = gpu.load(tmp("v2.npy"), "ushort2")
    assert.same({2, 5}, c.shape)
    assert.same(u, c:totable())
  end)

  it("reads big-endian data, versions 2.0 and 3.0, bool, and 0-d arrays", function()
    local t = random_values("int", 7)
    local a = gpu.load(npy("be.npy", "{'descr': '>i4', 'fortran_order': False, 'shape': (7,), }",
                           pack_all(">i4", t)))
    assert.same(t, a:totable())
    local d = random_values("double", 4)
    a = gpu.load(npy("bed.npy", "{'descr': '>f8', 'fortran_order': False, 'shape': (2, 2), }",
                     pack_all(">d", d)))
    assert.equal("double", a.type)
    assert.same(d, a:totable())
    local u = as_read(random_values("ulong", 3))
    a = gpu.load(npy("v2.npy", "{'descr': '>u8', 'fortran_order': False, 'shape': (3,), }",
                     pack_all(">j", u), 2))
    assert.same(u, a:totable())
    a = gpu.load(npy("v3.npy", '{"descr": "<u2", "fortran_order": False, "shape": (3L,)}',
                     pack_all("<I2", {1, 2, 65535}), 3))
    assert.same({1, 2, 65535}, a:totable())
    a = gpu.load(npy("b.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                     "\1\0\1"))
    assert.equal("uchar", a.type)
    assert.same({1, 0, 1}, a:totable())
    a = gpu.load(npy("s.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                     string.pack("<d", 2.5)))
    assert.same({1}, a.shape)
    assert.equal(2.5, a[1])
    a = gpu.load(npy("z.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }"))
    assert.same({0, 3}, a.shape)
    assert.equal(0, #a)
  end)

  it("converts to the type asked for, with the usual checks", function()
    local d = random_values("double", 8)
    gpu.array("double", d):save(tmp("d.npy"))
    local f = gpu.load(tmp("d.npy"), "float")
    assert.equal("float", f.type)
    for i = 1, 8 do assert.equal(string.unpack("f", string.pack("f", d[i])), f[i]) end
    local i4 = gpu.load(npy("i8.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 4), }",
                            pack_all("<i8", {1, 2, 3, 4, 5, 6, 7, 8})), "int4")
    assert.equal("int4", i4.type)
    assert.same({2}, i4.shape)
    assert.same({1, 2, 3, 4, 5, 6, 7, 8}, i4:totable())
    local p = npy("frac.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                  pack_all("<d", {1, 2.5}))
    has_error("luagpu: gpu.load: " .. p .. ": value #2: 2.5 is not an integer (int holds integers)",
              gpu.load, p, "int")
    p = npy("big.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
            string.pack("<i8", 300))
    has_error("luagpu: gpu.load: " .. p .. ": value #1: 300 does not fit uchar (0 to 255)",
              gpu.load, p, "uchar")
    has_error("luagpu: gpu.load: " .. p .. ": float4 needs a last dimension of 4, the file's "
              .. "shape is (1,)", gpu.load, p, "float4")
    has_error("luagpu: gpu.load: argument #2: unknown element type 'half'", gpu.load, p, "half")
    has_error("luagpu: gpu.load: argument #3: tensors hold scalar elements (char .. double), "
              .. "got float4", gpu.load, p, gpu.device(), "float4")
    -- a further argument did nothing, silently
    has_error("luagpu: gpu.load: argument #3: expected no more arguments, got number",
              gpu.load, p, "long", 1)
    local a = gpu.load(p)
    has_error("luagpu: array:save: argument #3: expected no more arguments, got boolean",
              a.save, a, tmp("extra.npy"), {1}, true)
    assert.is_nil(io.open(tmp("extra.npy")))
  end)

  it("raises with the reason on missing, corrupt and unsupported files", function()
    local F = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
    local data = pack_all("<f", {1, 2, 3, 4})
    local function check(text, path)
      has_error("luagpu: gpu.load: " .. path .. ": " .. text, gpu.load, path)
    end
    check("No such file or directory", tmp("missing.npy"))
    check("not a .npy file (no \\x93NUMPY magic string)", writefile(tmp("x.txt"), "hello world"))
    check("not a .npy file (no \\x93NUMPY magic string)", writefile(tmp("empty.npy"), ""))
    check("unsupported .npy format version 4.0",
          writefile(tmp("v4.npy"), "\x93NUMPY\4\0\0\0"))
    check("truncated header", writefile(tmp("th.npy"), "\x93NUMPY\1\0\100\0{'descr'"))
    check("corrupt header: 4294967295 bytes long",
          writefile(tmp("hl.npy"), "\x93NUMPY\2\0\255\255\255\255"))
    check("truncated: the shape needs 16 bytes of data, the file has 12",
          npy("td.npy", F, data:sub(1, 12)))
    check("truncated: the shape needs 4398046511104 bytes of data, the file has 16",
          npy("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", data))
    check("too large: shape {4611686018427387904, 4611686018427387904} of float",
          npy("over.npy", "{'descr': '<f4', 'fortran_order': False, "
                          .. "'shape': (4611686018427387904, 4611686018427387904), }", data))
    -- empty, but no shape of its other sizes would fit (NumPy: "array is too big")
    check("too large: shape {4294967296, 4294967296, 0} of float",
          npy("over0.npy", "{'descr': '<f4', 'fortran_order': False, "
                           .. "'shape': (4294967296, 4294967296, 0), }", ""))
    check("corrupt header: no 'shape'",
          npy("ns.npy", "{'descr': '<f4', 'fortran_order': False, }", data))
    check("corrupt header: unexpected key 'order'",
          npy("uk.npy", "{'descr': '<f4', 'order': False, 'shape': (4,), }", data))
    check("corrupt header: not a dictionary", npy("nd.npy", "['<f4']", data))
    check("corrupt header: 'shape' holds something other than sizes",
          npy("neg.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", data))
    check("corrupt header: 'fortran_order' is neither True nor False",
          npy("fo.npy", "{'descr': '<f4', 'fortran_order': 0, 'shape': (4,), }", data))
    check("arrays in Fortran order are not supported (save numpy.ascontiguousarray(x) instead)",
          npy("f.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data))
    check("the array has 9 dimensions (luagpu arrays have at most 8)",
          npy("d9.npy", "{'descr': '<f4', 'fortran_order': False, "
                        .. "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 4), }", data))
    for _, dt in ipairs{"<c8", "<f2", "|S5", "<U3", "|O", "<M8[ns]", "<f16"} do
      check("unsupported dtype '" .. dt .. "' (luagpu reads bool, int8 to int64, uint8 to "
            .. "uint64, float32 and float64)",
            npy("u.npy", "{'descr': '" .. dt .. "', 'fortran_order': False, 'shape': (4,), }", data))
    end
    check("unsupported dtype [('x', '<f4'), ('y', '<i4')] (structured arrays are not supported)",
          npy("st.npy", "{'descr': [('x', '<f4'), ('y', '<i4')], 'fortran_order': False, "
                        .. "'shape': (2,), }", data))
    has_error("luagpu: gpu.load: argument #1: expected a file path, got no value", gpu.load)
  end)

  -- a FIFO once blocked the open forever: the load runs in a child under `timeout`
  it("refuses a FIFO, a device or a folder without blocking", function()
    local fifo = tmp("pipe.npy")
    assert(os.execute("mkfifo '" .. fifo .. "'"))
    local prog = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"
    for _, path in ipairs({fifo, "/dev/null", dir}) do
      local p = io.popen("timeout 20 " .. prog .. " -e \"print(pcall(require('luagpu').load, '"
                         .. path .. "'))\" 2>&1")
      local out = p:read("a")
      local _, _, code = p:close()
      assert.equal(0, code, out)
      assert.equal("false\tluagpu: gpu.load: argument #1: '" .. path .. "' is not a file\n", out)
    end
    os.remove(fifo)
  end)

  it("save raises on bad paths", function()
    local a = gpu.array("int", 3)
    has_error("luagpu: array:save: " .. tmp("no/such/dir.npy") .. ": No such file or directory",
              function() a:save(tmp("no/such/dir.npy")) end)
    has_error("luagpu: array:save: argument #1: expected a file path, got no value",
              function() a:save() end)
    -- a NUL would end the path early: "x.npy\0y" once saved to, and loaded, x.npy
    local path = tmp("nul.npy")
    os.remove(path)
    has_error("luagpu: array:save: argument #1: the file path holds a NUL byte (at position " ..
              (#path + 1) .. ")", function() a:save(path .. "\0y") end)
    assert.is_nil(io.open(path))
    a:save(path)
    has_error("luagpu: gpu.load: argument #1: the file path holds a NUL byte", gpu.load,
              path .. "\0y")
    has_error("luagpu: write_file: argument #1: the file path holds a NUL byte",
              gpu.write_file, path .. "\0y", "data")
    os.remove(path)
  end)

  -- A save through a dangling link once replaced the link with a regular
  -- file. It writes through, as a plain write does: the target is created
  -- and every link in the chain stays a link.
  it("writes through symbolic links, dangling ones too, and keeps the links", function()
    local function is_link(p) return os.execute("test -L " .. p) == true end
    local sub = tmp("links")
    assert(os.execute("mkdir -p " .. sub))
    -- a relative dangling link, and a chain of two links to it
    assert(os.execute("cd " .. sub .. " && ln -s target.npy dangling.npy && "
                      .. "ln -s dangling.npy chain.npy"))
    local a = gpu.array("int", {7, 8, 9})
    a:save(sub .. "/chain.npy")
    assert.is_true(is_link(sub .. "/chain.npy"))
    assert.is_true(is_link(sub .. "/dangling.npy"))
    assert.is_false(is_link(sub .. "/target.npy"))
    assert.same({7, 8, 9}, gpu.load(sub .. "/target.npy"):totable())
    -- a link to an existing file: the file changes, the link stays
    gpu.array("int", {1, 2}):save(sub .. "/dangling.npy")
    assert.is_true(is_link(sub .. "/dangling.npy"))
    assert.same({1, 2}, gpu.load(sub .. "/target.npy"):totable())
    -- an absolute dangling link into a missing folder: an error, nothing made
    assert(os.execute("ln -s " .. sub .. "/none/x.npy " .. sub .. "/nowhere.npy"))
    has_error("luagpu: array:save: " .. sub .. "/nowhere.npy: No such file or directory",
              function() a:save(sub .. "/nowhere.npy") end)
    assert.is_true(is_link(sub .. "/nowhere.npy"))
    -- a loop of links: an error; the links stay
    assert(os.execute("cd " .. sub .. " && ln -s loop2.npy loop1.npy && ln -s loop1.npy loop2.npy"))
    has_error("luagpu: array:save: " .. sub .. "/loop1.npy: Too many levels of symbolic links",
              function() a:save(sub .. "/loop1.npy") end)
    assert.is_true(is_link(sub .. "/loop1.npy") and is_link(sub .. "/loop2.npy"))
    local names = io.popen("ls " .. sub):read("a")
    assert.equals("chain.npy\ndangling.npy\nloop1.npy\nloop2.npy\nnowhere.npy\ntarget.npy\n", names)
  end)

  it("never removes what it did not create: a failed write leaves the old file whole", function()
    -- a link to /dev/full: the write fails; the link (and the device) stay
    local link = tmp("full.npy")
    assert(os.execute("ln -sf /dev/full " .. link))
    has_error("luagpu: array:save: " .. link .. ": No space left on device",
              function() gpu.array("int", 3):save(link) end)
    assert.is_true(os.execute("test -L " .. link .. " && test -c /dev/full"))
    -- a file written whole, then a save over it that fails past the file size
    -- limit (in a child process): the old file is still there, unchanged
    local path = tmp("keep.npy")
    local old = gpu.array("int", {1, 2, 3})
    old:save(path)
    local script = tmp("big.lua")
    local f = assert(io.open(script, "w"))
    f:write(string.format("gpu.array('double', 100000):save(%q)\n", path))
    f:close()
    local p = io.popen(string.format("sh -c \"trap '' XFSZ; ulimit -f 64; %s/luagpu %s\" 2>&1",
                                     os.getenv("LUAGPU_BUILD") or "build", script))
    local out = p:read("a")
    p:close()
    assert.matches("array:save: " .. path .. ": File too large", out, 1, true)
    assert.same({1, 2, 3}, gpu.load(path):totable())
    local leftovers = io.popen("ls -a " .. dir):read("a")
    assert.not_matches(".luagpu-", leftovers, 1, true)
  end)

  -- the temporary file was the name plus ".tmp.XXXXXX", past 255 bytes for
  -- a legal long name; and its rename replaced a file its user may not write
  it("saves under a long name, and never over a file its user may not write", function()
    local long = tmp(("a"):rep(250) .. ".npy")
    gpu.array("int", {4, 5}):save(long)
    assert.same({4, 5}, gpu.load(long):totable())
    local d = support.tmpdir()
    local script = d .. "/ro.lua"
    writefile(script, "local a = gpu.array('int', {1, 2, 3})\n" ..
                      "print(pcall(a.save, a, 'ro.npy'))\n" ..
                      "print(pcall(gpu.write_file, 'ro.txt', 'X'))\n")
    -- a copy of the program there (its helpers built in): the checkout may
    -- be in a folder nobody cannot enter
    local prog = (os.getenv("LUAGPU_BUILD") or "build") .. "/luagpu"
    assert(os.execute("cp " .. support.shell_quote(prog) .. " " .. support.shell_quote(d)))
    local real = "./luagpu"
    -- as root (who may write anything) the child runs as nobody
    local as = ""
    if io.popen("id -u"):read("l") == "0" then
      assert(os.execute("chown nobody " .. support.shell_quote(d)))
      as = "setpriv --reuid=nobody --regid=nogroup --clear-groups "
    end
    local out, code = support.sh("cd " .. support.shell_quote(d) .. " && " .. as .. "sh -c " ..
      support.shell_quote("echo KEEP > ro.npy && echo KEEP > ro.txt && chmod 444 ro.npy ro.txt " ..
                          "&& XDG_CACHE_HOME=" .. d .. "/cache " .. real .. " ro.lua"))
    assert.equals(0, code, out)
    assert.matches("false\tluagpu: array:save: ro.npy: Permission denied", out, 1, true)
    assert.matches("false\tluagpu: write_file: cannot write 'ro.txt': Permission denied", out, 1,
                   true)
    assert.equals("KEEP\n", readfile(d .. "/ro.npy"))
    assert.equals("KEEP\n", readfile(d .. "/ro.txt"))
  end)
end)

describe("NumPy interop", function()
  local function need_numpy()
    -- make test installs python3-numpy: under CI a missing NumPy is a failure
    assert(PY or not os.getenv("CI"), "python3 with numpy not found under CI")
    if not PY then pending("python3 with numpy not found: NumPy interop not checked") end
    return PY ~= nil
  end

  it("gpu.load reads what NumPy writes, for every dtype luagpu has", function()
    if not need_numpy() then return end
    local script = writefile(tmp("gen.py"), [[
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng()
out = ["return {"]
def lua(v, dt):
    if dt.kind == 'f':
        return repr(float(v))
    if dt.kind == 'u' and dt.itemsize == 8:
        return hex(int(v))            # Lua reads hex integers modulo 2^64
    return str(int(v))
cases = [('int8', '<i1'), ('uint8', '<u1'), ('int16', '<i2'), ('uint16', '<u2'),
         ('int32', '<i4'), ('uint32', '<u4'), ('int64', '<i8'), ('uint64', '<u8'),
         ('float32', '<f4'), ('float64', '<f8'), ('be32', '>i4'), ('bef8', '>f8'),
         ('beu2', '>u2'), ('bool', '?')]
for name, code in cases:
    dt = np.dtype(code)
    if dt.kind == 'f':
        x = rng.standard_normal((3, 5)).astype(dt)
    elif dt.kind == 'b':
        x = rng.integers(0, 2, (3, 5)).astype(dt)
    else:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, (3, 5), dtype=dt.newbyteorder('='), endpoint=True).astype(dt)
        x.flat[0], x.flat[1] = info.min, info.max
    np.save(f"{d}/np_{name}.npy", x)
    vals = ", ".join(lua(v, dt) for v in x.flat)
    out.append(f"  {name} = {{shape = {{{', '.join(map(str, x.shape))}}}, values = {{{vals}}}}},")
np.save(f"{d}/np_scalar.npy", np.float64(1.25))
np.save(f"{d}/np_vec.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
np.save(f"{d}/np_fortran.npy", np.asfortranarray(np.zeros((2, 3), np.float32)))
np.save(f"{d}/np_c8.npy", np.zeros(3, np.complex64))
np.save(f"{d}/np_f2.npy", np.zeros(3, np.float16))
np.save(f"{d}/np_str.npy", np.array(["ab", "c"]))
out.append("}")
open(f"{d}/expect.lua", "w").write("\n".join(out) + "\n")
]])
    assert.is_true(os.execute(PY .. " " .. script .. " '" .. dir .. "'"))
    local expect = dofile(tmp("expect.lua"))
    local types = {int8 = "char", uint8 = "uchar", int16 = "short", uint16 = "ushort",
                   int32 = "int", uint32 = "uint", int64 = "long", uint64 = "ulong",
                   float32 = "float", float64 = "double", be32 = "int", bef8 = "double",
                   beu2 = "ushort", bool = "uchar"}
    for name, e in pairs(expect) do
      local a = gpu.load(tmp("np_" .. name .. ".npy"))
      assert.equal(types[name], a.type, name)
      assert.same(e.shape, a.shape, name)
      assert.same(e.values, a:totable(), name)
    end
    local s = gpu.load(tmp("np_scalar.npy"))
    assert.equal(1.25, s[1])
    local v = gpu.load(tmp("np_vec.npy"), "float4")
    assert.equal(3, v.count)
    assert.equal(11, v[12])
    has_error("arrays in Fortran order are not supported", gpu.load, tmp("np_fortran.npy"))
    has_error("unsupported dtype '<c8'", gpu.load, tmp("np_c8.npy"))
    has_error("unsupported dtype '<f2'", gpu.load, tmp("np_f2.npy"))
    has_error("unsupported dtype '<U2'", gpu.load, tmp("np_str.npy"))
  end)

  it("NumPy reads what a:save writes, for every type", function()
    if not need_numpy() then return end
    local lines = {"import sys, numpy as np", "bad = 0", "def check(path, dtype, shape, values):",
                   "    global bad", "    x = np.load(path)",
                   "    want = np.array(values, dtype=object).astype(dtype).reshape(shape)",
                   "    if x.dtype != np.dtype(dtype) or x.shape != shape or not (x == want).all():",
                   "        bad += 1; print('FAIL', path, x.dtype, x.shape, x.ravel()[:4], want.ravel()[:4])"}
    local np = {char = "int8", uchar = "uint8", short = "int16", ushort = "uint16", int = "int32",
                uint = "uint32", long = "int64", ulong = "uint64", float = "float32",
                double = "float64"}
    for _, s in ipairs(SCALARS) do
      for _, w in ipairs{1, 3, 4} do
        local name = w == 1 and s or s .. w
        local a = gpu.array(name, random_values(s, 6 * w), {shape = {2, 3}})
        local path = tmp("lg_" .. name .. ".npy")
        a:save(path)
        local vals = {}
        for i = 1, #a do
          local x = a[i]
          if s == "ulong" then vals[i] = ("0x%x"):format(x)
          elseif s == "float" or s == "double" then vals[i] = ("%.17g"):format(x)
          else vals[i] = tostring(x) end
        end
        lines[#lines + 1] = ("check(%q, %q, %s, [%s])"):format(path, np[s],
          w == 1 and "(2, 3)" or ("(2, 3, %d)"):format(w), table.concat(vals, ", "))
      end
    end
    lines[#lines + 1] = "print('checked', bad)"
    local script = writefile(tmp("check.py"), table.concat(lines, "\n") .. "\n")
    local p = io.popen(PY .. " " .. script .. " 2>&1")
    local out = p:read("a")
    p:close()
    assert.equal("checked 0\n", out)
  end)
end)
