#!/bin/sh
# Runs every busted spec against the build in $1 (default build) and ends
# with one line "N passed, M failed"; exits non-zero on any failure.
# Spec files run as separate busted processes, as many at once as there are
# cores (LUAGPU_SPEC_JOBS overrides), largest first; each one's output is
# printed whole when it ends.
BUILD=${1:-build}
export LUAGPU_BUILD="$BUILD"
# keep the specs' program builds out of the user's cache (~/.cache/luagpu)
export XDG_CACHE_HOME="$(mktemp -d)"
logs=$(mktemp -d)
if [ -n "$ASAN" ]; then
  # The stock lua5.4 is not instrumented: preload the sanitizer runtimes.
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
jobs=${LUAGPU_SPEC_JOBS:-$(nproc 2>/dev/null || echo 2)}
export logs
ls -S spec/*_spec.lua | xargs -P "$jobs" -I{} sh -c '
  log="$logs/$(basename {} .lua).log"
  lua5.4 /usr/bin/busted --lpath="lua/?.lua;lua/?/init.lua;spec/?.lua" \
    --cpath="$LUAGPU_BUILD/?.so" -o utfTerminal {} >"$log" 2>&1
  echo "exit $?" >>"$log"
  echo "== {}"; cat "$log"'
passed=0
failed=0
for log in "$logs"/*.log; do
  name=$(basename "$log" .log)
  summary=$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' "$log" | tail -1)
  if [ -z "$summary" ]; then          # it died before busted could count
    failed=$((failed + 1))
    echo "$name: no result"
    continue
  fi
  p=$(echo "$summary" | sed -E 's/^([0-9]+) success.*/\1/')
  f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failures? .*/\1/')
  e=$(echo "$summary" | sed -E 's/.* ([0-9]+) errors? .*/\1/')
  passed=$((passed + p))
  failed=$((failed + f + e))
  if [ $((f + e)) -eq 0 ] && ! grep -q '^exit 0$' "$log"; then
    failed=$((failed + 1))
    echo "$name: busted exited non-zero"
  fi
done
rm -rf "$logs" "$XDG_CACHE_HOME"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
