package cache

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/tooling/testenv"
)

func TestRedisDown(t *testing.T) {
	m := newMovies(t)
	m.delay = 300 * time.Millisecond
	clk := newClock()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer dead.Close()
	r := testenv.NewRedis(t)
	c := New(dead, r.Keys, testConfig(clk))
	id := m.create(t, "Film")
	key := "movie:" + strconv.Itoa(id)

	t.Run("ReadsAnswerFromLoader", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			if got := getTitle(t, c, key, m.load); got != "Film" {
				t.Fatalf("read %d: got %q, want Film", i, got)
			}
		}
		if got := c.Stats().Breaker; got != "open" {
			t.Errorf("breaker: got %s, want open", got)
		}
	})

	t.Run("OneLoadPerKeyWithBreakerOpen", func(t *testing.T) {
		m.loads.Store(0)
		var wg sync.WaitGroup
		var errs atomic.Int64
		start := make(chan struct{})
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if b, err := c.Get(context.Background(), key, m.load); err != nil || b == nil {
					errs.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := errs.Load(); n != 0 {
			t.Errorf("failed reads: got %d, want 0", n)
		}
		if n := m.loads.Load(); n != 1 {
			t.Errorf("loads: got %d, want 1", n)
		}
		if got := c.Stats().Breaker; got != "open" {
			t.Errorf("breaker: got %s, want open", got)
		}
	})
}

// TestRedisLost is Redis going away under a warm cache: Invalidate still drops the local
// copy and reports the error; reads go to the database.
func TestRedisLost(t *testing.T) {
	r := testenv.NewRedis(t)
	m := newMovies(t)
	clk := newClock()
	client := testenv.NewRedisClient(t)
	c := New(client, r.Keys, testConfig(clk))
	id := m.create(t, "Old")
	key := "movie:" + strconv.Itoa(id)
	getTitle(t, c, key, m.load)
	m.rename(t, id, "New")
	client.Close()

	if err := c.Invalidate(context.Background(), key); err == nil {
		t.Error("Invalidate with Redis gone: got nil error, want one to log")
	}
	if got := getTitle(t, c, key, m.load); got != "New" {
		t.Errorf("got %q, want New", got)
	}
}
