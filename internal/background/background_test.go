package background

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"seatflow/internal/tooling/testenv"
)

// count is task's counter as /metrics shows it.
func count(t *testing.T, task string) float64 {
	t.Helper()
	return testenv.Counter(t, "seatflow_background_errors_total", "task", task)
}

func TestReport(t *testing.T) {
	logTo := func() (*slog.Logger, *bytes.Buffer) {
		var buf bytes.Buffer
		return slog.New(slog.NewTextHandler(&buf, nil)), &buf
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, stop := context.WithTimeout(context.Background(), time.Nanosecond)
	defer stop()
	<-expired.Done()

	cases := []struct {
		name   string
		ctx    context.Context
		report func(context.Context, *slog.Logger, string, error, ...any)
		err    error
		level  string // "" = not reported
	}{
		{"FailureIsAWarning", context.Background(), Failed, errors.New("redis: connection refused"), "WARN"},
		{"StopIsAnError", context.Background(), Stopped, errors.New("live hub: pub/sub closed"), "ERROR"},
		{"NilIsNothing", context.Background(), Failed, nil, ""},
		{"OwnCancellationIsNothing", cancelled, Stopped, fmt.Errorf("expire: %w", context.Canceled), ""},
		// A store slower than the work's deadline is a failure, not a stop.
		{"DeadlinePassedIsAFailure", expired, Failed, fmt.Errorf("release: %w", context.DeadlineExceeded), "WARN"},
		// Canceled from elsewhere (a library's own context) while ours runs: a failure.
		{"ForeignCancellationIsAFailure", context.Background(), Failed, context.Canceled, "WARN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, buf := logTo()
			before := count(t, ReleaseSeats)
			c.report(c.ctx, log, ReleaseSeats, c.err, "order", 42)
			got := count(t, ReleaseSeats) - before
			if c.level == "" {
				if got != 0 || buf.Len() != 0 {
					t.Fatalf("counted %v, logged %q; want nothing", got, buf.String())
				}
				return
			}
			if got != 1 {
				t.Errorf("counted %v, want 1", got)
			}
			line := buf.String()
			for _, want := range []string{"level=" + c.level, "task=" + ReleaseSeats, "order=42", c.err.Error()} {
				if !strings.Contains(line, want) {
					t.Errorf("log %q lacks %q", line, want)
				}
			}
		})
	}
	t.Run("EveryTaskHasASeriesFromTheStart", func(t *testing.T) {
		for _, task := range tasks {
			count(t, task) // fails when the series is missing
		}
	})
}
