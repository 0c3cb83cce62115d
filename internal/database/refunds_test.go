package database_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/refund"
	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// TestMigrationCopiesWholeRefunds takes payments whose whole refunds were written as the
// code before the refunds rows wrote them (on the payments row: every refund status, a
// failed attempt counted, one payment refunded in parts first), migrates, and finds each
// such payment with one whole refunds row holding its status, reference, attempts and
// reason, its amount what the parts left; a payment with no refund gets none. Migrating
// again adds nothing. On MySQL and on the embedded SQLite.
func TestMigrationCopiesWholeRefunds(t *testing.T) {
	onMySQLAndSQLite(t, testCopyWholeRefunds)
}

func testCopyWholeRefunds(t *testing.T, client *ent.Client, db *sql.DB) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	show, _ := testenv.Showtime(t, client, now, testenv.ShowtimeSpec{Rows: 1, PerRow: 6})
	type old struct {
		status   *seatflow.RefundStatus
		attempts int
		parts    []int // refunds of some seats of the payment, before its whole refund
	}
	st := func(s seatflow.RefundStatus) *seatflow.RefundStatus { return &s }
	olds := []old{
		{status: nil},
		{status: st(seatflow.RefundRequired)},
		{status: st(seatflow.RefundPending)},
		{status: st(seatflow.RefundSucceeded)},
		{status: st(seatflow.RefundFailed), attempts: 2},
		{status: st(seatflow.RefundSucceeded), parts: []int{1000, 500}},
	}
	type want struct {
		status   seatflow.RefundStatus
		attempts int
		amount   int
		ref      string
	}
	wants := map[int]want{} // by payment id
	for i, o := range olds {
		ord := client.Order.Create().SetUserID("alice").SetShowtimeID(show).SetHoldToken(fmt.Sprint("tok", i)).
			SetIdempotencyKey(fmt.Sprint("k", i)).SetStatus(seatflow.OrderCancelled).SetAmountCents(4000).
			SetExpiresAt(now.Add(time.Minute)).SetCreatedAt(now).SaveX(ctx)
		c := client.Payment.Create().SetOrderID(ord.ID).SetProvider(seatflow.ProviderTest).SetReference(fmt.Sprint("pay", i)).
			SetStatus(seatflow.PaymentSucceeded).SetAmountCents(4000).SetCurrency("EUR").SetCreatedAt(now).SetUpdatedAt(now)
		if o.status != nil {
			c.SetRefundStatus(*o.status).SetRefundReference(fmt.Sprint("re", i)).SetRefundAttempts(o.attempts).SetRefundReason("refunded by staff")
		}
		p := c.SaveX(ctx)
		left := p.AmountCents
		for _, a := range o.parts {
			client.Refund.Create().SetOrderID(ord.ID).SetPaymentID(p.ID).SetAmountCents(a).SetCurrency("EUR").
				SetStatus(seatflow.RefundSucceeded).SetReason("seats refunded by staff").SetCreatedBy("admin").
				SetCreatedAt(now).SetUpdatedAt(now).ExecX(ctx)
			left -= a
		}
		if o.status != nil {
			wants[p.ID] = want{*o.status, o.attempts, left, fmt.Sprint("re", i)}
		}
	}
	for range 2 {
		if err := database.Migrate(ctx, client, db); err != nil {
			t.Fatal(err)
		}
		rs := client.Refund.Query().Where(refund.Whole(true)).AllX(ctx)
		if len(rs) != len(wants) {
			t.Fatalf("%d whole refunds, want %d", len(rs), len(wants))
		}
		for _, r := range rs {
			w, ok := wants[r.PaymentID]
			if !ok || r.Status != w.status || r.Attempts != w.attempts || r.AmountCents != w.amount || r.Reference != w.ref ||
				r.Reason != "refunded by staff" || r.CreatedBy != "" || r.Currency != "EUR" || !r.UpdatedAt.Equal(now) {
				t.Errorf("whole refund of payment %d: %+v, want %+v", r.PaymentID, r, w)
			}
		}
		if n := client.Refund.Query().Where(refund.Whole(false)).CountX(ctx); n != 2 {
			t.Errorf("%d refunds of some seats, want the 2 as they were", n)
		}
	}
}
