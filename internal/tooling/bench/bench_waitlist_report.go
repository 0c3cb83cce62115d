package bench

import (
	"fmt"
	"io"
	"time"
)

// writeWaitlist writes the waiting-list section (bench_waitlist.go).
func writeWaitlist(w io.Writer, r *wlResult) {
	fmt.Fprintf(w, "\n## 12. Waiting list\n\n")
	fmt.Fprintf(w, "Two sold-out showtimes of one hall (%d seats, every one held, 4 by each customer), each with %d entries on its "+
		"waiting list (docs/DESIGN.md \"Waiting list\"), each entry a customer of its own asking for 1 to 4 seats (a fixed draw: "+
		"%d of 1, %d of 2, %d of 3, %d of 4), joined through `waitlist.Service.Join`, %d at a time (%s per showtime: %.0f joins/s). "+
		"On each, %d orders holding %d seats are then cancelled at once (`booking.CancelOrder`, all started together) with the "+
		"instances' offerers running (`waitlist.Service.Run`: told of the seats its own releases returned, and sweeping each "+
		"second): on the first showtime one instance; on the second two instances on the same MySQL and Redis, the cancels "+
		"taking turns between them, so both are told and race to offer the same seats. "+
		"A seat's release is when its release script ran (Redis' clock, in the change the script published); its offer is when "+
		"the pending order that offers it was created (`orders.created_at`). Offers per second count from the first release to "+
		"the last offer. Redis time is the seat scripts' time as the instances see it (`seatflow_redis_script_duration_seconds`: "+
		"the round trip and the wait in the batch included) from the burst until every seat was offered: the offering's (the "+
		"offerers' reads of the seat hash, `snapshot`, the sweeps' included; the offers; any resale), and the releases' (the "+
		"cancels', all at once, so most of their time is their wait in the batch, and the give-backs of offers lost to the other "+
		"instance). The anchor, in the same run: the one-offerer run's seat groups held on a "+
		"third showtime of the hall by bare holds (`booking.HoldSeats`: the hold script, then the order's transaction), one after "+
		"another as one offerer makes its offers: %d holds in %s, %.0f holds/s, the hold script %s per seat.\n",
		r.seats, r.entries, r.sizes[1], r.sizes[2], r.sizes[3], r.sizes[4], wlJoinWorkers, r.joinTook.Round(time.Millisecond),
		rate(r.entries, r.joinTook), wlReleased/4, wlReleased, r.anchorOffers, r.anchorTook.Round(time.Millisecond),
		rate(r.anchorOffers, r.anchorTook), us(perSeat(r.anchorScripts["hold"].took, seatsOf(r.runs[0].offers))))

	anchorRate := rate(r.anchorOffers, r.anchorTook)
	anchorSeat := perSeat(r.anchorScripts["hold"].took, seatsOf(r.runs[0].offers))
	header := []string{"measure"}
	row := func(f func(run *wlRun) string) []string {
		var out []string
		for _, run := range r.runs {
			out = append(out, f(run))
		}
		return out
	}
	for _, run := range r.runs {
		label := "one instance's offerer"
		if run.instances > 1 {
			label = "two instances' offerers, racing"
		}
		header = append(header, label)
	}
	header = append(header, "target", "verdict")
	allHeld, onTime := true, true
	for _, run := range r.runs {
		allHeld = allHeld && run.failed() == nil
		onTime = onTime && len(run.delays) == wlReleased && run.delays.pct(99) <= wlTarget
	}
	rows := [][]string{
		append(append([]string{"the burst"}, row(func(run *wlRun) string {
			return fmt.Sprintf("%d orders (%d seats) cancelled in %s", run.cancels, wlReleased, run.cancelTook.Round(time.Millisecond))
		})...), "(figure)", ""),
		append(append([]string{"release → offer, per seat"}, row(func(run *wlRun) string {
			return fmt.Sprintf("%d seats: p50 %s, p99 %s, max %s", len(run.delays), ms(run.delays.pct(50)), ms(run.delays.pct(99)), ms(run.delays.max()))
		})...), "p99 ≤ "+wlTarget.String(), verdict(onTime)),
		append(append([]string{"offers"}, row(func(run *wlRun) string {
			span := run.lastAt.Sub(run.firstRelease)
			return fmt.Sprintf("%d offers of %d seats in %s: %.0f offers/s, %.2f of the anchor's holds/s", len(run.offers), seatsOf(run.offers),
				span.Round(time.Millisecond), rate(len(run.offers), span), ratioOf(rate(len(run.offers), span), anchorRate))
		})...), "(figure)", ""),
		append(append([]string{"Redis time of the offering, per released seat"}, row(func(run *wlRun) string {
			var all time.Duration
			for _, k := range []string{"snapshot", "offer", "resell"} {
				all += run.scripts[k].took
			}
			per := perSeat(all, seatsOf(run.offers))
			return fmt.Sprintf("%s, %.1f× the anchor's hold script (snapshot %s; offer %s; resell %s)", us(per),
				ratioOf(float64(per), float64(anchorSeat)), scriptCell(run.scripts["snapshot"]), scriptCell(run.scripts["offer"]),
				scriptCell(run.scripts["resell"]))
		})...), "(figure)", ""),
		append(append([]string{"Redis time of the releases"}, row(func(run *wlRun) string {
			u := run.scripts["release"]
			return fmt.Sprintf("%s: %s per call, %s per released seat", scriptCell(u), ms(perSeat(u.took, u.calls)), us(perSeat(u.took, seatsOf(run.offers))))
		})...), "(figure)", ""),
		append(append([]string{"offers lost to the other instance, given back"}, row(func(run *wlRun) string {
			return fmt.Sprintf("%d; %d entries still waiting", max(0, run.lostRaces), run.waitingLeft)
		})...), "(figure)", ""),
	}
	for i, c := range r.runs[0].checks {
		cells := []string{"check: " + c.name}
		held := true
		for _, run := range r.runs {
			err := run.checks[i].err
			held = held && err == nil
			if err != nil {
				cells = append(cells, err.Error())
			} else {
				cells = append(cells, "holds")
			}
		}
		rows = append(rows, append(cells, "holds", checkVerdict(held)))
	}
	table(w, header, rows)
	fmt.Fprintf(w, "\nThe join-order check: when an offerer offers an entry, every earlier entry still waiting was passed over because it asked for more seats than were left, so for more than the offered entry. Taking the offers in the order of their orders' ids, an earlier entry with no offer, or with an offer made after, that asked for as many seats or fewer fails it. Every seat comes back to an entry: entries of 1 seat wait throughout, so a seat put on sale instead fails the first check. A failed check fails the section")
	if !allHeld {
		fmt.Fprintf(w, ", as it did here")
	}
	fmt.Fprintf(w, ".\n")
}

func seatsOf(orders []wlOrder) int {
	n := 0
	for _, o := range orders {
		n += len(o.seats)
	}
	return n
}

// perSeat is d over n seats (0 for none).
func perSeat(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// scriptCell is a script's calls and time: "12 calls, 3.40 ms".
func scriptCell(u scriptUse) string {
	return fmt.Sprintf("%d calls, %s", u.calls, ms(u.took))
}

func us(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// checkVerdict is PASS for a check that held, FAIL otherwise.
func checkVerdict(held bool) string {
	if held {
		return "PASS"
	}
	return "**FAIL**"
}
