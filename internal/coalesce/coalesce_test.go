package coalesce

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCallersShareCallsStartedAfterThem: callers arriving while a call runs never get
// that call's answer, but all of them share the one after it.
func TestCallersShareCallsStartedAfterThem(t *testing.T) {
	var g Group[string, int64]
	var calls atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	fn := func(context.Context) (int64, error) {
		n := calls.Add(1)
		started <- struct{}{}
		if n == 1 {
			<-release // the first call runs until the late callers have arrived
		}
		return n, nil
	}
	ctx := context.Background()
	first := make(chan int64)
	go func() { v, _ := g.Do(ctx, "k", fn); first <- v }()
	<-started
	var wg sync.WaitGroup
	late := make([]int64, 50)
	for i := range late {
		wg.Add(1)
		go func() { defer wg.Done(); late[i], _ = g.Do(ctx, "k", fn) }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !queued(&g, "k") {
		if time.Now().After(deadline) {
			t.Fatal("the late callers did not queue a call within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let every late caller reach Do
	close(release)
	if v := <-first; v != 1 {
		t.Fatalf("first caller got call %d, want 1", v)
	}
	wg.Wait()
	for i, v := range late {
		if v < 2 {
			t.Fatalf("late caller %d got call %d, which began before it arrived", i, v)
		}
	}
	if n := calls.Load(); n > 3 {
		t.Errorf("%d calls for 51 callers, want at most 3", n)
	}
}

func queued(g *Group[string, int64], key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	fl := g.flights[key]
	return fl != nil && fl.next != nil
}

// TestACallerStopsWaitingWithItsContext: a caller whose context ends gets its error; the
// shared call goes on for the others.
func TestACallerStopsWaitingWithItsContext(t *testing.T) {
	var g Group[int, string]
	release := make(chan struct{})
	fn := func(context.Context) (string, error) { <-release; return "done", nil }
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := g.Do(ctx, 1, fn); errc <- err }()
	other := make(chan string)
	go func() { v, _ := g.Do(context.Background(), 1, fn); other <- v }()
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("cancelled caller got %v, want context.Canceled", err)
	}
	close(release)
	select {
	case v := <-other:
		if v != "done" {
			t.Fatalf("other caller got %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the other caller got no answer")
	}
}
