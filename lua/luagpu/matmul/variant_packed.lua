-- luagpu.matmul.variant_packed: matmul's "packed" variant (kernels/
-- matmul_common.cl, matmul_packed.cl): A and B copied into panels that each
-- work-item streams through with a TM x TN register tile and no barriers
-- (CPUs). The contract of variant_naive.lua.

local ST = require "luagpu.core.steps"
local B = require "luagpu.matmul.common"
local T = require "luagpu.matmul.params"

local ipairs = ipairs
local launch, int, need = B.launch, B.int, B.need
local PACK_GROUP = T.groups.pack

local V = {name = "packed", files = {"matmul_common.cl", "matmul_packed.cl"}, launchers = {}}

function V.check(p, d)
  for _, k in ipairs{"TM", "TN"} do d[k] = int(p, "packed", k) end
  d.VW = B.width(p, "packed", "VW")
  need(d.TN % d.VW == 0, "packed", "TN (%d) must be a multiple of VW (%d)", d.TN, d.VW)
  B.unrolled("packed", d)
  return {int(p, "packed", "lx"), int(p, "packed", "ly")}, 0
end

local round_up, ceil_div = ST.round_up, ST.ceil_div

function V.shape(pl, m, n, k, off)
  local d, lsz = pl.defines, pl.local_size
  d.VSC = (n % d.VW == 0 and off[3] % d.VW == 0) and 1 or 0
  local pm, pn = ceil_div(m, d.TM), ceil_div(n, d.TN)
  pl.launches = {
    pack_a = launch({round_up(k, PACK_GROUP), pm}, {PACK_GROUP, 1}),
    pack_b = launch({pn, round_up(k, PACK_GROUP)}, {1, PACK_GROUP}),
    main = launch({round_up(pn, lsz[1]), round_up(pm, lsz[2])}, lsz),
  }
  pl.scratch = {a_panels = pm * d.TM * k, b_panels = pn * d.TN * k}
end

-- A and B into panels (scratch), then the product of the panels.
function V.launchers.packed(pl, prog, c)
  local sc = B.scratch(pl, c)
  local Ap, Bp, L = sc["scratch " .. c.t .. " a_panels"], sc["scratch " .. c.t .. " b_panels"],
                    pl.launches
  return {{prog.pack_a(c.m, c.k, c.A, c.offA, Ap), L.pack_a},
          {prog.pack_b(c.k, c.n, c.B, c.offB, Bp), L.pack_b},
          {prog.matmul_packed(c.m, c.n, c.k, Ap, Bp, c.C, c.offC), L.main, {1, 2}},
          scratch = sc}
end

return V
