package showfeed

import (
	"context"
	"sync/atomic"
	"testing"
)

// counter is a feed's value in the test: its members and whether its run ended.
type counter struct {
	members int
	ended   atomic.Bool
}

func TestOneRunPerShowtimeWhileItHasMembers(t *testing.T) {
	var r Registry[*counter]
	var runs atomic.Int32
	open := func() *counter { return &counter{} }
	run := func(ctx context.Context, c *counter) {
		runs.Add(1)
		<-ctx.Done()
		c.ended.Store(true)
	}
	add := func(c *counter) { c.members++ }
	remove := func(c *counter) bool { c.members--; return c.members == 0 }

	a := r.Join(7, open, run, add)
	b := r.Join(7, open, run, add)
	other := r.Join(8, open, run, add)
	if a != b || a == other {
		t.Fatalf("a showtime's members share one feed, another showtime has its own: %p %p %p", a, b, other)
	}
	r.Leave(a, remove)
	if a.Value.ended.Load() {
		t.Fatal("the feed stopped while it still had a member")
	}
	r.Leave(b, remove)
	if !a.Value.ended.Load() {
		t.Fatal("Leave of the last member returned before the feed's run ended")
	}
	c := r.Join(7, open, run, add)
	if c == a {
		t.Fatal("a Join after the feed stopped got the stopped feed")
	}
	r.Leave(c, remove)
	r.Leave(other, remove)
	if n := runs.Load(); n != 3 {
		t.Fatalf("%d runs, want 3 (showtime 7 twice, showtime 8 once)", n)
	}
}
