package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seatflow/internal/auth"
	"seatflow/internal/cli"
)

// run runs the binary's Run as main would, returning stdout, stderr and the exit status.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), args, &out, &errOut)
	if err != nil {
		errOut.WriteString("seatflow: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), cli.ExitCode(err)
}

// embeddedEnv clears the settings that choose real mode; every SQLite file goes to a
// temporary directory.
func embeddedEnv(t *testing.T) string {
	t.Helper()
	for _, k := range []string{"MYSQL_DSN", "REDIS_URL", "REDIS_CLUSTER", "JWT_SECRET"} {
		t.Setenv("SEATFLOW_"+k, "")
	}
	db := filepath.Join(t.TempDir(), "seatflow.db")
	t.Setenv("SEATFLOW_SQLITE_PATH", db)
	return db
}

func TestHelpListsCommands(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "help"} {
		out, errOut, code := run(t, arg)
		if code != 0 || errOut != "" {
			t.Fatalf("seatflow %s: exit %d, stderr %q", arg, code, errOut)
		}
		for _, cmd := range []string{"serve", "migrate", "seed-demo", "token", "reconcile", "verify"} {
			if !strings.Contains(out, "\n  "+cmd+" ") {
				t.Errorf("seatflow %s does not list %s on a line of its own:\n%s", arg, cmd, out)
			}
		}
		if strings.Contains(out, "-hold-ttl duration") {
			t.Errorf("seatflow %s lists serve's flags instead of the commands:\n%s", arg, out)
		}
	}
}

// TestCommandHelpShowsOwnFlags: each command's -h lists its own flags and no other.
func TestCommandHelpShowsOwnFlags(t *testing.T) {
	cases := []struct {
		args      []string
		want, not []string
	}{
		{[]string{"token", "-h"}, []string{"-sub", "-role", "-ttl", "SEATFLOW_JWT_SECRET"}, []string{"-addr", "-hold-ttl", "-mysql-dsn"}},
		{[]string{"serve", "--help"}, []string{"-addr", "-hold-ttl", "-mysql-dsn", "$SEATFLOW_HOLD_TTL"}, []string{"-sub "}},
		{[]string{"migrate", "-h"}, []string{"-mysql-dsn", "-sqlite-path"}, []string{"-hold-ttl", "-addr", "-redis-url"}},
		{[]string{"verify", "-h"}, []string{"-mysql-dsn", "-redis-url"}, []string{"-hold-ttl", "-addr"}},
		{[]string{"reconcile", "-h"}, []string{"-once", "-redis-url"}, []string{"-hold-ttl", "-addr"}},
		{[]string{"help", "seed-demo"}, []string{"-timezone", "-mysql-dsn"}, []string{"-hold-ttl", "-addr"}},
	}
	for _, c := range cases {
		out, errOut, code := run(t, c.args...)
		if code != 0 || errOut != "" {
			t.Fatalf("seatflow %s: exit %d, stderr %q", strings.Join(c.args, " "), code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("seatflow %s lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		for _, n := range c.not {
			if strings.Contains(out, n) {
				t.Errorf("seatflow %s shows %q, another command's flag:\n%s", strings.Join(c.args, " "), n, out)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	embeddedEnv(t)
	for _, args := range [][]string{{"bogus"}, {"token", "--sub", "alice"}, {"token", "--bogus"}, {"verify", "-hold-ttl", "1m"}} {
		out, errOut, code := run(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("seatflow %s: exit %d, stdout %q, stderr %q; want exit 2 and a message on stderr only",
				strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestTokenRefusesBadFlags: a role, lifetime or user id the token command cannot sign is a
// usage error naming the flag and what it accepts, never a token (an expired one included)
// nor an API error's wording.
func TestTokenRefusesBadFlags(t *testing.T) {
	embeddedEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sub", "alice", "--role", "superuser"}, `invalid value "superuser" for flag -role: want ` + auth.RoleList()},
		{[]string{"--sub", "alice", "--role", "customer", "--ttl", "-1h"}, `invalid value "-1h0m0s" for flag -ttl: want a duration above 0`},
		{[]string{"--sub", "alice", "--role", "customer", "--ttl", "0s"}, `for flag -ttl: want a duration above 0`},
		{[]string{"--sub", " alice", "--role", "customer"}, `invalid value " alice" for flag -sub: the user id starts or ends with white space`},
	} {
		out, errOut, code := run(t, append([]string{"token"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "code=") {
			t.Errorf("seatflow token %s: exit %d, stdout %q, stderr %q; want exit 2 and %q",
				strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	// The usage line lists the roles the token command accepts.
	if _, errOut, _ := run(t, "token", "--sub", "alice"); !strings.Contains(errOut, "--role "+strings.Join(auth.Roles, "|")) {
		t.Errorf("usage without a role: %q, want it to list %v", errOut, auth.Roles)
	}
}

func TestTokenSecret(t *testing.T) {
	t.Run("EmbeddedModeSaysWhichSecret", func(t *testing.T) {
		embeddedEnv(t)
		out, errOut, code := run(t, "token", "--sub", "alice", "--role", "customer")
		if code != 0 || !strings.Contains(errOut, "embedded demo secret") || !strings.Contains(errOut, "embedded mode") {
			t.Fatalf("exit %d, stderr %q: want a token and a note that it is the embedded demo secret's", code, errOut)
		}
		// It is the token an embedded server accepts.
		u, err := (&auth.Authenticator{Secret: []byte("seatflow-embedded-mode-demo-secret"), Now: time.Now}).Verify(strings.TrimSpace(out))
		if err != nil || u.ID != "alice" || u.Role != "customer" {
			t.Fatalf("token %q: user %+v, %v", out, u, err)
		}
	})
	t.Run("RealModeRefusesWithoutSecret", func(t *testing.T) {
		embeddedEnv(t)
		t.Setenv("SEATFLOW_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/seatflow")
		t.Setenv("SEATFLOW_REDIS_URL", "redis://127.0.0.1:6379/0")
		out, errOut, code := run(t, "token", "--sub", "alice", "--role", "admin")
		if code != 2 || out != "" || !strings.Contains(errOut, "SEATFLOW_JWT_SECRET is not set") ||
			!strings.Contains(errOut, "the server's SEATFLOW_JWT_SECRET") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want a refusal saying where the secret comes from", code, out, errOut)
		}
	})
	t.Run("SignsWithTheGivenSecret", func(t *testing.T) {
		embeddedEnv(t)
		t.Setenv("SEATFLOW_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/seatflow")
		t.Setenv("SEATFLOW_JWT_SECRET", "a-real-secret-of-some-length")
		out, errOut, code := run(t, "token", "--sub", "alice", "--role", "admin", "--ttl", "1h")
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		u, err := (&auth.Authenticator{Secret: []byte("a-real-secret-of-some-length"), Now: time.Now}).Verify(strings.TrimSpace(out))
		if err != nil || u.ID != "alice" || u.Role != "admin" {
			t.Fatalf("token %q: user %+v, %v", out, u, err)
		}
	})
}

// TestTokenLifetime: seatflow token issues no token the server would refuse for living
// longer than SEATFLOW_MAX_TOKEN_LIFETIME.
func TestTokenLifetime(t *testing.T) {
	t.Run("LongerThanTheDefaultRefused", func(t *testing.T) {
		embeddedEnv(t)
		t.Setenv("SEATFLOW_MAX_TOKEN_LIFETIME", "")
		out, errOut, code := run(t, "token", "--sub", "alice", "--role", "customer", "--ttl", "721h")
		if code != 2 || out != "" || !strings.Contains(errOut, "SEATFLOW_MAX_TOKEN_LIFETIME") || !strings.Contains(errOut, "720h") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want a refusal naming SEATFLOW_MAX_TOKEN_LIFETIME and its 720h", code, out, errOut)
		}
	})
	t.Run("TheConfiguredMaximumApplies", func(t *testing.T) {
		embeddedEnv(t)
		t.Setenv("SEATFLOW_MAX_TOKEN_LIFETIME", "2h")
		if _, errOut, code := run(t, "token", "--sub", "alice", "--role", "customer", "--ttl", "3h"); code != 2 {
			t.Fatalf("--ttl 3h with a 2h maximum: exit %d, stderr %q; want 2", code, errOut)
		}
		if out, errOut, code := run(t, "token", "--sub", "alice", "--role", "customer", "--ttl", "2h"); code != 0 || out == "" {
			t.Fatalf("--ttl 2h with a 2h maximum: exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("AMaximumThatDoesNotParse", func(t *testing.T) {
		embeddedEnv(t)
		t.Setenv("SEATFLOW_MAX_TOKEN_LIFETIME", "a month")
		if _, errOut, code := run(t, "token", "--sub", "alice", "--role", "customer"); code != 2 || !strings.Contains(errOut, "SEATFLOW_MAX_TOKEN_LIFETIME") {
			t.Fatalf("exit %d, stderr %q; want a usage error naming SEATFLOW_MAX_TOKEN_LIFETIME", code, errOut)
		}
	})
}

// TestEmbeddedModeRefusals: verify and reconcile --once would look at an empty Redis of
// their own in embedded mode; they refuse before opening anything.
func TestEmbeddedModeRefusals(t *testing.T) {
	db := embeddedEnv(t)
	for _, args := range [][]string{{"verify"}, {"reconcile", "--once"}} {
		out, errOut, code := run(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "SEATFLOW_MYSQL_DSN") || !strings.Contains(errOut, "embedded mode") {
			t.Errorf("seatflow %s: exit %d, stdout %q, stderr %q; want a refusal naming the settings it needs",
				strings.Join(args, " "), code, out, errOut)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused command created the SQLite file %s", db)
	}
}

func TestBadEnvironmentStopsTheStart(t *testing.T) {
	embeddedEnv(t)
	t.Setenv("SEATFLOW_HOLD_TTL", "ten")
	_, errOut, code := run(t, "serve", "-addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, `invalid value "ten" for SEATFLOW_HOLD_TTL`) {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming SEATFLOW_HOLD_TTL", code, errOut)
	}
}
