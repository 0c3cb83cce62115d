package live

import (
	"context"
	"time"
)

// The hub's heartbeat, and the seat-map version it can vouch for because of it.

// beat publishes a heartbeat every beatEvery until ctx ends.
func (h *Hub) beat(ctx context.Context, channel string) {
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		attempt := time.Now().UnixNano()
		err := h.rdb.Publish(ctx, channel, "").Err()
		switch {
		case err == nil:
			h.failingSince.Store(0)
		case ctx.Err() == nil:
			h.beatFailed.Store(time.Now().UnixNano())
			h.failingSince.CompareAndSwap(0, attempt)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Version returns showID's seat-map version as this hub knows it, and whether it can
// vouch for it: only while the show knows its seats' statuses (every delta since its
// last snapshot, none missed, the pub/sub connection not restored since) and a heartbeat
// was heard on the pub/sub connection within beatStale (and none failed to go out since),
// so a dropped connection is not taken for a quiet show. A watcher may stand a tick
// behind it (its changes are coalesced); the show's version is the newest delta received.
func (h *Hub) Version(showID int) (int, bool) {
	if last := h.lastBeat.Load(); time.Since(time.Unix(0, last)) > beatStale || h.beatFailed.Load() > last {
		return 0, false
	}
	s := h.showOf(h.keys.Events(showID))
	if s == nil || !s.isReady.Load() {
		return 0, false
	}
	v := int(s.known.Load())
	return v, v != 0
}

// CurrentVersion is the version a read of showID's seat map must not fall below: the
// hub's when it can vouch for it (no round trip to Redis), raised to any newer version
// this instance's own writes produced; otherwise the version in Redis now.
func (h *Hub) CurrentVersion(ctx context.Context, showID int) (int, error) {
	if v, ok := h.Version(showID); ok {
		return max(v, h.store.Seen(showID)), nil
	}
	return h.store.Version(ctx, showID)
}
