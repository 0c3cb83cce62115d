package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter is the value of the counter name{label="value"} as /metrics shows it (the
// default registry); it fails tb when the series does not exist.
func Counter(tb testing.TB, name, label, value string) float64 {
	tb.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	tb.Fatalf("no %s{%s=%q} in the default registry", name, label, value)
	return 0
}
