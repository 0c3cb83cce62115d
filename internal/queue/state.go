package queue

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/onsalequeue"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
)

// secret is a queue's seed and commitment, read from its record once per instance.
func (s *Service) secret(ctx context.Context, showID int) (drawSecret, error) {
	if d, ok := s.secrets.get(showID); ok {
		return d, nil
	}
	row, err := s.record(ctx, showID)
	if err != nil {
		return drawSecret{}, err
	} else if row == nil {
		return drawSecret{}, noQueue(showID)
	}
	seed, err := hex.DecodeString(row.DrawSeed)
	if err != nil {
		return drawSecret{}, fmt.Errorf("the on-sale queue of showtime %d: its seed is not hex: %w", showID, err)
	}
	d := drawSecret{seed: seed, commitment: row.DrawCommitment}
	s.secrets.put(showID, d)
	return d, nil
}

func noQueue(showID int) error {
	return seatflow.Errorf(seatflow.EINVALID, "showtime %d has no on-sale queue", showID)
}

// rebuild builds a queue's state that Redis lost, from its record: the epoch counted one
// more in MySQL first (passes of the lost state keep the older epoch), then setup.lua,
// which creates it only where it is still missing (instances rebuilding at once agree).
func (s *Service) rebuild(ctx context.Context, showID int) error {
	row, err := s.record(ctx, showID)
	if err != nil {
		return err
	} else if row == nil {
		return noQueue(showID)
	}
	st, err := s.Catalog.FreshShowtime(ctx, showID)
	if err != nil {
		return err
	}
	if err := s.DB.OnSaleQueue.UpdateOne(row).AddEpoch(1).Exec(ctx); err != nil {
		return fmt.Errorf("count a build of the on-sale queue: %w", database.Classify(err))
	}
	if row, err = s.DB.OnSaleQueue.Query().Where(onsalequeue.ID(row.ID)).Only(ctx); err != nil {
		return fmt.Errorf("read the on-sale queue: %w", database.Classify(err))
	}
	phase := phaseOf(row, st, s.Now.Now())
	if phase == seatflow.QueueSoldOut {
		phase = seatflow.QueueOpen // the next tick finds it sold out again, or resumes admission
	}
	s.Log.Warn("queue: the on-sale queue's state was missing from Redis; rebuilt from its record: its entrants must join again",
		"showtime", showID, "phase", phase, "epoch", row.Epoch)
	return s.setup(ctx, "rebuild", row, phase)
}

// phaseOf is the phase a queue's record and its showtime say it is in, for a state Redis
// lost: CLOSED once closed, started or cancelled, PREQUEUE before opensAt, OPEN after.
func phaseOf(row *ent.OnSaleQueue, st *seatflow.Showtime, now time.Time) seatflow.QueuePhase {
	switch {
	case row.ClosedAt != nil || st.Status == seatflow.ShowtimeCancelled || !now.Before(st.StartsAt):
		return seatflow.QueueClosed
	case now.Before(row.OpensAt):
		return seatflow.QueuePrequeue
	}
	return seatflow.QueueOpen
}

// Of is the on-sale queue of showtime st, nil when it has none (read from Redis; from its
// record in MySQL when Redis lost it, with no entrant counted).
func (s *Service) Of(ctx context.Context, st *seatflow.Showtime) (*seatflow.OnSaleQueue, error) {
	if !st.HasQueue {
		return nil, nil
	}
	row, err := s.record(ctx, st.ID)
	if err != nil || row == nil {
		return nil, err
	}
	return s.status(ctx, row)
}

// status is a queue as the API shows it: its state in Redis, or its record alone.
func (s *Service) status(ctx context.Context, row *ent.OnSaleQueue) (*seatflow.OnSaleQueue, error) {
	q := &seatflow.OnSaleQueue{ShowtimeID: row.ShowtimeID, OpensAt: row.OpensAt.UTC(), AdmitPerMinute: row.AdmitPerMinute,
		MaxActive: row.MaxActive, PassMinutes: row.PassMinutes, AveragePartySize: row.AveragePartySize,
		DrawCommitment: row.DrawCommitment, Admitted: row.Admitted}
	res, err := s.run(ctx, statusScript, []string{s.Keys.Queue(row.ShowtimeID), s.Keys.QueueWaiting(row.ShowtimeID)}).Slice()
	if err != nil {
		return nil, rdb.Classify("read the on-sale queue", err)
	}
	if len(res) == 10 && res[7] == row.DrawCommitment {
		q.Phase = seatflow.QueuePhase(str(res[0]))
		q.Admitted = atoi(str(res[6]))
		q.Waiting = int(num(res[9]))
	} else { // lost with Redis, or not built yet
		st, err := s.Catalog.FreshShowtime(ctx, row.ShowtimeID)
		if err != nil {
			return nil, err
		}
		q.Phase = phaseOf(row, st, s.Now.Now())
	}
	if q.Phase.Revealed() {
		seed := row.DrawSeed
		q.DrawSeed = &seed
	}
	return q, nil
}

// str is a script reply's string, "" for anything else (nil).
func str(v any) string {
	s, _ := v.(string)
	return s
}

// num is a script reply's integer, 0 for anything else.
func num(v any) int64 {
	n, _ := v.(int64)
	return n
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
