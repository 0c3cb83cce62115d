package seats

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script calls are batched: a call that finds fewer than maxInflight round trips under way
// goes out at once, alone; calls that arrive while they are all busy queue up, and the next
// free round trip takes the whole queue as one pipeline (one write, one read). Under a rush
// of holds the round trips, not the scripts, are the cost, and nothing ever waits for a
// batch to fill. Each script still runs atomically on its own; a pipeline only shares the
// connection. Eight did best of 1, 2, 4, 8 and 16 in the hold benchmark (16 callers, 2 cores).
const (
	maxInflight = 8
	maxBatch    = 128
)

// batcher is the queue of a Store; its zero value is ready.
type batcher struct {
	mu       sync.Mutex
	inflight int
	queue    []*scriptCall
}

type scriptCall struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	wake   chan bool // true: the call leads the next round trip; false: cmd is done
}

// run runs script like script.Run (EVALSHA, then EVAL if Redis lacks the script), batched
// with the calls of other goroutines. A call whose ctx ends while it waits in the queue
// leaves it unsent; once sent, it completes. On Redis Cluster calls are not batched: a
// pipeline waits for every node it touches, and one slow node would hold up the others.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	defer observeScript(ctx, script, time.Now())
	if _, single := s.RDB.(*redis.Client); !single {
		return script.Run(ctx, s.RDB, keys, args...)
	}
	c := &scriptCall{ctx: ctx, script: script, keys: keys, args: args}
	b := &s.batch
	b.mu.Lock()
	if b.inflight < maxInflight {
		b.inflight++
		b.mu.Unlock()
		s.lead(c)
		return c.cmd
	}
	c.wake = make(chan bool, 1)
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case lead := <-c.wake:
		if lead {
			s.lead(c)
		}
	case <-ctx.Done():
		b.mu.Lock()
		if i := slices.Index(b.queue, c); i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
			b.mu.Unlock()
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(ctx.Err())
			return cmd
		}
		b.mu.Unlock()
		// Already taken: its answer, or its turn to lead, is on the way.
		if <-c.wake {
			s.lead(c)
		}
	}
	return c.cmd
}

// lead sends c with whatever is queued, then hands its round-trip slot to the first call
// queued meanwhile, or gives it back. The calls it took along are answered even if the
// round trip panics.
func (s *Store) lead(c *scriptCall) {
	b := &s.batch
	b.mu.Lock()
	n := min(len(b.queue), maxBatch-1)
	batch := append([]*scriptCall{c}, b.queue[:n]...)
	b.queue = b.popped(n)
	b.mu.Unlock()

	defer func() {
		for _, o := range batch {
			if o.cmd == nil { // exec panicked before it got to o
				o.cmd = redis.NewCmd(o.ctx)
				o.cmd.SetErr(errors.New("seat script batch failed"))
			}
		}
		for _, o := range batch[1:] {
			o.wake <- false
		}
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inflight--
			b.mu.Unlock()
			return
		}
		next := b.queue[0]
		b.queue = b.popped(1)
		b.mu.Unlock()
		next.wake <- true
	}()
	s.exec(batch)
}

// popped is the queue without its first n calls, in a fresh slice, so the calls taken do
// not stay reachable from the queue's array; mu is held.
func (b *batcher) popped(n int) []*scriptCall {
	if n >= len(b.queue) {
		return nil
	}
	return append([]*scriptCall(nil), b.queue[n:]...)
}

func (s *Store) exec(batch []*scriptCall) {
	if len(batch) == 1 {
		c := batch[0]
		c.cmd = c.script.Run(c.ctx, s.RDB, c.keys, c.args...)
		return
	}
	pipe := s.RDB.Pipeline()
	var sent []*scriptCall
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.cmd = redis.NewCmd(c.ctx)
			c.cmd.SetErr(err)
			continue
		}
		c.cmd = c.script.EvalSha(c.ctx, pipe, c.keys, c.args...)
		sent = append(sent, c)
	}
	// Every command carries its own error; the callers' contexts must not cut the
	// connection under the others' commands.
	_, _ = pipe.Exec(context.Background())
	for _, c := range sent {
		if redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			c.cmd = c.script.Run(c.ctx, s.RDB, c.keys, c.args...)
		}
	}
}
