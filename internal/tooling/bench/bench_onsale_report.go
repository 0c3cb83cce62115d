package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// writeOnSale writes the on-sale section: the bursts, their cost, the targets, and the
// same burst through Centrifugo beside them.
func writeOnSale(w io.Writer, rows []*onsaleRun, peers []*peerRun, peerNote string, holds, rate int, quick bool) {
	fmt.Fprintf(w, "\n## 7. On-sale burst\n\n")
	if quick {
		fmt.Fprintf(w, "_Short version (`-quick`: %s)._\n\n", quickSummary)
	}
	withFrom := len(rows) > 0 && rows[0].withFrom
	fmt.Fprintf(w, "Each row is a server of its own (the server binary's `serve` in a child process, `SEATFLOW_LIVE_TICK` unset for the default or set as shown) on a %d-seat showtime (gaps allowed). "+
		"First %d holds warm it up on another showtime; then the burst alone: %d one-seat holds by %d separate buyers (a customer token each; hold rate limit off, purchase limit 10, cost budget refilled without bound) at %d per second, open loop (vegeta: each hold is sent on its schedule whatever the others are doing; at most %d connections, and a hold waiting for one counts the wait), on a showtime no one watches. "+
		"Then N websocket watchers (graphql-transport-ws, in the bench process) subscribe to a third showtime, and the same burst holds its seats. "+
		"%d of the watchers are probes: each keeps its own map as the shipped clients do (a SNAPSHOT replaces the map whatever its version; a DELTA applies only to the map at its `fromVersion` (%s); after a gap, or when the server ends the subscription, the probe subscribes again and waits for the SNAPSHOT) and notes when each seat first shows HELD (gorilla/websocket, a goroutine each). The others only count their frames, reading the first bytes of each: minimal websocket clients read by one goroutine for all of them through epoll, so that thousands of them take from the two cores the server shares with them far less than a goroutine each woken for every frame would; they stand for phones elsewhere, so while a burst is measured they hold their reading (what the server sends them waits in their sockets, a few frames each, far below a socket's buffer, so the server writes as it would to clients reading at once) and read it all once the burst's last hold is answered: their reading does not take a core from the server, MySQL and Redis during the burst. The probes read all along. "+
		"**One pass alone** is the floor of click → seen: just before the burst, with the watchers connected and nothing else running, staff block one seat, then unblock it, %d times, each change a tick and more after the one before (so it goes at once), and each is timed from its answer to the last probe seeing it (the probes are a random sample of a pass's order); its median is the pass. Click → seen p99 is judged against one tick plus two passes, and against three ticks plus one. "+
		"**Click → seen** is, for every (probe, held seat), the time from sending the hold to the seat shown HELD in that probe's map (and from the hold's answer: negative when the map showed it before the buyer had the answer). "+
		"Holds answered per second: the good answers after the first, over the time from the first to the last. "+
		"After the last answer the real map is read through the API, and the run waits (up to %s) until every watcher has its version; then each probe's map is compared with it. "+
		"Server CPU is from `/proc/<pid>/stat` from the burst's start until then; RSS and goroutines are growth over the server before any watcher (after the burst alone), divided by N: idle once the watchers are connected, and the peak sampled during the burst.\n",
		onsaleRows*onsalePerRow, onsaleWarmup, holds, holds, rate, burstConns, onsaleProbes, fromVersionRule(withFrom), passChanges, onsaleSettle)

	var burst, cost [][]string
	for _, r := range rows {
		label := []string{strconv.Itoa(r.n), tickLabel(r.tick)}
		seen := fmt.Sprintf("%s / %s / %s", ms(r.clickSeen.pct(50)), ms(r.clickSeen.pct(99)), ms(r.clickSeen.max()))
		if r.unseen > 0 {
			seen += fmt.Sprintf(" (%d of %d never seen)", r.unseen, r.pairs)
		}
		burst = append(burst, append(label, r.burst.answeredCell(),
			fmt.Sprintf("%s / %s (%.2f)", ms(r.burst.lat.pct(99)), ms(r.alone.lat.pct(99)), r.holdsRatio()),
			seen, fmt.Sprintf("%s (max %s)", ms(r.passes.pass()), ms(r.passes.toLast.max())),
			fmt.Sprintf("%s / %s / %s", ms(r.answerSeen.pct(50)), ms(r.answerSeen.pct(99)), ms(r.answerSeen.max())),
			fmt.Sprintf("%d of %d", onsaleProbesOf(r)-r.wrongMaps, onsaleProbesOf(r)), verdict(r.wrongMaps == 0)))
		settled := r.settle.Round(10 * time.Millisecond).String()
		if !r.settled {
			settled = "not within " + onsaleSettle.String()
		}
		cost = append(cost, append(label, fmt.Sprintf("%.1f / %d (≤ %d)", meanOf(r.frames), maxOf(r.frames), r.framesLimit()),
			fmt.Sprintf("%.1f (%.1f alone) / %.1f", r.cpu, r.cpuAlone, r.clientCPU), fmt.Sprintf("%.0f", r.cpuPerWatcher()),
			fmt.Sprintf("%.1f / %.1f KiB", float64(r.rssIdle)/float64(r.n)/1024, float64(r.rssPeak)/float64(r.n)/1024),
			fmt.Sprintf("%.2f / %.2f", r.goIdle/float64(r.n), r.goPeak/float64(r.n)),
			settled, fmt.Sprintf("%d / %d", r.ended, r.lost), fmt.Sprintf("%d (%d)", r.gaps, r.resubscribed),
			r.connect.Round(time.Millisecond).String()))
	}
	table(w, []string{"N", "tick", "holds answered", "holdSeats p99 with / without watchers (ratio)", "click → seen p50 / p99 / max",
		"one pass alone: median (max)", "from the answer p50 / p99 / max", "probe maps right", "result"}, burst)
	fmt.Fprintf(w, "\n")
	table(w, []string{"N", "tick", "frames per watcher: mean / max (limit: burst s × 10 + 2)", "server CPU s (without watchers) / bench clients' CPU s",
		"server CPU-µs per watcher per burst second", "server RSS per watcher: idle / peak", "goroutines per watcher: idle / peak",
		"every watcher still subscribed at the final version after",
		"subscriptions ended by the server / connections lost", "probe gaps (resubscriptions)", "connect time"}, cost)

	for _, r := range rows {
		if r.endedBy != "" {
			fmt.Fprintf(w, "\nN = %d, tick %s: the server ended %d subscriptions during the burst; the first end a probe read: `%s` (the probes subscribed again; the other watchers stopped there, so their frames and the wait for the final version leave them out).\n",
				r.n, tickLabel(r.tick), r.ended, r.endedBy)
		}
	}
	var targets [][]string
	for _, r := range rows {
		if r.tick != "" || r.n < onsaleTargetsFrom {
			continue
		}
		at := fmt.Sprintf("N = %d, tick default: ", r.n)
		tick, pass, seen := serverTick(r.tick), r.passes.pass(), r.clickSeen.pct(99)
		targets = append(targets,
			[]string{at + "holds answered at the rate asked", r.burst.answeredCell(), fmt.Sprintf("≥ %.0f/s, none failed", 0.95*float64(rate)), verdict(r.burst.atRate())},
			[]string{at + "click → seen p99 against one pass alone", fmt.Sprintf("%s (%d unseen); one pass %s", ms(seen), r.unseen, ms(pass)),
				fmt.Sprintf("≤ tick + 2 passes = %s, every one seen", ms(tick+2*pass)), verdict(r.unseen == 0 && pass > 0 && seen <= tick+2*pass)},
			[]string{at + "click → seen p99 against three ticks", ms(seen),
				fmt.Sprintf("≤ 3 ticks + 1 pass = %s", ms(3*tick+pass)), verdict(r.unseen == 0 && pass > 0 && seen <= 3*tick+pass)},
			[]string{at + "holdSeats p99 with watchers / without", fmt.Sprintf("%.2f (%s / %s)", r.holdsRatio(), ms(r.burst.lat.pct(99)), ms(r.alone.lat.pct(99))), fmt.Sprintf("≤ %.1f", onsaleHoldsRatio), verdict(r.holdsRatio() <= onsaleHoldsRatio)},
			[]string{at + "frames per watcher (most)", strconv.Itoa(maxOf(r.frames)), "≤ " + strconv.Itoa(r.framesLimit()), verdict(maxOf(r.frames) <= r.framesLimit())},
			[]string{at + "server RSS per watcher", fmt.Sprintf("%.1f KiB", float64(r.rssIdle)/float64(r.n)/1024), fmt.Sprintf("≤ %d KiB", onsaleBytesTarget>>10),
				verdict(r.rssIdle <= int64(onsaleBytesTarget*r.n))},
			[]string{at + "server goroutines per watcher", fmt.Sprintf("%.2f", r.goIdle/float64(r.n)), "≤ 1", verdict(r.goIdle/float64(r.n) <= 1.01)},
			[]string{at + "subscriptions ended by the server, connections lost", fmt.Sprintf("%d, %d", r.ended, r.lost), "0, 0", verdict(r.ended == 0 && r.lost == 0)},
			[]string{at + "every probe's map right", fmt.Sprintf("%d wrong of %d", r.wrongMaps, onsaleProbesOf(r)), "0 wrong", verdict(r.wrongMaps == 0)})
	}
	if len(targets) > 0 {
		fmt.Fprintf(w, "\n")
		table(w, []string{"target", "value", "target", "result"}, targets)
	}
	writePeer(w, rows, peers, peerNote, holds, rate)
}

func onsaleProbesOf(r *onsaleRun) int { return min(onsaleProbes, r.n) }

// holdsRatio is holdSeats p99 with watchers over the same without.
func (r *onsaleRun) holdsRatio() float64 {
	if r.alone.lat.pct(99) <= 0 {
		return 0
	}
	return float64(r.burst.lat.pct(99)) / float64(r.alone.lat.pct(99))
}

// framesLimit is the most frames a watcher may get: ten a second of the burst, plus two.
func (r *onsaleRun) framesLimit() int { return int(r.burst.took().Seconds()*10) + 2 }

func (r *onsaleRun) cpuPerWatcher() float64 {
	if s := r.burst.took().Seconds(); s > 0 {
		return r.cpu * 1e6 / float64(r.n) / s
	}
	return 0
}

func meanOf(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0
	for _, x := range xs {
		t += x
	}
	return float64(t) / float64(len(xs))
}

// writePeer writes the Centrifugo rows, then SeatFlow's default-tick rows beside the merged
// ones of the same N.
func writePeer(w io.Writer, rows []*onsaleRun, peers []*peerRun, note string, holds, rate int) {
	fmt.Fprintf(w, "\n### The same burst through Centrifugo\n\n")
	if note != "" {
		fmt.Fprintf(w, "Not measured: %s.\n", note)
		return
	}
	if len(peers) == 0 {
		fmt.Fprintf(w, "Not measured in this run.\n")
		return
	}
	merged := mergeSchedule(holds, rate, peerTick)
	fmt.Fprintf(w, "The fan-out anchor, Centrifugo %s (`go install`, `scripts/centrifugo.sh`), in a child process of its own with its default settings except an HTTP API key and anonymous connections and subscriptions "+
		"(so it writes to each connection as soon as it can, with whatever is queued for it in one frame; delaying writes to batch them is an option of Centrifugo PRO only): "+
		"N subscribers of one channel over its JSON protocol (`/connection/websocket`: a connect command, a subscribe command, publications pushed; in the bench process, %d of them decoding each publication (gorilla/websocket), the others counting publications and the frames carrying them with the same clients as SeatFlow's counters, which hold their reading while the changes are published, as they do during SeatFlow's burst). "+
		"The changes are the holds': %d seats, one due every 1/%d s, published through the HTTP API (`POST /api/publish`, each publication sent when due, open loop), each seat as its id and status (what a SeatFlow DELTA carries for it), by one of two publishers:\n\n"+
		"- **%s**, as SeatFlow's hub writes a show's changes: a change that finds the channel quiet (no publication for a tick) is published when due; the changes within the tick after a publication wait for its end and go out together. At most one publication per tick, carrying every seat changed since the one before: %d publications for the %d changes. SeatFlow is judged against this row.\n"+
		"- **%s**: one publication per change (%d per subscriber), run only with at most %d subscribers: Centrifugo delivers the %d × N pushes long after the burst, in a time that grows with N (the column \"every subscriber had all after\"), and answers the publisher slowly meanwhile (the publish p99); from 10,000 subscribers on, on two cores, the drain takes about a minute and publications begin to fail (answers dropped, EOF), so the row would no longer measure the burst.\n\n"+
		"**Publish → seen** is measured as click → seen is: for every (probe, change of an accepted publication), the time from the moment the change was due on the schedule to the probe's first publication carrying its seat, so the merged publisher's wait for its tick counts as the hub's does (and from the publication's answer). "+
		"A change is accepted when the publication carrying it is answered well, at that answer; changes accepted per second are counted as holds answered per second: the accepted changes after the first, over the time from the first answer to the last (the merged schedule's first publication carries the first change alone). "+
		"A publication answered by EOF is one whose answer Centrifugo's HTTP server dropped (it allows 10 s to write one).\n",
		centrifugoVersion, onsaleProbes, holds, rate, peerLabel(peerTick), len(merged), holds, peerLabel(0), holds, peerStressMax, holds)
	var out [][]string
	for _, p := range peers {
		settled := p.settle.Round(10 * time.Millisecond).String()
		if !p.settled {
			settled = "not within " + onsaleSettle.String()
		}
		seen := fmt.Sprintf("%s / %s / %s", ms(p.seen.pct(50)), ms(p.seen.pct(99)), ms(p.seen.max()))
		if p.unseen > 0 {
			seen += fmt.Sprintf(" (%d of %d never seen)", p.unseen, p.pairs)
		}
		out = append(out, []string{strconv.Itoa(p.n), peerLabel(p.tick), p.changes.answeredCell(),
			fmt.Sprintf("%d of %d, p99 %s", p.pub.answered, p.pub.asked, ms(p.pub.lat.pct(99))), seen,
			fmt.Sprintf("%s / %s / %s", ms(p.answerSeen.pct(50)), ms(p.answerSeen.pct(99)), ms(p.answerSeen.max())),
			fmt.Sprintf("%.1f / %d; %.1f / %d", meanOf(p.frames), maxOf(p.frames), meanOf(p.pubs), maxOf(p.pubs)), fmt.Sprintf("%.1f / %.1f", p.cpu, p.clientCPU),
			fmt.Sprintf("%.1f / %.1f KiB", float64(p.rssIdle)/float64(p.n)/1024, float64(p.rssPeak)/float64(p.n)/1024),
			settled, strconv.Itoa(p.lost), p.connect.Round(time.Millisecond).String()})
	}
	table(w, []string{"subscribers", "publisher", "changes accepted", "publications accepted, publish p99", "publish → seen p50 / p99 / max", "from the answer p50 / p99 / max",
		"frames per subscriber: mean / max; publications: mean / max", "Centrifugo CPU s / bench clients' CPU s", "Centrifugo RSS per subscriber: idle / peak",
		"every subscriber had all after", "connections lost", "connect time"}, out)
	writeSideBySide(w, rows, peers, rate)
}

// writeSideBySide judges SeatFlow's default-tick rows against Centrifugo's merged rows of
// the same N.
func writeSideBySide(w io.Writer, rows []*onsaleRun, peers []*peerRun, rate int) {
	var cmp [][]string
	var rates []string
	atRate := true
	for _, p := range peers {
		if p.tick == 0 {
			continue
		}
		for _, r := range rows {
			if r.n != p.n || r.tick != "" {
				continue
			}
			seenRatio := ratioOf(float64(r.clickSeen.pct(99)), float64(p.seen.pct(99)))
			rateRatio := ratioOf(r.burst.perSecond(), p.changes.perSecond())
			cmp = append(cmp, []string{strconv.Itoa(p.n), ms(r.clickSeen.pct(99)), ms(p.seen.pct(99)), fmt.Sprintf("%.2f", seenRatio),
				fmt.Sprintf("≤ %.2f, every seat seen, no subscription ended", onsalePeerRatio),
				verdict(len(r.clickSeen) > 0 && len(p.seen) > 0 && r.unseen == 0 && r.ended == 0 && r.lost == 0 && seenRatio <= onsalePeerRatio),
				fmt.Sprintf("%.0f/s / %.0f/s", r.burst.perSecond(), p.changes.perSecond()), fmt.Sprintf("%.2f", rateRatio),
				fmt.Sprintf("≥ %.2f, no hold failed", onsalePeerRate), verdict(r.burst.failed == 0 && p.changes.answered > 0 && rateRatio >= onsalePeerRate),
				fmt.Sprintf("%.1f / %.1f", meanOf(r.frames), meanOf(p.frames)), fmt.Sprintf("%.1f / %.1f", r.clientCPU, p.clientCPU)})
			atRate = atRate && nearRate(r.burst.perSecond(), rate) && nearRate(p.changes.perSecond(), rate)
			rates = append(rates, fmt.Sprintf("N = %d: SeatFlow %.0f/s, Centrifugo %.0f/s", p.n, r.burst.perSecond(), p.changes.perSecond()))
		}
	}
	if len(cmp) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSeatFlow (tick default) beside the merged publisher at the same N: SeatFlow's click → seen p99 against Centrifugo's publish → seen p99, and the holds SeatFlow answered per second against the changes Centrifugo accepted per second. ")
	if atRate {
		fmt.Fprintf(w, "Both ran at the rate asked within 3 %% in every row (%d/s asked).\n", rate)
	} else {
		fmt.Fprintf(w, "Not every rate was within 3 %% of the %d/s asked: %s.\n", rate, strings.Join(rates, "; "))
	}
	table(w, []string{"N", "SeatFlow click → seen p99", "Centrifugo publish → seen p99 (merged)", "ratio", "target", "result",
		"holds answered / changes accepted", "ratio", "target", "result", "frames per watcher / per subscriber (mean)", "bench clients' CPU s: SeatFlow / Centrifugo"}, cmp)
}

// ratioOf is a over b, 0 when b is not positive.
func ratioOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// nearRate says whether perSecond is within 3 % of rate.
func nearRate(perSecond float64, rate int) bool {
	return math.Abs(perSecond/float64(rate)-1) <= 0.03
}
