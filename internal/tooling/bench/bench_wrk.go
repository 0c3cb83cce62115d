package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The read path measured by an independent client: wrk (Debian's package, installed by
// scripts/wrk.sh), a separate process with its own event loop, beside the bench's
// in-process Go clients.
const (
	wrkThreads     = 2
	wrkConnections = 32
)

// wrkScript posts one body and counts, per thread, the answers that are not 2xx and the
// answers with GraphQL errors; done prints the totals and the latency percentiles.
const wrkScript = `wrk.method = "POST"
wrk.body = [==[%s]==]
wrk.headers["Content-Type"] = "application/json"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) non2xx = 0; gqlerrors = 0 end
function response(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
  if body and string.find(body, '"errors"', 1, true) then gqlerrors = gqlerrors + 1 end
end
function done(summary, latency, requests)
  local bad, gql = 0, 0
  for _, t in ipairs(threads) do bad = bad + t:get("non2xx"); gql = gql + t:get("gqlerrors") end
  local e = summary.errors
  io.write(string.format("SEATFLOW %%d %%d %%d %%d %%d %%d %%d\n", summary.requests, summary.duration, bad, gql,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
`

// wrkQuery is one row of the wrk table: a query posted to url, and the same query's
// in-process run (for the ratios side by side).
type wrkQuery struct {
	label     string
	url       string
	body      []byte
	inProcess catalogRun
	target    float64
}

// wrkRun is what wrk measured of one query over all its turns.
type wrkRun struct {
	requests, non2xx, gqlErrors, socketErrors int
	took                                      time.Duration
	// CPU seconds over the turns: the bench process's (the server in it; its own clients
	// are idle meanwhile) and wrk's
	serverCPU, wrkCPU float64
	p50s, p99s        []time.Duration
}

func (r wrkRun) rps() float64 { return float64(r.requests) / r.took.Seconds() }

// cpuPerAnswer is the cell of the CPU an answer cost the server and wrk, in µs.
func (r wrkRun) cpuPerAnswer() string {
	if r.requests == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f / %.0f", r.serverCPU/float64(r.requests)*1e6, r.wrkCPU/float64(r.requests)*1e6)
}

// runWrk runs wrk once, for d, with script (the path of a Lua file).
func runWrk(ctx context.Context, url, script string, d time.Duration, into *wrkRun) error {
	secs := max(int(d.Round(time.Second)/time.Second), 1)
	cmd := exec.CommandContext(ctx, "wrk", "-t", fmt.Sprint(wrkThreads), "-c", fmt.Sprint(wrkConnections),
		"-d", fmt.Sprintf("%ds", secs), "-s", script, url)
	cpu0 := benchCPUSeconds()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("wrk: %w: %.300s", err, out)
	}
	into.serverCPU += benchCPUSeconds() - cpu0
	into.wrkCPU += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	i := bytes.Index(out, []byte("SEATFLOW "))
	if i < 0 {
		return fmt.Errorf("wrk: no totals in its output: %.300s", out)
	}
	var requests, durationUS, non2xx, gql, socket, p50, p99 int64
	if _, err := fmt.Sscanf(string(out[i:]), "SEATFLOW %d %d %d %d %d %d %d", &requests, &durationUS, &non2xx, &gql, &socket, &p50, &p99); err != nil {
		return fmt.Errorf("wrk: read its totals: %w", err)
	}
	into.requests += int(requests)
	into.took += time.Duration(durationUS) * time.Microsecond
	into.non2xx += int(non2xx)
	into.gqlErrors += int(gql)
	into.socketErrors += int(socket)
	into.p50s = append(into.p50s, time.Duration(p50)*time.Microsecond)
	into.p99s = append(into.p99s, time.Duration(p99)*time.Microsecond)
	return nil
}

// writeWrkRows measures queries with wrk, in turns as the in-process runs are (the first
// query is `{ __typename }`, the base of the ratios), and writes their table.
func (b *benchEnv) writeWrkRows(ctx context.Context, w io.Writer, queries []wrkQuery) {
	fmt.Fprintf(w, "\n### Measured by wrk\n\n")
	if _, err := exec.LookPath("wrk"); err != nil {
		fmt.Fprintf(w, "Not measured: wrk is not on PATH (`bash scripts/wrk.sh` installs it).\n")
		return
	}
	dir, err := os.MkdirTemp("", "seatflow-wrk-")
	if err != nil {
		fmt.Fprintf(w, "Not measured: %v.\n", err)
		return
	}
	defer os.RemoveAll(dir)
	scripts := make([]string, len(queries))
	for i, q := range queries {
		if bytes.Contains(q.body, []byte("]==]")) {
			fmt.Fprintf(w, "Not measured: the body of %q cannot be a Lua long string.\n", q.label)
			return
		}
		scripts[i] = filepath.Join(dir, fmt.Sprintf("q%d.lua", i))
		if err := os.WriteFile(scripts[i], fmt.Appendf(nil, wrkScript, q.body), 0o600); err != nil {
			fmt.Fprintf(w, "Not measured: %v.\n", err)
			return
		}
	}
	runs := make([]wrkRun, len(queries))
	turn := b.Opt.Duration / catalogRounds
	for range catalogRounds {
		for i, q := range queries {
			if err := runWrk(ctx, q.url, scripts[i], turn, &runs[i]); err != nil {
				fmt.Fprintf(w, "Not measured: %s: %v.\n", q.label, strings.ReplaceAll(err.Error(), "\n", " "))
				return
			}
		}
	}
	fmt.Fprintf(w, "The same server and queries driven by wrk (`-t%d -c%d`, a process of its own, bodies posted from a Lua script whose `response` hook counts every answer that is not 2xx and every answer with errors), %d turns of %s per query interleaved as above, while the seat map's watcher stays connected and the cost budget stays on, refilled without bound as for the in-process clients (one address sends everything); each ratio is to wrk's own `{ __typename }`, beside the in-process clients' ratio for the same query. p50 is the median of the turns' p50, p99 the worst turn's.\n",
		wrkThreads, wrkConnections, catalogRounds, turn)
	base := runs[0].rps()
	var rows [][]string
	for i, q := range queries {
		r := runs[i]
		ratio, inRatio := r.rps()/base, q.inProcess.rps/queries[0].inProcess.rps
		bad := r.non2xx + r.gqlErrors + r.socketErrors
		slices.Sort(r.p50s)
		target, result := "", ""
		if q.target > 0 {
			target = fmt.Sprintf("≥ %.2f on both", q.target)
			result = verdict(ratio >= q.target && inRatio >= q.target && bad == 0 && q.inProcess.errors == 0)
		}
		progress("bench:   wrk: %-58s %8.0f req/s  ratio %.2f (in-process %.2f)  failures %d", q.label, r.rps(), ratio, inRatio, bad)
		rows = append(rows, []string{q.label, fmt.Sprintf("%.0f", r.rps()), ms(r.p50s[len(r.p50s)/2]), ms(slices.Max(r.p99s)),
			fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.2f", inRatio), target, result,
			fmt.Sprintf("%d / %d / %d", r.non2xx, r.gqlErrors, r.socketErrors), r.cpuPerAnswer()})
	}
	table(w, []string{"query", "wrk req/s", "p50", "p99", "ratio to wrk's `__typename`", "in-process ratio", "target", "result",
		"not 2xx / with errors / socket errors", "CPU µs per answer: server / wrk"}, rows)
	fmt.Fprintf(w, "\nThe last column is what an answer cost each side of the two cores the server and wrk share (CPU time over the turns, of the bench process, where the server runs and its own clients are idle, and of wrk, over the answers): a larger answer costs wrk more as well, to read and to search for errors, and that time is the server's to lose.\n")
}
