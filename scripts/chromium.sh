#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests (internal/app: the /demo page and the
# playground, offline); they skip without it.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "chromium.sh: /usr/bin/chromium is missing and apt-get as root is not available; the browser tests will skip" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
echo "chromium.sh: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
