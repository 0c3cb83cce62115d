package guests_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"go.uber.org/goleak"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/guests"
	"seatflow/internal/rdb"
	"seatflow/internal/tooling/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStart: a session's token is a guest's (no user), each session its own id; an address
// past its rate is RATE_LIMITED with retryAfterMs, another address is not; the counters
// live under the prefix.
func TestStart(t *testing.T) {
	r := testenv.NewRedis(t)
	a := &auth.Authenticator{Secret: []byte("test-secret-0123456789")}
	s := &guests.Service{Auth: a, Limiter: rdb.NewLimiter(r.Client), Keys: r.Keys, Rate: redis_rate.PerMinute(2),
		TTL: time.Hour, CostBudget: 500}
	from := func(addr string) context.Context { return auth.WithClientAddr(context.Background(), addr) }
	seen := map[string]bool{}
	for range 2 {
		g, err := s.Start(from("203.0.113.1"))
		if err != nil {
			t.Fatal(err)
		}
		ctx := a.WithToken(context.Background(), g.Token)
		guest := auth.GuestOf(ctx)
		if guest == nil || seen[guest.ID] || g.CostBudget != 500 || time.Until(g.ExpiresAt) > time.Hour || time.Until(g.ExpiresAt) < 59*time.Minute {
			t.Fatalf("session %+v, guest %+v", g, guest)
		}
		seen[guest.ID] = true
		if _, err := auth.RequireUser(ctx); seatflow.ErrorCode(err) != seatflow.EUNAUTHENTICATED {
			t.Fatalf("a guest is a user: %v", err)
		}
	}
	_, err := s.Start(from("203.0.113.1"))
	var e *seatflow.Error
	if seatflow.ErrorCode(err) != seatflow.ERATELIMITED {
		t.Fatalf("3rd session of an address at 2 a minute: %v", err)
	}
	if e, _ = err.(*seatflow.Error); e == nil || e.Extensions["retryAfterMs"].(int64) <= 0 {
		t.Fatalf("refusal without retryAfterMs: %#v", err)
	}
	if _, err := s.Start(from("203.0.113.2")); err != nil {
		t.Fatalf("another address: %v", err)
	}
	if out := testenv.KeysOutside(t, r.Client, r.Keys.Prefix); len(out) > 0 {
		t.Errorf("keys outside the prefix %q: %q", r.Keys.Prefix, out)
	}
}
