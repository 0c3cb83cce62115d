package app

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/cli"
)

// clearStores puts the test in embedded mode whatever the caller's environment holds.
func clearStores(t *testing.T) {
	t.Helper()
	for _, k := range []string{"MYSQL_DSN", "REDIS_URL", "REDIS_CLUSTER", "JWT_SECRET"} {
		t.Setenv("SEATFLOW_"+k, "")
	}
}

func TestEnvironmentSettings(t *testing.T) {
	t.Run("GoodValuesApply", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_HOLD_TTL", "10m")
		t.Setenv("SEATFLOW_CACHE", "false")
		t.Setenv("SEATFLOW_COMPLEXITY_LIMIT", "700")
		cfg, _, err := ParseConfig("test", nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.HoldTTL != 10*time.Minute || cfg.CacheEnabled || cfg.ComplexityLimit != 700 {
			t.Fatalf("got hold TTL %s, cache %t, complexity %d; want 10m, false, 700", cfg.HoldTTL, cfg.CacheEnabled, cfg.ComplexityLimit)
		}
	})
	t.Run("FlagBeatsEnvironment", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_HOLD_TTL", "10m")
		cfg, _, err := ParseConfig("test", []string{"-hold-ttl", "20m"})
		if err != nil || cfg.HoldTTL != 20*time.Minute {
			t.Fatalf("hold TTL %v (err %v), want the flag's 20m", cfg, err)
		}
	})
	t.Run("EmptyIsUnset", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_HOLD_TTL", "")
		cfg, _, err := ParseConfig("test", nil)
		if err != nil || cfg.HoldTTL != 15*time.Minute {
			t.Fatalf("hold TTL %v (err %v), want the default 15m", cfg, err)
		}
	})
	// A value that does not parse fails the start, naming the variable, as the flag would.
	for _, c := range []struct{ key, value, flag, kind, want string }{
		{"HOLD_TTL", "ten", "flag -hold-ttl", "value", "not a duration"},
		{"CACHE", "off", "-cache", "boolean value", "not a boolean"}, // the flag package's own wording
		{"COMPLEXITY_LIMIT", "lots", "flag -complexity-limit", "value", "not a whole number"},
	} {
		t.Run("Bad"+c.key, func(t *testing.T) {
			clearStores(t)
			t.Setenv("SEATFLOW_"+c.key, c.value)
			_, _, envErr := ParseConfig("seatflow serve", nil)
			t.Setenv("SEATFLOW_"+c.key, "")
			_, _, flagErr := ParseConfig("seatflow serve", []string{strings.TrimPrefix(c.flag, "flag ") + "=" + c.value})
			for _, e := range []struct {
				err  error
				name string
			}{{envErr, "SEATFLOW_" + c.key}, {flagErr, c.flag}} {
				want := "invalid " + c.kind + ` "` + c.value + `" for ` + e.name + ": " + c.want
				if e.err == nil || !strings.Contains(e.err.Error(), want) {
					t.Errorf("error = %v, want it to contain %q", e.err, want)
				}
				if got := cli.ExitCode(e.err); got != 2 {
					t.Errorf("exit status of %v = %d, want 2", e.err, got)
				}
			}
		})
	}
	t.Run("MaxTokenLifetimeTooShort", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_MAX_TOKEN_LIFETIME", "30s")
		_, _, err := ParseConfig("test", nil)
		if err == nil || !strings.Contains(err.Error(), "SEATFLOW_MAX_TOKEN_LIFETIME") || cli.ExitCode(err) != 2 {
			t.Fatalf("a 30s token lifetime: %v, want a usage error naming SEATFLOW_MAX_TOKEN_LIFETIME", err)
		}
	})
	t.Run("InvalidConfigurationIsAUsageError", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/seatflow")
		t.Setenv("SEATFLOW_REDIS_URL", "redis://127.0.0.1:6379/0")
		_, _, err := ParseConfig("test", nil)
		if err == nil || !strings.Contains(err.Error(), "SEATFLOW_JWT_SECRET") || cli.ExitCode(err) != 2 {
			t.Fatalf("real mode without a secret: %v (exit %d), want a usage error naming SEATFLOW_JWT_SECRET", err, cli.ExitCode(err))
		}
	})
}

func TestCommandFlags(t *testing.T) {
	clearStores(t)
	help := func(keys []string) string {
		t.Helper()
		_, _, err := ParseConfigFor("seatflow x", keys, nil, []string{"-h"})
		h, ok := err.(cli.Help)
		if !ok {
			t.Fatalf("-h returned %v, want cli.Help", err)
		}
		return h.Flags
	}
	if all := help(nil); !strings.Contains(all, "-hold-ttl") || !strings.Contains(all, "-addr") {
		t.Errorf("every setting's -h lacks -hold-ttl or -addr:\n%s", all)
	}
	some := help(storeSettings)
	if !strings.Contains(some, "-mysql-dsn") || strings.Contains(some, "-hold-ttl") {
		t.Errorf("the store settings' -h must list -mysql-dsn and not -hold-ttl:\n%s", some)
	}
	// A setting that is not the command's flag still comes from the environment.
	t.Setenv("SEATFLOW_HOLD_TTL", "3m")
	cfg, _, err := ParseConfigFor("seatflow x", storeSettings, nil, nil)
	if err != nil || cfg.HoldTTL != 3*time.Minute {
		t.Fatalf("hold TTL %v (err %v), want 3m from the environment", cfg, err)
	}
	if _, _, err := ParseConfigFor("seatflow x", storeSettings, nil, []string{"-hold-ttl", "3m"}); err == nil ||
		!strings.Contains(err.Error(), "-hold-ttl") || cli.ExitCode(err) != 2 {
		t.Fatalf("-hold-ttl on a command without it: %v, want a usage error naming it", err)
	}
}

// TestTicketKeySecretSetting: outside embedded mode a command that signs tickets (serve,
// ticket-keys) needs SEATFLOW_TICKET_KEY_SECRET of at least 32 bytes; one that signs none
// (migrate, verify) does not.
func TestTicketKeySecretSetting(t *testing.T) {
	clearStores(t)
	t.Setenv("SEATFLOW_TICKET_KEY_SECRET", "")
	real := []string{"-mysql-dsn", "root@tcp(127.0.0.1:3306)/x", "-redis-url", "redis://127.0.0.1:6379/0",
		"-jwt-secret", "0123456789abcdef", "-payment-provider", "test"}
	for name, c := range map[string]struct {
		keys  []string
		flags []string
		err   string
	}{
		"ServeWithout":     {nil, real, "set SEATFLOW_TICKET_KEY_SECRET outside embedded mode"},
		"ServeShort":       {nil, append(real[:8:8], "-ticket-key-secret", "short"), "(SEATFLOW_TICKET_KEY_SECRET): want at least 32 bytes"},
		"Serve":            {nil, append(real[:8:8], "-ticket-key-secret", strings.Repeat("s", 32)), ""},
		"TicketKeysNeedIt": {ticketKeySettings, real[:4], "SEATFLOW_TICKET_KEY_SECRET"},
		"VerifyDoesNot":    {storeSettings, real[:4], ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("SEATFLOW_JWT_SECRET", "0123456789abcdef")
			_, _, err := ParseConfigFor("x", c.keys, nil, c.flags)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || cli.ExitCode(err) != 2) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
	t.Run("EmbeddedKeepsItsOwnBesideTheDatabase", func(t *testing.T) {
		path := t.TempDir() + "/seatflow.db"
		first, err := embeddedTicketSecret(path)
		if err != nil || len(first) < 32 {
			t.Fatalf("secret %q: %v", first, err)
		}
		if again, _ := embeddedTicketSecret("file:" + path + "?_pragma=x"); again != first {
			t.Fatalf("second start's secret %q, want the first %q", again, first)
		}
		st, err := os.Stat(path + ".ticket-key-secret")
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("secret file: %v %v, want mode 0600", st, err)
		}
	})
}

// TestTimeZoneOneRule: SEATFLOW_TIMEZONE goes through seatflow.Zone, the rule of every time
// zone name, in the setting check (at start, a usage error naming the variable) and in
// Config.Location (the migration's default cinema) alike: "Local", the machine's zone, and
// a name that is no zone are refused by both with the same words, an IANA name taken by both.
func TestTimeZoneOneRule(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{{"Local", false}, {"Mars/Olympus_Mons", false}, {"Europe/Paris", true}, {"UTC", true}} {
		t.Run(c.name, func(t *testing.T) {
			clearStores(t)
			t.Setenv("SEATFLOW_TIMEZONE", c.name)
			cfg, _, checkErr := ParseConfig("seatflow serve", nil)
			_, locErr := (&Config{Timezone: c.name}).Location()
			_, zoneErr := seatflow.Zone(c.name)
			if c.ok {
				if checkErr != nil || locErr != nil || zoneErr != nil || cfg.Timezone != c.name {
					t.Fatalf("check %v, Location %v, seatflow.Zone %v; want %q taken by all three", checkErr, locErr, zoneErr, c.name)
				}
				return
			}
			if zoneErr == nil {
				t.Fatalf("seatflow.Zone(%q) took it", c.name)
			}
			if cli.ExitCode(checkErr) != 2 || !strings.Contains(checkErr.Error(), "SEATFLOW_TIMEZONE") ||
				!strings.HasSuffix(checkErr.Error(), ": "+errTimeZone.Error()) {
				t.Errorf("setting check: %v (exit %d); want a usage error naming SEATFLOW_TIMEZONE, ending %q",
					checkErr, cli.ExitCode(checkErr), errTimeZone)
			}
			if !errors.Is(locErr, errTimeZone) || !strings.Contains(locErr.Error(), "SEATFLOW_TIMEZONE") {
				t.Errorf("Config.Location: %v; want errTimeZone naming SEATFLOW_TIMEZONE", locErr)
			}
		})
	}
}
