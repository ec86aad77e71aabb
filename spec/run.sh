#!/bin/sh
# Runs every busted spec against the build in $1 (default build) and ends
# with one line "N passed, M failed"; exits non-zero on any failure.
#
# Spec files run as separate busted processes, as many at once as there are
# cores (LUAGPU_SPEC_JOBS overrides), the longest first: each file's time is
# kept in $BUILD/spec-times and read back by the next run (a file not timed
# yet goes first, larger files before smaller). A line is printed as each
# file ends ("[3/47] spec/x_spec.lua 12.3 s, 26 passed"), with the file's
# whole output when it failed, and each failure once more before the
# closing count. LUAGPU_SPECS="spec/a_spec.lua ..." runs
# those files only.
#
# The specs' program builds go to build/spec-cache (luagpu's cache and
# PoCL's, both keyed by content; LUAGPU_SPEC_CACHE overrides), not to the
# user's ~/.cache, and stay there: a second run loads what the first
# compiled, and the sanitized run (build/asan) loads what the plain one
# compiled. Specs that need an empty cache make their own folder. The
# folder is emptied when it grows past 1 GiB (random test sources add
# entries run after run).
BUILD=${1:-build}
export LUAGPU_BUILD="$BUILD"
cache=${LUAGPU_SPEC_CACHE:-build/spec-cache}
mkdir -p "$cache"
export XDG_CACHE_HOME="$(cd "$cache" && pwd)"
if [ "$(du -sm "$XDG_CACHE_HOME" | cut -f1)" -gt 1024 ]; then
  rm -rf "$XDG_CACHE_HOME" && mkdir -p "$XDG_CACHE_HOME"
fi
times="$BUILD/spec-times"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
if [ -n "$ASAN" ]; then
  # The stock lua5.4 is not instrumented: preload the sanitizer runtimes.
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
jobs=${LUAGPU_SPEC_JOBS:-$(nproc 2>/dev/null || echo 2)}

# The order: files without a time (largest first), then the others by their
# last time, longest first.
for f in ${LUAGPU_SPECS:-spec/*_spec.lua}; do
  t=$(awk -v f="$f" '$2 == f { t = $1 } END { print t }' "$times" 2>/dev/null)
  if [ -n "$t" ]; then echo "1 $t $f"; else echo "0 $(wc -c <"$f") $f"; fi
done | sort -k1,1n -k2,2gr | awk '{ print $3 }' >"$logs/order"
total=$(wc -l <"$logs/order")

now() { date +%s.%N; }
export logs total
start=$(now)
xargs -P "$jobs" -I{} sh -c '
  f={}
  log="$logs/$(basename "$f" .lua).log"
  t0=$(date +%s.%N)
  lua5.4 /usr/bin/busted --lpath="lua/?.lua;lua/?/init.lua;spec/?.lua" \
    --cpath="$LUAGPU_BUILD/?.so" -o utfTerminal "$f" >"$log" 2>&1
  code=$?
  t=$(awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN { printf \"%.1f\", b - a }")
  echo "exit $code" >>"$log"
  s=$(grep -E "^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?" "$log" | tail -1)
  p=$(echo "$s" | sed -nE "s/^([0-9]+) success.*/\1/p")
  bad=$(echo "$s" | sed -nE "s/.* ([0-9]+) failures? \/ ([0-9]+) errors?.*/\1 \2/p")
  pend=$(echo "$s" | sed -nE "s/.* ([0-9]+) pending.*/\1/p")
  if [ -z "$s" ]; then what="no result (exit $code)"
  else
    what="${p} passed"
    set -- ${bad:-0 0}
    [ "$(($1 + $2))" -gt 0 ] && what="$what, $1 failed, $2 errors"
    [ -n "$pend" ] && [ "$pend" -gt 0 ] && what="$what, $pend pending"
    [ "$(($1 + $2))" -eq 0 ] && [ "$code" -ne 0 ] && what="$what, busted exited $code"
  fi
  # one line per file as it ends, numbered in the order they end
  {
    command -v flock >/dev/null && flock 9
    echo "$t $f" >>"$logs/times"
    n=$(wc -l <"$logs/times")
    echo "[$n/$total] $f $t s, $what"
    if [ -z "$s" ] || [ "$code" -ne 0 ]; then cat "$log"; fi
  } 9>>"$logs/lock"
' <"$logs/order"

# keep this run's times, and the old ones of files that did not run
{ cat "$logs/times"; [ -f "$times" ] && cat "$times"; } |
  while read -r t f; do [ -f "$f" ] && echo "$t $f"; done |
  awk '!seen[$2]++' >"$logs/times.new" && mv "$logs/times.new" "$times"

passed=0
failed=0
for log in "$logs"/*.log; do
  summary=$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' "$log" | tail -1)
  if [ -z "$summary" ]; then          # it died before busted could count
    failed=$((failed + 1))
    continue
  fi
  p=$(echo "$summary" | sed -E 's/^([0-9]+) success.*/\1/')
  f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failures? .*/\1/')
  e=$(echo "$summary" | sed -E 's/.* ([0-9]+) errors? .*/\1/')
  passed=$((passed + p))
  failed=$((failed + f + e))
  if [ $((f + e)) -eq 0 ] && ! grep -q '^exit 0$' "$log"; then
    failed=$((failed + 1))
  fi
done
# Each failing file's failures again, last, where a log's tail shows them
# (CI keeps only the end of what a run printed).
for log in "$logs"/*.log; do
  grep -q '^exit 0$' "$log" && continue
  echo "--- failed: spec/$(basename "$log" .log).lua"
  if grep -qE '^(Failure|Error) ' "$log"; then
    awk '/^(Failure|Error) /{ n = 12 } n > 0 { print; n-- }' "$log" | head -60
  else
    tail -20 "$log"
  fi
done
awk -v a="$start" -v b="$(now)" 'BEGIN { printf "all spec files in %.1f s\n", b - a }'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
