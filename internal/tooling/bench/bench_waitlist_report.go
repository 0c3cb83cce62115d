package bench

import (
	"fmt"
	"io"
	"time"
)

// writeWaitlist writes the waiting-list section (bench_waitlist.go).
func writeWaitlist(w io.Writer, r *wlResult) {
	fmt.Fprintf(w, "\n## 12. Waiting list\n\n")
	fmt.Fprintf(w, "A sold-out showtime (%d seats, every one held, 4 by each customer) with %d entries on its waiting list "+
		"(docs/DESIGN.md \"Waiting list\"), each a customer of its own asking for 1 to 4 seats (a fixed draw: %d of 1, %d of 2, "+
		"%d of 3, %d of 4), joined through `waitlist.Service.Join`. Then %d orders holding %d seats are cancelled at once "+
		"(`booking.CancelOrder`, all started together, half at each of two instances on the same MySQL and Redis), each "+
		"instance's offerer running (`waitlist.Service.Run`: told of the seats its releases returned, and sweeping each second), "+
		"so both race to offer them. A seat's release is when its release script ran (Redis' clock, in the change the script "+
		"published); its offer is when the pending order that offers it was created (`orders.created_at`). Offers per second "+
		"count from the first release to the last offer. Redis time is the seat scripts' time as the instances see it "+
		"(`seatflow_redis_script_duration_seconds`: the round trip and the wait in the batch included) from the burst until "+
		"every seat was offered: the releases, the offerers' reads of the seat hash (`snapshot`, the sweeps' included), the "+
		"offers and any resale. The anchor, in the same run: the same seat groups held on a second showtime of the hall by "+
		"bare holds (`booking.HoldSeats`: the hold script, then the order's transaction), one after another as one offerer "+
		"makes its offers.\n", r.seats, r.entries, r.sizes[1], r.sizes[2], r.sizes[3], r.sizes[4], r.cancels, wlReleased)

	span := r.lastAt.Sub(r.firstRelease)
	offerRate := rate(len(r.offers), span)
	anchorRate := rate(len(r.offers), r.anchorTook)
	seats := 0
	for _, o := range r.offers {
		seats += len(o.seats)
	}
	var burst time.Duration
	for _, k := range []string{"release", "snapshot", "offer", "resell"} {
		burst += r.scripts[k].took
	}
	hold := r.anchorScripts["hold"]
	perSeat := func(d time.Duration) time.Duration {
		if seats == 0 {
			return 0
		}
		return d / time.Duration(seats)
	}
	p99 := r.delays.pct(99)
	rows := [][]string{
		{"joins", fmt.Sprintf("%d in %s: %.0f/s (%d at a time)", r.entries, r.joinTook.Round(time.Millisecond),
			rate(r.entries, r.joinTook), wlJoinWorkers), "(figure)", ""},
		{"the burst", fmt.Sprintf("%d orders (%d seats) cancelled in %s", r.cancels, wlReleased, r.cancelTook.Round(time.Millisecond)), "(figure)", ""},
		{"release → offer, per seat", fmt.Sprintf("%d seats: p50 %s, p99 %s, max %s", len(r.delays), ms(r.delays.pct(50)), ms(p99), ms(r.delays.max())),
			"p99 ≤ " + wlTarget.String(), verdict(len(r.delays) == wlReleased && p99 <= wlTarget)},
		{"offers", fmt.Sprintf("%d offers of %d seats in %s: %.0f offers/s", len(r.offers), seats, span.Round(time.Millisecond), offerRate), "(figure)", ""},
		{"anchor: bare holds of the same seat groups", fmt.Sprintf("%d holds in %s: %.0f holds/s; offers/s ÷ holds/s = %.2f", len(r.offers),
			r.anchorTook.Round(time.Millisecond), anchorRate, ratioOf(offerRate, anchorRate)), "(figure)", ""},
		{"Redis time per released seat", fmt.Sprintf("%s (release %s, snapshot %s, offer %s, resell %s: %s in all); the anchor's hold script: %s; ratio %.2f",
			us(perSeat(burst)), scriptCell(r.scripts["release"]), scriptCell(r.scripts["snapshot"]), scriptCell(r.scripts["offer"]),
			scriptCell(r.scripts["resell"]), ms(burst), us(perSeat(hold.took)), ratioOf(float64(burst), float64(hold.took))), "(figure)", ""},
		{"races between the two offerers", fmt.Sprintf("%d offers lost to the other instance and given back to the list; %d entries still waiting",
			max(0, r.lostRaces), r.waitingLeft), "(figure)", ""},
	}
	for _, c := range r.checks {
		result := "holds"
		if c.err != nil {
			result = c.err.Error()
		}
		rows = append(rows, []string{"check: " + c.name, result, "holds", checkVerdict(c.err)})
	}
	table(w, []string{"measure", "result", "target", "verdict"}, rows)
	fmt.Fprintf(w, "\nThe join-order check: when the offerer offers an entry, every earlier entry still waiting was passed over because it asked for more seats than were left, so more than the offered entry asked for. Taking the offers in the order of their orders' ids, an earlier entry with no offer, or an offer made after, that asked for as many seats or fewer fails it. A failed check fails the section.\n")
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
func checkVerdict(err error) string {
	if err == nil {
		return "PASS"
	}
	return "**FAIL**"
}
