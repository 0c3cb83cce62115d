// Package bench is SeatFlow's benchmark report: `seatflow-bench` (cmd/seatflow-bench,
// `make bench`) runs every micro-benchmark of the project side by side, on a MySQL
// database and a Redis key prefix of its own (both removed at the end), and prints
// docs/BENCHMARKS.md to stdout; progress goes to stderr. Each section measures its subject
// and the baseline it is compared with in the same run, so the ratios hold on any machine.
package bench

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/app"
	"seatflow/internal/cli"
	"seatflow/internal/tooling/gqlclient"
	"seatflow/internal/tooling/loadtest"
	"seatflow/internal/tooling/testenv"
)

// benchSection is one section of the report. runBench runs them in order; each writes its
// own markdown (a "## " heading, a line on the method, a table) and must bound its time.
type benchSection struct {
	Name  string // selects it: `seatflow-bench -only catalog,stampede`
	Title string
	Run   func(ctx context.Context, b *benchEnv, w io.Writer) error
}

// benchSections are the report sections, in report order.
var benchSections = []benchSection{
	{Name: "catalog", Title: "Catalog hot path", Run: benchCatalog},
	{Name: "stampede", Title: "Cache stampede", Run: benchStampede},
	{Name: "hold", Title: "Hold script vs redis-benchmark", Run: benchHoldScript},
	{Name: "holdseats", Title: "holdSeats end to end", Run: benchHoldSeats},
	{Name: "contention", Title: "Contention", Run: benchContention},
	{Name: "fanout", Title: "Live seat-map fan-out", Run: benchFanout},
	{Name: "onsale", Title: "On-sale burst", Run: benchOnSale},
	{Name: "queue", Title: "On-sale queue", Run: benchQueue},
	{Name: "abuse", Title: "Hostile documents", Run: benchAbuse},
	{Name: "checkin", Title: "Check-in", Run: benchCheckIn},
	{Name: "tracing", Title: "Tracing cost", Run: benchTracing},
	{Name: "waitlist", Title: "Waiting list", Run: benchWaitlist},
	{Name: "load", Title: "Premiere-night load (3 instances)", Run: benchLoad},
	{Name: "capacity", Title: "Premiere-night capacity (3 instances)", Run: benchCapacity},
}

// benchLoad runs a short premiere-night load test for the report (`make load` runs a
// longer one with chaos: LOAD_ARGS='-duration 5m -chaos').
func benchLoad(ctx context.Context, b *benchEnv, w io.Writer) error {
	return loadtest.Run(ctx, []string{"-duration", "45s", "-rate", "150", "-watchers", "1000", "-chaos"}, w, b.ServerBin)
}

// benchCapacity finds the highest rate three instances hold with every p99 ≤ 250 ms,
// starting low enough that the first step is held and the report names a rate.
func benchCapacity(ctx context.Context, b *benchEnv, w io.Writer) error {
	return loadtest.Run(ctx, []string{"-capacity", "-rate", "300", "-step", "10s", "-step-factor", "1.25",
		"-watchers", "1000"}, w, b.ServerBin)
}

// benchOptions are the flags of `seatflow-bench`.
type benchOptions struct {
	Only        string
	Duration    time.Duration
	Clients     int
	LoaderWait  time.Duration
	Fanout      string
	HoldOps     int
	Buyers      int
	Seats       int
	CPUProfile  string
	OnSale      string // watcher counts of the on-sale burst
	OnSaleHolds int
	OnSaleRate  int
	OnSaleTicks string // SEATFLOW_LIVE_TICK settings of the on-sale burst ("default": unset)
	Peer        string // subscriber counts of the on-sale burst through Centrifugo
	Centrifugo  string // its binary
	Quick       bool
	// QueueEntrants join the on-sale queue's showtime; QueueSubscribers of them follow
	// their ticket.
	QueueEntrants, QueueSubscribers int
	// Splice is a report (docs/BENCHMARKS.md) whose sections of this run are replaced in
	// place, the rest of it kept.
	Splice string
}

// benchEnv is what every section shares: the bench's own database and Redis prefix.
type benchEnv struct {
	Opt benchOptions
	// ServerBin is the server binary child servers run.
	ServerBin string
	MySQLDSN  string // the bench database
	RedisURL  string
	Prefix    string
	RDB       redis.UniversalClient
	Log       *slog.Logger
	Secret    string
	// LoadArgs are extra arguments for a registered load section (unused by the others).
	LoadArgs []string
	// Notes are remarks collected while running, printed at the end of the report.
	Notes []string
	// NoFile is the open-file limit after the bench tried to raise it.
	NoFile uint64
	logs   logSample
}

// logSample passes the first lines the in-process servers log (errors only) to stderr and
// counts the rest, so a failing run does not drown the progress lines.
type logSample struct {
	mu sync.Mutex
	n  int
}

func (l *logSample) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if l.n <= 20 {
		os.Stderr.Write(p)
	}
	return len(p), nil
}

// take returns how many lines were logged since the last call.
func (l *logSample) take() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.n
	l.n = 0
	return n
}

// Run runs the benchmarks chosen by args and prints docs/BENCHMARKS.md to stdout
// (progress to stderr). serverBin is the server binary child servers run.
func Run(ctx context.Context, args []string, stdout io.Writer, serverBin string) error {
	var o benchOptions
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.Only, "only", "", "comma-separated sections to run (default all): "+sectionNames())
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "length of each timed throughput run")
	fs.IntVar(&o.Clients, "clients", 8, "concurrent HTTP clients of the catalog and holdSeats runs")
	fs.DurationVar(&o.LoaderWait, "loader-wait", 2*time.Millisecond, "dataloader batch window of the catalog run (the server default)")
	fs.StringVar(&o.Fanout, "fanout", "1000,5000,10000,20000", "watcher counts of the fan-out run (capped by the open-file limit)")
	fs.IntVar(&o.HoldOps, "hold-ops", 100000, "holds of the hold-script run (and redis-benchmark -n)")
	fs.IntVar(&o.Buyers, "buyers", 2000, "buyers of the contention run")
	fs.IntVar(&o.Seats, "seats", 200, "seats of the contention run")
	fs.StringVar(&o.OnSale, "onsale", "3040,10000,19880", "watcher counts of the on-sale burst (capped by the open-file limit; 19,880 is the most a 20,000 limit allows)")
	fs.IntVar(&o.OnSaleHolds, "onsale-holds", 500, "one-seat holds of the on-sale burst (at most the hall's 500 seats)")
	fs.IntVar(&o.OnSaleRate, "onsale-rate", 200, "holds per second of the on-sale burst")
	fs.StringVar(&o.OnSaleTicks, "onsale-ticks", "default,0", "SEATFLOW_LIVE_TICK settings each on-sale watcher count runs with (default: the variable unset)")
	fs.StringVar(&o.Peer, "peer", "3040,10000,19880", "subscriber counts of the on-sale burst through Centrifugo, the same as -onsale's to be compared (empty: not run)")
	fs.StringVar(&o.Centrifugo, "centrifugo", "", "Centrifugo binary (default: on PATH, else $GOPATH/bin/centrifugo; scripts/centrifugo.sh installs it)")
	fs.IntVar(&o.QueueEntrants, "queue-entrants", 50000, "entrants who join the on-sale queue before it opens")
	fs.IntVar(&o.QueueSubscribers, "queue-subscribers", 10000, "of them, how many follow their ticket over the queue subscription (capped by the open-file limit)")
	fs.BoolVar(&o.Quick, "quick", false, "short on-sale burst (about a minute): "+quickSummary)
	fs.StringVar(&o.Splice, "splice", "", "replace in this report only the sections run (with -only), keeping the rest of it; the whole report still goes to stdout")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the bench process (in-process servers and clients) to this file")
	if err := fs.Parse(args); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var sections []benchSection
	for _, s := range benchSections {
		if o.Only == "" || slices.Contains(strings.Split(o.Only, ","), s.Name) {
			sections = append(sections, s)
		}
	}
	if len(sections) == 0 {
		return cli.UsageError{Msg: "-only: no such section; sections: " + sectionNames()}
	}

	b := &benchEnv{}
	*b = benchEnv{Opt: o, ServerBin: serverBin, RedisURL: testenv.RedisURL(), Prefix: testenv.RandomName("sfbench"),
		Log:    slog.New(slog.NewTextHandler(&b.logs, &slog.HandlerOptions{Level: slog.LevelError})),
		Secret: "bench-secret-" + testenv.RandomName("")}
	b.NoFile = raiseNoFile(1 << 16)
	dbName := testenv.RandomName("seatflow_bench_")
	progress("bench: database %s, redis prefix %s, open files %d", dbName, b.Prefix, b.NoFile)
	dsn, drop, err := createBenchDatabase(ctx, dbName)
	if err != nil {
		return err
	}
	defer drop()
	b.MySQLDSN = dsn
	opt, err := redis.ParseURL(b.RedisURL)
	if err != nil {
		return err
	}
	b.RDB = redis.NewClient(opt)
	defer b.RDB.Close()
	if err := b.RDB.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("reach redis at %s: %w", b.RedisURL, err)
	}
	defer testenv.DeletePrefix(b.RDB, b.Prefix)

	w := bufio.NewWriter(stdout)
	defer w.Flush()
	startLoad := loadAverage()
	writeBenchHeader(w, b)
	started := time.Now()
	var failed, rendered []string
	for _, s := range sections {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t0 := time.Now()
		progress("bench: %s …", s.Title)
		var sec strings.Builder
		notes := len(b.Notes)
		if err := s.Run(ctx, b, &sec); err != nil {
			progress("bench: %s failed: %v", s.Title, err)
			fmt.Fprintf(&sec, "\n**%s did not finish:** %s\n", s.Title, strings.ReplaceAll(err.Error(), "\n", " "))
			failed = append(failed, s.Name)
		}
		if n := b.logs.take(); n > 0 {
			b.note("%s: the servers logged %d errors (the first on stderr of the run).", s.Title, n)
		}
		w.WriteString(sec.String())
		// A spliced section carries the notes of its own run.
		for _, n := range b.Notes[notes:] {
			fmt.Fprintf(&sec, "\n_Note of this run: %s_\n", n)
		}
		rendered = append(rendered, sec.String())
		progress("bench: %s done in %s", s.Title, time.Since(t0).Round(100*time.Millisecond))
	}
	if len(b.Notes) > 0 {
		fmt.Fprintf(w, "\n## Notes\n\n")
		for _, n := range b.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	fmt.Fprintf(w, "\n_Whole run: %s._\n", time.Since(started).Round(time.Second))
	if len(failed) > 0 {
		return fmt.Errorf("bench sections failed: %s", strings.Join(failed, ", "))
	}
	if o.Splice != "" {
		stamp := fmt.Sprintf("_Measured alone by `go run ./cmd/seatflow-bench -server <server binary> %s` (what `make bench BENCH_ONLY=%s` runs) on %s, load average at start %s; the rest of this report comes from the run of its header._",
			strings.Join(args, " "), o.Only, started.UTC().Format("2006-01-02 15:04 MST"), startLoad)
		if err := spliceFile(o.Splice, rendered, stamp); err != nil {
			return err
		}
		progress("bench: spliced %s into %s", o.Only, o.Splice)
	}
	return nil
}

// spliceFile replaces sections in the report at path (written whole, then renamed over it).
func spliceFile(path string, sections []string, stamp string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(raw)
	for _, s := range sections {
		if doc, err = spliceSection(doc, s, stamp); err != nil {
			return err
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// spliceSection puts section (rendered markdown, its first line a "## " heading) into doc
// in place of the section of the same title, the number in front of a title ignored
// ("## 9. Tracing cost" replaces "## 7. Tracing cost"), from its heading to the next "## "
// heading; a title doc lacks goes before "## Notes", or at the end. stamp, when not empty,
// becomes the section's first paragraph.
func spliceSection(doc, section, stamp string) (string, error) {
	lines := strings.Split(strings.TrimLeft(section, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "## ") {
		return "", fmt.Errorf("splice: the section does not start with a \"## \" heading: %.80q", lines[0])
	}
	title := sectionTitle(lines[0])
	body := strings.TrimRight(strings.Join(lines[1:], "\n"), "\n")
	if stamp != "" {
		body = "\n" + stamp + "\n" + body
	}
	block := lines[0] + "\n" + body + "\n"

	docLines := strings.SplitAfter(doc, "\n")
	start, end, notes := -1, len(docLines), -1
	for i, l := range docLines {
		if !strings.HasPrefix(l, "## ") {
			continue
		}
		if start >= 0 {
			end = i
			break
		}
		if sectionTitle(strings.TrimRight(l, "\n")) == title {
			start = i
		} else if notes < 0 && strings.TrimSpace(l) == "## Notes" {
			notes = i
		}
	}
	if start < 0 {
		start, end = len(docLines), len(docLines)
		if notes >= 0 {
			start, end = notes, notes
		}
	}
	before, after := strings.Join(docLines[:start], ""), strings.Join(docLines[end:], "")
	if before != "" && !strings.HasSuffix(before, "\n\n") {
		before = strings.TrimRight(before, "\n") + "\n\n"
	}
	if after != "" {
		block += "\n"
	}
	return before + block + after, nil
}

// sectionTitle is a "## " heading's title without its number ("## 9. Tracing cost":
// "Tracing cost").
func sectionTitle(heading string) string {
	t := strings.TrimSpace(strings.TrimPrefix(heading, "## "))
	if n, rest, ok := strings.Cut(t, ". "); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return rest
	}
	return t
}

func sectionNames() string {
	var names []string
	for _, s := range benchSections {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// note records a remark for the end of the report.
func (b *benchEnv) note(format string, args ...any) {
	b.Notes = append(b.Notes, fmt.Sprintf(format, args...))
}

// raiseNoFile lifts RLIMIT_NOFILE towards want (as far as the hard limit allows, or
// beyond it when running as root) and returns the soft limit in force.
func raiseNoFile(want uint64) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Max < want {
		raised := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			return want
		}
	}
	target := syscall.Rlimit{Cur: min(want, lim.Max), Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &target); err != nil {
		return lim.Cur
	}
	return target.Cur
}

// createBenchDatabase creates the bench database on the test MySQL server; drop removes it.
func createBenchDatabase(ctx context.Context, name string) (dsn string, drop func(), err error) {
	if err := testenv.CreateDatabase(ctx, name); err != nil {
		return "", nil, fmt.Errorf("create the bench database (is MySQL running? `make services`): %w", err)
	}
	drop = func() {
		if err := testenv.DropDatabase(context.Background(), name); err != nil {
			progress("bench: drop database %s: %v", name, err)
		}
	}
	return testenv.DatabaseDSN(name), drop, nil
}

// openBenchApp opens a real instance on the bench database and Redis prefix (the wiring of
// the server: Open, then Start) and serves its Handler on a loopback port.
func (b *benchEnv) openBenchApp(ctx context.Context, flags ...string) (*benchServer, error) {
	cfg, _, err := app.ParseConfig("bench", append([]string{"-mysql-dsn", b.MySQLDSN, "-redis-url", b.RedisURL,
		"-redis-prefix", b.Prefix, "-jwt-secret", b.Secret, "-ticket-key-secret", b.ticketSecret(), "-reconcile-every", "0", "-log-level", "error", "-payment-provider", "test",
		// Every bench client comes from one address: a budget that never runs out, still spent.
		"-cost-restore", "1000000000"}, flags...))
	if err != nil {
		return nil, err
	}
	a, err := app.Open(ctx, cfg, b.Log)
	if err != nil {
		return nil, err
	}
	a.Start(context.WithoutCancel(ctx))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		return nil, err
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	go srv.Serve(ln)
	s := &benchServer{App: a, srv: srv, URL: "http://" + ln.Addr().String()}
	s.client = newBenchClient(s.URL, 256)
	s.admin, _ = a.Auth.Issue("bench-admin", "admin", 2*time.Hour)
	return s, nil
}

// ticketSecret is the ticket-key secret of the bench's instances (from the JWT one).
func (b *benchEnv) ticketSecret() string { return "tickets-" + b.Secret + "-0123456789abcdef" }

// benchServer is an instance served over loopback HTTP.
type benchServer struct {
	*app.App
	srv    *http.Server
	URL    string
	client *gqlclient.Client
	admin  string
}

func (s *benchServer) Close() {
	s.Websockets.CloseAll(1001, "bench done", 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	s.App.Close()
}

func (s *benchServer) token(user string) string {
	t, _ := s.Auth.Issue(user, "customer", 2*time.Hour)
	return t
}

// writeBenchHeader records the machine and the command.
func writeBenchHeader(w io.Writer, b *benchEnv) {
	cpu := "unknown"
	if f, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(f), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := "unknown"
	if f, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(f), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				var kb int64
				fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "MemTotal:")), "%d", &kb)
				mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	load := loadAverage()
	mysqlVersion := "unknown"
	if db, err := sql.Open("mysql", b.MySQLDSN); err == nil {
		_ = db.QueryRow("SELECT VERSION()").Scan(&mysqlVersion)
		db.Close()
	}
	redisVersion := "unknown"
	if info, err := b.RDB.Info(context.Background(), "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				redisVersion = v
			}
		}
	}
	fmt.Fprintf(w, "# SeatFlow benchmarks\n\n")
	fmt.Fprintf(w, "Generated by `make bench` (`%s`); every ratio compares two measurements taken side by side in this one run, on the same MySQL, Redis and machine. Regenerate on a quiet machine: other processes skew the absolute figures more than the ratios.\n\n",
		benchCommand())
	fmt.Fprintf(w, "| | |\n| --- | --- |\n")
	fmt.Fprintf(w, "| date | %s |\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "| command | `make bench` |\n")
	fmt.Fprintf(w, "| CPU | %s, %d cores (nproc) |\n", cpu, runtime.NumCPU())
	fmt.Fprintf(w, "| memory | %s |\n", mem)
	fmt.Fprintf(w, "| load average at start | %s |\n", load)
	fmt.Fprintf(w, "| Go | %s %s/%s |\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "| MySQL | %s |\n", mysqlVersion)
	fmt.Fprintf(w, "| Redis | %s (%s) |\n", redisVersion, b.RedisURL)
	fmt.Fprintf(w, "| open-file limit | %d |\n", b.NoFile)
}

// benchCommand is the command line of cmd/seatflow-bench, as make bench runs it.
func benchCommand() string {
	cmd := "go run ./cmd/seatflow-bench"
	if len(os.Args) > 1 {
		cmd += " " + strings.Join(os.Args[1:], " ")
	}
	return cmd
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	f, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(f))[:3], " ")
}

// verdict is PASS when ok, MISS otherwise.
func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "**MISS**"
}

// table writes a markdown table.
func table(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}

// latencies summarises durations.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

func (l latencies) max() time.Duration {
	if len(l) == 0 {
		return 0
	}
	return slices.Max(l)
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
