#!/usr/bin/env bash
# Installs what moonflow needs from Debian packages; idempotent, and silent when all is present.
set -euo pipefail
# python3 (standard library only) drives the REPL through a pseudo-terminal in tests/sh/repl_pty.py
pkgs=(cmake g++ make pkg-config libluajit-5.1-dev luajit libopenblas-openmp-dev catch2 libedit-dev
      dataset-fashion-mnist python3 ncurses-base libsleef-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
