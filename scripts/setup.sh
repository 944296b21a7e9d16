#!/usr/bin/env bash
# Installs the Debian 12 packages Lodestore builds, tests and benchmarks with, then
# checks what Debian does not provide (the Go toolchain, for the local control plane).
# Idempotent: packages already installed are not touched, and apt is not even
# asked when nothing is missing, so a second run takes well under a second.
#
# Adding a package is one word in the list below. A library the C code links also
# takes its pkg-config name in the Makefile's PKGS, which stops the build with one
# line naming it when it is missing.
set -euo pipefail

pkgs=(
  build-essential pkg-config make git
  libuv1-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libssl-dev libexpat1-dev libzstd-dev
  libcmocka-dev libmicrohttpd-dev
  tzdata
  clang libclang-rt-14-dev clang-format
  valgrind
  restic
  jq curl openssl python3 python3-yaml ca-certificates
  chromium
  buildah debootstrap
  containerd runc containernetworking-plugins
)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

install_packages() {
  local missing=() p
  for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
      missing+=("$p")
    fi
  done
  # The page of lode ui is built with Node.js and npm. Debian 12's nodejs and npm
  # are new enough; a machine that already has both (from Debian or elsewhere, such
  # as NodeSource, whose nodejs carries npm) keeps what it has, since Debian's npm
  # package would conflict with such a nodejs.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    missing+=(nodejs npm)
  fi
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all ${#pkgs[@]} packages present"
    return 0
  fi
  echo "setup: installing ${missing[*]}"
  local sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "setup: packages installed"
}

# The local control plane (tests/env, the chart test, `make demo`, the end-to-end
# phase of `make test`) is built from Go modules whose go.mod files name the least
# Go release they build with; Debian 12's golang (1.19) is older, so Go comes from
# go.dev, unpacked in /usr/local/go. Building and unit-testing lode needs no Go: a
# missing or old Go is reported, with what it stops, and setup still succeeds.
go_least() {
  local f v least=0.0.0
  for f in "$here"/tests/*/tools/*/go.mod; do
    v=$(awk '$1 == "go" { print $2; exit }' "$f")
    [ -n "$v" ] || continue
    if [ "$(printf '%s\n%s\n' "$least" "$v" | sort -V | tail -n 1)" = "$v" ]; then least=$v; fi
  done
  echo "$least"
}

check_go() {
  local least go have
  least=$(go_least)
  go=$(command -v go || true)
  if [ -z "$go" ] && [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go; fi
  if [ -z "$go" ]; then
    echo "setup: WARNING: Go $least or newer is not installed (not on PATH, not in /usr/local/go)." >&2
    echo "setup:   lode and its unit tests build without it; the local control plane does not" >&2
    echo "setup:   (make demo, the end-to-end phase of make test). Install it from" >&2
    echo "setup:   https://go.dev/dl/ into /usr/local/go; LODE_E2E=0 make test runs the rest." >&2
    return 0
  fi
  have=$("$go" env GOVERSION 2>/dev/null || true)
  have=${have#go}
  have=${have%%[!0-9.]*}
  if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$least" "$have" | sort -V | head -n 1)" != "$least" ]; then
    echo "setup: WARNING: $go is Go ${have:-of unknown version}; the local control plane needs Go $least" >&2
    echo "setup:   or newer (https://go.dev/dl/, into /usr/local/go). make demo and the end-to-end" >&2
    echo "setup:   phase of make test will fail until then; LODE_E2E=0 make test runs the rest." >&2
    return 0
  fi
  echo "setup: Go $have at $go (the local control plane needs $least or newer)"
}

# The page of `lode ui` (web/) is built with Node.js and npm as the machine has them;
# web/package.json's engines field names the least Node.js. Without them lode is
# built without the page (lode ui says so) and the page's tests cannot run; that is
# reported, with what it stops, and setup still succeeds. The browser tests drive
# Debian's chromium (installed above); nothing downloads a browser.
check_node() {
  local least have
  least=$(sed -nE 's/.*"node": ">=([0-9.]+)".*/\1/p' "$here/web/package.json")
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "setup: WARNING: Node.js $least or newer with npm is still not installed: lode is" >&2
    echo "setup:   built without the page of lode ui, and the page's tests (make test) fail." >&2
    echo "setup:   Debian 12's nodejs and npm packages are new enough." >&2
    return 0
  fi
  have=$(node -p 'process.versions.node')
  if [ "$(printf '%s\n%s\n' "$least" "$have" | sort -V | head -n 1)" != "$least" ]; then
    echo "setup: WARNING: Node.js $have is older than the $least the page of lode ui needs;" >&2
    echo "setup:   lode is built without the page until then." >&2
    return 0
  fi
  echo "setup: Node.js $have and npm $(npm --version) (the page needs Node.js $least or newer)"
}

install_packages
check_go
check_node
