#!/usr/bin/env bash
# Installs Centrifugo, the fan-out anchor of the on-sale burst in `make bench`
# (internal/tooling/bench/bench_centrifugo.go), with `go install` as
# $(go env GOPATH)/bin/centrifugo. Idempotent: does nothing when that binary is already
# the pinned version. The bench starts and stops its own instances.
set -euo pipefail

CENTRIFUGO_VERSION=v6.9.1
MODULE=github.com/centrifugal/centrifugo/v6

log() { echo "centrifugo: $*"; }

bin="$(go env GOPATH)/bin/centrifugo"
# A `go install` build prints v0.0.0 as its version; the module version is in its build info.
if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -q "^[[:space:]]*mod[[:space:]]*$MODULE[[:space:]]*$CENTRIFUGO_VERSION"; then
	log "$CENTRIFUGO_VERSION already installed ($bin)"
	exit 0
fi
log "installing $CENTRIFUGO_VERSION with go install (a few minutes the first time)"
go install "$MODULE@$CENTRIFUGO_VERSION"
log "installed $bin"
