-- spec/mpi_support.lua: what the scripts that specs run under mpirun
-- (spec/mpi_check.lua, spec/mpi_shard_check.lua) share. Each loads it from
-- its own folder:
--   local check, raises, checked = dofile(HERE .. "mpi_support.lua").checks(rank)
--   check(cond, fmt, ...)    raises "rank R: " .. fmt:format(...) at the
--                            caller's line unless cond; counts one check
--   raises(pattern, f, ...)  checks that f(...) raises an error whose text
--                            holds pattern (plain text)
--   checked()                how many checks passed so far
local M = {}

function M.checks(rank)
  local count = 0
  -- raises fmt's message, naming the rank, level levels above fail
  local function fail(level, fmt, ...)
    error(("rank %d: " .. fmt):format(rank, ...), level + 1)
  end
  local function check(cond, fmt, ...)
    if not cond then fail(2, fmt, ...) end
    count = count + 1
  end
  local function raises(pattern, f, ...)
    local ok, err = pcall(f, ...)
    if ok or not tostring(err):find(pattern, 1, true) then
      fail(2, "expected an error with %q, got %s", pattern, tostring(err))
    end
    count = count + 1
  end
  return check, raises, function() return count end
end

return M
