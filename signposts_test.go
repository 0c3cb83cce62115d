package seatflow_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Signposts: what a comment or a document names must exist. The checks below are run by
// TestCommentsCiteTheRepository (on Go comments), TestDocSignposts (on README.md and
// docs/*.md) and TestPackagesHaveComments.

var (
	// seatflowCmd is `seatflow CMD` in code: the binary, by name or path, then a word.
	seatflowCmd = regexp.MustCompile(`(?:^|[\s/])seatflow\s+([a-z][a-z0-9-]*)`)
	// namedSection is a citation of a numbered section of a named document:
	// docs/BENCHMARKS.md § 4, docs/BENCHMARKS.md, section 11.
	namedSection = regexp.MustCompile(`((?:docs/)?[A-Z][A-Z_]*\.md),?\s+(?://\s*)?(?:§\s*|[Ss]ection\s+)(\d+)\b`)
	// bareSection is § N with no document in front (an RFC's § stands after "RFC NNNN").
	bareSection = regexp.MustCompile(`§\s*(\d+)`)
	// sectionsOf is a document's note that its § N refer to another document.
	sectionsOf = regexp.MustCompile(`Section numbers refer to ((?:docs/)?[A-Z][A-Z_]*\.md)`)
	// numberedHeading is a markdown heading with a number: "## 4. holdSeats end to end".
	numberedHeading = regexp.MustCompile(`^(#+)\s+(\d+)\.\s`)
	// issueRef is a citation of an issue or pull request by number.
	issueRef = regexp.MustCompile(`(?:^|[\s(])#\d+\b|\b(?:[Ii]ssue|PR|[Pp]ull request)s?\s+#?\d+`)
)

// cliCommands lists the commands of the seatflow binary, read from its command table: the
// Name of each cli.Command of the cli.Program literal whose Name is "seatflow" (and "help",
// which cli.Program.Run answers itself).
func cliCommands(t *testing.T) []string {
	t.Helper()
	var cmds []string
	found := false
	err := filepath.WalkDir(".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && name != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(name)
		if err != nil || !strings.Contains(string(src), "cli.Program{") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !isSelector(lit.Type, "cli", "Program") || stringField(lit, "Name") != "seatflow" {
				return true
			}
			found = true
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if id, _ := kv.Key.(*ast.Ident); !ok || id == nil || id.Name != "Commands" {
					continue
				}
				list, _ := kv.Value.(*ast.CompositeLit)
				if list == nil {
					continue
				}
				for _, c := range list.Elts {
					if c, ok := c.(*ast.CompositeLit); ok {
						cmds = append(cmds, stringField(c, "Name"))
					}
				}
			}
			return false
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found || len(cmds) == 0 {
		t.Fatal(`no cli.Program literal named "seatflow" with commands in the repository`)
	}
	return append(cmds, "help")
}

// isSelector reports whether e is pkg.name.
func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// stringField is the string constant of lit's field key, "" when it has none.
func stringField(lit *ast.CompositeLit, key string) string {
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
			if b, ok := kv.Value.(*ast.BasicLit); ok && b.Kind == token.STRING {
				s, _ := strconv.Unquote(b.Value)
				return s
			}
		}
	}
	return ""
}

// unknownCommands returns a message for each `seatflow CMD` in code that names no command
// of the binary.
func unknownCommands(code []string, cmds []string) []string {
	var msgs []string
	for _, c := range code {
		for _, m := range seatflowCmd.FindAllStringSubmatch(c, -1) {
			if !slices.Contains(cmds, m[1]) {
				msgs = append(msgs, fmt.Sprintf("`%s` names a command the seatflow binary does not have (it has %s)",
					strings.TrimSpace(m[0]), strings.Join(cmds, ", ")))
			}
		}
	}
	return msgs
}

// commentCode is the code spans of Go comment text, line by line.
func commentCode(comments string) []string {
	var code []string
	for line := range strings.SplitSeq(comments, "\n") {
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			code = append(code, m[1])
		}
	}
	return code
}

// docSections caches the numbers of the numbered headings of each document.
type docSections map[string][]int

// has reports whether doc has a heading numbered n.
func (s docSections) has(doc string, n int) (bool, error) {
	if _, ok := s[doc]; !ok {
		b, err := os.ReadFile(doc)
		if err != nil {
			return false, err
		}
		s[doc] = []int{}
		fenced := false
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			} else if m := numberedHeading.FindStringSubmatch(line); m != nil && !fenced {
				k, _ := strconv.Atoi(m[2])
				s[doc] = append(s[doc], k)
			}
		}
	}
	return slices.Contains(s[doc], n), nil
}

// missingSections returns a message for each numbered section text cites that its
// document does not have. self is the document bare § N refer to; "" when text is a
// comment, where a § N must name its document.
func missingSections(text, self string, sections docSections) []string {
	var msgs []string
	check := func(doc, num string) {
		n, _ := strconv.Atoi(num)
		doc = strings.TrimPrefix(doc, "./")
		if !strings.Contains(doc, "/") && doc != "README.md" {
			doc = "docs/" + doc
		}
		ok, err := sections.has(doc, n)
		switch {
		case err != nil:
			msgs = append(msgs, fmt.Sprintf("cites section %d of %s: %v", n, doc, err))
		case !ok:
			msgs = append(msgs, fmt.Sprintf("cites section %d of %s, which has no heading numbered %d", n, doc, n))
		}
	}
	for _, m := range namedSection.FindAllStringSubmatch(text, -1) {
		check(m[1], m[2])
	}
	rest := namedSection.ReplaceAllString(text, "")
	for _, ix := range bareSection.FindAllStringSubmatchIndex(rest, -1) {
		num := rest[ix[2]:ix[3]]
		if strings.Contains(rest[max(0, ix[0]-12):ix[0]], "RFC") {
			continue
		}
		if self == "" {
			msgs = append(msgs, fmt.Sprintf("cites § %s of no document: name it (docs/BENCHMARKS.md § %s) or cite the heading", num, num))
			continue
		}
		check(self, num)
	}
	return msgs
}

// issueRefs returns a message for each issue or pull request text cites by number: they
// are not in the repository, so a comment states the reason itself.
func issueRefs(text string) []string {
	var msgs []string
	for _, m := range issueRef.FindAllString(text, -1) {
		msgs = append(msgs, fmt.Sprintf("cites %q, which is not in the repository: say the reason itself", strings.TrimSpace(m)))
	}
	return msgs
}

// sharedNumbers are the headings numbered alike on purpose, by document: the number and why.
var sharedNumbers = map[string]map[string]string{
	"docs/RELIABILITY.md": {"4": "mysql-blackholed is scenario 4's silent variant (cmd/seatflow-reliability/text.go)"},
}

// TestDocSignposts fails on a document (README.md, docs/*.md) that names in its code a
// `seatflow CMD` the binary does not have, cites a numbered section of itself or of another
// document that does not exist, or numbers two headings of one level alike.
func TestDocSignposts(t *testing.T) {
	cmds := cliCommands(t)
	sections := docSections{}
	for _, doc := range docFiles(t) {
		refs, err := readDocRefs(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range unknownCommands(refs.code, cmds) {
			t.Errorf("%s: %s", doc, msg)
		}
		self := doc
		if m := sectionsOf.FindStringSubmatch(refs.text); m != nil {
			self = m[1]
		}
		for _, msg := range missingSections(refs.text, self, sections) {
			t.Errorf("%s: %s", doc, msg)
		}
		seen := map[string]bool{}
		fenced := false
		for line := range strings.SplitSeq(refs.text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			} else if m := numberedHeading.FindStringSubmatch(line); m != nil && !fenced {
				key := m[1] + " " + m[2]
				if _, shared := sharedNumbers[doc][m[2]]; seen[key] && !shared {
					t.Errorf("%s: two headings numbered %s. (%q)", doc, m[2], line)
				}
				seen[key] = true
			}
		}
	}
}

// TestPackagesHaveComments fails on a Go package (a directory of non-test .go files, none
// generated) without a package comment: "// Package x" (or "// Command x" for a main
// package) right above the package clause of one of its files.
func TestPackagesHaveComments(t *testing.T) {
	ignored := ignoredDirs(t)
	type pkg struct{ files, generated, documented bool }
	pkgs := map[string]*pkg{}
	err := filepath.WalkDir(".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && name != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" ||
			d.Name() == "testdata" || slices.Contains(ignored, name)):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(name)
		p := pkgs[dir]
		if p == nil {
			p = &pkg{}
			pkgs[dir] = p
		}
		p.files = true
		if ast.IsGenerated(f) {
			p.generated = true
		}
		if f.Doc != nil {
			text := f.Doc.Text()
			if strings.HasPrefix(text, "Package "+f.Name.Name+" ") || strings.HasPrefix(text, "Command ") ||
				(f.Name.Name == "main" && text != "") {
				p.documented = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, p := range pkgs {
		if p.files && !p.generated && !p.documented {
			t.Errorf("%s: no file has a package comment (// Package %s ... above its package clause)", dir, filepath.Base(dir))
		}
	}
}
