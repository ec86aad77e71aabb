-- luagpu.algo: parallel primitives over device buffers (and anything that
-- converts to one, such as contiguous tensors).
--
--   algo.scan(b [, opts]) -> out, Event          prefix sums (and prod, min, max)
--   algo.scanner{type =, op =, neutral = [, acc =] [, map =]} -> s; s(b [, opts])
--   algo.sort(keys [, opts]) -> keys, Event      in place; opts.values move along
--   algo.argsort(keys [, opts]) -> indices, Event   0-based, stable
--   algo.copy_if(b, predicate [, opts]) -> out, count
--   algo.nonzero(b [, opts]) -> indices, count   0-based
--   algo.partition(b, predicate [, opts]) -> out, count
--   algo.histogram(b [, opts]) -> counts, Event
--
-- Every call enqueues on one queue (opts.queue, else the default queue of
-- the input's device) after opts.wait and returns at once, except those
-- that return a count (they read it back). docs/API.md describes them all.
-- The parts live in algo_scan.lua, algo_sort.lua, algo_compact.lua and
-- algo_histogram.lua; their device settings in algo.classes.

local B = require "luagpu.algo_base"
local scan = require "luagpu.algo_scan"

local M = {
  scan = scan.scan,
  scanner = scan.scanner,
  classes = B.CLASSES,
  stats = B.stats,
}

for _, part in ipairs {"luagpu.algo_sort", "luagpu.algo_compact", "luagpu.algo_histogram"} do
  local ok, p = pcall(require, part)
  if ok then
    for k, v in pairs(p) do M[k] = v end
  elseif not tostring(p):find("module '" .. part .. "' not found", 1, true) then
    error(p, 0)
  end
end

return M
