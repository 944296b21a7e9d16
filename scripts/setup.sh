#!/usr/bin/env bash
# Installs the Debian packages Lodestore builds, tests and benchmarks with.
# Idempotent: packages already installed are not touched, and apt is not even
# asked when nothing is missing, so a second run takes well under a second.
set -euo pipefail

pkgs=(
  build-essential pkg-config make git
  libuv1-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libssl-dev libexpat1-dev
  libcmocka-dev
  tzdata
  clang libclang-rt-14-dev clang-format
  valgrind
  restic
  jq curl openssl python3
)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#pkgs[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
