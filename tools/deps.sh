#!/bin/sh
# Installs the Debian packages named as arguments that dpkg does not show
# installed, with apt-get (through sudo when not root).
missing=""
for p in "$@"; do
  dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "luagpu: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || exit 1
$SUDO apt-get install -y -qq $missing || exit 1
