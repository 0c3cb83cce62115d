package bench

import (
	"context"
	"fmt"
	"time"

	"seatflow/internal/tooling/gqlclient"
)

// One pass alone: the floor of click → seen. With N watchers, every change costs the
// server a pass writing N frames; the bench measures one with nothing else running (no
// hold, a quiet showtime, so the change goes at once), on the watchers of the burst, just
// before it, as the burst is measured: the counting clients held (rawClients.hold), the
// probes, a random sample of the pass's order, reading. Click → seen of the burst is
// judged against tick + 2 passes.

const (
	passChanges = 6 // single changes measured, a seat blocked then unblocked in turn
	blockQ      = `mutation($show: ID!, $seats: [ID!]!) { blockSeats(showtimeId: $show, seatIds: $seats, reason: "bench pass") { version } }`
	unblockQ    = `mutation($show: ID!, $seats: [ID!]!) { unblockSeats(showtimeId: $show, seatIds: $seats) { version } }`
)

// passStats are the passes measured: for each change, from its answer to the last probe
// seeing it (toLast), and from the first probe seeing it to the last (spread).
type passStats struct {
	toLast, spread latencies
	version        int // the map's version after the last change
}

// pass is the pass the burst is judged by: the median change's answer → last probe.
func (p passStats) pass() time.Duration { return p.toLast.pct(50) }

// measurePasses makes passChanges changes of show one at a time (staff blocking one seat,
// then unblocking it, so the burst finds every seat free) and times each pass over the
// watchers; a tick (and more) separates them, so each goes at once.
func measurePasses(ctx context.Context, client *gqlclient.Client, admin string, show benchShow, watchers *crowd, tick time.Duration) (passStats, error) {
	var out passStats
	vars := map[string]any{"show": show.ID, "seats": []string{show.SeatIDs[0]}}
	for i := range passChanges {
		q, field := blockQ, "blockSeats"
		if i%2 == 1 {
			q, field = unblockQ, "unblockSeats"
		}
		var res map[string]struct{ Version int }
		if err := client.Do(ctx, admin, q, vars, &res); err != nil {
			return out, fmt.Errorf("pass %d: %w", i, err)
		}
		answered := time.Now()
		version := res[field].Version
		out.version = version
		deadline := answered.Add(30 * time.Second)
		for {
			waiting := watchers.probesBehind(version)
			if waiting == 0 {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return out, fmt.Errorf("pass %d: %d probes never saw version %d", i, waiting, version)
			}
			time.Sleep(2 * time.Millisecond)
		}
		first, last := watchers.probeSpan(version)
		out.toLast = append(out.toLast, last.Sub(answered))
		out.spread = append(out.spread, last.Sub(first))
		time.Sleep(max(2*tick, 200*time.Millisecond))
	}
	return out, nil
}

// serverTick is the tick a child server runs with: SEATFLOW_LIVE_TICK as given, or its
// default when unset.
func serverTick(tick string) time.Duration {
	if tick == "" {
		return 100 * time.Millisecond // SEATFLOW_LIVE_TICK's default (internal/app/config.go)
	}
	d, _ := time.ParseDuration(tick) // parseTicks checked it
	return d
}
