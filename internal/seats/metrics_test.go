package seats

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"seatflow/internal/tooling/testenv"
)

// TestScriptLatencyCounted: every seat script's run is observed under its own label.
func TestScriptLatencyCounted(t *testing.T) {
	r := testenv.NewRedis(t)
	s := &Store{RDB: r.Client, Keys: r.Keys}
	count := func() uint64 {
		m := &dto.Metric{}
		scriptSeconds.WithLabelValues("snapshot").(prometheus.Histogram).Write(m)
		return m.GetHistogram().GetSampleCount()
	}
	before := count()
	if _, _, err := s.States(context.Background(), 424242); err != nil {
		t.Fatal(err)
	}
	if got := count() - before; got != 1 {
		t.Errorf("snapshot observations = %d, want 1", got)
	}
	if len(scriptNames) != 11 {
		t.Errorf("scriptNames has %d scripts, want every one of scripts.go and repair.go", len(scriptNames))
	}
}
