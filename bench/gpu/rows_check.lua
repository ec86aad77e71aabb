-- bench/gpu/rows_check.lua: the row kernels (softmax, log_softmax,
-- logsumexp, var, std along the last dim) on a GPU, where no busted runs
-- and where their warp-shuffle form (inline PTX, NVIDIA's) builds: each
-- result against one computed on the host in double precision from the
-- same floats, over row lengths that give every form (rows sharing a warp,
-- rows of one to eight warps, rows longer than the registers hold, odd
-- lengths read one element at a time), with rows of NaN, +inf and -inf.
-- With RW.warp = false too (the local-memory form, as on PoCL).
--   build/luagpu bench/gpu/rows_check.lua
local gpu = require "luagpu"
local RW = require "luagpu.tensor.rows"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local exp, log, abs, sqrt, huge = math.exp, math.log, math.abs, math.sqrt, math.huge

-- host references of one row (a list of numbers)
local function row_max(r)
  local m = -huge
  for _, a in ipairs(r) do if a > m then m = a end end
  return m
end
local function sum_exp(r, m)
  local s = 0
  for _, a in ipairs(r) do s = s + (a == m and 1 or exp(a - m)) end
  return s
end
local REF = {
  softmax = function(r)
    local m = row_max(r)
    local s, out = sum_exp(r, m), {}
    for i, a in ipairs(r) do out[i] = (m == huge or m == -huge) and 0 / 0 or exp(a - m) / s end
    return out
  end,
  log_softmax = function(r)
    local m = row_max(r)
    local s, out = sum_exp(r, m), {}
    for i, a in ipairs(r) do out[i] = (m == huge or m == -huge) and 0 / 0 or (a - m) - log(s) end
    return out
  end,
  logsumexp = function(r) local m = row_max(r); return {m + log(sum_exp(r, m))} end,
  var = function(r)
    local s = 0
    for _, a in ipairs(r) do s = s + a end
    local mean, q = s / #r, 0
    for _, a in ipairs(r) do q = q + (a - mean) ^ 2 end
    return {q / (#r - 1)}
  end,
}
REF.std = function(r) return {sqrt(REF.var(r)[1])} end

-- whether got agrees with want (NaN with NaN, infinities exactly)
local function close(got, want, tol)
  if want ~= want then return got ~= got end
  if want == huge or want == -huge then return got == want end
  return abs(got - want) <= tol * (1 + abs(want))
end

local bad, checked = 0, 0
local function check(name, rows, L, special)
  local x = dev:randn("float", {rows, L}, rows * 7 + L):eval()
  local h = x:totable()
  if special then
    -- row 1 NaN at its middle, row 2 one +inf, row 3 all -inf, row 4 a -inf
    local function put(r, c, v) if r <= rows and c <= L then h[r][c] = v end end
    put(1, (L + 1) // 2, 0 / 0); put(2, L, huge); put(4, 1, -huge)
    if rows >= 3 then for c = 1, L do h[3][c] = -huge end end
    x = dev:tensor("float", {rows, L}, h)
  end
  local got
  if name == "softmax" or name == "log_softmax" then got = x[name](x, 2):totable()
  elseif name == "logsumexp" then got = x:logsumexp(2, true):totable()
  else got = x[name](x, 2, {keepdim = true}):totable() end
  local tol = (name == "var" or name == "std") and 1e-4 or 2e-5
  for r = 1, rows do
    local want = REF[name](h[r])
    for c = 1, #want do
      checked = checked + 1
      if not close(got[r][c], want[c], tol) then
        bad = bad + 1
        if bad <= 20 then
          print(("%s %dx%d%s warp=%s: row %d col %d: got %s, want %s"):format(name, rows, L,
                special and " (special)" or "", tostring(RW.warp), r, c, got[r][c], want[c]))
        end
        break
      end
    end
  end
end

local SHAPES = {{64, 3}, {64, 16}, {33, 100}, {40, 128}, {17, 512}, {9, 1000}, {8, 1024},
                {5, 4096}, {3, 4097}, {4, 16384}, {2, 20000}, {2, 65536}, {1, 100003}}
for _, warp in ipairs {true, false} do
  RW.warp = warp
  for _, name in ipairs {"softmax", "log_softmax", "logsumexp", "var", "std"} do
    for _, sh in ipairs(SHAPES) do
      check(name, sh[1], sh[2], false)
      if name ~= "var" and name ~= "std" then check(name, sh[1], sh[2], true) end
    end
  end
end
print(("rows_check on %s: %d values checked, %s"):format(dev.name, checked,
      bad == 0 and "all agree" or bad .. " differ"))
