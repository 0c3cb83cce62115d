package seatflow_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// codeLiteral is the shape of a string literal that may be an error code.
var codeLiteral = regexp.MustCompile(`"[A-Z][A-Z_]{3,}"`)

// codeLiteralExceptions are the code-shaped literals outside error.go that are not a
// client's code, by file: a word of another protocol that happens to be spelled as one.
var codeLiteralExceptions = map[string][]string{
	// hold.lua's reply for a hold the queue does not admit, read before it becomes the code.
	"internal/seats/store.go": {`"NOT_ADMITTED"`},
}

// TestErrorCodesWrittenOnce: every code a client may see as extensions.code (the E*
// constants of error.go, the domain's and the transports') is spelled in error.go only;
// everywhere else names the constant, so a code is renamed or looked up in one place.
// Generated code (ent, gqlgen) and tests are left out.
func TestErrorCodesWrittenOnce(t *testing.T) {
	codes := errorCodes(t)
	if len(codes) < 20 {
		t.Fatalf("read %d codes from error.go; the table has more", len(codes))
	}
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	for _, path := range strings.Fields(string(out)) {
		if path == "error.go" || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "ent/") ||
			strings.HasSuffix(path, "generated.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, lit := range codeLiteral.FindAllString(line, -1) {
				v, _ := strconv.Unquote(lit)
				if codes[v] != "" && !slices.Contains(codeLiteralExceptions[path], lit) {
					t.Errorf("%s:%d: the code %s is written out; use seatflow.%s", path, i+1, lit, codes[v])
				}
			}
		}
	}
}

// errorCodes reads the E* string constants of error.go: code → constant name.
func errorCodes(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "error.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "E") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					codes[v] = name.Name
				}
			}
		}
	}
	return codes
}
