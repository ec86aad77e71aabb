-- bench/gpu/scan_sweep.lua: the PTX look-back scan's tile (algo.classes.gpu
-- scan_local x scan_ptx_items, and its ticket) swept over x:cumsum() of
-- 2^24 and 2^20 floats and an int cumsum of 2^24, device time by gpu.trace
-- (medians of REPS), beside the default tile in the same run (ratio: this
-- form / the default, below 1 faster) and a device copy of the same bytes
-- (copy_to, one read and one write: the floor). Each result is checked
-- against the default's (floats within 1e-4: the order of their sums
-- follows the tile). A program, not a test:
--   build/luagpu bench/gpu/scan_sweep.lua [REPS]
local gpu = require "luagpu"
local algo = gpu.algo
local reps = tonumber(arg and arg[1]) or 15
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
dev:set_profiling(true)
local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local function timed(f) return bench.median_busy_us(gpu, dev, reps, f) end
local inputs = {
  {"float 2^24", dev:rand("float", {1 << 24}, 1):eval()},
  {"float 2^20", dev:rand("float", {1 << 20}, 2):eval()},
  {"int 2^24", (dev:rand("float", {1 << 24}, 3) * 100):floor():astype("int"):eval()},
}
local default = {cls.scan_local, cls.scan_ptx_items, cls.scan_ptx_ticket}
local base, want = {}, {}
for i, inp in ipairs(inputs) do
  base[i] = timed(function() return inp[2]:cumsum() end)
  want[i] = inp[2]:cumsum():totable()
  local o = dev:buffer(inp[2].type, #inp[2])
  local b = inp[2]:contiguous()._st.buf
  local copy = timed(function() return b:copy_to(o) end)
  print(("%-11s default (%d x %d, ticket %s) %.1f us; copy_to %.1f us"):format(
    inp[1], default[1], default[2], tostring(default[3]), base[i], copy))
end
print("local x items ticket | " .. table.concat((function()
  local h = {} for _, inp in ipairs(inputs) do h[#h + 1] = inp[1] .. " us (ratio)" end return h end)(), " | "))
for _, L in ipairs {128, 256, 512, 1024} do
  for _, items in ipairs {16, 32, 64, 128} do
    for _, ticket in ipairs {false, true} do
      cls.scan_local, cls.scan_ptx_items, cls.scan_ptx_ticket = L, items, ticket
      local ok, row = pcall(function()
        local cells = {}
        for i, inp in ipairs(inputs) do
          local t = timed(function() return inp[2]:cumsum() end)
          local got = inp[2]:cumsum():totable()
          local same = true
          for j = 1, #got, 997 do
            local w = want[i][j]
            if math.abs(got[j] - w) > 1e-4 * math.abs(w) + 1e-3 then same = false break end
          end
          cells[#cells + 1] = ("%6.1f (%.2f)%s"):format(t, t / base[i], same and "" or " DIFFERS")
        end
        return table.concat(cells, " | ")
      end)
      print(("%4d x %3d %-5s | %s"):format(L, items, tostring(ticket), ok and row or ("failed: " .. tostring(row))))
    end
  end
end
cls.scan_local, cls.scan_ptx_items, cls.scan_ptx_ticket = default[1], default[2], default[3]
