package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seatflow/internal/telemetry"
)

// TestLogTallyCountsExportWarnings: the down server's stderr arrives in pieces cut
// anywhere; each export-failure warning counts once, with the failures it says it left out.
func TestLogTallyCountsExportWarnings(t *testing.T) {
	log := fmt.Sprintf(`{"time":"t","level":"WARN","msg":%q,"err":"connection refused","not_logged_since_last":0}
{"time":"t","level":"WARN","msg":"traces not flushed","err":"context deadline exceeded"}
{"time":"t","level":"WARN","msg":%q,"err":"connection refused","not_logged_since_last":41}
not json at all
`, telemetry.ExportWarning, telemetry.ExportWarning)
	var l logTally
	for i := 0; i < len(log); i += 7 {
		l.Write([]byte(log[i:min(i+7, len(log))]))
	}
	if l.warnings() != 2 || l.failures() != 43 {
		t.Errorf("warnings %d for %d failures, want 2 for 43", l.warnings(), l.failures())
	}
	if got, want := l.others(), "`traces not flushed` ×1, `not json at all` ×1"; got != want {
		t.Errorf("others = %q, want %q", got, want)
	}
	if ex := l.excerpt(); strings.Count(ex, "\n") != 2 || !strings.Contains(ex, `"not_logged_since_last":41`) {
		t.Errorf("excerpt = %q, want the two warnings", ex)
	}
}

const splicedDoc = `# SeatFlow benchmarks

Header.

## 1. Read path

Old read path.

| a |
| --- |

## 9. Tracing cost

Old tracing.

### Sub

Still old.

## Premiere-night load test

Load.

## Notes

- a note
`

func TestSpliceSectionReplacesOnlyItsSection(t *testing.T) {
	got, err := spliceSection(splicedDoc, "\n## 10. Tracing cost\n\nNew tracing.\n\n| b |\n| --- |\n", "_Measured alone._")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(splicedDoc, "## 9. Tracing cost\n\nOld tracing.\n\n### Sub\n\nStill old.\n",
		"## 10. Tracing cost\n\n_Measured alone._\n\nNew tracing.\n\n| b |\n| --- |\n", 1)
	if got != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
}

func TestSpliceSectionNewGoesBeforeNotes(t *testing.T) {
	got, err := spliceSection(splicedDoc, "\n## 11. Something new\n\nIts text.\n", "")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(splicedDoc, "## Notes\n", "## 11. Something new\n\nIts text.\n\n## Notes\n", 1)
	if got != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
	// Without a Notes section, at the end.
	doc := "# Report\n\n## 1. Read path\n\nText.\n"
	got, _ = spliceSection(doc, "\n## 2. Other\n\nMore.\n", "")
	if want := doc + "\n## 2. Other\n\nMore.\n"; got != want {
		t.Errorf("at the end: %q, want %q", got, want)
	}
	// The last section of a file, replaced.
	got, _ = spliceSection(doc, "\n## 1. Read path\n\nNew.\n", "")
	if want := "# Report\n\n## 1. Read path\n\nNew.\n"; got != want {
		t.Errorf("last section: %q, want %q", got, want)
	}
	if _, err := spliceSection(doc, "no heading\n", ""); err == nil {
		t.Error("a section without a heading was spliced")
	}
}

func TestSpliceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte(splicedDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spliceFile(path, []string{"\n## 1. Read path\n\nNew read path.\n", "\n## 9. Tracing cost\n\nNew tracing.\n"}, ""); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	got := string(raw)
	for _, s := range []string{"New read path.", "New tracing.", "## Premiere-night load test\n\nLoad.", "- a note"} {
		if !strings.Contains(got, s) {
			t.Errorf("spliced file lacks %q:\n%s", s, got)
		}
	}
	for _, s := range []string{"Old", "Still old"} {
		if strings.Contains(got, s) {
			t.Errorf("spliced file still has %q:\n%s", s, got)
		}
	}
}

func TestSectionTitle(t *testing.T) {
	for in, want := range map[string]string{"## 9. Tracing cost": "Tracing cost", "## Notes": "Notes",
		"## Premiere-night capacity (3 instances)": "Premiere-night capacity (3 instances)", "## v1. x": "v1. x"} {
		if got := sectionTitle(in); got != want {
			t.Errorf("sectionTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMedianRatio: the ratio round by round leaves out one turn the host slowed, and pairs
// each turn with the base's of the same round.
func TestMedianRatio(t *testing.T) {
	base := catalogRun{turns: []float64{100, 200, 100, 100, 100}}
	r := catalogRun{turns: []float64{95, 190, 20, 96, 94}} // the third turn slowed by the host
	if got := medianRatio(r, base); got != 0.95 {
		t.Errorf("median ratio %.3f, want 0.95", got)
	}
	if got := medianRatio(catalogRun{turns: []float64{90, 100}}, catalogRun{turns: []float64{100, 100}}); got != 0.95 {
		t.Errorf("median ratio of two rounds %.3f, want their mean 0.95", got)
	}
	if got := medianRatio(catalogRun{}, base); got != 0 {
		t.Errorf("median ratio without turns %.3f, want 0", got)
	}
}
