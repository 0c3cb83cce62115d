package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/nodeid"
)

const (
	setQueueQ = `mutation($id: ID!, $in: OnSaleQueueInput!) { setOnSaleQueue(showtimeId: $id, input: $in) {
		showtimeId opensAt admitPerMinute maxActive passMinutes averagePartySize phase waiting admitted drawCommitment drawSeed } }`
	joinQ        = `mutation($id: ID!) { joinQueue(showtimeId: $id) { id showtimeId status position waiting estimatedWaitSeconds pass passExpiresAt joinedAt } }`
	queueTicketQ = `query($id: ID!) { queueTicket(showtimeId: $id) { id status position waiting pass passExpiresAt } }`
	showQueueQ   = `query($id: ID!) { showtime(id: $id) { status queue { phase waiting admitted drawCommitment drawSeed opensAt } } }`
	holdPassQ    = `mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id status } }`
)

type queueTicketOut struct {
	ID, ShowtimeID, Status string
	Position               *int
	Waiting                int
	Pass                   *string
	PassExpiresAt          *string
}

type showQueueOut struct {
	Showtime struct {
		Status string
		Queue  *struct {
			Phase          string
			Waiting        int
			Admitted       int
			DrawCommitment string
			DrawSeed       *string
			OpensAt        string
		}
	}
}

func (a *testApp) joinQueue(token, show string) queueTicketOut {
	a.t.Helper()
	var out struct{ JoinQueue queueTicketOut }
	a.must(token, joinQ, map[string]any{"id": show}, &out)
	return out.JoinQueue
}

func (a *testApp) queueTicket(token, show string) *queueTicketOut {
	a.t.Helper()
	var out struct{ QueueTicket *queueTicketOut }
	a.must(token, queueTicketQ, map[string]any{"id": show}, &out)
	return out.QueueTicket
}

func (a *testApp) showQueue(show string) showQueueOut {
	a.t.Helper()
	var out showQueueOut
	a.must("", showQueueQ, map[string]any{"id": show}, &out)
	return out
}

// waitPhase waits (up to 5 s: the instances' admission runs every second) for the
// showtime's queue to reach phase.
func (a *testApp) waitPhase(show, phase string) showQueueOut {
	a.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out := a.showQueue(show)
		if out.Showtime.Queue != nil && out.Showtime.Queue.Phase == phase {
			return out
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("the queue did not reach %s: %+v", phase, out.Showtime.Queue)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func holdWithPass(show string, seatIDs []string, key string, pass *string) map[string]any {
	in := map[string]any{"showtimeId": show, "seatIds": seatIDs, "idempotencyKey": key}
	if pass != nil {
		in["admissionPass"] = *pass
	}
	return map[string]any{"in": in}
}

// seatState is the showtime's seat state in Redis: every seat, the version, the counts.
func (a *testApp) seatState(show string) string {
	a.t.Helper()
	_, parts, _ := nodeid.Decode(show)
	ctx := context.Background()
	states, version, err := a.Seats.States(ctx, parts[0])
	if err != nil {
		a.t.Fatal(err)
	}
	counts, err := a.Seats.Counts(ctx, parts[0])
	if err != nil {
		a.t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"states": states, "version": version, "counts": counts})
	return string(b)
}

// TestOnSaleQueue drives a queue through the API on two instances: admin set-up, joins
// (idempotent across instances), the sale opened by the queue at opensAt, holds refused
// NOT_ADMITTED with Redis unchanged for every pass that is not the caller's valid one,
// the admitted entrant's hold and payment (which uses the pass up), the pass's expiry, the
// live subscription, and the seed revealed once the showtime is cancelled.
func TestOnSaleQueue(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	advance := func(d time.Duration) { a.clock.Advance(d); b.clock.Advance(d) }
	users := map[string]string{}
	for _, u := range []string{"alice", "bob", "carol"} {
		users[u] = a.token(u, "customer")
	}
	movie := a.createMovie("Premiere", 120)
	hall := a.createHall("Premiere hall", 2, 5)
	show := a.createShowtime(movie, hall, testNow.Add(3*time.Hour))
	plain := a.createShowtime(movie, hall, testNow.Add(6*time.Hour))
	opensAt := testNow.Add(2 * time.Minute)
	in := map[string]any{"opensAt": opensAt.Format(time.RFC3339), "admitPerMinute": 60, "maxActive": 1}

	a.wantCode(users["alice"], setQueueQ, map[string]any{"id": show, "in": in}, seatflow.EFORBIDDEN)
	var set struct {
		SetOnSaleQueue struct {
			Phase, DrawCommitment  string
			MaxActive, PassMinutes int
			DrawSeed               *string
		}
	}
	a.must(a.admin, setQueueQ, map[string]any{"id": show, "in": in}, &set)
	if q := set.SetOnSaleQueue; q.Phase != "PREQUEUE" || len(q.DrawCommitment) != 64 || q.DrawSeed != nil || q.MaxActive != 1 || q.PassMinutes != 10 {
		t.Fatalf("setOnSaleQueue = %+v", q)
	}
	a.wantCode("", joinQ, map[string]any{"id": show}, seatflow.EUNAUTHENTICATED)
	a.wantCode(users["alice"], joinQ, map[string]any{"id": plain}, seatflow.EINVALID)

	tickets := map[string]queueTicketOut{}
	for i, u := range []string{"alice", "bob", "carol"} {
		inst := a
		if i == 1 {
			inst = b
		}
		tickets[u] = inst.joinQueue(users[u], show)
	}
	if again := b.joinQueue(users["alice"], show); again.ID != tickets["alice"].ID {
		t.Fatalf("alice joined twice: %s then %s", tickets["alice"].ID, again.ID)
	}
	if q := a.showQueue(show).Showtime.Queue; q == nil || q.Phase != "PREQUEUE" || q.Waiting != 3 {
		t.Fatalf("Showtime.queue before opensAt = %+v", q)
	}
	if got := a.queueTicket(users["carol"], show); got == nil || got.ID != tickets["carol"].ID || got.Position != nil {
		t.Fatalf("queueTicket = %+v", got)
	}

	// bob follows his ticket on the second instance.
	ws := dialWS(t, b, "graphql-transport-ws", users["bob"])
	ws.send(map[string]any{"id": "q", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($id: ID!) { queue(showtimeId: $id) { id status position pass } }`,
		"variables": map[string]any{"id": show}}})
	nextTicket := func() queueTicketOut {
		t.Helper()
		m := ws.next()
		raw, _ := json.Marshal(m["payload"])
		var p struct {
			Data struct{ Queue queueTicketOut }
		}
		if m["type"] != "next" || json.Unmarshal(raw, &p) != nil {
			t.Fatalf("subscription message: %v", m)
		}
		return p.Data.Queue
	}
	if first := nextTicket(); first.ID != tickets["bob"].ID || first.Status != "WAITING" || first.Position != nil {
		t.Fatalf("first push = %+v", first)
	}

	// opensAt: an instance opens the sale and admits one (maxActive 1).
	advance(2 * time.Minute)
	open := a.waitPhase(show, "OPEN")
	if open.Showtime.Status != "ON_SALE" {
		t.Fatalf("showtime at opensAt is %s, want ON_SALE", open.Showtime.Status)
	}
	var holder string
	deadline := time.Now().Add(5 * time.Second)
	for holder == "" && time.Now().Before(deadline) {
		for u, tok := range users {
			if tk := a.queueTicket(tok, show); tk.Status == "ADMITTED" {
				holder = u
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if holder == "" {
		t.Fatal("nobody admitted at opensAt")
	}
	pass := a.queueTicket(users[holder], show).Pass
	if pass == nil {
		t.Fatal("an ADMITTED ticket without a pass")
	}
	var others []string
	for u := range users {
		if u != holder {
			others = append(others, u)
		}
	}
	seatIDs := a.openSalesSeats(show)

	// Every pass that is not the caller's valid one for this showtime: NOT_ADMITTED, and
	// Redis is as it was.
	_, showParts, _ := nodeid.Decode(show)
	_, plainParts, _ := nodeid.Decode(plain)
	otherShow, _ := a.Queues.Passes.Sign(holder, plainParts[0], "1.1", a.clock.Now().Add(time.Minute).Truncate(time.Second))
	expired, _ := a.Queues.Passes.Sign(holder, showParts[0], "1.1", a.clock.Now().Truncate(time.Second))
	tampered := strings.Replace(*pass, (*pass)[len(*pass)-4:], "AAAA", 1)
	before := a.seatState(show)
	for name, c := range map[string]struct {
		token string
		pass  *string
	}{
		"NoPass":            {users[others[0]], nil},
		"OtherUsersPass":    {users[others[0]], pass},
		"TamperedPass":      {users[holder], &tampered},
		"OtherShowtimePass": {users[holder], &otherShow},
		"ExpiredPass":       {users[holder], &expired},
		"GarbagePass":       {users[holder], ptr("not a pass")},
	} {
		r := a.wantCode(c.token, holdPassQ, holdWithPass(show, seatIDs[:2], "k-"+name, c.pass), seatflow.ENOTADMITTED)
		if !strings.Contains(r.Errors[0].Message, "joinQueue") {
			t.Errorf("%s: message %q does not say how to get admitted", name, r.Errors[0].Message)
		}
		if after := a.seatState(show); after != before {
			t.Fatalf("%s: a refused hold changed Redis:\n%s\n%s", name, before, after)
		}
	}
	// The showtime without a queue sells as before, pass or none.
	a.openSales(plain)
	a.must(users["alice"], holdPassQ, holdWithPass(plain, seatIDs[:1], "plain-1", nil), nil)

	// The holder holds, retries, pays: the payment uses the pass up.
	var held struct{ HoldSeats struct{ ID, Status string } }
	a.must(users[holder], holdPassQ, holdWithPass(show, seatIDs[:2], "h1", pass), &held)
	a.wantCode(users[holder], holdPassQ, holdWithPass(show, seatIDs[:2], "h2", pass), seatflow.ESEATSUNAVAILABLE)
	a.must(users[holder], `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "p1") { status } }`, map[string]any{"id": held.HoldSeats.ID}, nil)
	a.wantCode(users[holder], holdPassQ, holdWithPass(show, seatIDs[2:3], "h3", pass), seatflow.ENOTADMITTED)
	if tk := a.queueTicket(users[holder], show); tk.Status != "EXPIRED" || tk.Pass != nil {
		t.Fatalf("after paying: %+v, want EXPIRED without a pass", tk)
	}

	// The pass's place goes to the next entrant at the next tick.
	advance(time.Second)
	var second string
	var secondPass *string
	deadline = time.Now().Add(5 * time.Second)
	for second == "" && time.Now().Before(deadline) {
		for _, u := range others {
			if tk := a.queueTicket(users[u], show); tk.Status == "ADMITTED" {
				second, secondPass = u, tk.Pass
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if second == "" {
		t.Fatal("nobody admitted once the first pass was used up")
	}
	if second == "bob" || holder == "bob" { // bob's subscription pushed his admission
		for {
			if tk := nextTicket(); tk.Status == "ADMITTED" {
				if tk.Pass == nil {
					t.Fatal("admission pushed without the pass")
				}
				break
			}
		}
	}
	// Its pass expires after passMinutes: NOT_ADMITTED (checked in the hold script too).
	advance(10 * time.Minute)
	before = a.seatState(show)
	a.wantCode(users[second], holdPassQ, holdWithPass(show, seatIDs[3:4], "late", secondPass), seatflow.ENOTADMITTED)
	if after := a.seatState(show); after != before {
		t.Fatal("a hold with an expired pass changed Redis")
	}

	// Cancelled: CLOSED, the seed revealed, and it matches the commitment.
	a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": show}, nil)
	closed := a.waitPhase(show, "CLOSED").Showtime.Queue
	if closed.DrawSeed == nil || closed.DrawCommitment != set.SetOnSaleQueue.DrawCommitment {
		t.Fatalf("closed queue = %+v", closed)
	}
	if tk := a.queueTicket(users[others[0]], show); tk != nil && tk.Status != "CLOSED" && tk.Status != "EXPIRED" {
		t.Errorf("a ticket after the cancellation: %+v", tk)
	}
}

// openSalesSeats is the showtime's seat ids in row order (its sale already open).
func (a *testApp) openSalesSeats(show string) []string {
	a.t.Helper()
	var out struct {
		Showtime struct {
			Hall struct{ Seats []struct{ ID string } }
		}
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { hall { seats { id } } } }`, map[string]any{"id": show}, &out)
	var ids []string
	for _, s := range out.Showtime.Hall.Seats {
		ids = append(ids, s.ID)
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

// TestQueueJoinsLimitedPerAddress: joinQueue past SEATFLOW_QUEUE_JOINS_PER_MINUTE from one
// address is RATE_LIMITED.
func TestQueueJoinsLimitedPerAddress(t *testing.T) {
	a := newTestApp(t, "-queue-joins-per-minute", "2")
	show := a.createShowtime(a.createMovie("Premiere", 120), a.createHall("H", 1, 5), testNow.Add(3*time.Hour))
	a.must(a.admin, setQueueQ, map[string]any{"id": show, "in": map[string]any{
		"opensAt": testNow.Add(time.Hour).Format(time.RFC3339), "admitPerMinute": 60}}, nil)
	a.joinQueue(a.token("u1", "customer"), show)
	a.joinQueue(a.token("u2", "customer"), show)
	r := a.wantCode(a.token("u3", "customer"), joinQ, map[string]any{"id": show}, seatflow.ERATELIMITED)
	if r.Errors[0].Extensions["retryAfterMs"] == nil {
		t.Errorf("RATE_LIMITED without retryAfterMs: %+v", r.Errors[0])
	}
}

// TestOnSaleQueueOnEmbeddedStores runs a queue's scripts on the in-process Redis and its
// record on SQLite (embedded mode, make run): a join, the opening, an admission, a hold
// with the pass and one refused without.
func TestOnSaleQueueOnEmbeddedStores(t *testing.T) {
	a := startEmbeddedTestApp(t)
	show := a.createShowtime(a.createMovie("Premiere", 120), a.createHall("H", 2, 5), testNow.Add(3*time.Hour))
	a.must(a.admin, setQueueQ, map[string]any{"id": show, "in": map[string]any{
		"opensAt": testNow.Add(time.Minute).Format(time.RFC3339), "admitPerMinute": 60}}, nil)
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	first := a.joinQueue(alice, show)
	a.joinQueue(bob, show)
	if again := a.joinQueue(alice, show); again.ID != first.ID {
		t.Fatalf("alice joined twice: %s then %s", first.ID, again.ID)
	}
	a.clock.Advance(time.Minute)
	a.waitPhase(show, "OPEN")
	var in, out string
	for deadline := time.Now().Add(5 * time.Second); in == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, tok := range []string{alice, bob} {
			if a.queueTicket(tok, show).Status == "ADMITTED" {
				in, out = tok, map[string]string{alice: bob, bob: alice}[tok]
			}
		}
	}
	if in == "" {
		t.Fatal("nobody admitted")
	}
	seatIDs := a.openSalesSeats(show)
	a.wantCode(out, holdPassQ, holdWithPass(show, seatIDs[:1], "e1", nil), seatflow.ENOTADMITTED)
	a.must(in, holdPassQ, holdWithPass(show, seatIDs[:1], "e2", a.queueTicket(in, show).Pass), nil)
}
