#!/usr/bin/env bash
# Installs wrk (Debian's package), the independent HTTP client of the read-path section of
# `make bench` (internal/tooling/bench/bench_wrk.go). Idempotent: does nothing when wrk is
# on PATH. Without it (and without apt-get as root) the bench writes that the wrk rows were
# not measured.
set -euo pipefail
if command -v wrk >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "wrk.sh: wrk is missing and apt-get as root is not available (Debian: apt-get install -y wrk); the wrk rows will not be measured" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq wrk >/dev/null
echo "wrk.sh: installed $(wrk -v 2>&1 | head -1)"
