package cache

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/cacheoutbox"
	"seatflow/internal/background"
)

// relayBatch bounds one Relay pass, so a backlog is worked off over several ticks rather
// than in one long scan.
const relayBatch = 200

// Outbox makes catalog invalidations survive a crash: a write path records its keys in
// cache_outbox inside its own transaction, delivers them after commit, and the relay
// replays any row a crash left between commit and delivery. A rolled-back transaction
// takes its row with it, so it invalidates nothing.
type Outbox struct {
	DB    *ent.Client
	Cache *Cache
	Now   seatflow.ClockFunc
}

// Record inserts a cache_outbox row for keys inside the caller's transaction and returns
// its id, to pass to Deliver after commit.
func (o *Outbox) Record(ctx context.Context, tx *ent.Tx, keys ...string) (id int, err error) {
	row, err := tx.CacheOutbox.Create().SetKeys(keys).SetCreatedAt(o.Now.Now()).Save(ctx)
	if err != nil {
		return 0, fmt.Errorf("record cache invalidation: %w", err)
	}
	return row.ID, nil
}

// Deliver invalidates keys and marks the row processed; call it after the transaction
// that recorded the row has committed. On error the row stays unprocessed and the relay
// delivers it later; the caller only logs the error.
func (o *Outbox) Deliver(ctx context.Context, id int, keys []string) error {
	if err := o.Cache.Invalidate(ctx, keys...); err != nil {
		return fmt.Errorf("deliver cache outbox %d: %w", id, err)
	}
	if err := o.DB.CacheOutbox.UpdateOneID(id).SetProcessedAt(o.Now.Now()).Exec(ctx); err != nil {
		return fmt.Errorf("mark cache outbox %d processed: %w", id, err)
	}
	return nil
}

// Relay delivers unprocessed rows created more than olderThan ago (younger ones are
// probably still being delivered by their writer) and returns how many it delivered.
func (o *Outbox) Relay(ctx context.Context, olderThan time.Duration) (int, error) {
	rows, err := o.DB.CacheOutbox.Query().
		Where(cacheoutbox.ProcessedAtIsNil(), cacheoutbox.CreatedAtLT(o.Now.Now().Add(-olderThan))).
		Order(cacheoutbox.ByID()).
		Limit(relayBatch).
		All(ctx)
	if err != nil {
		return 0, fmt.Errorf("read cache outbox: %w", err)
	}
	n := 0
	for _, r := range rows {
		if err := o.Deliver(ctx, r.ID, r.Keys); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// RunRelay runs Relay every interval until ctx ends, replaying rows older than one
// interval.
func (o *Outbox) RunRelay(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var n int
		err := background.Pass(ctx, background.OutboxRelay, func(ctx context.Context) (err error) {
			n, err = o.Relay(ctx, every)
			return err
		})
		if err != nil && ctx.Err() == nil {
			slog.WarnContext(ctx, "cache outbox relay", "err", err, "replayed", n)
		} else if n > 0 {
			slog.InfoContext(ctx, "cache outbox relay replayed invalidations", "rows", n)
		}
	}
}
