package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"seatflow/internal/tooling/testenv"
)

// binary is the seatflow binary built from this tree by TestMain, as make run builds it.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seatflow-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "seatflow")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the seatflow binary:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	// No goroutine may outlive the tests: the serve command runs the whole instance (HTTP
	// server, background work, embedded stores) until its context ends. Nothing is
	// ignored: the tests stop it and close its connections.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

// process is the binary running as a child, its output kept.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *testenv.SyncBuffer
	done           chan struct{}
}

// embeddedProcessEnv is the caller's environment without any SEATFLOW_* setting (embedded
// mode), plus extra.
func embeddedProcessEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEATFLOW_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// start runs cmd (its environment and directory set by the caller) and returns at once.
func start(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd, stdout: &testenv.SyncBuffer{}, stderr: &testenv.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// waitFor waits until the process's stdout or stderr contains want.
func (p *process) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for !strings.Contains(p.stdout.String()+p.stderr.String(), want) {
		select {
		case <-p.done:
			t.Fatalf("exited before printing %q; stdout:\n%s\nstderr:\n%s", want, p.stdout, p.stderr)
		case <-deadline:
			t.Fatalf("no %q after 90s; stdout:\n%s\nstderr:\n%s", want, p.stdout, p.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// interrupt sends SIGINT to the process group, as Ctrl-C in a terminal does, and waits for
// the end.
func (p *process) interrupt(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGINT; stderr:\n%s", p.stderr)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// logLines are the JSON log lines of stderr whose level is one of levels.
func logLines(stderr string, levels ...string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		for _, lv := range levels {
			if strings.Contains(l, `"level":"`+lv+`"`) {
				out = append(out, l)
			}
		}
	}
	return out
}

// TestEmbeddedStartAndCtrlC runs the built binary as make run does, twice on one SQLite
// file (a first start, then a restart), each ended by SIGINT: it exits 0, logs once that
// the embedded Redis starts empty by design, calls the seat maps it builds at the restart
// what they are (at INFO, not as drift), and logs no warning or error.
func TestEmbeddedStartAndCtrlC(t *testing.T) {
	dir := t.TempDir()
	for _, run := range []string{"first start", "restart"} {
		t.Run(strings.ReplaceAll(run, " ", ""), func(t *testing.T) {
			cmd := exec.Command(binary)
			cmd.Dir = dir
			cmd.Env = embeddedProcessEnv("SEATFLOW_ADDR=" + freeAddr(t))
			p := start(t, cmd)
			p.waitFor(t, "admin token")
			if run == "restart" {
				p.waitFor(t, "built seat maps from the database")
			}
			p.interrupt(t)
			stderr := p.stderr.String()
			if code := p.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit status %d after SIGINT, want 0; stderr:\n%s", code, stderr)
			}
			if n := strings.Count(stderr, "starts empty at every start by design"); n != 1 {
				t.Errorf("the embedded Redis is said to start empty %d times, want once:\n%s", n, stderr)
			}
			if bad := logLines(stderr, "WARN", "ERROR"); len(bad) > 0 || strings.Contains(stderr, "repaired drift") {
				t.Errorf("an embedded %s logs warnings or drift: %q\nstderr:\n%s", run, bad, stderr)
			}
			if !strings.Contains(stderr, `"msg":"shutting down"`) {
				t.Errorf("no shutdown line:\n%s", stderr)
			}
			if run == "restart" {
				built := logLines(stderr, "INFO")
				if !strings.Contains(strings.Join(built, "\n"), `"msg":"built seat maps from the database (the embedded Redis starts empty)","showtimes":`) {
					t.Errorf("the restart does not log the seat maps it built at INFO:\n%s", stderr)
				}
			}
		})
	}
}

// TestMakeRunCtrlC: Ctrl-C on `make run` (SIGINT to make and the server, one process
// group) ends the server cleanly and make prints no error.
func TestMakeRunCtrlC(t *testing.T) {
	makePath, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command(makePath, "--no-print-directory", "-C", "..", "run")
	// As from a terminal: not a sub-make of the make that may be running these tests.
	for _, kv := range embeddedProcessEnv("SEATFLOW_ADDR="+freeAddr(t), "SEATFLOW_SQLITE_PATH="+filepath.Join(dir, "seatflow.db")) {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MAKELEVEL" && k != "MFLAGS" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := start(t, cmd)
	p.waitFor(t, "admin token")
	p.interrupt(t)
	out := p.stdout.String() + p.stderr.String()
	if regexp.MustCompile(`make(\[\d+\])?: \*\*\*`).MatchString(out) || strings.Contains(out, "Error") {
		t.Errorf("make reports an error after Ctrl-C:\n%s", out)
	}
	if !strings.Contains(out, `"msg":"shutting down"`) {
		t.Errorf("the server did not shut down on SIGINT:\n%s", out)
	}
	// make itself ends on the SIGINT it got (as any command interrupted in a terminal),
	// silently; what it ran exited 0, or make would say "Error".
	if st := p.cmd.ProcessState; st.ExitCode() != 0 && st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Errorf("make ended with %v, want exit 0 or the SIGINT", st)
	}
}
