#!/bin/sh
# Runs every busted spec against the build in $1 (default build) and ends
# with one line "N passed, M failed"; exits non-zero on any failure.
BUILD=${1:-build}
export LUAGPU_BUILD="$BUILD"
# keep the specs' program builds out of the user's cache (~/.cache/luagpu)
export XDG_CACHE_HOME="$(mktemp -d)"
log=$(mktemp)
status=0
if [ -n "$ASAN" ]; then
  # The stock lua5.4 is not instrumented: preload the sanitizer runtimes.
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
lua5.4 /usr/bin/busted --lpath='lua/?.lua;lua/?/init.lua;spec/?.lua' \
  --cpath="$BUILD/?.so" -o utfTerminal spec 2>&1 | tee "$log" || status=1
summary=$(grep -E '^[0-9]+ successes? / [0-9]+ failures? / [0-9]+ errors?' "$log" | tail -1)
rm -f "$log"
rm -rf "$XDG_CACHE_HOME"
if [ -z "$summary" ]; then
  echo "0 passed, 1 failed"
  exit 1
fi
passed=$(echo "$summary" | sed -E 's/^([0-9]+) success.*/\1/')
failures=$(echo "$summary" | sed -E 's/.* ([0-9]+) failures? .*/\1/')
errors=$(echo "$summary" | sed -E 's/.* ([0-9]+) errors? .*/\1/')
failed=$((failures + errors))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
