package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The publisher of the on-sale burst through Centrifugo. The burst's changes are SeatFlow's
// holds: change i (seat order[i] held) is due i/rate seconds after the burst starts, the
// holds' schedule. The publisher sends them to the channel in one of two ways:
//
//   - merged, as SeatFlow's live hub writes a show's changes (internal/live/flush.go): a
//     change that finds the channel quiet (its last publication a tick ago or more, or none)
//     is published when due; the changes that come within the tick after a publication wait
//     for the end of that tick and go out together. At most one publication per tick, each
//     carrying every seat changed since the one before.
//   - one publication per change when it is due (a tick of 0): the per-change stress row.
//
// Each publication is sent when due whatever the ones before it are doing (open loop, as
// the holds are), through the HTTP API's publish method; its data carries, for each seat
// changed, what a SeatFlow DELTA carries for it: the seat's id and its status.

// peerTick is the merged publisher's tick: SeatFlow's default SEATFLOW_LIVE_TICK.
const peerTick = 100 * time.Millisecond

// peerPub is one publication of a schedule: when it is due after the burst's start, and
// the changes it carries (indices into the seat order).
type peerPub struct {
	at      time.Duration
	changes []int
}

// changeDue is when change i of a burst at rate per second is due after its start.
func changeDue(i, rate int) time.Duration {
	return time.Duration(i) * time.Second / time.Duration(rate)
}

// mergeSchedule is the publications of changes changes at rate per second, merged per
// tick as the hub merges them (a tick of 0: one publication per change, when it is due).
func mergeSchedule(changes, rate int, tick time.Duration) []peerPub {
	var pubs []peerPub
	for i := range changes {
		at := changeDue(i, rate)
		if n := len(pubs); n > 0 {
			last := &pubs[n-1]
			if at <= last.at { // the next publication is not out yet: the change joins it
				last.changes = append(last.changes, i)
				continue
			}
			at = max(at, last.at+tick)
		}
		pubs = append(pubs, peerPub{at: at, changes: []int{i}})
	}
	return pubs
}

// publicationRate is the publications a second a schedule asks for: one per change, at
// most one per tick.
func publicationRate(rate int, tick time.Duration) int {
	if tick <= 0 {
		return rate
	}
	return max(1, min(rate, int(time.Second/tick)))
}

// publicationBody is the publish request of the seats of changes: {"channel": …, "data":
// {"seats": [{"id": …, "status": "HELD"}, …]}}.
func publicationBody(order []string, changes []int) []byte {
	type seat struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	seats := make([]seat, len(changes))
	for j, i := range changes {
		seats[j] = seat{ID: order[i], Status: "HELD"}
	}
	body, _ := json.Marshal(map[string]any{"channel": centrifugoChannel, "data": map[string]any{"seats": seats}})
	return body
}

// publishSchedule sends pubs through hc, publication k at start + pubs[k].at, and returns
// start with the publications' hits, by index (a hit never sent has a zero sent time).
func publishSchedule(ctx context.Context, hc *http.Client, base string, order []string, pubs []peerPub) (time.Time, []burstHit) {
	bodies := make([][]byte, len(pubs))
	for k, p := range pubs {
		bodies[k] = publicationBody(order, p.changes)
	}
	hits := make([]burstHit, len(pubs))
	var wg sync.WaitGroup
	start := time.Now()
	for k, p := range pubs {
		if wait := time.Until(start.Add(p.at)); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hits[k] = publish(ctx, hc, base, bodies[k])
		}()
	}
	wg.Wait()
	return start, hits
}

// publish sends one publication and notes when it was sent and answered, and why it
// failed.
func publish(ctx context.Context, hc *http.Client, base string, body []byte) burstHit {
	h := burstHit{sent: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/publish", bytes.NewReader(body))
	if err != nil {
		h.answered, h.err = time.Now(), err.Error()
		return h
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "X-API-Key": {centrifugoKey}}
	resp, err := hc.Do(req)
	if err != nil {
		h.answered, h.err = time.Now(), err.Error()
		return h
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	h.answered = time.Now()
	switch {
	case err != nil:
		h.err = err.Error()
	case resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"error"`)):
		h.err = fmt.Sprintf("HTTP %d: %.160s", resp.StatusCode, out)
	}
	return h
}

// changeHits are the changes of a published schedule as the holds' hits are read: change
// i sent and answered with the publication carrying it, failed with it.
func changeHits(pubs []peerPub, hits []burstHit) []burstHit {
	n := 0
	for _, p := range pubs {
		n += len(p.changes)
	}
	out := make([]burstHit, n)
	for k, p := range pubs {
		for _, i := range p.changes {
			out[i] = hits[k]
		}
	}
	return out
}

// seenDelays measures one probe against a published schedule that started at start: for
// every change of an accepted publication (a pair), the time from when the change was due
// to when seenAt says the probe first saw its seat, and from the publication's answer;
// unseen counts the pairs the probe never saw. The merged publisher's wait for its tick
// counts, as the hub's does in SeatFlow's click → seen.
func seenDelays(start time.Time, rate int, order []string, pubs []peerPub, hits []burstHit, seenAt map[string]time.Time) (fromDue, fromAnswer latencies, pairs, unseen int) {
	for k, p := range pubs {
		if h := hits[k]; h.err != "" || h.sent.IsZero() {
			continue
		}
		for _, i := range p.changes {
			pairs++
			seen, ok := seenAt[order[i]]
			if !ok {
				unseen++
				continue
			}
			fromDue = append(fromDue, seen.Sub(start.Add(changeDue(i, rate))))
			fromAnswer = append(fromAnswer, seen.Sub(hits[k].answered))
		}
	}
	return fromDue, fromAnswer, pairs, unseen
}
