package keys_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"seatflow/internal/keys"
	"seatflow/internal/tooling/testenv"
)

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with (cluster spec,
// appendix A): polynomial 0x1021, initial value 0.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// hashTag is the part of key Redis Cluster hashes: the text between the first '{' and
// the first '}' after it, when that is not empty; otherwise the whole key.
func hashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key[open+1 : open+1+end]
		}
	}
	return key
}

// slot is the Redis Cluster slot of key.
func slot(key string) int { return int(crc16(hashTag(key)) % 16384) }

// TestSlot checks this file's slot function against the cluster spec's examples, so the
// tests below assert what a real cluster does.
func TestSlot(t *testing.T) {
	if got, want := crc16("123456789"), uint16(0x31C3); got != want {
		t.Fatalf("crc16(123456789) = %#x, want %#x", got, want)
	}
	cases := []struct{ key, wantTag string }{
		{"{user1000}.following", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"}, // empty first tag: the whole key is hashed
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"no-tag", "no-tag"},
	}
	for _, c := range cases {
		if got := hashTag(c.key); got != c.wantTag {
			t.Errorf("hashTag(%q) = %q, want %q", c.key, got, c.wantTag)
		}
	}
	if got, want := slot("{user1000}.following"), slot("{user1000}.followers"); got != want {
		t.Errorf("slots of one tag differ: %d, %d", got, want)
	}
}

// showKeys are every key and channel of one showtime.
func showKeys(k keys.Keys, showID int) map[string]string {
	return map[string]string{
		"Seats":    k.Seats(showID),
		"Version":  k.Version(showID),
		"Limits":   k.Limits(showID),
		"Events":   k.Events(showID),
		"ShowLock": k.ShowLock(showID),
		"CheckIns": k.CheckIns(showID),
	}
}

func TestShowtimeKeysShareOneSlot(t *testing.T) {
	k := keys.New("sf")
	for _, showID := range []int{1, 12, 42, 1_000_003} {
		ks := showKeys(k, showID)
		want := slot(k.Seats(showID))
		for name, key := range ks {
			if got, wantTag := hashTag(key), "show:"+strconv.Itoa(showID); got != wantTag {
				t.Errorf("%s(%d) = %q: hash tag %q, want %q", name, showID, key, got, wantTag)
			}
			if got := slot(key); got != want {
				t.Errorf("%s(%d) = %q: slot %d, want %d (the slot of Seats)", name, showID, key, got, want)
			}
		}
	}
	t.Run("ShowtimesHaveTheirOwnTag", func(t *testing.T) {
		// {show:1} must not be a prefix match of {show:12}: the tag ends at the brace.
		if a, b := hashTag(k.Seats(1)), hashTag(k.Seats(12)); a == b {
			t.Errorf("showtimes 1 and 12 share the hash tag %q", a)
		}
	})
	t.Run("CacheEntryAndItsLockShareOneSlot", func(t *testing.T) {
		for _, entry := range []string{keys.Movie(7), keys.Hall(3), keys.ShowtimesOn(1, "2030-01-02"), keys.Cinema(2), keys.HallsOf(2), keys.CinemaIDs()} {
			if got, want := slot(k.CacheLock(entry)), slot(k.Cache(entry)); got != want {
				t.Errorf("CacheLock(%q) slot %d, want %d (the entry's)", entry, got, want)
			}
			if got := hashTag(k.Cache(entry)); got != entry {
				t.Errorf("Cache(%q) hash tag = %q, want the entry key", entry, got)
			}
		}
	})
	// On a real cluster, ask the server which slot it puts the keys in.
	if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
		t.Run("ClusterAgrees", func(t *testing.T) {
			c := testenv.NewRedisClient(t)
			for name, key := range showKeys(k, 42) {
				got, err := c.ClusterKeySlot(context.Background(), key).Result()
				if err != nil {
					t.Fatal(err)
				}
				if want := slot(key); int(got) != want {
					t.Errorf("%s: CLUSTER KEYSLOT %q = %d, want %d", name, key, got, want)
				}
			}
		})
	}
}

// allKeys is every key and channel name a Keys builds, for a sample of arguments.
func allKeys(k keys.Keys) []string {
	out := []string{
		k.Cache("movie:7"), k.CacheLock("movie:7"), k.CacheInvalidations(), k.OrdersExpiry(),
		k.ReconcileLock(), k.UserRate("hold", "alice"), k.Bench("hset"), k.Idempotency("alice", "k1"), k.APQ(),
		k.GuestSessionRate("203.0.113.7"),
	}
	for _, key := range showKeys(k, 42) {
		out = append(out, key)
	}
	return out
}

func TestPrefixesIsolate(t *testing.T) {
	// "sf" is a string prefix of "sf2": the separator keeps their keys apart.
	a, b := keys.New("sf"), keys.New("sf2")
	bKeys := map[string]bool{}
	for _, key := range allKeys(b) {
		bKeys[key] = true
		if !strings.HasPrefix(key, b.Prefix+":") {
			t.Errorf("key %q does not start with %q", key, b.Prefix+":")
		}
	}
	for _, key := range allKeys(a) {
		if !strings.HasPrefix(key, a.Prefix+":") {
			t.Errorf("key %q does not start with %q", key, a.Prefix+":")
		}
		if strings.HasPrefix(key, b.Prefix+":") {
			t.Errorf("key %q of prefix %q lies under prefix %q", key, a.Prefix, b.Prefix)
		}
		if bKeys[key] {
			t.Errorf("prefixes %q and %q both build %q", a.Prefix, b.Prefix, key)
		}
	}
	t.Run("KeysOfOnePrefixAreDistinct", func(t *testing.T) {
		seen := map[string]bool{}
		for _, key := range allKeys(a) {
			if seen[key] {
				t.Errorf("two keys are both %q", key)
			}
			seen[key] = true
		}
	})
}

// TestNamesStay: these names are in Redis while instances of two versions run side by
// side; a new name would miss every entry and every count the old one wrote.
func TestNamesStay(t *testing.T) {
	k := keys.New("sf")
	cases := []struct{ got, want string }{
		{keys.Movie(7), "movie:7"},
		{keys.Hall(3), "hall:3"},
		{keys.Showtime(12), "showtime:12"},
		{keys.ShowtimesOn(4, "2030-01-02"), "showtimes:cinema:4:date:2030-01-02"},
		{keys.Cinema(4), "cinema:4"},
		{keys.CinemaIDs(), "cinemas:ids"},
		{keys.HallsOf(4), "halls:cinema:4"},
		{keys.ShowtimesOf(7), "showtimes:movie:7"},
		{keys.MovieIDs(""), "movies:ids:"},
		{keys.MovieIDs("LISTED"), "movies:ids:LISTED"},
		{k.Cache(keys.Movie(7)), "sf:cache:{movie:7}"},
		{k.UserRate("hold", "alice"), "sf:rate:hold:alice"},
		{k.GuestSessionRate("203.0.113.7"), "sf:guest-rate:203.0.113.7"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestIdempotencyQuotesUserID(t *testing.T) {
	k := keys.New("sf")
	// Pairs that collide when user and key are simply joined with ':'.
	pairs := []struct{ user, key string }{
		{"a:b", "c"},
		{"a", "b:c"},
		{`a"`, "b"},
		{"a", `"b`},
		{`a":"b`, "c"},
		{"a", `b":c`},
		{`a\`, "b"},
		{"", "a:b"},
		{"a:b:c", ""},
	}
	seen := map[string]int{}
	for i, p := range pairs {
		key := k.Idempotency(p.user, p.key)
		if j, dup := seen[key]; dup {
			t.Errorf("Idempotency(%q, %q) = Idempotency(%q, %q) = %q", p.user, p.key, pairs[j].user, pairs[j].key, key)
		}
		seen[key] = i
	}
	t.Run("UserIDIsRecoverable", func(t *testing.T) {
		// The user id is one quoted string right after the prefix, so the key names exactly
		// one (user, key) pair whatever either contains.
		for _, p := range pairs {
			key := k.Idempotency(p.user, p.key)
			rest, ok := strings.CutPrefix(key, "sf:idem:")
			if !ok {
				t.Fatalf("Idempotency(%q, %q) = %q, want the prefix sf:idem:", p.user, p.key, key)
			}
			quoted, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("Idempotency(%q, %q) = %q: user id is not quoted: %v", p.user, p.key, key, err)
			}
			if got, want := rest[len(quoted):], ":"+p.key; got != want {
				t.Errorf("Idempotency(%q, %q): after the user id %q, want %q", p.user, p.key, got, want)
			}
			if got, err := strconv.Unquote(quoted); err != nil || got != p.user {
				t.Errorf("Idempotency(%q, %q): quoted user id decodes to %q (%v)", p.user, p.key, got, err)
			}
		}
	})
}
