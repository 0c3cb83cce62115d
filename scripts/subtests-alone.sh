#!/usr/bin/env bash
# Runs every subtest of the given packages on its own, one process each
# (-run '^TestX$/^Sub$'), to show that no subtest depends on what an earlier one left
# behind (state, clock). The names come from one verbose run of each package; the test
# binary is built once per package, with -race. Exits 1 if any subtest fails alone.
#
#   scripts/subtests-alone.sh ./internal/reconcile [./internal/booking ...]
#
# Needs the services the tests need (`make services`).
set -uo pipefail
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
for pkg in "$@"; do
	bin="$out/pkg.test"
	go test -race -c -o "$bin" "$pkg" || exit 1
	dir=$(go list -f '{{.Dir}}' "$pkg")
	names=$(cd "$dir" && "$bin" -test.v -test.count=1 -test.run . 2>&1 | sed -n 's/^=== RUN   \(.*\/.*\)$/\1/p' | sort -u)
	pass=0 fail=0
	for name in $names; do
		top=${name%%/*} sub=${name#*/}
		pattern="^${top}\$/^$(printf '%s' "$sub" | sed 's/[][().*+?^$|\\]/\\&/g')\$"
		if log=$(cd "$dir" && "$bin" -test.count=1 -test.run "$pattern" 2>&1); then
			pass=$((pass + 1))
			echo "PASS $name"
		else
			fail=$((fail + 1))
			echo "FAIL $name"
			echo "$log" | grep -v '^=== ' | head -20 | sed 's/^/    /'
		fi
	done
	echo "$pkg: $pass subtests pass alone, $fail fail"
	[ "$fail" = 0 ] || failed=1
done
exit "$failed"
