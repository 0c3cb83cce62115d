package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/onsalequeue"
	"seatflow/ent/showtime"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
)

// Bounds of an on-sale queue's settings.
const (
	maxAdmitPerMinute = 60_000
	maxActive         = 100_000
	maxPassMinutes    = 60
)

// OnSaleQueueInput sets up a showtime's on-sale queue (setOnSaleQueue): MaxActive defaults
// to AdmitPerMinute, PassMinutes to seatflow.DefaultPassMinutes, AveragePartySize to
// seatflow.DefaultAveragePartySize.
type OnSaleQueueInput struct {
	OpensAt          time.Time `json:"opensAt"`
	AdmitPerMinute   int       `json:"admitPerMinute"`
	MaxActive        *int      `json:"maxActive"`
	PassMinutes      *int      `json:"passMinutes"`
	AveragePartySize *float64  `json:"averagePartySize"`
}

// settings are an input's values with its defaults filled in.
type settings struct {
	opensAt          time.Time
	admitPerMinute   int
	maxActive        int
	passMinutes      int
	averagePartySize float64
}

// validate fills in the defaults and checks the input against the rules that do not
// depend on the showtime.
func (in OnSaleQueueInput) validate(now time.Time) (settings, error) {
	v := settings{opensAt: in.OpensAt.UTC().Truncate(time.Second), admitPerMinute: in.AdmitPerMinute,
		maxActive: in.AdmitPerMinute, passMinutes: seatflow.DefaultPassMinutes, averagePartySize: seatflow.DefaultAveragePartySize}
	if in.MaxActive != nil {
		v.maxActive = *in.MaxActive
	}
	if in.PassMinutes != nil {
		v.passMinutes = *in.PassMinutes
	}
	if in.AveragePartySize != nil {
		v.averagePartySize = *in.AveragePartySize
	}
	switch {
	case !v.opensAt.After(now):
		return v, invalid("opensAt must be in the future")
	case v.admitPerMinute < 1 || v.admitPerMinute > maxAdmitPerMinute:
		return v, invalid("admitPerMinute must be 1 to %d", maxAdmitPerMinute)
	case v.maxActive < 1 || v.maxActive > maxActive:
		return v, invalid("maxActive must be 1 to %d", maxActive)
	case v.passMinutes < 1 || v.passMinutes > maxPassMinutes:
		return v, invalid("passMinutes must be 1 to %d", maxPassMinutes)
	case math.IsNaN(v.averagePartySize) || v.averagePartySize < 1 || v.averagePartySize > seatflow.MaxSeatsPerOrder:
		return v, invalid("averagePartySize must be 1 to %d", seatflow.MaxSeatsPerOrder)
	}
	return v, nil
}

func invalid(format string, args ...any) error {
	return seatflow.Errorf(seatflow.EINVALID, format, args...)
}

// Set puts an on-sale queue in front of a SCHEDULED showtime's sale, or changes the
// settings of the one it has (its draw's seed and commitment stay: entrants may have
// joined under them). At opensAt the queue opens the sale itself. The record and the
// showtime's has_queue are written in one transaction, then the state in Redis; a failure
// of the latter is SERVICE_UNAVAILABLE, and the admission's next tick builds the state
// from the record anyway.
func (s *Service) Set(ctx context.Context, adminID string, showID int, in OnSaleQueueInput) (*seatflow.OnSaleQueue, error) {
	now := s.Now.Now()
	v, err := in.validate(now)
	if err != nil {
		return nil, err
	}
	var row *ent.OnSaleQueue
	_, err = s.Catalog.WriteShowtime(ctx, showID, func(tx *ent.Tx, st *ent.Showtime) error {
		if st.Status != seatflow.ShowtimeScheduled {
			return seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d is %s: a queue goes in front of a SCHEDULED showtime's sale", showID, st.Status)
		}
		if !v.opensAt.Before(st.StartsAt) {
			return invalid("opensAt must be before the showtime starts (%s)", st.StartsAt.UTC().Format(time.RFC3339))
		}
		if !st.HasQueue { // a conditional update: a sale opened meanwhile gets no queue
			n, err := tx.Showtime.Update().Where(showtime.ID(showID), showtime.StatusEQ(seatflow.ShowtimeScheduled),
				showtime.HasQueue(false)).SetHasQueue(true).Save(ctx)
			if err != nil {
				return err
			} else if n == 0 {
				return seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d changed meanwhile; try again", showID)
			}
		}
		var err error
		row, err = tx.OnSaleQueue.Query().Where(onsalequeue.ShowtimeID(showID)).Only(ctx)
		switch {
		case ent.IsNotFound(err):
			seed, commitment := newSeed()
			row, err = tx.OnSaleQueue.Create().SetShowtimeID(showID).SetOpensAt(v.opensAt).
				SetAdmitPerMinute(v.admitPerMinute).SetMaxActive(v.maxActive).SetPassMinutes(v.passMinutes).
				SetAveragePartySize(v.averagePartySize).SetDrawSeed(seed).SetDrawCommitment(commitment).
				SetCreatedBy(adminID).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		case err == nil:
			row, err = row.Update().SetOpensAt(v.opensAt).SetAdmitPerMinute(v.admitPerMinute).
				SetMaxActive(v.maxActive).SetPassMinutes(v.passMinutes).SetAveragePartySize(v.averagePartySize).
				SetUpdatedAt(now).ClearClosedAt().Save(ctx)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.setup(ctx, "set", row, seatflow.QueuePrequeue); err != nil {
		return nil, err
	}
	return s.status(ctx, row)
}

// Remove takes a showtime's on-sale queue away before it opened: its record and the
// showtime's has_queue go in one transaction, then its state in Redis, whose subscribers
// are told. After opensAt it is INVALID_STATE; a showtime without a queue BAD_USER_INPUT.
func (s *Service) Remove(ctx context.Context, showID int) (*seatflow.Showtime, error) {
	st, err := s.Catalog.WriteShowtime(ctx, showID, func(tx *ent.Tx, st *ent.Showtime) error {
		row, err := tx.OnSaleQueue.Query().Where(onsalequeue.ShowtimeID(showID)).Only(ctx)
		if ent.IsNotFound(err) {
			return invalid("showtime %d has no on-sale queue", showID)
		} else if err != nil {
			return err
		}
		if !s.Now.Now().Before(row.OpensAt) {
			return seatflow.Errorf(seatflow.EINVALIDSTATE, "the queue opened at %s: it can no longer be removed",
				row.OpensAt.UTC().Format(time.RFC3339))
		}
		if err := tx.OnSaleQueue.DeleteOne(row).Exec(ctx); err != nil {
			return err
		}
		return tx.Showtime.UpdateOneID(showID).SetHasQueue(false).Exec(ctx)
	})
	if err != nil {
		return nil, err
	}
	s.secrets.drop(showID)
	keys := append(s.stateKeys(showID), s.Keys.QueueEvents(showID))
	if err := removeScript.Run(ctx, s.RDB, keys).Err(); err != nil {
		return nil, rdb.Classify("remove the on-sale queue", err)
	}
	return st, nil
}

// newSeed draws a queue's secret seed: its lowercase hex and its commitment.
func newSeed() (seed, commitment string) {
	b := make([]byte, seatflow.DrawSeedBytes)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux; it panics rather than return weak bytes
	return hex.EncodeToString(b), seatflow.DrawCommitment(b)
}

// setup writes a queue's state in Redis from its record (setup.lua): mode "set" creates it
// or updates its settings, "rebuild" creates it only where Redis has none, in phase.
func (s *Service) setup(ctx context.Context, mode string, row *ent.OnSaleQueue, phase seatflow.QueuePhase) error {
	args := []any{mode, s.Now.Now().UnixMilli(), string(phase), row.OpensAt.UnixMilli(), row.AdmitPerMinute, row.MaxActive,
		(time.Duration(row.PassMinutes) * time.Minute).Milliseconds(), strconv.FormatFloat(row.AveragePartySize, 'f', -1, 64),
		row.DrawCommitment, row.DrawSeed, row.Epoch}
	if err := setupScript.Run(ctx, s.RDB, s.stateKeys(row.ShowtimeID), args...).Err(); err != nil {
		return rdb.Classify("set up the on-sale queue", err)
	}
	return nil
}

// record reads a showtime's queue record; nil when it has none.
func (s *Service) record(ctx context.Context, showID int) (*ent.OnSaleQueue, error) {
	row, err := s.DB.OnSaleQueue.Query().Where(onsalequeue.ShowtimeID(showID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read the on-sale queue: %w", database.Classify(err))
	}
	return row, nil
}
