package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childServer is a server in a process of its own (the server binary's `serve`, or a peer
// measured beside it), so its memory and CPU are its own.
type childServer struct {
	cmd *exec.Cmd
	URL string
	// MetricsURL is its /metrics, on SEATFLOW_METRICS_ADDR (never the API's address);
	// empty for a peer.
	MetricsURL string
	done       chan struct{}
}

// startChildServer runs the server binary's serve command on the bench database and prefix.
func (b *benchEnv) startChildServer(ctx context.Context, extraEnv ...string) (*childServer, error) {
	return b.startChildServerLogging(ctx, nil, extraEnv...)
}

// startChildServerLogging is startChildServer with the child's log (its stderr) written to
// stderr instead of the bench's stderr, when stderr is not nil.
func (b *benchEnv) startChildServerLogging(ctx context.Context, stderr io.Writer, extraEnv ...string) (*childServer, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.ServerBin, "serve")
	cmd.Env = append(os.Environ(), "SEATFLOW_ADDR="+addr, "SEATFLOW_METRICS_ADDR="+metricsAddr, "SEATFLOW_MYSQL_DSN="+b.MySQLDSN, "SEATFLOW_REDIS_URL="+b.RedisURL,
		"SEATFLOW_REDIS_CLUSTER=", "SEATFLOW_REDIS_PREFIX="+b.Prefix, "SEATFLOW_JWT_SECRET="+b.Secret,
		"SEATFLOW_TICKET_KEY_SECRET="+b.ticketSecret(),
		"SEATFLOW_RECONCILE_EVERY=0", "SEATFLOW_LOG_LEVEL=error", "SEATFLOW_HOLDS_PER_MINUTE=0", "SEATFLOW_PAYMENT_PROVIDER=test",
		"SEATFLOW_COST_RESTORE=1000000000", "SEATFLOW_WS_MAX_CONNS_PER_CLIENT=0", "SEATFLOW_WS_MAX_CONNS_PER_SESSION=0") // every watcher comes from one address
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stderr = stderr
	url := "http://" + addr
	c, err := startChild(ctx, cmd, url, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	if c != nil {
		c.MetricsURL = "http://" + metricsAddr + "/metrics"
	}
	return c, err
}

// freeAddr is a loopback address no one listens on (a port the kernel just handed out).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startChild starts cmd, which will serve url, and waits up to 90 s until ready says it
// answers.
func startChild(ctx context.Context, cmd *exec.Cmd, url string, ready func() bool) (*childServer, error) {
	// The child must not outlive a bench that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childServer{cmd: cmd, URL: url, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	deadline := time.Now().Add(90 * time.Second)
	for !ready() {
		select {
		case <-c.done:
			return nil, fmt.Errorf("%s exited: %v", cmd.Path, cmd.ProcessState)
		case <-ctx.Done():
			c.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Stop()
			return nil, fmt.Errorf("%s did not answer within 90s", cmd.Path)
		}
	}
	return c, nil
}

// Stop sends SIGTERM (the server closes its websockets) and kills after 15 s.
func (c *childServer) Stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// rssBytes is the child's resident set size from /proc.
func (c *childServer) rssBytes() int64 {
	f, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(f), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuSeconds is the CPU time (user + system, every thread) the child has used, from
// /proc/<pid>/stat, whose times are in USER_HZ (100 per second on Linux, whatever the
// kernel's own tick).
func (c *childServer) cpuSeconds() float64 { return cpuSecondsOf(strconv.Itoa(c.cmd.Process.Pid)) }

// benchCPUSeconds is the CPU time the bench process itself (its clients) has used.
func benchCPUSeconds() float64 { return cpuSecondsOf("self") }

// cpuSecondsOf reads the CPU time of process pid ("self": this one) from /proc.
func cpuSecondsOf(pid string) float64 {
	f, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	s := string(f)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64) // field 14
	stime, _ := strconv.ParseFloat(fields[12], 64) // field 15
	return (utime + stime) / 100
}

// metrics reads gauges from the child's /metrics.
func (c *childServer) metrics(names ...string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get(c.MetricsURL)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		for _, n := range names {
			if f[0] == n {
				out[n], _ = strconv.ParseFloat(f[1], 64)
			}
		}
	}
	return out
}
