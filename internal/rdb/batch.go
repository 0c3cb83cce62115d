package rdb

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Script calls are batched (Batch): a call that finds fewer than maxInflight round trips
// under way goes out at once, alone; calls that arrive while they are all busy queue up,
// and the next free round trip takes the whole queue as one pipeline (one write, one read).
// Under a rush of holds (or of joins of an on-sale queue) the round trips, not the scripts,
// are the cost, and nothing ever waits for a batch to fill. Each script still runs
// atomically on its own; a pipeline only shares the connection. Eight did best of 1, 2, 4,
// 8 and 16 in the hold benchmark (16 callers, 2 cores).
const (
	maxInflight = 8
	maxBatch    = 128
)

// Batch shares round trips between the script calls of many goroutines (the seat store's,
// the on-sale queues', the rate limiters'); its zero value is ready. One Batch serves one client.
type Batch struct {
	mu       sync.Mutex
	inflight int
	queue    []*scriptCall
}

type scriptCall struct {
	ctx    context.Context
	script *redis.Script // nil for a bare EVALSHA (EvalSha)
	sha    string
	keys   []string
	args   []any
	cmd    *redis.Cmd
	wake   chan bool // true: the call leads the next round trip; false: cmd is done
}

// Run runs script on rdb like script.Run (EVALSHA, then EVAL if Redis lacks the script),
// batched with the calls of other goroutines. A call whose ctx ends while it waits in the
// queue leaves it unsent; once sent, it completes. On Redis Cluster calls are not batched:
// a pipeline waits for every node it touches, and one slow node would hold up the others.
func (b *Batch) Run(ctx context.Context, rdb redis.UniversalClient, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if _, single := rdb.(*redis.Client); !single {
		return script.Run(ctx, rdb, keys, args...)
	}
	return b.run(rdb, &scriptCall{ctx: ctx, script: script, sha: script.Hash(), keys: keys, args: args})
}

// EvalSha is one EVALSHA of the script whose hash is sha, batched like Run; a NOSCRIPT
// answer goes back to the caller, who sends the script (as redis.Script.Run does, which
// the rate limiters of go-redis/redis_rate call through it: NewLimiter).
func (b *Batch) EvalSha(ctx context.Context, rdb redis.UniversalClient, sha string, keys []string, args ...any) *redis.Cmd {
	if _, single := rdb.(*redis.Client); !single {
		return rdb.EvalSha(ctx, sha, keys, args...)
	}
	return b.run(rdb, &scriptCall{ctx: ctx, sha: sha, keys: keys, args: args})
}

func (b *Batch) run(rdb redis.UniversalClient, c *scriptCall) *redis.Cmd {
	ctx := c.ctx
	b.mu.Lock()
	if b.inflight < maxInflight {
		b.inflight++
		b.mu.Unlock()
		b.lead(rdb, c)
		return c.cmd
	}
	c.wake = make(chan bool, 1)
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case lead := <-c.wake:
		if lead {
			b.lead(rdb, c)
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
			b.lead(rdb, c)
		}
	}
	return c.cmd
}

// lead sends c with whatever is queued, then hands its round-trip slot to the first call
// queued meanwhile, or gives it back. The calls it took along are answered even if the
// round trip panics.
func (b *Batch) lead(rdb redis.UniversalClient, c *scriptCall) {
	b.mu.Lock()
	n := min(len(b.queue), maxBatch-1)
	batch := append([]*scriptCall{c}, b.queue[:n]...)
	b.queue = b.popped(n)
	b.mu.Unlock()

	defer func() {
		for _, o := range batch {
			if o.cmd == nil { // exec panicked before it got to o
				o.cmd = redis.NewCmd(o.ctx)
				o.cmd.SetErr(errors.New("script batch failed"))
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
	exec(rdb, batch)
}

// popped is the queue without its first n calls, in a fresh slice, so the calls taken do
// not stay reachable from the queue's array; mu is held.
func (b *Batch) popped(n int) []*scriptCall {
	if n >= len(b.queue) {
		return nil
	}
	return append([]*scriptCall(nil), b.queue[n:]...)
}

func exec(rdb redis.UniversalClient, batch []*scriptCall) {
	if len(batch) == 1 {
		c := batch[0]
		if c.script == nil {
			c.cmd = rdb.EvalSha(c.ctx, c.sha, c.keys, c.args...)
		} else {
			c.cmd = c.script.Run(c.ctx, rdb, c.keys, c.args...)
		}
		return
	}
	pipe := rdb.Pipeline()
	var sent []*scriptCall
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.cmd = redis.NewCmd(c.ctx)
			c.cmd.SetErr(err)
			continue
		}
		c.cmd = pipe.EvalSha(c.ctx, c.sha, c.keys, c.args...)
		sent = append(sent, c)
	}
	// Every command carries its own error; the callers' contexts must not cut the
	// connection under the others' commands.
	_, _ = pipe.Exec(context.Background())
	for _, c := range sent {
		if c.script != nil && redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			c.cmd = c.script.Run(c.ctx, rdb, c.keys, c.args...)
		}
	}
}
