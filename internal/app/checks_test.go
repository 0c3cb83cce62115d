package app

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"seatflow/internal/cli"
)

// badValue is a value a setting must refuse, and a piece of the message that says why.
type badValue struct{ value, want string }

// notBoolean is the bad value of every boolean setting (the parse refuses it).
var notBoolean = []badValue{{"maybe", "not a boolean"}}

// badValues has a row for every setting of the server: TestSettingChecks fails on a
// setting without one, so a new setting comes with its bad values (and its check in
// checks.go).
var badValues = map[string][]badValue{
	"ADDR":                      {{"8080", "want [host]:port"}, {":99999", "want 0 to 65535"}, {"local host:80", "not a host name"}},
	"DEBUG_ADDR":                {{"localhost", "want [host]:port"}},
	"METRICS_ADDR":              {{"10.0.0.5:metrics", "want 0 to 65535"}},
	"MYSQL_DSN":                 {{"root@127.0.0.1/seatflow", "want user:password@tcp(host:port)/database"}, {"root@tcp(127.0.0.1:3306)/", "names no database"}},
	"REDIS_URL":                 {{"redis-host:6379", "want redis://"}},
	"REDIS_CLUSTER":             {{"127.0.0.1", "want host:port,host:port"}, {"127.0.0.1:7101,:7102", "has no host"}},
	"CACHE_REDIS_URL":           {{"http://127.0.0.1:6380", "want redis://"}},
	"REDIS_PREFIX":              {{"sf{x}", "braces would break"}, {"my prefix", "letters, digits"}},
	"SQLITE_PATH":               {{"/", "is a directory"}, {"/nonexistent-dir/seatflow.db", "no directory /nonexistent-dir"}},
	"JWT_SECRET":                {{"too-short", "at least 16 bytes"}},
	"TICKET_KEY_SECRET":         {{"sixteen-bytes-ok", "at least 32 bytes"}},
	"HOLD_TTL":                  {{"30s", "at least 1m"}, {"ten", "not a duration"}},
	"WAITLIST_OFFER_TTL":        {{"30s", "at least 1m"}, {"soon", "not a duration"}},
	"MAX_TOKEN_LIFETIME":        {{"30s", "at least 1m"}, {"forever", "not a duration"}},
	"GUEST_SESSION_TTL":         {{"30s", "at least 1m"}, {"a day", "not a duration"}},
	"SALES_CLOSE_AFTER":         {{"30s", "1m0s to 24h0m0s"}, {"25h", "1m0s to 24h0m0s"}},
	"WS_MAX_OPERATIONS":         {{"0", "at least 1"}},
	"WS_MAX_QUEUED_BYTES":       {{"1000", "at least 65536"}},
	"LATE_PAYMENT_WINDOW":       {{"-1m", "at least 0s"}},
	"ALLOWED_ORIGINS":           {{"tickets.example", "want scheme://host[:port]"}, {"https://tickets.example/", "no path"}, {"https://Tickets.example", "lower case"}},
	"INTROSPECTION":             notBoolean,
	"COMPLEXITY_LIMIT":          {{"-5", "at least 1"}, {"0", "at least 1"}, {"lots", "not a whole number"}},
	"COST_BUDGET":               {{"-1", "at least 0"}},
	"COST_RESTORE":              {{"-1", "at least 0"}},
	"MAX_FIELDS":                {{"-1", "at least 0"}},
	"MAX_ALIASES":               {{"-1", "at least 0"}},
	"MAX_ERRORS":                {{"-1", "at least 0"}},
	"MAX_RESPONSE_BYTES":        {{"-1", "at least 0"}, {"4MiB", "not a whole number"}},
	"MAX_INFLIGHT_COST":         {{"-1", "at least 0"}},
	"MAX_URL_BYTES":             {{"-1", "at least 0"}},
	"MAX_PERSISTED_BYTES":       {{"-1", "at least 0"}},
	"PERSISTED_ONLY":            notBoolean,
	"PERSISTED_QUERIES":         {{"/nonexistent-dir/manifest.json", "no such file"}},
	"TRUSTED_PROXIES":           {{"10.0.0.0/33", "10.0.0.0/33"}, {"proxy.internal", "proxy.internal"}},
	"WS_MAX_CONNS":              {{"-1", "at least 0"}},
	"WS_MAX_CONNS_PER_CLIENT":   {{"-1", "at least 0"}},
	"WS_MAX_CONNS_PER_SESSION":  {{"-1", "at least 0"}},
	"CROWD_COST_BUDGET":         {{"-1", "at least 0"}},
	"CROWD_COST_RESTORE":        {{"-1", "at least 0"}},
	"GUEST_SESSIONS_PER_MINUTE": {{"-1", "at least 0"}, {"many", "not a whole number"}},
	"LOG_LEVEL":                 {{"verbose", "want debug, info, warn or error"}},
	"TIMEZONE":                  {{"Mars/Olympus_Mons", "IANA time zone"}},
	"LOCAL_CACHE_BYTES":         {{"1000", "at least 524288"}},
	"CACHE":                     notBoolean,
	"RESPONSE_CACHE_BYTES":      {{"-1", "at least 0"}},
	"WS_COMPRESSION":            notBoolean,
	"SEAT_MAP_MEMO":             notBoolean,
	"LOADER_WAIT":               {{"5s", "want 0s to 1s"}, {"-1ms", "want 0s to 1s"}},
	"RECONCILE_EVERY":           {{"10ms", "want 0 (off) or at least 1s"}, {"-30s", "want 0 (off)"}},
	"HOLDS_PER_MINUTE":          {{"-1", "at least 0"}},
	"QUEUE_JOINS_PER_MINUTE":    {{"-1", "at least 0"}},
	"LIVE_WRITE_SHARE":          {{"0", "want 0.05 to 1"}, {"1.5", "want 0.05 to 1"}, {"half", "invalid"}},
	"ORDER_CHANGES_PER_MINUTE":  {{"-1", "at least 0"}},
	"MYSQL_MAX_CONNS":           {{"0", "at least 1"}},
	"MAX_DEPTH":                 {{"0", "at least 1"}},
	"MAX_TOKENS":                {{"0", "at least 1"}},
	"MAX_BODY_BYTES":            {{"100", "at least 1024"}},
	"WRITE_TIMEOUT":             {{"0s", "at least 1s"}},
	"REQUEST_TIMEOUT":           {{"-1s", "at least 0s"}},
	"PAYMENT_PROVIDER":          {{"paypal", "want stripe or test"}},
	"STRIPE_API_KEY":            {{"pk_test_123", "starting with sk_ or rk_"}},
	"STRIPE_WEBHOOK_SECRET":     {{"sk_test_123", "starting with whsec_"}},
	"STRIPE_API_BASE":           {{"127.0.0.1:12111", "want an http:// or https:// URL"}},
	"WALLET_APPLE_CERT":         {{"/nonexistent-dir/pass.pem", "cannot open it"}, {"/", "is a directory"}},
	"WALLET_APPLE_KEY":          {{"/nonexistent-dir/pass-key.pem", "cannot open it"}},
	"WALLET_APPLE_WWDR":         {{"/nonexistent-dir/wwdr.pem", "cannot open it"}},
	"WALLET_APPLE_PASS_TYPE_ID": {{"com.example.tickets", "want a pass type identifier"}, {"pass.", "want a pass type identifier"}},
	"WALLET_APPLE_TEAM_ID":      {{"a1b2c3d4e5", "10 capital letters and digits"}, {"ABC", "10 capital letters"}},
	"PUBLIC_URL":                {{"tickets.example", "want an http:// or https:// URL"}, {"https://tickets.example/?x=1", "no query"}},
	"WALLET_GOOGLE_KEY":         {{"/nonexistent/service-account.json", "cannot read the service account's key file"}, {"/dev/null", "not a service account's JSON key file"}},
	"WALLET_GOOGLE_ISSUER_ID":   {{"issuer-1", "want the issuer id's digits"}},
	"LIVE_TICK":                 {{"10s", "want 0s to 5s"}, {"-1ms", "want 0s to 5s"}, {"fast", "invalid"}},
	"WALLET_APNS":               {{"on", "want off, production or development"}, {"sandbox", "want off, production or development"}},
	"WALLET_APNS_KEY":           {{"/nonexistent-dir/AuthKey.p8", "no such file"}},
	"WALLET_APNS_KEY_ID":        {{"abc", "10 capital letters and digits"}, {"abcdefghij", "10 capital letters"}},
	"WALLET_APNS_TEAM_ID":       {{"TEAM-12345", "10 capital letters and digits"}},
	"WALLET_APNS_CERT":          {{"/nonexistent-dir/pass.pem", "no such file"}},
}

// allSettings is every setting's flag, as the server parses them.
func allSettings(t *testing.T) []*flag.Flag {
	t.Helper()
	clearStores(t)
	var flags []*flag.Flag
	if _, _, err := ParseConfigFor("seatflow serve", nil, func(fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	}, nil); err != nil {
		t.Fatal(err)
	}
	return flags
}

// TestSettingChecks gives every setting each of its bad values, as its SEATFLOW_* variable
// and as its flag: the start stops with a usage error (exit status 2) naming the variable
// (or the flag) and saying what a good value is, and never repeats a secret.
func TestSettingChecks(t *testing.T) {
	flags := allSettings(t)
	seen := map[string]bool{}
	for _, f := range flags {
		key := strings.TrimPrefix(envName(f.Name), "SEATFLOW_")
		seen[key] = true
		rows := badValues[key]
		if len(rows) == 0 {
			t.Errorf("SEATFLOW_%s has no bad-value row in badValues: add its bad values (and its check in checks.go)", key)
		}
		for _, row := range rows {
			t.Run(key+"="+row.value, func(t *testing.T) {
				clearStores(t)
				t.Setenv("SEATFLOW_"+key, row.value)
				_, _, envErr := ParseConfig("seatflow serve", nil)
				t.Setenv("SEATFLOW_"+key, "")
				_, _, flagErr := ParseConfig("seatflow serve", []string{"-" + f.Name + "=" + row.value})
				for _, c := range []struct {
					err  error
					name string
				}{{envErr, "SEATFLOW_" + key}, {flagErr, "-" + f.Name}} {
					switch {
					case c.err == nil:
						t.Fatalf("%s=%q was accepted, want it refused (%s)", c.name, row.value, row.want)
					case !strings.Contains(c.err.Error(), c.name) || !strings.Contains(c.err.Error(), row.want):
						t.Errorf("%s=%q: %q, want a message naming %s and saying %q", c.name, row.value, c.err, c.name, row.want)
					case cli.ExitCode(c.err) != 2:
						t.Errorf("%s=%q: exit status %d, want 2 (a usage error)", c.name, row.value, cli.ExitCode(c.err))
					case slices.Contains(secretSettings, key) && strings.Contains(c.err.Error(), row.value):
						t.Errorf("%s: the message repeats the secret: %q", c.name, c.err)
					}
				}
			})
		}
	}
	for key := range badValues {
		if !seen[key] {
			t.Errorf("badValues has a row for SEATFLOW_%s, which is no setting", key)
		}
	}
	for key := range settingChecks {
		if !seen[key] {
			t.Errorf("settingChecks has a check for SEATFLOW_%s, which is no setting: it never runs", key)
		}
	}
}

// TestSettingChecksAcceptGoodValues: the values the project's own tools, docs and compose
// file set pass the checks (the defaults pass in every other test).
func TestSettingChecksAcceptGoodValues(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "manifest.json")
	sum := sha256.Sum256([]byte("{ __typename }"))
	if err := os.WriteFile(manifest, []byte(`{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"`+
		hex.EncodeToString(sum[:])+`","body":"{ __typename }","name":"T","type":"query"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for key, values := range map[string][]string{
		"ADDR":              {":8090", "127.0.0.1:0", "[::1]:8080", "localhost:8080"},
		"MYSQL_DSN":         {"root@tcp(127.0.0.1:3306)/seatflow", "seatflow:pw@tcp(db:3306)/seatflow?tls=false"},
		"REDIS_URL":         {"redis://127.0.0.1:6379/0", "rediss://user:pw@redis.internal:6380/1"},
		"REDIS_CLUSTER":     {"127.0.0.1:7101,127.0.0.1:7102, 127.0.0.1:7103"},
		"REDIS_PREFIX":      {"sf", "sftest_0a1b2c", "app:seatflow"},
		"ALLOWED_ORIGINS":   {"*", "https://tickets.example", "https://tickets.example, http://localhost:5173"},
		"TRUSTED_PROXIES":   {"10.0.0.0/8,127.0.0.1"},
		"TIMEZONE":          {"Pacific/Auckland", "UTC"},
		"LOG_LEVEL":         {"debug", "WARN"},
		"RECONCILE_EVERY":   {"0", "1s"},
		"STRIPE_API_KEY":    {"sk_test_123", "rk_live_abc"},
		"SQLITE_PATH":       {filepath.Join(t.TempDir(), "x.db"), "seatflow.db"},
		"PERSISTED_QUERIES": {manifest},
	} {
		for _, v := range values {
			if key == "MYSQL_DSN" || key == "REDIS_URL" || key == "REDIS_CLUSTER" {
				// Real mode needs more settings than one: the check alone is asked.
				if err := settingChecks[key](v); err != nil {
					t.Errorf("the check of SEATFLOW_%s refuses %q: %v", key, v, err)
				}
				continue
			}
			clearStores(t)
			t.Setenv("SEATFLOW_"+key, v)
			if _, _, err := ParseConfig("seatflow serve", nil); err != nil {
				t.Errorf("SEATFLOW_%s=%q refused: %v", key, v, err)
			}
		}
	}
}
