package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"seatflow/ent/seatblock"
)

// House seats (docs/DESIGN.md "House seats"): blockSeats and unblockSeats, the BLOCKED
// status, and the holds and suggestions that must respect it.

const blockQ = `mutation($show: ID!, $seats: [ID!]!, $reason: String!) {
  blockSeats(showtimeId: $show, seatIds: $seats, reason: $reason) { version available seats { seat { id } status } } }`

const unblockQ = `mutation($show: ID!, $seats: [ID!]!) {
  unblockSeats(showtimeId: $show, seatIds: $seats) { version available seats { seat { id } status } } }`

func blockVars(show string, seats []string, reason string) map[string]any {
	return map[string]any{"show": show, "seats": seats, "reason": reason}
}

// blockedRows returns the seat ids (API ids) MySQL records as blocked for the showtime.
func (a *testApp) blockedRows(show string, seats []string) []string {
	a.t.Helper()
	ids, err := a.DB.SeatBlock.Query().Where(seatblock.ShowtimeID(idOf(a.t, show))).Select(seatblock.FieldSeatID).Ints(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for _, s := range seats {
		if slices.Contains(ids, idOf(a.t, s)) {
			out = append(out, s)
		}
	}
	return out
}

// mustAgree fails unless seatflow verify finds MySQL and Redis in agreement.
func (a *testApp) mustAgree() {
	a.t.Helper()
	vs, err := verifyViolations(a)
	if err != nil {
		a.t.Fatal(err)
	}
	if len(vs) > 0 {
		a.t.Fatalf("verify:\n%s", strings.Join(vs, "\n"))
	}
}

// redisSeats is the raw seat hash and version of a showtime.
func (a *testApp) redisSeats(show string) (map[string]string, string) {
	a.t.Helper()
	id := idOf(a.t, show)
	h, err := a.Redis.HGetAll(context.Background(), a.Keys.Seats(id)).Result()
	if err != nil {
		a.t.Fatal(err)
	}
	v, _ := a.Redis.Get(context.Background(), a.Keys.Version(id)).Result()
	return h, v
}

func TestHouseSeatsBlockAndUnblockWithWatcher(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	c := dialWS(t, a, "graphql-transport-ws", "")
	c.subscribe(show)
	snap := c.event()
	if snap.Kind != "SNAPSHOT" {
		t.Fatalf("first event = %+v", snap)
	}

	var out struct {
		BlockSeats struct {
			Version, Available int
			Seats              []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
	a.must(a.admin, blockQ, blockVars(show, seats[3:5], "director's guests"), &out)
	c.wantDelta(snap.Version+1, "BLOCKED", seats[3], seats[4])
	if out.BlockSeats.Available != len(seats)-2 || out.BlockSeats.Version != snap.Version+1 {
		t.Fatalf("blockSeats answered %+v", out.BlockSeats)
	}
	st, avail := a.seatStatuses(show)
	if st[seats[3]] != "BLOCKED" || st[seats[4]] != "BLOCKED" || st[seats[5]] != "AVAILABLE" || avail != len(seats)-2 {
		t.Fatalf("seat map after block: %s %s %s, available %d", st[seats[3]], st[seats[4]], st[seats[5]], avail)
	}
	if got := a.blockedRows(show, seats); !slices.Equal(got, seats[3:5]) {
		t.Fatalf("MySQL blocks = %v, want %v", got, seats[3:5])
	}
	a.mustAgree()

	// Blocking again changes nothing (no delta, the reason kept); unblocking a seat that is
	// not blocked is a no-op for it.
	a.must(a.admin, blockQ, blockVars(show, seats[3:4], "again"), nil)
	a.must(a.admin, unblockQ, map[string]any{"show": show, "seats": []string{seats[4], seats[6]}}, nil)
	c.wantDelta(snap.Version+2, "AVAILABLE", seats[4])
	reason, err := a.DB.SeatBlock.Query().Where(seatblock.SeatID(idOf(t, seats[3]))).Only(t.Context())
	if err != nil || reason.Reason != "director's guests" || reason.CreatedBy != "admin-1" {
		t.Fatalf("block row = %+v, %v", reason, err)
	}
	a.must(a.admin, unblockQ, map[string]any{"show": show, "seats": seats[3:4]}, nil)
	c.wantDelta(snap.Version+3, "AVAILABLE", seats[3])
	if got := a.blockedRows(show, seats); len(got) != 0 {
		t.Fatalf("MySQL blocks after unblock = %v", got)
	}
	a.mustAgree()
}

// TestHouseSeatsAdminOnlyAndInputChecked: the API's roles and its input checks (the
// rules themselves: internal/sales, TestBlockSeatsBadInput).
func TestHouseSeatsAdminOnlyAndInputChecked(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	otherHall := a.createHall("Hall 2", 1, 4)
	otherSeats := a.openSales(a.createShowtime(a.createMovie("Arrival", 116), otherHall, testNow.Add(30*time.Hour)))
	alice := a.token("alice", "customer")
	a.wantCode(alice, blockQ, blockVars(show, seats[:1], "x"), "FORBIDDEN")
	a.wantCode("", blockQ, blockVars(show, seats[:1], "x"), "UNAUTHENTICATED")
	a.wantCode(alice, unblockQ, map[string]any{"show": show, "seats": seats[:1]}, "FORBIDDEN")
	a.wantCode("", unblockQ, map[string]any{"show": show, "seats": seats[:1]}, "UNAUTHENTICATED")

	before, ver := a.redisSeats(show)
	for name, vars := range map[string]map[string]any{
		"empty list":     blockVars(show, []string{}, "x"),
		"listed twice":   blockVars(show, []string{seats[0], seats[1], seats[0]}, "x"),
		"other hall":     blockVars(show, []string{seats[0], otherSeats[0]}, "x"),
		"empty reason":   blockVars(show, seats[:2], "  "),
		"long reason":    blockVars(show, seats[:2], strings.Repeat("é", 201)),
		"control reason": blockVars(show, seats[:2], "press\x07night"),
		"bidi reason":    blockVars(show, seats[:2], "press\u202enight"),
	} {
		t.Run(name, func(t *testing.T) { a.wantCode(a.admin, blockQ, vars, "BAD_USER_INPUT") })
	}
	a.wantCode(a.admin, unblockQ, map[string]any{"show": show, "seats": []string{}}, "BAD_USER_INPUT")
	a.wantCode(a.admin, unblockQ, map[string]any{"show": show, "seats": []string{seats[2], seats[2]}}, "BAD_USER_INPUT")
	after, ver2 := a.redisSeats(show)
	if fmt.Sprint(before) != fmt.Sprint(after) || ver != ver2 || len(a.blockedRows(show, seats)) != 0 {
		t.Fatalf("a refused block changed something: version %s → %s, rows %v", ver, ver2, a.blockedRows(show, seats))
	}
	// 200 characters is fine, however many bytes.
	a.must(a.admin, blockQ, blockVars(show, seats[:1], strings.Repeat("é", 200)), nil)
}

func TestHouseSeatsRefusedToCustomersTakenByAdmin(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	// The middle of row B (the hall's centre) is blocked: bestSeats must go elsewhere.
	centre := seats[8+3 : 8+5]
	a.must(a.admin, blockQ, blockVars(show, centre, "press"), nil)

	before, ver := a.redisSeats(show)
	r := a.wantCode(alice, holdQ, holdVars(show, []string{seats[8+2], centre[0]}, "k1"), "SEATS_UNAVAILABLE")
	if ids := fmt.Sprint(r.Errors[0].Extensions["seatIds"]); ids != fmt.Sprint([]any{centre[0]}) {
		t.Fatalf("refusal names %s, want [%s]", ids, centre[0])
	}
	// useBlocked is for admins: a customer asking for it is refused before anything is held.
	in := holdVars(show, centre[:1], "k2")
	in["in"].(map[string]any)["useBlocked"] = true
	a.wantCode(alice, holdQ, in, "FORBIDDEN")
	after, ver2 := a.redisSeats(show)
	if fmt.Sprint(before) != fmt.Sprint(after) || ver != ver2 {
		t.Fatalf("a refused hold changed Redis: version %s → %s", ver, ver2)
	}

	var best struct{ BestSeats []struct{ ID string } }
	for _, n := range []int{1, 2, 3} {
		a.must("", `query($id: ID!, $n: Int!) { bestSeats(showtimeId: $id, count: $n) { id } }`, map[string]any{"id": show, "n": n}, &best)
		if len(best.BestSeats) != n {
			t.Fatalf("bestSeats(%d) = %v", n, best.BestSeats)
		}
		for _, s := range best.BestSeats {
			if slices.Contains(centre, s.ID) {
				t.Fatalf("bestSeats(%d) suggested blocked seat %s", n, s.ID)
			}
		}
	}

	// An admin's hold without useBlocked is refused like anyone's; with it, it takes them.
	a.wantCode(a.admin, holdQ, holdVars(show, centre, "a1"), "SEATS_UNAVAILABLE")
	in = holdVars(show, centre, "a2")
	in["in"].(map[string]any)["useBlocked"] = true
	var held struct{ HoldSeats orderOut }
	a.must(a.admin, holdQ, in, &held)
	st, _ := a.seatStatuses(show)
	if held.HoldSeats.Status != "PENDING_PAYMENT" || st[centre[0]] != "HELD" || st[centre[1]] != "HELD" {
		t.Fatalf("admin hold %+v, seats %s %s", held.HoldSeats, st[centre[0]], st[centre[1]])
	}
	if rows := a.blockedRows(show, seats); len(rows) != 0 {
		t.Fatalf("seats taken by the admin's hold are still blocked in MySQL: %v", rows)
	}
	a.mustAgree()
	// Cancelled, they go on sale.
	a.must(a.admin, `mutation($id: ID!) { cancelOrder(orderId: $id) { status } }`, map[string]any{"id": held.HoldSeats.ID}, nil)
	if st, _ := a.seatStatuses(show); st[centre[0]] != "AVAILABLE" {
		t.Fatalf("after cancel: %s", st[centre[0]])
	}
	a.mustAgree()
}

func TestHouseSeatsBlockingHeldSeatRefusesIt(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.hold(alice, show, seats[0:2], "k")
	a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "p") { id } }`, map[string]any{"id": o.ID}, nil)
	a.hold(alice, show, seats[8:10], "k2")

	asked := []string{seats[1], seats[4], seats[9], seats[5]}
	r := a.do(a.admin, blockQ, blockVars(show, asked, "camera"))
	if r.Code() != "SEATS_UNAVAILABLE" || len(r.Errors) != 1 {
		t.Fatalf("errors = %+v, want one SEATS_UNAVAILABLE", r.Errors)
	}
	if ids := fmt.Sprint(r.Errors[0].Extensions["seatIds"]); ids != fmt.Sprint([]any{seats[1], seats[9]}) {
		t.Fatalf("refused seats named %s, want the sold and the held one", ids)
	}
	if !strings.Contains(string(r.Data), `"blockSeats":{`) {
		t.Fatalf("the map is not in the answer: %s", r.Data)
	}
	st, _ := a.seatStatuses(show)
	if st[seats[1]] != "SOLD" || st[seats[9]] != "HELD" || st[seats[4]] != "BLOCKED" || st[seats[5]] != "BLOCKED" {
		t.Fatalf("after block: %s %s %s %s", st[seats[1]], st[seats[9]], st[seats[4]], st[seats[5]])
	}
	if rows := a.blockedRows(show, seats); !slices.Equal(rows, []string{seats[4], seats[5]}) {
		t.Fatalf("MySQL blocks = %v", rows)
	}
	a.mustAgree()
}

func TestHouseSeatsSurviveRebuildAndReconciler(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	id := idOf(t, show)
	alice := a.token("alice", "customer")
	a.must(a.admin, blockQ, blockVars(show, seats[2:4], "house"), nil)
	a.hold(alice, show, seats[4:6], "k")
	ctx := t.Context()

	// Redis loses the seat hash: the reconciler's rebuild brings the blocks back.
	if err := a.Redis.Del(ctx, a.Keys.Seats(id)).Err(); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		RunReconcile struct{ HashesRebuilt, BlocksRepaired int }
	}
	a.must(a.admin, `mutation { runReconcile { hashesRebuilt blocksRepaired } }`, nil, &rep)
	if rep.RunReconcile.HashesRebuilt != 1 || rep.RunReconcile.BlocksRepaired != 0 {
		t.Fatalf("report = %+v", rep.RunReconcile)
	}
	st, _ := a.seatStatuses(show)
	if st[seats[2]] != "BLOCKED" || st[seats[3]] != "BLOCKED" || st[seats[5]] != "HELD" {
		t.Fatalf("rebuilt map: %s %s %s", st[seats[2]], st[seats[3]], st[seats[5]])
	}
	a.mustAgree()

	// And a hold's own rebuild (the hash lost again): the blocked seat is still refused.
	if err := a.Redis.Del(ctx, a.Keys.Seats(id)).Err(); err != nil {
		t.Fatal(err)
	}
	a.wantCode(alice, holdQ, holdVars(show, seats[2:3], "k2"), "SEATS_UNAVAILABLE")
	a.mustAgree()

	// The crash windows, each left as a crash would leave it:
	// a block row written, the script never run → the reconciler blocks the seat;
	if err := a.DB.SeatBlock.Create().SetShowtimeID(id).SetSeatID(idOf(t, seats[10])).SetReason("crash").SetCreatedBy("admin-1").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// a row deleted, the unblock script never run → the reconciler unblocks it;
	if _, err := a.DB.SeatBlock.Delete().Where(seatblock.SeatID(idOf(t, seats[3]))).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// a row left over a seat an order holds → the order wins, the row goes.
	if err := a.DB.SeatBlock.Create().SetShowtimeID(id).SetSeatID(idOf(t, seats[5])).SetReason("stale").SetCreatedBy("admin-1").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if vs, _ := verifyViolations(a); len(vs) != 3 {
		t.Fatalf("verify before the run = %v, want the three drifts", vs)
	}
	a.must(a.admin, `mutation { runReconcile { hashesRebuilt blocksRepaired } }`, nil, &rep)
	if rep.RunReconcile.BlocksRepaired != 3 {
		t.Fatalf("report = %+v, want 3 blocks repaired", rep.RunReconcile)
	}
	st, _ = a.seatStatuses(show)
	if st[seats[10]] != "BLOCKED" || st[seats[3]] != "AVAILABLE" || st[seats[5]] != "HELD" || st[seats[2]] != "BLOCKED" {
		t.Fatalf("after the run: %s %s %s %s", st[seats[10]], st[seats[3]], st[seats[5]], st[seats[2]])
	}
	if rows := a.blockedRows(show, seats); !slices.Equal(rows, []string{seats[2], seats[10]}) {
		t.Fatalf("MySQL blocks = %v", rows)
	}
	a.mustAgree()
	// A second run finds nothing to do.
	a.must(a.admin, `mutation { runReconcile { hashesRebuilt blocksRepaired } }`, nil, &rep)
	if rep.RunReconcile.BlocksRepaired != 0 {
		t.Fatalf("second run: %+v", rep.RunReconcile)
	}
}

// An admin's hold of a blocked seat that never reached MySQL (a crash between hold.lua
// and the order's commit) leaves the seat held by a token no order has and its row kept:
// the row waits while the hold may still commit, and once the orphan is released the
// same run blocks the seat again.
func TestHouseSeatsOrphanedAdminHoldGoesBackToBlocked(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	id := idOf(t, show)
	a.must(a.admin, blockQ, blockVars(show, seats[7:8], "house"), nil)
	held := fmt.Sprintf("1|orphan-token|%d", a.clock.Now().UnixMilli())
	if err := a.Redis.HSet(t.Context(), a.Keys.Seats(id), fmt.Sprint(idOf(t, seats[7])), held).Err(); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		RunReconcile struct{ OrphanHoldsReleased, BlocksRepaired int }
	}
	a.must(a.admin, `mutation { runReconcile { orphanHoldsReleased blocksRepaired } }`, nil, &rep)
	if rep.RunReconcile.OrphanHoldsReleased != 0 || rep.RunReconcile.BlocksRepaired != 0 {
		t.Fatalf("within the grace period: %+v, want nothing done", rep.RunReconcile)
	}
	if rows := a.blockedRows(show, seats); len(rows) != 1 {
		t.Fatalf("the row of a seat held by a hold in flight was dropped: %v", rows)
	}
	a.clock.Advance(3 * time.Minute)
	a.must(a.admin, `mutation { runReconcile { orphanHoldsReleased blocksRepaired } }`, nil, &rep)
	if rep.RunReconcile.OrphanHoldsReleased != 1 || rep.RunReconcile.BlocksRepaired != 1 {
		t.Fatalf("after the grace period: %+v, want the orphan released and the seat blocked", rep.RunReconcile)
	}
	if st, _ := a.seatStatuses(show); st[seats[7]] != "BLOCKED" {
		t.Fatalf("seat is %s, want BLOCKED again", st[seats[7]])
	}
	a.mustAgree()
}
