package app

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/googlewallet"
	"seatflow/internal/httpapi"
	"seatflow/internal/passkit"
	"seatflow/internal/tickets"
)

// settingChecks is each setting's rule for its own value, by variable name without
// SEATFLOW_: parseSettings applies them to every setting after parsing, whatever the
// command, and names the variable (or flag) of a value a rule refuses. A value that does
// not parse at all (a boolean, a number, a duration) is refused by the parse before.
// Rules between settings (real mode needs both stores, a cost budget covers the
// complexity limit, ...) are Config.validate's. Every setting has a bad-value row in
// TestSettingChecks.
var settingChecks = map[string]check{
	"ADDR":         optional(listenAddr), // empty: the mode's default (ParseConfigFor)
	"DEBUG_ADDR":   optional(listenAddr),
	"METRICS_ADDR": optional(listenAddr),
	"MYSQL_DSN":    optional(mysqlDSN),
	"REDIS_URL":    optional(redisURL),
	"REDIS_CLUSTER": optional(func(s string) error {
		for _, node := range strings.Split(s, ",") {
			if err := hostPort(strings.TrimSpace(node)); err != nil {
				return fmt.Errorf("want host:port,host:port,...: %w", err)
			}
		}
		return nil
	}),
	"CACHE_REDIS_URL": optional(redisURL),
	"REDIS_PREFIX": text(func(s string) error {
		if !redisPrefix.MatchString(s) {
			return errors.New("want 1 to 64 letters, digits, '_', '-', '.' or ':' (braces would break the {show:ID} hash tags)")
		}
		return nil
	}),
	"SQLITE_PATH": text(sqlitePath),
	"JWT_SECRET": optional(func(s string) error {
		if len(s) < 16 {
			return errors.New("want at least 16 bytes (e.g. openssl rand -hex 32)")
		}
		return nil
	}),
	"TICKET_KEY_SECRET": optional(func(s string) error {
		if len(s) < tickets.MinSecretBytes {
			return fmt.Errorf("want at least %d bytes (e.g. openssl rand -hex 32)", tickets.MinSecretBytes)
		}
		return nil
	}),
	"HOLD_TTL":            durationAtLeast(time.Minute),
	"WAITLIST_OFFER_TTL":  durationAtLeast(time.Minute),
	"MAX_TOKEN_LIFETIME":  durationAtLeast(time.Minute),
	"GUEST_SESSION_TTL":   durationAtLeast(time.Minute),
	"SALES_CLOSE_AFTER":   durationBetween(time.Minute, 24*time.Hour),
	"WS_MAX_OPERATIONS":   intAtLeast(1),
	"WS_MAX_QUEUED_BYTES": intAtLeast(minWSQueuedBytes),
	"LATE_PAYMENT_WINDOW": durationAtLeast(0),
	"ALLOWED_ORIGINS": optional(func(s string) error {
		for _, o := range strings.Split(s, ",") {
			if err := origin(strings.TrimSpace(o)); err != nil {
				return err
			}
		}
		return nil
	}),
	"TIMEZONE": text(func(s string) error {
		_, err := timeZone(s)
		return err
	}),
	"COMPLEXITY_LIMIT":          intAtLeast(1),
	"COST_BUDGET":               intAtLeast(0),
	"COST_RESTORE":              intAtLeast(0),
	"MAX_INFLIGHT_COST":         intAtLeast(0),
	"MAX_DEPTH":                 intAtLeast(1),
	"MAX_TOKENS":                intAtLeast(1),
	"MAX_FIELDS":                intAtLeast(0),
	"MAX_ALIASES":               intAtLeast(0),
	"MAX_ERRORS":                intAtLeast(0),
	"MAX_RESPONSE_BYTES":        intAtLeast(0),
	"MAX_BODY_BYTES":            intAtLeast(1024),
	"MAX_URL_BYTES":             intAtLeast(0),
	"MAX_PERSISTED_BYTES":       intAtLeast(0),
	"WS_MAX_CONNS":              intAtLeast(0),
	"WS_MAX_CONNS_PER_CLIENT":   intAtLeast(0),
	"WS_MAX_CONNS_PER_SESSION":  intAtLeast(0),
	"CROWD_COST_BUDGET":         intAtLeast(0),
	"CROWD_COST_RESTORE":        intAtLeast(0),
	"GUEST_SESSIONS_PER_MINUTE": intAtLeast(0),
	"HOLDS_PER_MINUTE":          intAtLeast(0),
	"QUEUE_JOINS_PER_MINUTE":    intAtLeast(0),
	"ORDER_CHANGES_PER_MINUTE":  intAtLeast(0),
	"LOCAL_CACHE_BYTES":         intAtLeast(512 << 10), // freecache's smallest size: less is silently raised
	"RESPONSE_CACHE_BYTES":      intAtLeast(0),
	"MYSQL_MAX_CONNS":           intAtLeast(1),
	"PERSISTED_QUERIES": optional(func(s string) error {
		_, err := httpapi.LoadManifest(s)
		return err
	}),
	"TRUSTED_PROXIES": optional(func(s string) error {
		_, err := httpapi.ParseTrustedProxies(s)
		return err
	}),
	"LOADER_WAIT": durationBetween(0, time.Second),
	"LIVE_TICK":   durationBetween(0, 5*time.Second),
	"LIVE_WRITE_SHARE": func(v any) error {
		if f := v.(float64); f < 0.05 || f > 1 {
			return errors.New("want 0.05 to 1")
		}
		return nil
	},
	// 0 turns the reconciler off (tests, benchmarks); a period under a second would keep
	// one instance reconciling without pause.
	"RECONCILE_EVERY": duration(func(d time.Duration) error {
		if d != 0 && d < time.Second {
			return errors.New("want 0 (off) or at least 1s")
		}
		return nil
	}),
	"WRITE_TIMEOUT":         durationAtLeast(time.Second),
	"REQUEST_TIMEOUT":       durationAtLeast(0),
	"LOG_LEVEL":             oneOf("debug", "info", "warn", "error"),
	"PAYMENT_PROVIDER":      optional(choice(seatflow.ProviderStripe, seatflow.ProviderTest)),
	"STRIPE_API_KEY":        optional(prefixed("sk_", "rk_")),
	"STRIPE_WEBHOOK_SECRET": optional(prefixed("whsec_")),
	"WALLET_APPLE_CERT":     optional(readableFile),
	"WALLET_APPLE_KEY":      optional(readableFile),
	"WALLET_APPLE_WWDR":     optional(readableFile),
	"WALLET_APPLE_PASS_TYPE_ID": optional(func(s string) error {
		if !passTypeID.MatchString(s) {
			return errors.New("want a pass type identifier such as pass.com.example.tickets")
		}
		return nil
	}),
	"WALLET_APPLE_TEAM_ID": optional(func(s string) error {
		if !teamID.MatchString(s) {
			return errors.New("want an Apple team identifier: 10 capital letters and digits, e.g. A1B2C3D4E5")
		}
		return nil
	}),
	"PUBLIC_URL": optional(func(s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return errors.New("want an http:// or https:// URL with no query, e.g. https://tickets.example")
		}
		return nil
	}),
	"WALLET_GOOGLE_KEY": optional(func(s string) error {
		_, err := googlewallet.LoadAccount(s)
		return err
	}),
	"WALLET_GOOGLE_ISSUER_ID": optional(func(s string) error {
		if strings.Trim(s, "0123456789") != "" {
			return errors.New("want the issuer id's digits, e.g. 3388000000012345678")
		}
		return nil
	}),
	"WALLET_APNS":         text(choice("off", "production", "development")),
	"WALLET_APNS_KEY":     optional(passkit.CheckAPNsKey),
	"WALLET_APNS_KEY_ID":  optional(appleID),
	"WALLET_APNS_TEAM_ID": optional(appleID),
	"WALLET_APNS_CERT":    optional(passkit.CheckAPNsCert),
	"STRIPE_API_BASE": optional(func(s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("want an http:// or https:// URL such as http://127.0.0.1:12111")
		}
		return nil
	}),
}

// secretSettings are never repeated in a message: their values are credentials (or hold
// one, as a DSN or a Redis URL may).
var secretSettings = []string{"JWT_SECRET", "TICKET_KEY_SECRET", "MYSQL_DSN", "REDIS_URL", "CACHE_REDIS_URL", "STRIPE_API_KEY", "STRIPE_WEBHOOK_SECRET"}

// check says what is wrong with a setting's parsed value (nil: nothing).
type check func(v any) error

// text is a check of a string setting.
func text(f func(string) error) check {
	return func(v any) error { return f(v.(string)) }
}

// optional is text for a setting whose empty value means "not used".
func optional(f func(string) error) check {
	return text(func(s string) error {
		if s == "" {
			return nil
		}
		return f(s)
	})
}

func duration(f func(time.Duration) error) check {
	return func(v any) error { return f(v.(time.Duration)) }
}

func durationAtLeast(least time.Duration) check {
	return duration(func(d time.Duration) error {
		if d < least {
			return fmt.Errorf("want at least %s", least)
		}
		return nil
	})
}

func durationBetween(least, most time.Duration) check {
	return duration(func(d time.Duration) error {
		if d < least || d > most {
			return fmt.Errorf("want %s to %s", least, most)
		}
		return nil
	})
}

// intAtLeast is an integer setting (int or int64) of least or more.
func intAtLeast(least int64) check {
	return func(v any) error {
		n, ok := v.(int64)
		if !ok {
			n = int64(v.(int))
		}
		if n < least {
			return fmt.Errorf("want at least %d", least)
		}
		return nil
	}
}

// oneOf is a string setting with a fixed set of values (case-insensitive).
func oneOf(values ...string) check {
	return text(func(s string) error { return choice(values...)(strings.ToLower(s)) })
}

func choice(values ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(values, s) {
			return fmt.Errorf("want %s", orList(values))
		}
		return nil
	}
}

// appleID is a check of an Apple key or team id: 10 capital letters and digits.
func appleID(s string) error {
	if len(s) != 10 || strings.TrimLeft(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		return errors.New("want 10 capital letters and digits")
	}
	return nil
}

func prefixed(prefixes ...string) func(string) error {
	return func(s string) error {
		for _, p := range prefixes {
			if strings.HasPrefix(s, p) {
				return nil
			}
		}
		return fmt.Errorf("want a value starting with %s", orList(prefixes))
	}
}

// orList writes "a", "a or b", "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// redisPrefix is what a key prefix may be: no braces (hash tags), no spaces or glob
// characters (the prefix is also a SCAN pattern).
var redisPrefix = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// passTypeID is an Apple pass type identifier (reverse DNS, starting "pass.").
var passTypeID = regexp.MustCompile(`^pass\.[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`)

// teamID is an Apple developer team identifier.
var teamID = regexp.MustCompile(`^[A-Z0-9]{10}$`)

// readableFile is a file the server can open.
func readableFile(s string) error {
	f, err := os.Open(s)
	if err != nil {
		return fmt.Errorf("cannot open it: %w", errors.Unwrap(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		return errors.New("it is a directory: want a PEM file")
	}
	return nil
}

// listenAddr is an address to listen on: [host]:port, port 0 to 65535.
func listenAddr(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want [host]:port, e.g. :8080 or 127.0.0.1:8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want 0 to 65535", port)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("host %q is not a host name or address", host)
	}
	return nil
}

// hostPort is an address to dial: host:port, both present.
func hostPort(s string) error {
	if err := listenAddr(s); err != nil {
		return err
	}
	if host, _, _ := net.SplitHostPort(s); host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

// sqlitePath is a SQLite file whose directory exists (SQLite's own error for a missing
// one is "out of memory").
func sqlitePath(s string) error {
	if s == "" {
		return errors.New("want a file name")
	}
	if strings.HasPrefix(s, "file:") {
		return nil // a SQLite URI (e.g. an in-memory database): SQLite reads it
	}
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory: want a file in it, e.g. %s", s, filepath.Join(s, "seatflow.db"))
	}
	if fi, err := os.Stat(filepath.Dir(s)); err != nil || !fi.IsDir() {
		return fmt.Errorf("no directory %s to hold it", filepath.Dir(s))
	}
	return nil
}

func mysqlDSN(s string) error {
	cfg, err := mysql.ParseDSN(s)
	if err != nil {
		return errors.New("want user:password@tcp(host:port)/database, e.g. root@tcp(127.0.0.1:3306)/seatflow")
	}
	if cfg.DBName == "" {
		return errors.New("the DSN names no database (…/seatflow at its end)")
	}
	return nil
}

func redisURL(s string) error {
	if _, err := redis.ParseURL(s); err != nil {
		return errors.New("want redis://[user:password@]host:port[/db], e.g. redis://127.0.0.1:6379/0")
	}
	return nil
}

// origin is an entry of ALLOWED_ORIGINS: "*" or an origin exactly as a browser sends it
// (scheme://host[:port], lower case, no path), since origins are compared as strings.
func origin(s string) error {
	if s == "*" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "/")) {
		return fmt.Errorf("origin %q: want scheme://host[:port] with no path, e.g. https://tickets.example", s)
	}
	if s != strings.ToLower(s) {
		return fmt.Errorf("origin %q: write it in lower case, as browsers send it", s)
	}
	return nil
}

// checkSettings applies settingChecks to every setting of fs once it is parsed;
// setByFlag names the flags given on the command line (the other values came from
// SEATFLOW_* variables, or are defaults). A refused value is a message naming its
// variable, and its flag when it came from one.
func checkSettings(fs *flag.FlagSet, setByFlag map[string]bool) error {
	var first error
	fs.VisitAll(func(f *flag.Flag) {
		key := strings.TrimPrefix(envName(f.Name), "SEATFLOW_")
		c, ok := settingChecks[key]
		if !ok || first != nil {
			return
		}
		err := c(f.Value.(flag.Getter).Get())
		if err == nil {
			return
		}
		shown := strconv.Quote(f.Value.String())
		if slices.Contains(secretSettings, key) {
			shown = "(not shown)"
		}
		where := envName(f.Name)
		if setByFlag[f.Name] {
			where = "flag -" + f.Name + " (" + where + ")"
		} else if os.Getenv(where) == "" {
			where = "the default of " + where
		}
		first = fmt.Errorf("invalid value %s for %s: %w", shown, where, err)
	})
	return first
}
