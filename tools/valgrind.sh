#!/bin/sh
# valgrind memcheck over a representative subset of luagpu: the C embedding
# checks and example, the specs of the core objects (buffers, views, events,
# queues, lifetime, host arrays, .npy) and of kernels, and a short fuzz run. Each runs in its own
# process; a report of an invalid access, of uninitialised memory or of a
# definite leak that tools/valgrind.supp does not suppress fails it.
#   sh tools/valgrind.sh [build]      (make valgrind)
# Logs go to BUILD/valgrind/NAME.log. Ends with "N passed, M failed".
set -f   # the patterns below are for Lua, not the shell
BUILD=${1:-build}
LOGS="$BUILD/valgrind"
mkdir -p "$LOGS"
export LUAGPU_BUILD="$BUILD"
VG="valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
  --errors-for-leak-kinds=definite --suppressions=tools/valgrind.supp --num-callers=40 \
  --keep-debuginfo=yes \
  --gen-suppressions=all"
# The luagpu program, not lua5.4 with the module: it keeps the module and the
# OpenCL loader loaded until the process ends, so what they hold is not
# reported lost when lua_close unloads them, and stacks keep their names.
BUSTED="$BUILD/luagpu /usr/bin/busted --lpath=lua/?.lua;lua/?/init.lua;spec/?.lua --cpath=$BUILD/?.so -o TAP"
LUA="$BUILD/luagpu"
passed=0
failed=0

check() {
  name=$1
  shift
  start=$(date +%s)
  $VG --log-file="$LOGS/$name.log" "$@" > "$LOGS/$name.out" 2>&1
  status=$?
  errors=$(grep -a "ERROR SUMMARY" "$LOGS/$name.log" | sed -E 's/.*ERROR SUMMARY: ([0-9]+) errors.*/\1/')
  lost=$(grep -a "definitely lost:" "$LOGS/$name.log" | sed -E 's/.*definitely lost: ([0-9,]+) bytes.*/\1/')
  secs=$(( $(date +%s) - start ))
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
    verdict=ok
  else
    failed=$((failed + 1))
    verdict="FAILED (exit $status; see $LOGS/$name.log and .out)"
  fi
  echo "valgrind: $name: ${errors:-?} errors, definitely lost ${lost:-0} bytes (after suppressions), ${secs} s: $verdict"
}

check embed_check "$BUILD/embed_check"
check embed_demo "$BUILD/embed_demo"
check specs_core $BUSTED spec/array_spec.lua spec/npy_spec.lua spec/buffer_spec.lua \
  spec/event_spec.lua spec/queue_spec.lua spec/lifetime_spec.lua
check specs_kernels $BUSTED spec/kernel_spec.lua
check fuzz $LUA bench/fuzz.lua 1000 1
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
