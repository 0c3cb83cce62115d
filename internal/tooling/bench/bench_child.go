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

// childServer is `seatflow serve` in a process of its own, so its memory is its own.
type childServer struct {
	cmd *exec.Cmd
	URL string
	// MetricsURL is its /metrics, on SEATFLOW_METRICS_ADDR (never the API's address).
	MetricsURL string
	done       chan struct{}
}

// freeAddr is a loopback address with a port free when it was asked.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startChildServer runs the server binary's serve command on the bench database and prefix.
func (b *benchEnv) startChildServer(ctx context.Context, extraEnv ...string) (*childServer, error) {
	exe := b.ServerBin
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "serve")
	cmd.Env = append(os.Environ(), "SEATFLOW_ADDR="+addr, "SEATFLOW_METRICS_ADDR="+metricsAddr,
		"SEATFLOW_MYSQL_DSN="+b.MySQLDSN, "SEATFLOW_REDIS_URL="+b.RedisURL,
		"SEATFLOW_REDIS_CLUSTER=", "SEATFLOW_REDIS_PREFIX="+b.Prefix, "SEATFLOW_JWT_SECRET="+b.Secret,
		"SEATFLOW_RECONCILE_EVERY=0", "SEATFLOW_LOG_LEVEL=error", "SEATFLOW_HOLDS_PER_MINUTE=0", "SEATFLOW_PAYMENT_PROVIDER=test",
		"SEATFLOW_COST_RESTORE=1000000000", "SEATFLOW_WS_MAX_CONNS_PER_CLIENT=0") // every watcher comes from one address
	cmd.Env = append(cmd.Env, extraEnv...)
	// The child must not outlive a bench that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stdout = io.Discard
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childServer{cmd: cmd, URL: "http://" + addr, MetricsURL: "http://" + metricsAddr + "/metrics", done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(c.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			return c, nil
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("child server exited: %v", cmd.ProcessState)
		case <-ctx.Done():
			c.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Stop()
			return nil, fmt.Errorf("child server did not answer /healthz within 90s")
		}
	}
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
