package seatflow_test

import (
	"bufio"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// docFiles are the documents whose references TestDocReferences checks.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

var (
	// mdLink is an inline markdown link or image: [text](target) or [text](target "title").
	mdLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan is an inline code span of one or two backticks.
	codeSpan = regexp.MustCompile("``?([^`]+)``?")
	// makeCall is `make X` in a command: X is the first word after make that is neither
	// a flag nor a variable assignment.
	makeCall = regexp.MustCompile(`(?:^|[\s;&|(])make((?:\s+(?:-\S+|\S+=\S*))*)\s+([A-Za-z0-9][A-Za-z0-9_.-]*)`)
	// designDoc is a mention of a design document, with the path in front of its name.
	designDoc = regexp.MustCompile(`([A-Za-z0-9_./~-]*)DESIGN\.md`)
	// designSection is a Go comment's citation of a section: docs/DESIGN.md "Orders".
	designSection = regexp.MustCompile(`docs/DESIGN\.md\s+(?://\s*)?"([^"]+)"`)
)

// docRefs is what one document refers to.
type docRefs struct {
	links []string // markdown link targets, as written
	paths []string // words of code (spans and fenced blocks) that look like paths
	makes []string // make targets named in code
	code  []string // the text of code spans and fenced blocks
	text  string
}

// readDocRefs collects the references of the markdown file at name.
func readDocRefs(name string) (docRefs, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return docRefs{}, err
	}
	refs := docRefs{text: string(b)}
	var code []string // the text of code spans and fenced blocks
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(refs.text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			code = append(code, line)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			code = append(code, m[1])
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			refs.links = append(refs.links, m[1])
		}
	}
	refs.code = code
	for _, c := range code {
		for _, m := range makeCall.FindAllStringSubmatch(c, -1) {
			refs.makes = append(refs.makes, m[2])
		}
		// A path ends at a character no repository path holds (`$(bash scripts/x.sh):$PATH`).
		for _, w := range strings.FieldsFunc(c, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(`"'(),;:$<>|&=`+"`", r)
		}) {
			if strings.Contains(w, "/") {
				refs.paths = append(refs.paths, w)
			}
		}
	}
	return refs, sc.Err()
}

// TestDocReferences fails on a reference of README.md or docs/*.md that leads nowhere: a
// relative markdown link to a missing file (or a missing heading of a markdown file), a
// path in code whose first directory is one of the repository's that names no file, and a
// `make X` with no target X in the Makefile; and on any reference to a file outside the
// repository (the shared folder beside it, a design document but docs/DESIGN.md).
func TestDocReferences(t *testing.T) {
	roots := repoDirs(t)
	targets := makeTargets(t)
	for _, doc := range docFiles(t) {
		refs, err := readDocRefs(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range refs.links {
			if msg := checkLink(doc, l); msg != "" {
				t.Errorf("%s: link (%s): %s", doc, l, msg)
			}
		}
		for _, p := range refs.paths {
			if msg := checkRepoPath(p, roots); msg != "" {
				t.Errorf("%s: `%s`: %s", doc, p, msg)
			}
		}
		for _, m := range refs.makes {
			if !slices.Contains(targets, m) {
				t.Errorf("%s: `make %s`: the Makefile has no target %q", doc, m, m)
			}
		}
		for _, msg := range outsideRefs(doc, refs.text) {
			t.Errorf("%s: %s", doc, msg)
		}
	}
}

// TestCommentsCiteTheRepository fails on a Go comment that refers to a file outside the
// repository (as TestDocReferences), cites a section of docs/DESIGN.md (docs/DESIGN.md
// "Orders") that it does not have, names in code a `seatflow CMD` the binary does not
// have, cites a numbered section that its document does not have or § N of no document,
// or cites an issue or pull request by number (signposts_test.go).
func TestCommentsCiteTheRepository(t *testing.T) {
	sections, err := markdownHeadings("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := cliCommands(t)
	numbered := docSections{}
	ignored := ignoredDirs(t)
	err = filepath.WalkDir(".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && name != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || slices.Contains(ignored, name)):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(name, ".go"):
			return nil
		}
		comments, err := goComments(name)
		if err != nil {
			return err
		}
		for _, msg := range outsideRefs(name, comments) {
			t.Errorf("%s: %s", name, msg)
		}
		for _, m := range designSection.FindAllStringSubmatch(comments, -1) {
			if !slices.Contains(sections, m[1]) {
				t.Errorf("%s: cites docs/DESIGN.md %q, which has no such heading", name, m[1])
			}
		}
		msgs := unknownCommands(commentCode(comments), cmds)
		msgs = append(msgs, missingSections(comments, "", numbered)...)
		for _, msg := range append(msgs, issueRefs(comments)...) {
			t.Errorf("%s: %s", name, msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goComments returns the text of the comments of the Go file at name.
func goComments(name string) (string, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	var s scanner.Scanner
	var errs []string
	s.Init(fset.AddFile(name, -1, len(src)), src, func(pos token.Position, msg string) {
		errs = append(errs, fmt.Sprintf("%s: %s", pos, msg))
	}, scanner.ScanComments)
	var b strings.Builder
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT {
			b.WriteString(lit)
			b.WriteByte('\n')
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return b.String(), nil
}

// checkLink returns why the link target l of doc leads nowhere, "" when it is fine.
// Links with a scheme (https:, mailto:) are not followed.
func checkLink(doc, l string) string {
	if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(l, "#")
	target := doc
	if file != "" {
		if path.IsAbs(file) {
			return "an absolute path; link relative to the document"
		}
		target = path.Join(path.Dir(doc), file)
		if !inRepo(target) {
			return "outside the repository"
		}
		if _, err := os.Stat(target); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(target, ".md") {
		return ""
	}
	headings, err := markdownHeadings(target)
	if err != nil {
		return err.Error()
	}
	if !slices.ContainsFunc(headings, func(h string) bool { return headingSlug(h) == anchor }) {
		return fmt.Sprintf("%s has no heading #%s", target, anchor)
	}
	return ""
}

// headingSlug is the anchor GitHub gives a heading: lower case, punctuation dropped,
// spaces turned into hyphens.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkRepoPath returns why p, a word of code that contains a slash, names no file of
// the repository, or "" when it does or is no repository path at all (a URL, an absolute
// path, a path under a directory the repository does not have, such as a package's
// `lua/` or the git-ignored `bin/`). `ent/...` is a Go package pattern, `graph/model.ID`
// a Go identifier of a package, `lua/*.lua` a glob.
func checkRepoPath(p string, roots []string) string {
	p = strings.TrimPrefix(p, "./")
	first, _, _ := strings.Cut(p, "/")
	if strings.Contains(p, "://") || !slices.Contains(roots, first) {
		return ""
	}
	p = strings.TrimSuffix(strings.TrimSuffix(p, "/..."), "/")
	if strings.ContainsAny(p, "*?[") {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			return ""
		}
		return "matches no file of the repository"
	}
	if _, err := os.Stat(p); err == nil {
		return ""
	}
	dir, base := path.Split(p)
	if pkg, ident, ok := strings.Cut(base, "."); ok && ident != "" && unicode.IsLetter(rune(ident[0])) {
		if st, err := os.Stat(path.Join(dir, pkg)); err == nil && st.IsDir() {
			return "" // a Go identifier: package.Name
		}
	}
	return "no such file or directory in the repository"
}

// outsideRefs returns a message for each reference of text (of the file name) to a file
// outside the repository: the shared folder beside it, or a design document other than
// docs/DESIGN.md.
func outsideRefs(name, text string) []string {
	var msgs []string
	for _, bad := range []string{"../shared", "/work/shared"} {
		if strings.Contains(text, bad) {
			msgs = append(msgs, fmt.Sprintf("refers to %s, outside the repository", bad))
		}
	}
	for _, m := range designDoc.FindAllStringSubmatch(text, -1) {
		dir := m[1]
		// Relative to the file, for a link in docs/; relative to the repository root
		// otherwise.
		ok := path.Clean(dir+"DESIGN.md") == "docs/DESIGN.md" ||
			(dir == "" && path.Dir(name) == "docs" && strings.HasSuffix(name, ".md"))
		if !ok {
			msgs = append(msgs, fmt.Sprintf("refers to %q: the design is docs/DESIGN.md", m[0]))
		}
	}
	return msgs
}

// inRepo reports whether the relative path p stays inside the repository.
func inRepo(p string) bool {
	p = path.Clean(p)
	return p != ".." && !strings.HasPrefix(p, "../")
}

// repoDirs lists the repository's top-level directories, without .git and those
// .gitignore names (/bin/, /data/, /tmp/: build outputs, not sources).
func repoDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	ignored := ignoredDirs(t)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".git" && !slices.Contains(ignored, e.Name()) {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

// ignoredDirs lists the top-level directories .gitignore ignores (lines like /bin/).
func ignoredDirs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(".gitignore")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if d, ok := strings.CutPrefix(line, "/"); ok && strings.HasSuffix(d, "/") && strings.Count(d, "/") == 1 {
			dirs = append(dirs, strings.TrimSuffix(d, "/"))
		}
	}
	return dirs
}

// markdownHeadings lists the text of the headings of the markdown file at name (lines
// in fenced code blocks are not headings).
func markdownHeadings(name string) ([]string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var hs []string
	fenced := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		} else if h, ok := strings.CutPrefix(line, "#"); ok && !fenced {
			hs = append(hs, strings.TrimSpace(strings.TrimLeft(h, "#")))
		}
	}
	return hs, nil
}

// makeTargets lists the Makefile's explicit targets.
func makeTargets(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`(?m)^([A-Za-z0-9][A-Za-z0-9_. -]*?)\s*::?(?:[^=]|$)`)
	var targets []string
	for _, m := range rule.FindAllStringSubmatch(string(b), -1) {
		targets = append(targets, strings.Fields(m[1])...)
	}
	if len(targets) == 0 {
		t.Fatal("no target found in the Makefile")
	}
	return targets
}
