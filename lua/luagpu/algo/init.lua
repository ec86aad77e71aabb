-- luagpu.algo: parallel primitives over device buffers (and anything that
-- converts to one, such as contiguous tensors).
--
--   algo.scan(b [, opts]) -> out, Event          prefix sums (and prod, min, max)
--   algo.scanner{type =, op =, neutral = [, acc =] [, map =]} -> s; s(b [, opts])
--   algo.sort(keys [, opts]) -> keys, Event      in place; opts.values move along
--   algo.argsort(keys [, opts]) -> positions, Event   1-based by default, stable
--   algo.copy_if(b, predicate [, opts]) -> out, count, Event
--   algo.nonzero(b [, opts]) -> positions, count, Event   1-based by default
--   algo.partition(b, predicate [, opts]) -> out, count, Event
--   algo.histogram(b [, opts]) -> counts, Event
--
-- Every call enqueues on one queue (opts.queue, else the default queue of
-- the input's device) after opts.wait and returns at once, except those
-- that return a count (they read it back). docs/API.md describes them all.
-- The parts live in algo/scan.lua, sort.lua, compact.lua and
-- histogram.lua (what they share in base.lua); their device settings in
-- algo.classes.

local B = require "luagpu.algo.base"
local scan = require "luagpu.algo.scan"
local sort = require "luagpu.algo.sort"
local compact = require "luagpu.algo.compact"
local histogram = require "luagpu.algo.histogram"

return {
  scan = scan.scan,
  scanner = scan.scanner,
  sort = sort.sort,
  argsort = sort.argsort,
  copy_if = compact.copy_if,
  nonzero = compact.nonzero,
  partition = compact.partition,
  histogram = histogram.histogram,
  classes = B.CLASSES,
  stats = B.stats,
}
