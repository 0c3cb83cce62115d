package loadtest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// cluster is what the load test started: a private redis-server and the instances.
type cluster struct {
	opts  *Options
	out   io.Writer
	mu    sync.Mutex
	procs map[int]*exec.Cmd // instance index → running child
	waits map[int]chan struct{}
	redis bool // the private redis-server was started by us
}

func newCluster(o *Options, out io.Writer) *cluster {
	return &cluster{opts: o, out: out, procs: map[int]*exec.Cmd{}, waits: map[int]chan struct{}{}}
}

func (c *cluster) redisCLI(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	full := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(c.opts.RedisPort)}, args...)
	out, err := exec.CommandContext(ctx, "redis-cli", full...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *cluster) redisUp(ctx context.Context) bool {
	out, err := c.redisCLI(ctx, "ping")
	return err == nil && out == "PONG"
}

// startRedis starts the private redis-server (no persistence: a restart loses every key).
func (c *cluster) startRedis(ctx context.Context) error {
	if err := os.MkdirAll(c.opts.Dir, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "redis-server",
		"--port", strconv.Itoa(c.opts.RedisPort), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "yes",
		"--pidfile", filepath.Join(c.opts.Dir, "redis.pid"),
		"--logfile", filepath.Join(c.opts.Dir, "redis.log"),
		"--maxclients", "10000")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start redis-server on %d: %v: %s", c.opts.RedisPort, err, out)
	}
	c.redis = true
	for i := 0; i < 100; i++ {
		if c.redisUp(ctx) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %d did not answer PING", c.opts.RedisPort)
}

// stopRedis shuts the private redis-server down without saving (its data is lost).
func (c *cluster) stopRedis(ctx context.Context) error {
	if _, err := c.redisCLI(ctx, "shutdown", "nosave"); err != nil && c.redisUp(ctx) {
		return fmt.Errorf("shutdown redis on %d: %w", c.opts.RedisPort, err)
	}
	for i := 0; i < 50 && c.redisUp(ctx); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// prepareDatabase creates the load database (dropping it first when fresh).
func (c *cluster) prepareDatabase(ctx context.Context, fresh bool) error {
	cfg, err := mysql.ParseDSN(c.opts.MySQLDSN)
	if err != nil {
		return err
	}
	name := cfg.DBName
	if strings.ContainsAny(name, "`'\" ;") {
		return fmt.Errorf("odd database name %q", name)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if fresh {
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// startInstance runs instance i of the binary as a child (killed with us: Pdeathsig) and
// waits until /readyz answers.
func (c *cluster) startInstance(ctx context.Context, i int) error {
	addr := c.opts.Instances[i]
	if portOpen(addr) {
		return fmt.Errorf("%s is already in use (is `make cluster-up` running? then use -start=false)", addr)
	}
	logf, err := os.OpenFile(filepath.Join(c.opts.Dir, fmt.Sprintf("app-%d.log", i+1)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.opts.Bin, "serve")
	cmd.Env = c.opts.serverEnv(i, addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start instance %s: %w", addr, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	c.mu.Lock()
	c.procs[i], c.waits[i] = cmd, done
	c.mu.Unlock()
	_ = os.WriteFile(filepath.Join(c.opts.Dir, fmt.Sprintf("app-%d.pid", i+1)), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	return waitReady(ctx, addr, done, 90*time.Second)
}

// killInstance sends SIGKILL to instance i (no shutdown of any kind) and waits for it.
func (c *cluster) killInstance(i int) error {
	c.mu.Lock()
	cmd, done := c.procs[i], c.waits[i]
	delete(c.procs, i)
	c.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("instance %d is not running", i)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("instance %d did not die", i)
	}
	return nil
}

// stopAll stops every instance (SIGTERM, then SIGKILL) and the private redis.
func (c *cluster) stopAll() {
	c.mu.Lock()
	procs := c.procs
	waits := c.waits
	c.procs = map[int]*exec.Cmd{}
	c.mu.Unlock()
	for i, cmd := range procs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-waits[i]:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-waits[i]
		}
		_ = os.Remove(filepath.Join(c.opts.Dir, fmt.Sprintf("app-%d.pid", i+1)))
	}
	if c.redis {
		_ = c.stopRedis(context.Background())
		c.redis = false
	}
}

func portOpen(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// waitReady polls /readyz until it answers 200, the process exits or the time is up.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}, limit time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("instance %s exited during start (see its log)", addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("instance %s not ready within %s", addr, limit)
}

// externalRestart restarts a killed instance of `make cluster-up` (-start=false) by
// running the script again: it starts every instance that is not running.
func externalRestart(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "scripts/cluster-up.sh", "--no-build").CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/cluster-up.sh: %v: %s", err, out)
	}
	return nil
}

// externalKill kill -9s instance i of `make cluster-up` by its pid file.
func externalKill(i int) error {
	b, err := os.ReadFile(fmt.Sprintf("/tmp/seatflow-cluster-up/app-%d.pid", i+1))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("bad pid file of instance %d", i+1)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for j := 0; j < 100; j++ {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
