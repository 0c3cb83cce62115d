#!/usr/bin/env bash
# A short coverage-guided fuzzing run of the API (part of `make test`); the seed corpora run
# in every plain `go test` too. FUZZTIME=2m for a longer run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
t="${FUZZTIME:-15s}"
for target in FuzzGraphQL FuzzHoldInput; do
	echo "fuzz: $target for $t"
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" ./internal/app
done
