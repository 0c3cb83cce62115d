package cache

import (
	"context"
	"math"
	"sync"
	"time"
)

// A Trace records what the reads of one request took from the cache, so that a memo of
// what the request built from them (the response cache, package respcache) can be kept
// exactly as long as the local copies it came from: the keys read, and the earliest second
// at which one of them stops being served locally. A read that had to go past the local
// level (Redis, the database, a disabled cache) marks the trace Partial: only results built
// entirely from local copies are memoised, so a memo is never staler, nor longer lived,
// than the local level itself.
type Trace struct {
	mu      sync.Mutex
	keys    map[string]struct{}
	until   uint32 // unix seconds on the cache's clock
	partial bool
}

type traceKey struct{}

// WithTrace returns ctx with t attached: every cache read under ctx records into t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	t.until = math.MaxUint32
	return context.WithValue(ctx, traceKey{}, t)
}

func traceOf(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

func (t *Trace) read(keys []string, until uint32, partial bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys == nil {
		t.keys = make(map[string]struct{}, len(keys))
	}
	for _, k := range keys {
		t.keys[k] = struct{}{}
	}
	t.until = min(t.until, until)
	t.partial = t.partial || partial
}

// Keys returns the keys read so far.
func (t *Trace) Keys() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.keys))
	for k := range t.keys {
		out = append(out, k)
	}
	return out
}

// Until returns when the first local copy read stops being served; ok is false when the
// trace is partial or nothing was read.
func (t *Trace) Until() (until time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.partial || len(t.keys) == 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(t.until), 0), true
}
