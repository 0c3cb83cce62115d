package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/onsalequeue"
	"seatflow/ent/showtime"
	"seatflow/internal/background"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
)

var (
	admittedTotal = promauto.NewCounter(prometheus.CounterOpts{Namespace: "seatflow", Subsystem: "queue",
		Name: "admitted_total", Help: "Entrants of on-sale queues admitted with a pass by this instance's ticks."})
	tickSeconds = promauto.NewHistogram(prometheus.HistogramOpts{Namespace: "seatflow", Subsystem: "queue",
		Name: "tick_duration_seconds", Help: "Round trip of an on-sale queue's admission tick (admit.lua) as the instance sees it.",
		Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14)})
)

// Tick is what one admission tick of a queue did (admit.lua's reply).
type Tick struct {
	ShowtimeID int
	// Outcome is the script's tag: OK, FOLLOWER (another instance admits), WAIT (before
	// opensAt), DONE (SOLD_OUT or CLOSED), NOSEATS (the seat hash is missing), or what the
	// instance did instead: REBUILT (the state was missing), CLOSED (it closed the queue).
	Outcome   string
	Phase     seatflow.QueuePhase
	Admitted  int
	Skipped   int
	Waiting   int
	InUse     int
	Available int
	Held      int
	// RedisTime is the tick's own time inside Redis (OK ticks), by Redis' clock.
	RedisTime time.Duration
}

// RunAdmission runs the instance's share of every open queue's admission until ctx ends:
// every Tick it ticks each queue not closed. Every instance runs it; a queue's lease lets
// one instance at a time admit (another takes over within Lease when it dies).
func (s *Service) RunAdmission(ctx context.Context) {
	t := time.NewTicker(s.Tick)
	defer t.Stop()
	for {
		if _, err := s.AdmitOnce(ctx); err != nil {
			background.Failed(ctx, s.Log, background.QueueAdmission, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// AdmitOnce ticks every queue not closed once (RunAdmission's step): a queue whose
// showtime started or was cancelled is closed, one at its opensAt opens the showtime's
// sales then starts admitting, one whose state Redis lost is rebuilt from its record.
func (s *Service) AdmitOnce(ctx context.Context) ([]Tick, error) {
	rows, err := s.DB.OnSaleQueue.Query().Where(onsalequeue.ClosedAtIsNil()).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the on-sale queues: %w", database.Classify(err))
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]int, len(rows))
	for i, r := range rows {
		ids[i] = r.ShowtimeID
	}
	shows, err := s.DB.Showtime.Query().Where(showtime.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the on-sale queues' showtimes: %w", database.Classify(err))
	}
	byID := make(map[int]*ent.Showtime, len(shows))
	for _, st := range shows {
		byID[st.ID] = st
	}
	var ticks []Tick
	var errs []error
	for _, row := range rows {
		st := byID[row.ShowtimeID]
		if st == nil {
			continue
		}
		t, err := s.tick(ctx, row, st)
		if err != nil {
			errs = append(errs, fmt.Errorf("showtime %d: %w", row.ShowtimeID, err))
			continue
		}
		ticks = append(ticks, t)
	}
	return ticks, errors.Join(errs...)
}

// tick is one queue's tick.
func (s *Service) tick(ctx context.Context, row *ent.OnSaleQueue, st *ent.Showtime) (Tick, error) {
	if st.Status == seatflow.ShowtimeCancelled || !s.Now.Now().Before(st.StartsAt) {
		return Tick{ShowtimeID: st.ID, Outcome: "CLOSED", Phase: seatflow.QueueClosed}, s.close(ctx, row)
	}
	t, err := s.admit(ctx, st.ID, false)
	if err != nil {
		return t, err
	}
	switch t.Outcome {
	case "NOSTATE":
		t.Outcome = "REBUILT"
		return t, s.rebuild(ctx, st.ID)
	case "OPEN_DUE":
		// Only the lease's holder gets here: it opens the sale (the openSales path: the seat
		// hash, then ON_SALE with the cache dropped), then the queue. A sale an admin opened
		// by hand stays open; one an admin closed stays closed (holds are refused anyway).
		if st.Status == seatflow.ShowtimeScheduled {
			if _, err := s.Sales.OpenSales(ctx, st.ID); err != nil && seatflow.ErrorCode(err) != seatflow.EINVALIDSTATE {
				return t, fmt.Errorf("open the sale: %w", err)
			}
		}
		return s.admit(ctx, st.ID, true)
	case "NOSEATS":
		if st.Status == seatflow.ShowtimeOnSale {
			_, err := s.Sales.InitSeats(ctx, st.ID, st.HallID)
			return t, err
		}
	}
	return t, nil
}

// admit runs admit.lua for a showtime's queue.
func (s *Service) admit(ctx context.Context, showID int, opened bool) (Tick, error) {
	k := s.Keys
	keys := []string{k.Queue(showID), k.QueueWaiting(showID), k.QueueTickets(showID), k.QueueSeen(showID),
		k.QueuePasses(showID), k.QueueRate(showID), k.QueueLease(showID), k.QueueEvents(showID), k.Seats(showID),
		k.Version(showID)}
	open := "0"
	if opened {
		open = "1"
	}
	start := time.Now()
	res, err := admitScript.Run(ctx, s.RDB, keys, s.Now.Now().UnixMilli(), s.lease, s.Lease.Milliseconds(), open,
		seatflow.QueueAbsence.Milliseconds(), maxSkips).Slice()
	tickSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return Tick{ShowtimeID: showID}, rdb.Classify("on-sale queue admission", err)
	}
	t := Tick{ShowtimeID: showID, Outcome: str(res[0])}
	switch {
	case t.Outcome == "DONE" && len(res) == 2:
		t.Phase = seatflow.QueuePhase(str(res[1]))
	case t.Outcome == "OK" && len(res) == 9:
		t.Phase = seatflow.QueuePhase(str(res[1]))
		t.Admitted, t.Skipped, t.Waiting = int(num(res[2])), int(num(res[3])), int(num(res[4]))
		t.InUse, t.Available, t.Held = int(num(res[5])), int(num(res[6])), int(num(res[7]))
		t.RedisTime = time.Duration(num(res[8])) * time.Microsecond
		admittedTotal.Add(float64(t.Admitted))
	}
	return t, nil
}

// close ends a queue whose showtime started or was cancelled: CLOSED in Redis first (its
// seed revealed, its keys left to expire), then the record, so a crash between leaves a
// queue the next tick closes again.
func (s *Service) close(ctx context.Context, row *ent.OnSaleQueue) error {
	showID := row.ShowtimeID
	keys := append(s.stateKeys(showID), s.Keys.QueueEvents(showID))
	res, err := closeScript.Run(ctx, s.RDB, keys, s.Now.Now().UnixMilli(), int(s.ClosedTTL.Seconds())).Slice()
	if err != nil {
		return rdb.Classify("close the on-sale queue", err)
	}
	u := s.DB.OnSaleQueue.Update().Where(onsalequeue.ID(row.ID), onsalequeue.ClosedAtIsNil()).SetClosedAt(s.Now.Now())
	if len(res) == 2 {
		u.SetAdmitted(atoi(str(res[1])))
	}
	if err := u.Exec(ctx); err != nil {
		return fmt.Errorf("close the on-sale queue: %w", database.Classify(err))
	}
	s.secrets.drop(showID)
	return nil
}
