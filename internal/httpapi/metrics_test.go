package httpapi

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestClientOperations: the operation names labelled as the project's own clients' are
// exactly those their sources send (the /demo page, the client suite's library).
func TestClientOperations(t *testing.T) {
	named := regexp.MustCompile(`\b(?:query|mutation|subscription)\s+([A-Za-z_][A-Za-z0-9_]*)\s*[({]`)
	var found []string
	for _, pattern := range []string{"../demo/page/*.js", "../../clients/lib/*.js"} {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", pattern, err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range named.FindAllStringSubmatch(string(src), -1) {
				found = append(found, m[1])
			}
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	want := slices.Sorted(slices.Values(clientOperations))
	if !slices.Equal(found, want) {
		t.Fatalf("the clients send %v\nclientOperations lists %v", found, want)
	}
}
