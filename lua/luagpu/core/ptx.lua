-- luagpu.core.ptx: whether NVIDIA's OpenCL compiler takes inline PTX on a
-- device (internal). The one probe every kernel with inline assembly asks:
-- the scans' and sorts' warp shuffles and ballots, the row operations' and
-- reductions' shuffles, scatter_add's float atomics.
--
--   PTX.keyword(dev)          "asm" or "__asm__": the keyword of inline
--                             assembly that builds the probe (shfl.sync,
--                             vote.sync) on dev; false off NVIDIA GPUs or
--                             where neither builds
--   PTX.target(dev)           the PTX target of dev's compiler ("sm_90"),
--                             read from the probe's binary, or false
--   PTX.warp_keyword(dev, on) PTX.keyword(dev) where on (a module's switch,
--                             false to compare with the local-memory form)
--                             holds and dev is not a CPU, else false
--
-- Each answer is found once per device. The probe's builds count in family
-- "algo probe", not in algo.stats.programs_built.

local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"

local type, ipairs, tostring, pcall = type, ipairs, tostring, pcall

local PTX = {}

local PROBE = [[
__kernel void probe(__global uint *a) {
  uint v = a[get_global_id(0)], r, b;
  LG_ASM volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r) : "r"(v), "r"(1u));
  LG_ASM volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %1, 0;\n\t"
                  "vote.sync.ballot.b32 %0, q, 0xffffffff;\n\t}" : "=r"(b) : "r"(v));
  a[get_global_id(0)] = r + b;
}]]

local function recipe(kw)
  return {family = "algo probe", source = PROBE, defines = {{"LG_ASM", kw}}}
end

local keywords = ST.device_cache()

function PTX.keyword(dev)
  local ok = keywords[dev]
  if ok == nil then
    ok = false
    if dev.type == "gpu" and tostring(dev.vendor):find("NVIDIA") then
      for _, kw in ipairs {"asm", "__asm__"} do
        if pcall(P.get, dev, recipe(kw)) then
          ok = kw
          break
        end
      end
    end
    keywords[dev] = ok
  end
  return ok
end
local keyword = PTX.keyword

local targets = ST.device_cache()
function PTX.target(dev)
  local t = targets[dev]
  if t == nil then
    t = false
    local kw = keyword(dev)
    if kw then
      local ok, prog = pcall(P.get, dev, recipe(kw))
      -- (a driver that cannot give the binary leaves the target unknown)
      local bin
      if ok then ok, bin = pcall(function() return prog.binary end) end
      t = ok and type(bin) == "string" and bin:match("%.target%s+(sm_%w+)") or false
    end
    targets[dev] = t
  end
  return t
end

function PTX.warp_keyword(dev, on)
  if not on or dev.type == "cpu" then return false end
  return keyword(dev)
end

return PTX
