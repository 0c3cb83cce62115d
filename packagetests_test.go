package seatflow_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// testedLines is the size from which a package must have tests of its own: more non-blank
// lines of hand-written Go (test files aside) than this, and the rules it owns are to be
// shown beside it, not only through internal/app.
const testedLines = 200

// generatedTrees are not held to it: ent's and gqlgen's generated code (graph's
// hand-written resolvers are one service call each, exercised through internal/app).
var generatedTrees = []string{"ent", "graph"}

// untested are the packages over testedLines allowed no test file of their own, each
// with the reason. A package that gets tests, or shrinks under testedLines, must leave
// the list (the test says so).
var untested = map[string]string{
	"cmd/seatflow-reliability": "a command that formats the fault suite's JSON results into docs/RELIABILITY.md; " +
		"the suite it reports on (internal/tooling/faults) has the tests, and `make faults` runs this end to end",
	"internal/tooling/loadtest": "the load generator that cmd/seatflow-bench runs against a live server; " +
		"its figures are checked by the bench run itself (docs/BENCHMARKS.md), not by assertions",
	"internal/tooling/testenv": "the test helpers themselves: every package test that opens a database, " +
		"a Redis prefix or a clock through them exercises them",
}

// TestPackagesHaveTests fails on a package of the module with more than testedLines
// non-blank lines of hand-written Go and no _test.go file in its directory, unless
// untested names it with its reason; and on an entry of untested that no longer applies.
func TestPackagesHaveTests(t *testing.T) {
	_, pkgs := listPackages(t)
	for _, msg := range checkPackageTests(t, pkgs) {
		t.Error(msg)
	}
}

// checkPackageTests returns what TestPackagesHaveTests reports for pkgs (listPackages,
// architecture_test.go).
func checkPackageTests(t *testing.T, pkgs []goPackage) []string {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if generated(rel) {
			continue
		}
		lines, tests := packageFiles(t, p.Dir)
		reason, excused := untested[rel]
		seen[rel] = true
		switch {
		case excused && tests:
			msgs = append(msgs, rel+" has tests now: take it out of untested in packagetests_test.go")
		case excused && lines <= testedLines:
			msgs = append(msgs, rel+" has "+itoa(lines)+" lines, not over "+itoa(testedLines)+": take it out of untested")
		case excused && reason == "":
			msgs = append(msgs, rel+" is in untested without a reason")
		case !excused && !tests && lines > testedLines:
			msgs = append(msgs, rel+" has "+itoa(lines)+" non-blank lines of Go and no _test.go file: test its rules "+
				"beside it (or, for a thin command or a tool, name it in untested in packagetests_test.go with the reason)")
		}
	}
	for rel := range untested {
		if !seen[rel] {
			msgs = append(msgs, "untested names "+rel+", which is not a package of the module")
		}
	}
	return msgs
}

// generatedFile is Go's mark of a generated file (go help generate).
var generatedFile = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func generated(rel string) bool {
	for _, g := range generatedTrees {
		if rel == g || strings.HasPrefix(rel, g+"/") {
			return true
		}
	}
	return false
}

// packageFiles counts the non-blank lines of the hand-written Go files of dir (every build
// constraint's; files marked "Code generated" are not counted) and says whether it has a
// _test.go file.
func packageFiles(t *testing.T, dir string) (lines int, tests bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		if strings.HasSuffix(name, "_test.go") {
			tests = true
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if generatedFile.Match(b) {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) != "" {
				lines++
			}
		}
	}
	return lines, tests
}

func itoa(n int) string { return strconv.Itoa(n) }
