#!/bin/sh
# tools/globals.sh FILE...: the globals each Lua file reads or writes that
# are not Lua's own (a misspelt or missing local shows up here).
std=' require type ipairs pairs tostring tonumber getmetatable setmetatable error table math string io os debug next pcall xpcall rawget rawset rawlen rawequal select assert load loadfile dofile print collectgarbage package arg _VERSION _G utf8 coroutine warn '
for f in "$@"; do
  luac5.4 -l -p "$f" | sed -n 's/.*[GS]ETTABUP.*_ENV "\([A-Za-z_][A-Za-z0-9_]*\)".*/\1/p' | sort -u |
  while read -r g; do
    case "$std" in *" $g "*) ;; *) echo "$f: $g" ;; esac
  done
done
