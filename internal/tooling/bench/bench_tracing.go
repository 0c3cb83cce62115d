package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"seatflow/internal/telemetry"
	"seatflow/internal/tooling/gqlclient"
	"seatflow/internal/tooling/otlpreceiver"
)

// The tracing section's settings: the sampling a busy night runs with, and the share of
// the untraced throughput the traced servers must keep.
const (
	tracingSampler     = "parentbased_traceidratio"
	tracingSamplerArg  = "0.01"
	tracingRatio       = 0.01
	tracingTarget      = 0.95
	tracingRounds      = 10
	tracingHoldShows   = 100 // × 500 seats: more holds than three servers make in the section's time
	tracingHoldRows    = 20
	tracingHoldPerRow  = 25
	tracingWarnPerMin  = 1 // the telemetry package's limit on export-failure warnings
	tracingLogExcerpts = 3
)

// tracingConfig is one of the section's servers: its tracing variables and what it logged.
type tracingConfig struct {
	name  string
	label string
	env   []string
	log   *logTally
	child *childServer
	// started is when it was started, stopped when it had exited.
	started, stopped time.Time
	// readCPU and holdCPU are the CPU seconds the server used during the turns of each load.
	readCPU, holdCPU float64
}

// cpuTurn is a probe's turn hook adding the server's CPU time during the turn to into.
func (c *tracingConfig) cpuTurn(into *float64) func() func() {
	return func() func() {
		t0 := c.child.cpuSeconds()
		return func() { *into += c.child.cpuSeconds() - t0 }
	}
}

// benchTracing measures what traces cost: the read path's hot read and holdSeats against
// three servers of the binary side by side, tracing off, on at 1% sampling exporting to an
// OTLP/HTTP receiver of the bench, and on at 1% with the endpoint down (a closed port).
func benchTracing(ctx context.Context, b *benchEnv, w io.Writer) error {
	fixtures, err := b.openBenchApp(ctx, "-holds-per-minute", "0")
	if err != nil {
		return err
	}
	defer fixtures.Close()
	reads, err := fixtures.createShows(ctx, 1, catalogRows, catalogPerRow, false, 6, true)
	if err != nil {
		return err
	}
	holdShows, err := fixtures.createShows(ctx, tracingHoldShows, tracingHoldRows, tracingHoldPerRow, true, 10, true)
	if err != nil {
		return err
	}

	recv := otlpreceiver.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	collector := &http.Server{Handler: recv, ReadHeaderTimeout: 5 * time.Second}
	go collector.Serve(ln)
	defer collector.Close()
	closed, err := freeAddr() // nothing listens there
	if err != nil {
		return err
	}
	sampled := []string{"OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_EXPORTER_OTLP_PROTOCOL=",
		"OTEL_TRACES_SAMPLER=" + tracingSampler, "OTEL_TRACES_SAMPLER_ARG=" + tracingSamplerArg}
	configs := []*tracingConfig{
		{name: "off", label: "tracing off (no endpoint)", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="}},
		{name: "on", label: "on, 1% sampled, exporting", env: append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String()}, sampled...)},
		{name: "down", label: "on, 1% sampled, endpoint down", env: append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + closed}, sampled...)},
	}
	defer func() {
		for _, c := range configs {
			if c.child != nil {
				c.child.Stop()
			}
		}
	}()
	for _, c := range configs {
		c.log = &logTally{}
		// Warnings logged, so that the export failures show; the same level for all three.
		env := append([]string{"SEATFLOW_LOG_LEVEL=warn"}, c.env...)
		c.started = time.Now()
		if c.child, err = b.startChildServerLogging(ctx, c.log, env...); err != nil {
			return fmt.Errorf("server %s: %w", c.name, err)
		}
	}

	hot := gqlclient.Body(hotShowtimeQ, map[string]any{"id": reads[0].ID})
	var next atomic.Int64 // the seats of holdShows, shared by the three servers
	var readProbes, holdProbes []*probe
	var buf bytes.Buffer
	for _, c := range configs {
		client := newBenchClient(c.child.URL, 256)
		if _, err := client.Post(ctx, "", hot, &buf); err != nil { // warm its caches
			return fmt.Errorf("server %s: %w", c.name, err)
		}
		read := queryProbe(b, client, "hot read, "+c.label, hot)
		read.turn = c.cpuTurn(&c.readCPU)
		hold := holdSeatsProbe("holdSeats, "+c.label, "trace-", client, fixtures.token, holdShows, &next)
		hold.turn = c.cpuTurn(&c.holdCPU)
		readProbes, holdProbes = append(readProbes, read), append(holdProbes, hold)
	}
	d := max(3*b.Opt.Duration, 3*time.Second) // per run: the ratios want more than the read path's
	runs, err := interleaveRounds(ctx, b.Opt.Clients, tracingRounds, d/tracingRounds, append(readProbes, holdProbes...)...)
	if err != nil {
		return err
	}
	// Stopped, each server flushes its spans (and logs the warnings it held back).
	for _, c := range configs {
		c.child.Stop()
		c.child, c.stopped = nil, time.Now()
	}
	requests, spans, rejected := recv.Counts()
	traces := recv.Traces()
	onRequests := len(runs[1].lat) + len(runs[4].lat) + 1 // the warm-up's too
	down := configs[2]

	fmt.Fprintf(w, "\n## 11. Tracing cost\n\n")
	fmt.Fprintf(w, "The read path's hot read (the showtime with its %d-seat hall, response cache on) and `holdSeats` (as in the holdSeats section: one seat, a user of its own, %d clients) against three servers of the binary, each in a process of its own on the same database and Redis, configured only by the standard variables: tracing off (no `OTEL_EXPORTER_OTLP_ENDPOINT`); on at 1%% (`OTEL_TRACES_SAMPLER=%s`, `OTEL_TRACES_SAMPLER_ARG=%s`) exporting over OTLP/HTTP to a receiver in the bench process (`internal/tooling/otlpreceiver`: decodes every `POST /v1/traces`); and on at 1%% with the endpoint a closed port. Requests carry no `traceparent`, so the server samples one trace in a hundred. The six runs take turns, %d rounds of %s each, each round in an order of its own (so no server always runs after the same load or at the same place), and drift of the host weighs on all three alike; the hot read has %d clients. Each ratio is to the same load on the untraced server.\n",
		catalogRows*catalogPerRow, holdSeatsWorkers, tracingSampler, tracingSamplerArg, tracingRounds, d/tracingRounds, b.Opt.Clients)
	var rows [][]string
	for i, load := range []string{"hot read", "`holdSeats`"} {
		off := runs[3*i]
		cpuPer := func(j int) float64 {
			cpu := configs[j].readCPU
			if i == 1 {
				cpu = configs[j].holdCPU
			}
			return cpu / float64(max(len(runs[3*i+j].lat), 1))
		}
		for j, c := range configs {
			r := runs[3*i+j]
			paired, target, result := medianRatio(r, off), "", ""
			if j > 0 {
				target, result = fmt.Sprintf("≥ %.2f", tracingTarget), verdict(paired >= tracingTarget && r.errors == 0)
			}
			rows = append(rows, []string{load, c.label, fmt.Sprintf("%.0f", r.rps), ms(r.lat.pct(50)), ms(r.lat.pct(99)),
				fmt.Sprintf("%.2f", r.rps/off.rps), fmt.Sprintf("%.2f", paired), target, result, fmt.Sprintf("%.0f µs", cpuPer(j)*1e6), fmt.Sprintf("%.2f", cpuPer(j)/cpuPer(0)), errCell(r)})
		}
	}
	table(w, []string{"load", "server", "req/s", "p50", "p99", "ratio to off", "round by round (median)", "target", "result", "server CPU per request", "CPU ratio to off", "errors"}, rows)
	fmt.Fprintf(w, "\nRound by round is the median over the %d rounds of the server's throughput in a round to the untraced server's in the same round; the target is judged on it. One turn of %s on a host that was busy elsewhere for a second moves the ratio of the totals by several percent, as much as tracing costs.\n", tracingRounds, d/tracingRounds)
	fmt.Fprintf(w, "\nServer CPU per request is the server process's CPU time (`/proc/<pid>/stat`, user + system) over its turns, divided by the requests of those turns: less swayed than throughput by what else the host runs, it says what tracing itself costs the server.\n")

	expected := float64(onRequests) * tracingRatio
	life := down.stopped.Sub(down.started)
	allowed := tracingWarnPerMin*int(math.Ceil(life.Minutes())) + 1 // and the one at shutdown
	table(w, []string{"measure", "value", "target", "result"}, [][]string{
		{"traces received from the exporting server", fmt.Sprintf("%d traces, %d spans in %d export requests (%d refused); %d requests sent to it, 1%% = %.0f traces",
			traces, spans, requests, rejected, onRequests, expected), "some traces, none refused", verdict(traces > 0 && rejected == 0)},
		{"export-failure warnings logged by the server with the endpoint down", fmt.Sprintf("%d lines for %d failed exports, over its %s", down.log.warnings(), down.log.failures(), life.Round(time.Second)),
			fmt.Sprintf("≤ %d a minute (+1 at shutdown): ≤ %d, at least one export failed", tracingWarnPerMin, allowed),
			verdict(down.log.warnings() <= allowed && down.log.failures() > 0)},
	})
	var others []string
	for _, c := range configs {
		if o := c.log.others(); o != "" {
			others = append(others, fmt.Sprintf("%s: %s", c.name, o))
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(w, "\nThe servers' other log lines (messages, each with its count): %s.\n", strings.Join(others, "; "))
	}
	if ex := down.log.excerpt(); ex != "" {
		fmt.Fprintf(w, "\nThe down server's export-failure warnings, as logged (the first %d):\n\n```\n%s```\n", tracingLogExcerpts, ex)
	}
	progress("bench:   receiver: %d traces, %d spans, %d requests; down server: %d warnings for %d failures", traces, spans, requests, down.log.warnings(), down.log.failures())
	return nil
}

// logTally is a child server's stderr (JSON lines): it counts the export-failure warnings
// and the failures they stand for (each one and those it says were not logged), and keeps
// the other lines' count and the first of them. Lines also go on to the bench's stderr,
// the first few of each server.
type logTally struct {
	mu       sync.Mutex
	partial  []byte
	warned   int
	failed   int
	lines    []string // the warnings, for the report
	other    map[string]int
	order    []string // of the other messages
	passedOn int
}

func (l *logTally) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

// line tallies one line of the log.
func (l *logTally) line(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	var rec struct {
		Msg       string `json:"msg"`
		NotLogged int    `json:"not_logged_since_last"`
	}
	if json.Unmarshal([]byte(s), &rec) == nil && rec.Msg == telemetry.ExportWarning {
		l.warned++
		l.failed += 1 + rec.NotLogged
		if len(l.lines) < tracingLogExcerpts {
			l.lines = append(l.lines, s)
		}
		return
	}
	msg := rec.Msg
	if msg == "" {
		msg = s
	}
	if r := []rune(msg); len(r) > 60 {
		msg = string(r[:60]) + "…"
	}
	if l.other == nil {
		l.other = map[string]int{}
	}
	if l.other[msg] == 0 {
		l.order = append(l.order, msg)
	}
	l.other[msg]++
	if l.passedOn < tracingLogExcerpts {
		l.passedOn++
		fmt.Fprintln(os.Stderr, s)
	}
}

func (l *logTally) warnings() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.warned
}

func (l *logTally) failures() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// others lists the messages of the lines that were not export-failure warnings, in the
// order first seen, each with its count: "`traces not flushed` ×1, …".
func (l *logTally) others() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, m := range l.order {
		parts = append(parts, fmt.Sprintf("`%s` ×%d", strings.ReplaceAll(m, "`", "'"), l.other[m]))
	}
	return strings.Join(parts, ", ")
}

// excerpt is the first warnings, one a line.
func (l *logTally) excerpt() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sb strings.Builder
	for _, s := range l.lines {
		sb.WriteString(s + "\n")
	}
	return sb.String()
}
