-- bench/gpu/rows_sweep.lua: the row kernels' group size and registers
-- (luagpu.tensor.rows' sizes: LS work-items a group, at most ITEMS chunks
-- of 4 a work-item, at least MIN_ITEMS where a row has enough) swept over
-- softmax, log_softmax, logsumexp and var along the last dim, device time
-- by gpu.trace, medians of REPS, against the default sizes in the same run
-- (ratio: this form's time / the default's, below 1 faster) and against copy_to of the bytes the op must
-- move (the physical limit: one read, one write for softmax). A program,
-- not a test:
--   build/luagpu bench/gpu/rows_sweep.lua [REPS [SHAPES]]   (SHAPES: 4096x4096,8192x8192)
local gpu = rawget(_G, "gpu") or require "luagpu"
local RW = require "luagpu.tensor.rows"
local reps = tonumber(arg and arg[1]) or 21
local shapes = arg and arg[2] or "4096x4096,8192x8192,65536x256,256x65536"
local dev = gpu.device()
dev:set_profiling(true)
local cls = dev.type == "cpu" and "cpu" or "gpu"
local default = RW.sizes[cls]
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local function timed(f) return bench.median_busy_us(gpu, dev, reps, f) end

print(("device: %s; default sizes LS %d, ITEMS %d, MIN_ITEMS %d; medians of %d, device us")
      :format(dev.name, default.LS, default.ITEMS, default.MIN_ITEMS, reps))
local forms = {}
for _, ls in ipairs{128, 256, 512} do
  for _, items in ipairs{8, 16, 32} do
    for _, least in ipairs{1, 4, 8, 16} do
      if least <= items then forms[#forms + 1] = {LS = ls, ITEMS = items, MIN_ITEMS = least} end
    end
  end
end
for sh in shapes:gmatch("[^,]+") do
  local r, c = sh:match("(%d+)x(%d+)")
  r, c = tonumber(r), tonumber(c)
  local S = dev:rand("float", {r, c}, 1):eval()
  local out = dev:buffer("float", r * c)
  local copy = timed(function() return S.buffer:copy_to(out) end)
  print(("%s: copy_to of the %d MB %.1f us"):format(sh, r * c * 4 >> 20, copy))
  local ops = {
    {"softmax", function() return S:softmax(2) end},
    {"log_softmax", function() return S:log_softmax(2) end},
    {"logsumexp", function() return S:logsumexp(2) end},
    {"var", function() return S:var(2) end},
  }
  for _, op in ipairs(ops) do
    RW.sizes[cls] = default
    local base = timed(op[2])
    local ref = op[2]():get()
    local best, best_t = "default", base
    local line = {}
    for _, f in ipairs(forms) do
      RW.sizes[cls] = f
      local ok, t = pcall(timed, op[2])
      if ok then
        local got = op[2]():get()
        local same = true
        for i = 1, #ref, 4099 do
          local a, b = ref[i], got[i]
          if math.abs(a - b) > 1e-5 * math.max(1, math.abs(a)) then same = false end
        end
        line[#line + 1] = ("%d/%d/%d %.1f%s"):format(f.LS, f.ITEMS, f.MIN_ITEMS, t,
                                                     same and "" or " WRONG")
        if same and t < best_t then
          best, best_t = ("LS %d ITEMS %d MIN_ITEMS %d"):format(f.LS, f.ITEMS, f.MIN_ITEMS), t
        end
      end
    end
    RW.sizes[cls] = default
    print(("  %-11s default %.1f us (%.2f of copy_to); best %s %.1f us (%.2f of the default's)")
          :format(op[1], base, base / copy, best, best_t, best_t / base))
    print("    " .. table.concat(line, "  "))
  end
end
