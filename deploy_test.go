package seatflow_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// promtool is Debian's promtool (the prometheus package, installed by
// scripts/services.sh); a test that needs it fails without it, unless
// SEATFLOW_SKIP_PROMTOOL=1 says to skip.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("SEATFLOW_SKIP_PROMTOOL") == "1" {
			t.Skip("promtool missing and SEATFLOW_SKIP_PROMTOOL=1")
		}
		t.Fatal("promtool is missing: run scripts/services.sh (it installs the prometheus package), or set SEATFLOW_SKIP_PROMTOOL=1")
	}
	return p
}

// TestAlertRules: deploy/prometheus/rules.yml passes promtool check rules and its unit
// tests (rules_test.yml: which alerts fire on which series), and a rule file that breaks
// one expression does not pass (the check can fail).
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	if out, err := exec.Command(bin, "check", "rules", "deploy/prometheus/rules.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "test", "rules", "deploy/prometheus/rules_test.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	broken := filepath.Join(t.TempDir(), "broken.yml")
	os.WriteFile(broken, []byte("groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: sum(rate(x[5m])\n"), 0o644)
	if out, err := exec.Command(bin, "check", "rules", broken).CombinedOutput(); err == nil {
		t.Fatalf("promtool passed a broken expression:\n%s", out)
	}
	if out, err := exec.Command(bin, "check", "config", "--syntax-only", "deploy/prometheus/prometheus.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// TestDashboardExpressions: every expression of the Grafana dashboard parses as PromQL
// (promtool checks them as recording rules), and every panel has one.
func TestDashboardExpressions(t *testing.T) {
	bin := promtool(t)
	raw, err := os.ReadFile("deploy/grafana/dashboards/seatflow.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string
		Panels []struct {
			Title   string
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			n++
			expr, _ := json.Marshal(tg.Expr)
			fmt.Fprintf(&rules, "      - record: dashboard:panel%d\n        expr: %s\n", n, expr)
		}
	}
	if n < 10 {
		t.Fatalf("the dashboard has %d queries", n)
	}
	file := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("a dashboard expression does not parse: %v\n%s", err, out)
	}
}
