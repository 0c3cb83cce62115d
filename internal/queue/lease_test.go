package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/queue"
)

// TestOneAdmittingInstance runs the admission on three instances at once: only the
// lease's holder admits, every entrant is admitted once; when it dies (stops ticking)
// another takes over within the lease, and still nobody is admitted twice.
func TestOneAdmittingInstance(t *testing.T) {
	e := newEnv(t, 20, 20)
	short := func(c *queue.Config) { c.Lease = 600 * time.Millisecond }
	instances := []*queue.Service{e.instance(short), e.instance(short), e.instance(short)}
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 600, MaxActive: intp(1000)})
	entrants := users("u", 120)
	for _, u := range entrants {
		e.join(t, e.q, u)
	}
	e.clock.Advance(e.opensAt.Sub(e.clock.Now()))

	var mu sync.Mutex
	leaders := map[int]int{} // instance → ticks it admitted in
	admitted := 0
	run := func(ctx context.Context, i int, wg *sync.WaitGroup) {
		defer wg.Done()
		for ctx.Err() == nil {
			ticks, err := instances[i].AdmitOnce(ctx)
			if err != nil && ctx.Err() == nil {
				t.Errorf("instance %d: %v", i, err)
				return
			}
			for _, tk := range ticks {
				if tk.Outcome == "OK" {
					mu.Lock()
					leaders[i]++
					admitted += tk.Admitted
					mu.Unlock()
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	advance := func(ctx context.Context, wg *sync.WaitGroup) {
		defer wg.Done()
		for ctx.Err() == nil {
			e.clock.Advance(100 * time.Millisecond)
			time.Sleep(10 * time.Millisecond)
		}
	}
	phase := func(d time.Duration, running ...int) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(1 + len(running))
		go advance(ctx, &wg)
		for _, i := range running {
			go run(ctx, i, &wg)
		}
		wg.Wait()
	}

	phase(700*time.Millisecond, 0, 1, 2)
	mu.Lock()
	if len(leaders) != 1 {
		t.Fatalf("instances that admitted while all three ran: %v, want exactly one", leaders)
	}
	var first int
	for i := range leaders {
		first = i
	}
	before := admitted
	leaders = map[int]int{}
	mu.Unlock()
	if before == 0 {
		t.Fatal("nobody admitted")
	}

	// The leader dies: the others take over within the lease (600 ms) and a tick.
	var others []int
	for i := range instances {
		if i != first {
			others = append(others, i)
		}
	}
	start := time.Now()
	phase(1500*time.Millisecond, others...)
	mu.Lock()
	defer mu.Unlock()
	if len(leaders) != 1 || leaders[first] != 0 {
		t.Fatalf("after instance %d died, instances that admitted: %v, want exactly one other", first, leaders)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("take-over measured over %v", elapsed)
	}
	if admitted == before {
		t.Fatal("nobody admitted after the take-over")
	}

	// Nobody twice: every admission is a distinct entrant holding one pass.
	passes := map[string]string{}
	for _, u := range entrants {
		tk := e.ticket(t, u)
		if tk.Status != seatflow.QueueAdmitted {
			continue
		}
		if owner, dup := passes[*tk.Pass]; dup {
			t.Fatalf("%s and %s hold the same pass", owner, u)
		}
		passes[*tk.Pass] = u
	}
	q := e.status(t)
	if len(passes) != admitted || q.Admitted != admitted {
		t.Fatalf("%d entrants admitted, the ticks reported %d, the queue counts %d passes", len(passes), admitted, q.Admitted)
	}
}
