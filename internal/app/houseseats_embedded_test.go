package app

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/booking"
	"seatflow/internal/tooling/testenv"
)

// startEmbeddedTestApp is an instance in embedded mode (SQLite and the in-process Redis),
// served like testApp's, for the statements that differ between MySQL and SQLite.
func startEmbeddedTestApp(t *testing.T) *testApp {
	t.Helper()
	cfg, _, err := ParseConfig("test", []string{"-sqlite-path", filepath.Join(t.TempDir(), "seatflow.db"),
		"-cost-budget", "100000000", "-cost-restore", "100000000", "-payment-provider", "test"})
	if err != nil {
		t.Fatal(err)
	}
	logBuf := &testenv.SyncBuffer{}
	clk := testenv.NewClock(testNow)
	a := &App{Config: cfg, Log: slog.New(slog.NewTextHandler(logBuf, nil)), Now: clk.Now}
	a.Config.ReconcileEvery = 0
	if err := a.openStores(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if err := a.wire(); err != nil {
		t.Fatal(err)
	}
	a.Start(context.Background())
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	ta := &testApp{App: a, t: t, srv: srv, clock: clk, logBuf: logBuf}
	ta.admin = ta.token("admin-1", "admin")
	return ta
}

// House seats on the embedded stores: the block rows' insert that keeps an existing row
// (ON CONFLICT on SQLite), the hold refused, the rebuild and the unblock.
func TestHouseSeatsOnEmbeddedStores(t *testing.T) {
	a := startEmbeddedTestApp(t)
	hall := a.createHall("Hall 1", 2, 6)
	show := a.createShowtime(a.createMovie("Dune", 155), hall, testNow.Add(30*time.Hour))
	seats := a.openSales(show)
	a.must(a.admin, blockQ, blockVars(show, seats[2:4], "house"), nil)
	a.must(a.admin, blockQ, blockVars(show, seats[1:4], "again"), nil) // 2 and 3 blocked already
	if rows := a.blockedRows(show, seats); len(rows) != 3 {
		t.Fatalf("blocked rows = %v, want 3", rows)
	}
	alice := a.token("alice", "customer")
	a.wantCode(alice, holdQ, holdVars(show, seats[3:4], "k"), "SEATS_UNAVAILABLE")
	if err := a.Redis.Del(t.Context(), a.Keys.Seats(idOf(t, show))).Err(); err != nil {
		t.Fatal(err)
	}
	a.must(a.admin, `mutation { runReconcile { hashesRebuilt } }`, nil, nil)
	st, _ := a.seatStatuses(show)
	if st[seats[1]] != "BLOCKED" || st[seats[3]] != "BLOCKED" || st[seats[4]] != "AVAILABLE" {
		t.Fatalf("rebuilt: %s %s %s", st[seats[1]], st[seats[3]], st[seats[4]])
	}
	a.must(a.admin, unblockQ, map[string]any{"show": show, "seats": seats[1:4]}, nil)
	if st, _ := a.seatStatuses(show); st[seats[2]] != "AVAILABLE" || len(a.blockedRows(show, seats)) != 0 {
		t.Fatalf("after unblock: %s, rows %v", st[seats[2]], a.blockedRows(show, seats))
	}
	a.mustAgree()
}

// Accessible seats, companions and refunds of some seats on the embedded stores: the hold
// script's check of the general seats, the refund's transaction without a locking read,
// the report's refunds and verify.
func TestAccessibleAndSeatRefundsOnEmbeddedStores(t *testing.T) {
	a := startEmbeddedTestApp(t)
	show, seat := a.accessibleShowtime()
	alice := a.token("alice", "customer")
	a.wantCode(alice, holdQ, holdVars(show, []string{seat["A1"]}, "k1"), "SEATS_UNAVAILABLE")
	a.wantCode(alice, holdQ, holdVars(show, []string{seat["A2"]}, "k2"), "COMPANION_WITHOUT_ACCESSIBLE")
	vars := holdVars(show, []string{seat["A1"], seat["A2"], seat["B1"]}, "k3")
	vars["in"].(map[string]any)["needsAccessible"] = true
	var held struct{ HoldSeats orderOut }
	a.must(alice, holdQ, vars, &held)
	a.must(alice, payQ, map[string]any{"id": held.HoldSeats.ID, "ref": "r"}, nil)
	var refunded refundSeatsOut
	a.must(a.admin, refundSeatsQ, map[string]any{"id": held.HoldSeats.ID, "seats": []string{seat["B1"]}}, &refunded)
	if refunded.RefundSeats.AmountCents != 1600 || refunded.RefundSeats.Status != "PAID" {
		t.Fatalf("refundSeats answered %+v", refunded.RefundSeats)
	}
	var report struct {
		ShowtimeSales struct{ Sold, RevenueCents, RefundedCents int }
	}
	a.must(a.admin, `query($id: ID!) { showtimeSales(showtimeId: $id) { sold revenueCents refundedCents } }`, map[string]any{"id": show}, &report)
	if r := report.ShowtimeSales; r.Sold != 2 || r.RevenueCents != 1600 || r.RefundedCents != 1000 {
		t.Fatalf("sales = %+v, want 2 sold, 1600 kept, 1000 refunded", r)
	}
	a.mustAgree()
}

// The purchase limit on the embedded stores: the count row's upsert (ON CONFLICT …
// RETURNING on SQLite) counts a hold only while the showtime is on sale, and refuses one
// over the limit when Redis lost the customer's count.
func TestPurchaseLimitOnEmbeddedStores(t *testing.T) {
	a := startEmbeddedTestApp(t)
	hall := a.createHall("Hall 1", 2, 6)
	show := a.createShowtime(a.createMovie("Dune", 155), hall, testNow.Add(30*time.Hour))
	seats := a.openSales(show)
	alice := a.token("alice", "customer")
	a.must(alice, holdQ, holdVars(show, seats[0:4], "k1"), nil)
	a.must(alice, holdQ, holdVars(show, seats[4:6], "k2"), nil) // the limit is 6
	if err := a.Redis.Del(t.Context(), a.Keys.Limits(idOf(t, show))).Err(); err != nil {
		t.Fatal(err)
	}
	a.wantCode(alice, holdQ, holdVars(show, seats[6:7], "k3"), "PURCHASE_LIMIT_EXCEEDED")
	a.must(a.admin, `mutation($id: ID!) { closeSales(showtimeId: $id) { status } }`, map[string]any{"id": show}, nil)
	a.wantCode(a.token("bob", "customer"), holdQ, holdVars(show, seats[8:9], "k1"), "NOT_ON_SALE")
	a.mustAgree()
	// The statement itself, as a hold whose cached showtime was still on sale runs it.
	tx, err := a.DB.Tx(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = booking.AddPurchase(t.Context(), tx, booking.Purchase{UserID: "bob", ShowtimeID: idOf(t, show), Seats: 1, OnSale: true}, true)
	if code := seatflow.ErrorCode(err); code != seatflow.ENOTONSALE {
		t.Fatalf("a hold's count of a closed showtime: %v, want NOT_ON_SALE", err)
	}
	if n, err := booking.AddPurchase(t.Context(), tx, booking.Purchase{UserID: "alice", ShowtimeID: idOf(t, show), Seats: 1}, true); err != nil || n != 7 {
		t.Fatalf("a late payment's count = %d, %v; want 7", n, err)
	}
}
