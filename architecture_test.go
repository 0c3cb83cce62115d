package seatflow_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The package map of docs/ARCHITECTURE.md is the one statement of the import rules:
// TestPackageMap reads it and holds the code to it, so the document and the code cannot
// disagree. Its format is written above the table in that file.
const architectureDoc = "docs/ARCHITECTURE.md"

// Column headers of the package map the test reads.
const (
	colPackage     = "package"
	colImports     = "imports (project packages)"
	colTestImports = "its tests also import"
)

// mapRow is one row of the package map: the packages it names and the project packages
// they import, in the table's notation.
type mapRow struct {
	line        int
	pkg         string   // a module-relative path, `seatflow` for the root, or a tree `ent/...`
	imports     []string // same notation; empty means "nothing"
	testImports []string
}

// TestPackageMap fails on a project import the package map does not list (or a listed one
// no code makes), on a project package missing from the map, and on a row naming a
// package that does not exist.
func TestPackageMap(t *testing.T) {
	rows, err := readPackageMap(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	module, pkgs := listPackages(t)
	for _, msg := range checkPackageMap(rows, module, pkgs) {
		t.Error(msg)
	}
}

// goPackage is the part of `go list -json` the check reads.
type goPackage struct {
	ImportPath   string
	Dir          string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// listPackages returns the module path and every package of the module as go list sees
// it (build constraints of this platform applied). It runs the go command rather than
// golang.org/x/tools/go/packages, which would run the same command behind a dependency.
func listPackages(t *testing.T) (string, []goPackage) {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	mod, err := exec.Command(gocmd, "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	out, err := exec.Command(gocmd, "list", "-json=ImportPath,Dir,Imports,TestImports,XTestImports", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("read go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return strings.TrimSpace(string(mod)), pkgs
}

// readPackageMap parses the table under "## Package map" in the file at path.
func readPackageMap(path string) ([]mapRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		rows    []mapRow
		inMap   bool
		columns map[string]int
		n       int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			if inMap {
				return rows, nil
			}
			inMap = line == "## Package map"
			continue
		case !inMap || !strings.HasPrefix(line, "|"):
			continue
		}
		cells := splitRow(line)
		if columns == nil {
			columns = map[string]int{}
			for i, c := range cells {
				columns[c] = i
			}
			for _, c := range []string{colPackage, colImports, colTestImports} {
				if _, ok := columns[c]; !ok {
					return nil, fmt.Errorf("%s:%d: the package map has no column %q", path, n, c)
				}
			}
			continue
		}
		if strings.Trim(line, "|- ") == "" {
			continue // the delimiter row
		}
		if len(cells) != len(columns) {
			return nil, fmt.Errorf("%s:%d: %d cells, the header has %d", path, n, len(cells), len(columns))
		}
		pkg, err := packageList(cells[columns[colPackage]])
		if err != nil || len(pkg) != 1 {
			return nil, fmt.Errorf("%s:%d: the package cell must be one `path`: %q", path, n, cells[columns[colPackage]])
		}
		row := mapRow{line: n, pkg: pkg[0]}
		if row.imports, err = packageList(cells[columns[colImports]]); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if row.testImports, err = packageList(cells[columns[colTestImports]]); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no table under \"## Package map\"", path)
	}
	return rows, nil
}

// splitRow returns the trimmed cells of a markdown table row.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	for c := range strings.SplitSeq(line, "|") {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

// packageList reads a cell that is either "nothing" or `a`, `b`, … (code spans separated
// by commas); anything else is refused, so a note cannot pass for a rule.
func packageList(cell string) ([]string, error) {
	if cell == "nothing" {
		return nil, nil
	}
	var list []string
	for item := range strings.SplitSeq(cell, ",") {
		item = strings.TrimSpace(item)
		p, ok := strings.CutPrefix(item, "`")
		if p, ok2 := strings.CutSuffix(p, "`"); ok && ok2 && p != "" && !strings.ContainsAny(p, "` ") {
			if slices.Contains(list, p) {
				return nil, fmt.Errorf("%s is listed twice", item)
			}
			list = append(list, p)
			continue
		}
		return nil, fmt.Errorf("not `nothing` nor a list of `package` paths: %q", cell)
	}
	return list, nil
}

// checkPackageMap returns one message per disagreement between rows and pkgs.
func checkPackageMap(rows []mapRow, module string, pkgs []goPackage) []string {
	var msgs []string
	fail := func(format string, args ...any) { msgs = append(msgs, fmt.Sprintf(format, args...)) }

	// rel is an import path in the table's notation, or "" outside the module.
	rel := func(path string) string {
		switch {
		case path == module:
			return module
		case strings.HasPrefix(path, module+"/"):
			return strings.TrimPrefix(path, module+"/")
		}
		return ""
	}
	var all []string
	for _, p := range pkgs {
		all = append(all, rel(p.ImportPath))
	}
	exists := func(entry string) bool {
		return slices.ContainsFunc(all, func(p string) bool { return matches(entry, p) })
	}
	for _, r := range rows {
		for _, e := range append(append([]string{r.pkg}, r.imports...), r.testImports...) {
			if !exists(e) {
				fail("%s:%d: `%s` names no package of the module", architectureDoc, r.line, e)
			}
		}
	}

	// Each package belongs to exactly one row; a row's imports are the union of its
	// packages' (a tree's imports of itself left out).
	type got struct{ imports, testImports []string }
	byRow := make([]got, len(rows))
	for _, p := range pkgs {
		path := rel(p.ImportPath)
		var in []int
		for i, r := range rows {
			if matches(r.pkg, path) {
				in = append(in, i)
			}
		}
		if len(in) != 1 {
			if len(in) == 0 {
				fail("%s: package `%s` is missing from the package map", architectureDoc, path)
			} else {
				fail("%s: package `%s` is in %d rows of the package map", architectureDoc, path, len(in))
			}
			continue
		}
		r := rows[in[0]]
		own := func(dep string) bool { return dep == "" || matches(r.pkg, dep) }
		for _, imp := range p.Imports {
			if dep := rel(imp); !own(dep) {
				byRow[in[0]].imports = append(byRow[in[0]].imports, dep)
			}
		}
		for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
			if dep := rel(imp); !own(dep) && dep != path {
				byRow[in[0]].testImports = append(byRow[in[0]].testImports, dep)
			}
		}
	}
	// A test's import is "also" when neither the row's code imports it nor its
	// imports column covers it (`ent/...` covers a test's `ent/movie`).
	for i, r := range rows {
		byRow[i].testImports = slices.DeleteFunc(byRow[i].testImports, func(dep string) bool {
			return slices.Contains(byRow[i].imports, dep) ||
				slices.ContainsFunc(r.imports, func(e string) bool { return matches(e, dep) })
		})
	}
	for i, r := range rows {
		compare := func(who, column string, listed, actual []string) {
			for _, dep := range actual {
				if !slices.ContainsFunc(listed, func(e string) bool { return matches(e, dep) }) {
					fail("%s:%d: %s import `%s`, which the %q column does not list", architectureDoc, r.line, who, dep, column)
				}
			}
			for _, e := range listed {
				if !slices.ContainsFunc(actual, func(dep string) bool { return matches(e, dep) }) {
					fail("%s:%d: the %q column lists `%s`, which %s do not import", architectureDoc, r.line, column, e, who)
				}
			}
		}
		compare("the files of `"+r.pkg+"`", colImports, r.imports, byRow[i].imports)
		compare("the tests of `"+r.pkg+"`", colTestImports, r.testImports, byRow[i].testImports)
	}
	return msgs
}

// matches reports whether the table entry e (a path, or a tree `dir/...`) names the
// package path.
func matches(e, path string) bool {
	if dir, ok := strings.CutSuffix(e, "/..."); ok {
		return path == dir || strings.HasPrefix(path, dir+"/")
	}
	return path == e
}

// nowHelper is a method that reads a clock option and falls back on the system clock: the
// rule seatflow.ClockFunc (clock.go) states once.
var nowHelper = regexp.MustCompile(`(?m)^func \([^)]*\) now\(\) time\.Time`)

// TestClockRuleWrittenOnce fails on a `now()` helper outside clock.go: a service's clock
// is a seatflow.ClockFunc option (nil: the system clock), read with its Now method.
func TestClockRuleWrittenOnce(t *testing.T) {
	for _, msg := range nowHelpers(t, ".") {
		t.Error(msg)
	}
}

func nowHelpers(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, loc := range nowHelper.FindAllIndex(b, -1) {
			line := 1 + bytes.Count(b[:loc[0]], []byte("\n"))
			found = append(found, fmt.Sprintf("%s:%d: a now() helper: give the type a seatflow.ClockFunc option and call its Now (clock.go)", path, line))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestClockRuleCheckFindsAHelper plants a helper and expects the check to name it.
func TestClockRuleCheckFindsAHelper(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nimport \"time\"\n\ntype S struct{ Now func() time.Time }\n\nfunc (s *S) now() time.Time {\n\tif s.Now != nil {\n\t\treturn s.Now()\n\t}\n\treturn time.Now()\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := nowHelpers(t, dir)
	if len(got) != 1 || !strings.Contains(got[0], "p.go:7:") {
		t.Fatalf("the planted helper at p.go:7 was not reported alone: %q", got)
	}
}
