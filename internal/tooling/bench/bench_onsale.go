package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"seatflow/internal/cli"
)

// The on-sale burst: N watchers follow one showtime while its seats are held one by one
// at the rate of an on-sale minute. Fan-out measures one event reaching idle watchers;
// this measures what the sale and the maps go through when every change is one.

const (
	onsaleOwnFDs      = 120      // descriptors a process of the burst keeps besides its watchers
	onsaleTargetsFrom = 10000    // the rows held to the targets: N at or above it, tick default
	onsaleHoldsRatio  = 2.0      // holdSeats p99 with watchers against without
	onsaleBytesTarget = 12 << 10 // server RSS per watcher
	onsalePeerRatio   = 0.5      // SeatFlow's click → seen p99 against Centrifugo's merged publish → seen
	onsalePeerRate    = 0.97     // SeatFlow's holds answered per second against the changes Centrifugo accepted
	onsaleQuickHolds  = 200
)

const quickSummary = "N = 200 and 1,000 watchers, tick default and 0, 200 holds, no Centrifugo run; only the onsale section reads it"

// parseTicks reads -onsale-ticks: the SEATFLOW_LIVE_TICK settings every N runs with,
// "default" for the variable unset (the report's rows: the default and 0, one DELTA per
// change).
func parseTicks(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); {
		case f == "":
		case f == "default":
			out = append(out, "")
		default:
			if _, err := time.ParseDuration(f); err != nil {
				return nil, cli.UsageError{Msg: "-onsale-ticks: " + f}
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, cli.UsageError{Msg: "-onsale-ticks: no setting"}
	}
	return out, nil
}

func tickLabel(tick string) string {
	if tick == "" {
		return "default"
	}
	return tick
}

func parseCounts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, cli.UsageError{Msg: flag + ": " + f}
		}
		out = append(out, n)
	}
	return out, nil
}

// benchOnSale runs the on-sale burst for every watcher count and tick, then the same
// burst through Centrifugo, and writes the section.
func benchOnSale(ctx context.Context, b *benchEnv, w io.Writer) error {
	counts, err := parseCounts("-onsale", b.Opt.OnSale)
	if err != nil {
		return err
	}
	peers, err := parseCounts("-peer", b.Opt.Peer)
	if err != nil {
		return err
	}
	onsaleTicks, err := parseTicks(b.Opt.OnSaleTicks)
	if err != nil {
		return err
	}
	holds, rate := b.Opt.OnSaleHolds, b.Opt.OnSaleRate
	if b.Opt.Quick {
		counts, peers, holds = []int{200, 1000}, nil, min(holds, onsaleQuickHolds)
	}
	if holds <= 0 || holds > onsaleRows*onsalePerRow || rate <= 0 {
		return cli.UsageError{Msg: fmt.Sprintf("-onsale-holds must be 1 to %d and -onsale-rate positive", onsaleRows*onsalePerRow)}
	}
	// Each watcher costs one descriptor here and one in the child. The child needs about
	// 110 of its own at the burst's peak (listeners, 32 Redis and 20 MySQL connections,
	// the burst's 32, the runtime's, the websocket poller's; counted in /proc at 19,900
	// watchers, where it reached the 20,000 limit and a hold waited a minute for a
	// descriptor), the bench process about as many.
	capN := int(b.NoFile) - onsaleOwnFDs
	for i, n := range counts {
		if n > capN {
			b.note("On-sale burst: N=%d capped at %d by the open-file limit (%d per process).", n, capN, b.NoFile)
			counts[i] = capN
		}
	}

	fixtures, err := b.openBenchApp(ctx)
	if err != nil {
		return err
	}
	runs := len(counts) * len(onsaleTicks)
	shows, err := fixtures.createShows(ctx, 3*runs, onsaleRows, onsalePerRow, true, 10, true)
	if err != nil {
		fixtures.Close()
		return err
	}
	buyers := make([]string, max(holds, onsaleWarmup))
	for i := range buyers {
		buyers[i] = fixtures.token("onsale-buyer-" + strconv.Itoa(i))
	}
	admin := fixtures.admin
	fixtures.Close()

	var rows []*onsaleRun
	for i, n := range counts {
		for j, tick := range onsaleTicks {
			k := 3 * (i*len(onsaleTicks) + j)
			r, err := b.onsaleRun(ctx, n, tick, onsaleShows{warm: shows[k], alone: shows[k+1], watched: shows[k+2]}, admin, buyers, holds, rate)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				b.note("On-sale burst: N=%d, tick %s did not finish: %v", n, tickLabel(tick), err)
				continue
			}
			rows = append(rows, r)
		}
	}
	var peerRows []*peerRun
	peerNote := ""
	if len(peers) > 0 {
		bin, err := centrifugoBinary(b.Opt.Centrifugo)
		if err != nil {
			peerNote = err.Error()
		}
		for _, n := range peers {
			if err != nil {
				break
			}
			for _, tick := range peerTicks(min(n, capN)) {
				r, runErr := centrifugoRun(ctx, bin, min(n, capN), seatOrder(shows[0]), holds, rate, tick)
				if runErr != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					b.note("On-sale burst through Centrifugo: N=%d, %s did not finish: %v", n, peerLabel(tick), runErr)
					continue
				}
				peerRows = append(peerRows, r)
			}
		}
	}
	writeOnSale(w, rows, peerRows, peerNote, holds, rate, b.Opt.Quick)
	return nil
}
