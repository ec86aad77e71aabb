-- examples/algo_particles.lua: luagpu.algo's primitives together, on
-- particles in the unit square.
--
--   build/luagpu examples/algo_particles.lua [N [CELLS]]
--
-- 1. compact: the indices of the particles inside a disc (algo.nonzero of
--    a mask a kernel computes), then their positions gathered;
-- 2. bin: each kept particle's cell on a CELLS x CELLS grid, and the
--    particles sorted by cell (algo.sort with the indices as values);
-- 3. count: a histogram of the cells, and its exclusive scan: where each
--    cell's particles start in the sorted list (what a neighbour search
--    reads).
-- Every step is checked against plain Lua; it prints "particles: ok".
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"

local n = tonumber(arg and arg[1]) or 200000
local cells = tonumber(arg and arg[2]) or 16
local dev = gpu.device()

-- positions: multiples of 1/1024, so that every test below is exact
local px, py = {}, {}
for i = 1, n do px[i], py[i] = math.random(0, 1023) / 1024, math.random(0, 1023) / 1024 end
local x, y = dev:buffer("float", n), dev:buffer("float", n)
x:write(px):wait()
y:write(py):wait()

local prog = dev:build[[
__kernel void inside(__global const float *x, __global const float *y, __global uchar *mask) {
  size_t i = get_global_id(0);
  float dx = x[i] - 0.5f, dy = y[i] - 0.5f;
  mask[i] = dx * dx + dy * dy < 0.16f;              /* the disc of radius 0.4 */
}
__kernel void cell_of(__global const long *idx, __global const float *x,
                      __global const float *y, int cells, __global int *cell) {
  size_t i = get_global_id(0);
  long p = idx[i] - 1;                                /* positions are 1-based */
  cell[i] = (int)(y[p] * cells) * cells + (int)(x[p] * cells);
}]]

-- 1. compact
local mask = dev:buffer("uchar", n)
prog.inside(x, y, mask):run({n})
local idx, kept = algo.nonzero(mask)                 -- long, 1-based positions
print(("%d of %d particles inside the disc"):format(kept, n))

-- 2. bin and sort by cell (stable: within a cell, by index)
local cell = dev:buffer("int", kept)
prog.cell_of(idx, x, y, cells, cell):run({kept})
local sorted_cells = dev:buffer("int", kept)
cell:copy_to(sorted_cells)
algo.sort(sorted_cells, {values = idx})

-- 3. count per cell and where each cell starts
local counts = algo.histogram(cell, {bins = cells * cells})
local starts = algo.scan(counts, {exclusive = true})

-- checks, in plain Lua
local want_idx, want_cell, want_count = {}, {}, {}
for c = 1, cells * cells do want_count[c] = 0 end
for i = 1, n do
  local dx, dy = px[i] - 0.5, py[i] - 0.5
  if dx * dx + dy * dy < 0.16 then
    local c = math.floor(py[i] * cells) * cells + math.floor(px[i] * cells)
    want_idx[#want_idx + 1], want_cell[#want_cell + 1] = i, c
    want_count[c + 1] = want_count[c + 1] + 1
  end
end
assert(kept == #want_idx, "count of kept particles")
local order = {}
for k = 1, kept do order[k] = k end
table.sort(order, function(a, b)
  if want_cell[a] ~= want_cell[b] then return want_cell[a] < want_cell[b] end
  return a < b
end)
local got_idx, got_cells = idx:get(), sorted_cells:get()
local got_counts, got_starts = counts:get(), starts:get()
for k = 1, kept do
  assert(got_idx[k] == want_idx[order[k]], "sorted index " .. k)
  assert(got_cells[k] == want_cell[order[k]], "sorted cell " .. k)
end
local start = 0
for c = 1, cells * cells do
  assert(got_counts[c] == want_count[c], "count of cell " .. c - 1)
  assert(got_starts[c] == start, "start of cell " .. c - 1)
  start = start + want_count[c]
end
print(("cell 0 holds %d particles, the busiest %d"):format(got_counts[1],
      math.max(table.unpack(want_count))))
print("particles: ok")
