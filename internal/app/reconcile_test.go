package app

import (
	"bytes"
	"strings"
	"testing"

	"seatflow/internal/reconcile"
)

func TestReconcileThroughAPIAndVerify(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.hold(alice, show, seats[:2], "k")
	a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "p") { id } }`, map[string]any{"id": o.ID}, nil)
	a.hold(alice, show, seats[8:10], "k2")

	id := idOf(t, show)
	if err := a.Redis.Del(t.Context(), a.Keys.Seats(id)).Err(); err != nil { // Redis lost the seat hash
		t.Fatal(err)
	}
	violations := func() string {
		var out bytes.Buffer
		vs, err := verifyViolations(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			out.WriteString(v + "\n")
		}
		return out.String()
	}
	if v := violations(); !strings.Contains(v, "no seat hash") {
		t.Fatalf("verify before repair: %q, want the lost hash reported", v)
	}
	a.wantCode(alice, `mutation { runReconcile { hashesRebuilt } }`, nil, "FORBIDDEN")
	var out struct{ RunReconcile struct{ HashesRebuilt int } }
	a.must(a.admin, `mutation { runReconcile { hashesRebuilt } }`, nil, &out)
	if out.RunReconcile.HashesRebuilt != 1 {
		t.Fatalf("report = %+v, want one hash rebuilt", out.RunReconcile)
	}
	if v := violations(); v != "" {
		t.Fatalf("verify after repair:\n%s", v)
	}
	st, _ := a.seatStatuses(show)
	if st[seats[0]] != "SOLD" || st[seats[8]] != "HELD" || st[seats[4]] != "AVAILABLE" {
		t.Fatalf("rebuilt map: %s %s %s", st[seats[0]], st[seats[8]], st[seats[4]])
	}
	var runs struct {
		ReconcileRuns []struct {
			HashesRebuilt int
			ShowtimeIDs   []string
		}
	}
	a.must(a.admin, `{ reconcileRuns { hashesRebuilt showtimeIds } }`, nil, &runs)
	if len(runs.ReconcileRuns) != 1 || runs.ReconcileRuns[0].ShowtimeIDs[0] != show {
		t.Fatalf("runs = %+v", runs.ReconcileRuns)
	}
}

func verifyViolations(a *testApp) ([]string, error) {
	vs, err := reconcile.Verify(a.t.(*testing.T).Context(), a.DB, a.Seats)
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	return out, err
}
