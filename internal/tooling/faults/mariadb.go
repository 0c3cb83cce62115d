package faults

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// MariaDB is a private mariadbd the restart scenario may stop and start (the shared test
// server keeps serving every other test). It runs as the current user on a port of its
// own, with a data directory of the test's, and without grant tables (root, no password).
type MariaDB struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// mariadbd is the server binary.
const mariadbd = "/usr/sbin/mariadbd"

// StartMariaDB installs a data directory and starts the server; it is stopped when the
// test ends.
func StartMariaDB(t *testing.T) *MariaDB {
	t.Helper()
	selected(t)
	if _, err := os.Stat(mariadbd); err != nil {
		t.Fatalf("the MySQL restart scenario needs %s (make services installs it): %v", mariadbd, err)
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &MariaDB{dir: dir, port: ln.Addr().(*net.TCPAddr).Port}
	ln.Close()
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--user="+currentUser(), "--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = m.Stop() })
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	return m
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}

// ServerDSN is the server's DSN without a database.
func (m *MariaDB) ServerDSN() string { return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", m.port) }

// Start starts the server and waits (at most 60 s) until it answers.
func (m *MariaDB) Start() error {
	m.cmd = exec.Command(mariadbd, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"),
		fmt.Sprintf("--port=%d", m.port), "--socket="+filepath.Join(m.dir, "mysqld.sock"), "--bind-address=127.0.0.1",
		"--user="+currentUser(), "--skip-grant-tables", "--skip-log-bin", "--skip-name-resolve",
		"--innodb-buffer-pool-size=64M", "--log-error="+filepath.Join(m.dir, "error.log"),
		"--pid-file="+filepath.Join(m.dir, "mariadbd.pid"))
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("start mariadbd: %w", err)
	}
	m.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(m.cmd, m.done)
	db, err := sql.Open("mysql", m.ServerDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-m.done:
			log, _ := os.ReadFile(filepath.Join(m.dir, "error.log"))
			return fmt.Errorf("mariadbd exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd does not answer on port %d: %w", m.port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop shuts the server down (SIGTERM: a clean shutdown, open connections are closed)
// and waits for it to exit; it is killed after 30 s.
func (m *MariaDB) Stop() error {
	if m.cmd == nil || m.cmd.Process == nil {
		return nil
	}
	select {
	case <-m.done:
		return nil
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
		return fmt.Errorf("mariadbd did not stop within 30 s; killed")
	}
}
