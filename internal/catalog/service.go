package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/hall"
	"seatflow/ent/predicate"
	"seatflow/ent/showtime"
	"seatflow/internal/coalesce"
	"seatflow/internal/database"
	"seatflow/internal/keys"
)

// ByteCache is the two-level catalog cache (package cache): values are JSON bytes, a nil
// value is a known-missing entry, load is called once with every key that needs the database.
type ByteCache interface {
	GetMany(ctx context.Context, keys []string, load func(ctx context.Context, keys []string) (map[string][]byte, error)) ([][]byte, error)
}

// LocalCache is a cache that can answer from its in-process level alone (package cache):
// values in key order, false unless every key was there.
type LocalCache interface {
	Local(ctx context.Context, keys []string) ([][]byte, bool)
}

// Invalidations records the cache keys a write changes inside the write's transaction and
// delivers them after commit (package cache's outbox).
type Invalidations interface {
	Record(ctx context.Context, tx *ent.Tx, keys ...string) (int, error)
	Deliver(ctx context.Context, id int, keys []string) error
}

// ShowtimeTickets revokes the tickets of a showtime inside the transaction that cancels it
// (package tickets).
type ShowtimeTickets interface {
	RevokeShowtimeIn(ctx context.Context, tx *ent.Tx, showID int) error
}

// Service is the catalog: cached reads and admin writes.
type Service struct {
	DB    *ent.Client
	Cache ByteCache     // nil reads straight from the database
	Inval Invalidations // nil when there is no cache to invalidate
	// Tickets revokes a cancelled showtime's tickets; nil when there are none to revoke.
	Tickets ShowtimeTickets
	Now     seatflow.ClockFunc
	Log     *slog.Logger

	decoded decodedValues
	fresh   coalesce.Group[int, *seatflow.Showtime]
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// write runs fn in a transaction. The cache keys fn returns are recorded in the outbox
// in that same transaction and invalidated after commit; a rolled-back write
// invalidates nothing.
func (s *Service) write(ctx context.Context, fn func(tx *ent.Tx) (keys []string, err error)) error {
	tx, err := s.DB.Tx(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	keys, err := fn(tx)
	if err != nil {
		_ = tx.Rollback()
		return database.Classify(err)
	}
	outboxID := 0
	if s.Inval != nil && len(keys) > 0 {
		if outboxID, err = s.Inval.Record(ctx, tx, keys...); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", database.Classify(err))
	}
	if outboxID != 0 {
		// The write is done; a failed delivery is replayed by the outbox relay.
		if err := s.Inval.Deliver(ctx, outboxID, keys); err != nil {
			s.log().Warn("cache invalidation deferred to the outbox relay", "keys", keys, "err", err)
		}
	}
	return nil
}

// SetShowtimeStatus moves a showtime to status to, if its status may change to it
// (ShowtimeStatus.CanMoveTo), with a conditional update, and invalidates its cache entry
// (open sale, close sale).
func (s *Service) SetShowtimeStatus(ctx context.Context, id int, to seatflow.ShowtimeStatus) (*seatflow.Showtime, error) {
	return s.setStatus(ctx, id, to, false)
}

// setStatus is SetShowtimeStatus; leavesLists also invalidates the day's and the movie's
// lists, for a status (cancelled) that takes the showtime out of them.
func (s *Service) setStatus(ctx context.Context, id int, to seatflow.ShowtimeStatus, leavesLists bool) (*seatflow.Showtime, error) {
	err := s.write(ctx, func(tx *ent.Tx) ([]string, error) {
		st, err := showtimeIn(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if !st.Status.CanMoveTo(to) {
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d is %s", id, st.Status)
		}
		n, err := tx.Showtime.Update().Where(showtimeIs(id, st.Status)).
			SetStatus(to).SetUpdatedAt(s.Now.Now()).Save(ctx)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d changed meanwhile; try again", id)
		}
		if to == seatflow.ShowtimeCancelled && s.Tickets != nil {
			if err := s.Tickets.RevokeShowtimeIn(ctx, tx, id); err != nil {
				return nil, err
			}
		}
		drop := []string{keys.Showtime(id)}
		if leavesLists {
			c, err := cinemaOfHall(ctx, tx, st.HallID)
			if err != nil {
				return nil, err
			}
			drop = append(drop, keys.ShowtimesOn(c.ID, c.DayOf(st.StartsAt)), keys.ShowtimesOf(st.MovieID))
		}
		return drop, nil
	})
	if err != nil {
		return nil, err
	}
	return s.FreshShowtime(ctx, id)
}

// FreshShowtime reads a showtime from MySQL, bypassing the cache: what a write returns
// must be what it wrote, and whether a showtime is on sale must be current. Concurrent
// calls for one showtime share reads begun after they arrived (package coalesce): a
// thousand buyers holding seats of one showtime at once cost a few reads, each still
// seeing the status as it is after its request came in.
func (s *Service) FreshShowtime(ctx context.Context, id int) (*seatflow.Showtime, error) {
	return s.fresh.Do(ctx, id, func(ctx context.Context) (*seatflow.Showtime, error) { return s.loadFresh(ctx, id) })
}

func (s *Service) loadFresh(ctx context.Context, id int) (*seatflow.Showtime, error) {
	st, err := s.DB.Showtime.Query().Where(showtime.ID(id)).Modify(withCinemaID).Only(ctx)
	if err != nil {
		return nil, database.Classify(err)
	}
	return toShowtime(st), nil
}

// OnSaleStartedBy lists, from MySQL, the showtimes still ON_SALE that started at or
// before t: those whose sales are due to close.
func (s *Service) OnSaleStartedBy(ctx context.Context, t time.Time) ([]int, error) {
	ids, err := s.DB.Showtime.Query().Where(showtime.StatusEQ(seatflow.ShowtimeOnSale), showtime.StartsAtLTE(t)).IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("showtimes on sale that started: %w", database.Classify(err))
	}
	return ids, nil
}

func hallIDIn(ids []int) predicate.Hall { return hall.IDIn(ids...) }
