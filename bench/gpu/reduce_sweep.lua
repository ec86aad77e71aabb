-- bench/gpu/reduce_sweep.lua: the tensor reductions' group sizes
-- (luagpu.tensor.reduce's sizes: LS for rows, CX x CY for columns, waves)
-- swept over sums and argmax along each dim, device time by gpu.trace,
-- medians of REPS, against the default sizes in the same run (the ratio:
-- this form's time / the default's, below 1 faster) and against the time
-- to read the tensor once (a sum of it by luagpu.reduce, a whole read). Each
-- form's result is checked against the default's. A program, not a test:
--   build/luagpu bench/gpu/reduce_sweep.lua [REPS [SHAPES]]   (SHAPES: 4096x4096,8192x8192)
local gpu = rawget(_G, "gpu") or require "luagpu"
local TR = require "luagpu.tensor.reduce"
local reps = tonumber(arg and arg[1]) or 15
local shapes = arg and arg[2] or "4096x4096,8192x8192,65536x256,256x65536"
local dev = gpu.device()
dev:set_profiling(true)
local cls = dev.type == "cpu" and "cpu" or "gpu"
local default = TR.sizes[cls]
local failed_once = false
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local function timed(f) return bench.median_busy_us(gpu, dev, reps, f) end

print(("device: %s; default sizes LS %d, CX %d, CY %d, waves %d; medians of %d, device us")
      :format(dev.name, default.LS, default.CX, default.CY, default.waves, reps))
local row_forms, col_forms = {}, {}
for _, ls in ipairs{32, 64, 128, 256} do
  for _, w in ipairs{4, 8} do
    row_forms[#row_forms + 1] = {LS = ls, CX = default.CX, CY = default.CY, waves = w}
  end
end
for _, cx in ipairs{8, 16, 32} do
  for _, cy in ipairs{8, 16, 32} do
    for _, w in ipairs{4, 8} do
      if cx * cy <= 256 then
        col_forms[#col_forms + 1] = {LS = default.LS, CX = cx, CY = cy, waves = w}
      end
    end
  end
end
for sh in shapes:gmatch("[^,]+") do
  local r, c = sh:match("(%d+)x(%d+)")
  r, c = tonumber(r), tonumber(c)
  local S = dev:rand("float", {r, c}, 1):eval()
  local read = timed(function() return S:sum() end)
  print(("%s: S:sum() (one read of the %d MB) %.1f us"):format(sh, r * c * 4 >> 20, read))
  local ops = {
    {"sum(2)", function() return S:sum(2) end, row_forms},
    {"argmax(2)", function() return S:argmax(2) end, row_forms},
    {"sum(1)", function() return S:sum(1) end, col_forms},
    {"argmax(1)", function() return S:argmax(1) end, col_forms},
  }
  for _, op in ipairs(ops) do
    TR.sizes[cls] = default
    local base = timed(op[2])
    local ref = op[2]():get()
    local best, best_t = "default", base
    local line = {}
    for _, f in ipairs(op[3]) do
      TR.sizes[cls] = f
      local ok, t = pcall(timed, op[2])
      if ok then
        local got = op[2]():get()
        local same = true
        for i = 1, #ref, 97 do
          local a, b = ref[i], got[i]
          if math.abs(a - b) > 1e-3 * math.max(1, math.abs(a)) then same = false end
        end
        local name = op[3] == row_forms and ("%d/%d"):format(f.LS, f.waves)
                     or ("%dx%d/%d"):format(f.CX, f.CY, f.waves)
        line[#line + 1] = ("%s %.1f%s"):format(name, t, same and "" or " WRONG")
        if same and t < best_t then best, best_t = name, t end
      else
        line[#line + 1] = "failed"
        if not failed_once then print(tostring(t)); failed_once = true end
      end
    end
    TR.sizes[cls] = default
    print(("  %-10s default %.1f us (%.2f of a read); best %s %.1f us (%.2f of the default's)")
          :format(op[1], base, base / read, best, best_t, best_t / base))
    print("    " .. table.concat(line, "  "))
  end
end
