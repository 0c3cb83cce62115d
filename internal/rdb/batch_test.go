package rdb

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/tooling/testenv"
)

// echoScript answers with its argument after appending it to a list, so a test sees both
// that each caller got its own reply and which calls reached Redis.
var echoScript = redis.NewScript(`redis.call('RPUSH', KEYS[1], ARGV[1]) return ARGV[1]`)

func TestBatchedScriptCalls(t *testing.T) {
	r := testenv.NewRedis(t)
	var b Batch
	list := r.Keys.Prefix + ":batch-test"
	ctx := context.Background()

	call := func(n int) []error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := b.Run(ctx, r.Client, echoScript, []string{list}, strconv.Itoa(i)).Text()
				if err == nil && got != strconv.Itoa(i) {
					err = fmt.Errorf("call %d got the reply %q", i, got)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		return errs
	}
	t.Run("EachCallerItsOwnReply", func(t *testing.T) {
		for _, err := range call(300) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := r.Client.LLen(ctx, list).Val(); n != 300 {
			t.Fatalf("%d calls reached Redis, want 300", n)
		}
		if b.inflight != 0 || len(b.queue) != 0 {
			t.Fatalf("after the calls: %d round trips counted in flight, %d calls queued", b.inflight, len(b.queue))
		}
	})
	t.Run("ScriptCacheFlushed", func(t *testing.T) {
		// Redis forgets its scripts on a restart or failover: batched EVALSHA gets NOSCRIPT
		// and each such call goes again with its source.
		if err := r.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for _, err := range call(100) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("BareEvalSha", func(t *testing.T) {
		// The rate limiters' EVALSHAs (NewLimiter): batched alike, each its own reply, and
		// NOSCRIPT handed back to the caller, who sends the source, for a script Redis lacks.
		if _, single := r.Client.(*redis.Client); !single {
			t.Skip("Redis Cluster clients are not batched")
		}
		r.Client.Del(ctx, list)
		if err := echoScript.Load(ctx, r.Client).Err(); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		b.inflight = maxInflight // every round trip busy: the calls queue, then go as one pipeline
		b.mu.Unlock()
		var wg sync.WaitGroup
		errs := make([]error, 40)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sha := echoScript.Hash()
				if i == 0 {
					sha = "0000000000000000000000000000000000000000"
				}
				got, err := b.EvalSha(ctx, r.Client, sha, []string{list}, strconv.Itoa(i)).Text()
				switch {
				case i == 0 && !redis.HasErrorPrefix(err, "NOSCRIPT"):
					err = fmt.Errorf("an unknown script answered %q, %v; want NOSCRIPT", got, err)
				case i == 0:
					err = nil
				case err == nil && got != strconv.Itoa(i):
					err = fmt.Errorf("call %d got the reply %q", i, got)
				}
				errs[i] = err
			}()
		}
		for queued := 0; queued < len(errs); {
			b.mu.Lock()
			queued = len(b.queue)
			b.mu.Unlock()
		}
		b.lead(r.Client, &scriptCall{ctx: ctx, sha: echoScript.Hash(), keys: []string{list}, args: []any{"lead"}})
		b.mu.Lock()
		b.inflight -= maxInflight - 1 // the busy round trips that were never sent
		b.mu.Unlock()
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := r.Client.LLen(ctx, list).Val(); n != int64(len(errs)) { // 39 calls and the lead
			t.Fatalf("%d calls reached Redis, want %d", n, len(errs))
		}
		if b.inflight != 0 || len(b.queue) != 0 {
			t.Fatalf("after the calls: %d round trips counted in flight, %d calls queued", b.inflight, len(b.queue))
		}
	})
	t.Run("CancelledWhileQueuedIsNotSent", func(t *testing.T) {
		if _, single := r.Client.(*redis.Client); !single {
			t.Skip("Redis Cluster clients are not batched")
		}
		r.Client.Del(ctx, list)
		b.mu.Lock()
		b.inflight = maxInflight // every round trip busy: the next calls queue
		b.mu.Unlock()
		cancelled, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- b.Run(cancelled, r.Client, echoScript, []string{list}, "cancelled").Err() }()
		for queued := false; !queued; {
			b.mu.Lock()
			queued = len(b.queue) == 1
			b.mu.Unlock()
		}
		cancel()
		// A call leads one of the busy round trips and takes the queue along.
		b.lead(r.Client, &scriptCall{ctx: ctx, script: echoScript, sha: echoScript.Hash(), keys: []string{list}, args: []any{"live"}})
		if err := <-done; err != context.Canceled {
			t.Fatalf("the cancelled call returned %v", err)
		}
		if got := r.Client.LRange(ctx, list, 0, -1).Val(); len(got) != 1 || got[0] != "live" {
			t.Fatalf("Redis saw %v, want only the live call", got)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.inflight != maxInflight-1 || len(b.queue) != 0 {
			t.Fatalf("after the round trip: %d in flight (want %d), %d queued", b.inflight, maxInflight-1, len(b.queue))
		}
		b.inflight = 0
	})
}
