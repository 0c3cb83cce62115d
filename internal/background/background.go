// Package background reports the failures no caller hears of: an error of the work an
// instance runs on its own (the expiry worker, the live hub) and of a step a request does
// not wait for (an order's seats released after its end is committed; the reconciler
// repairs what such a step leaves undone). Each is logged with its task and counted in
// seatflow_background_errors_total{task}, so nothing fails silently. Each pass of the work
// (a reconciler run, an expiry batch, an outbox relay) is the root span of a trace of its
// own (Pass). It decides nothing: the caller retries or leaves the repair to the
// reconciler.
package background

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"seatflow/internal/telemetry"
)

// Tasks, the values of the counter's task label.
const (
	// ExpiryWorker is the expiry worker, which ended: this instance expires no order.
	ExpiryWorker = "expiry_worker"
	// ExpiryPass is a pass of the expiry worker (claiming the due orders); the next tick
	// tries again.
	ExpiryPass = "expiry_pass"
	// ExpireOrder is the expiry of one due order; it is claimed again a minute later.
	ExpireOrder = "expire_order"
	// Enqueue puts an order in the expiry queue (or back in it); a lost entry is found by
	// the reconciler's expired-order scan.
	Enqueue = "expiry_enqueue"
	// Dequeue takes a paid or ended order out of the expiry queue; a stale entry is
	// harmless (the order's row decides).
	Dequeue = "expiry_dequeue"
	// ConfirmSeats marks a paid order's seats sold; the reconciler's paid-seat repair
	// finishes it.
	ConfirmSeats = "confirm_seats"
	// ReleaseSeats frees the seats of a failed hold or an ended order; the reconciler's
	// orphan-hold repair finishes it.
	ReleaseSeats = "release_seats"
	// SpendPass ends the on-sale queue's admission pass of an order paid or cancelled; a
	// pass left in use ends at its expiry (passMinutes).
	SpendPass = "spend_pass"
	// QueueAdmission is an on-sale queue's admission tick; the next tick tries again.
	QueueAdmission = "queue_admission"
	// LiveHub is the live seat-map hub, which ended: this instance's seat maps are no
	// longer live.
	LiveHub = "live_hub"
	// WaitlistOffer is the waiting list's offer of returned seats; the next sweep (every
	// second) or the reconciler tries again.
	WaitlistOffer = "waitlist_offer"
	// WaitlistCount keeps the waiting list's count of waiting entries in Redis; the
	// reconciler recounts it from MySQL.
	WaitlistCount = "waitlist_count"
	// PassPush is the push loop's pass over the Wallet passes' registrations, or the push
	// of one device; the next pass (or the claim's lease) tries again.
	PassPush = "pass_push"
)

// tasks are every task above.
var tasks = []string{ExpiryWorker, ExpiryPass, ExpireOrder, Enqueue, Dequeue, ConfirmSeats, ReleaseSeats, SpendPass,
	QueueAdmission, LiveHub, WaitlistOffer, WaitlistCount, PassPush}

var errorsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: "seatflow", Name: "background_errors_total",
	Help: "Errors no request reported: of the work an instance runs on its own, and of the steps a request does not wait for, by task.",
}, []string{"task"})

func init() {
	// Every task's series exists from the start, at 0, so a rate or an alert sees the
	// first error.
	for _, task := range tasks {
		errorsTotal.WithLabelValues(task)
	}
}

// Failed reports err, a failure of task that is retried or repaired later: logged as a
// warning with args (slog key-value pairs naming what it was about) and counted. A nil
// err, and the cancellation of ctx (the work was stopped, not failed), are not failures.
func Failed(ctx context.Context, log *slog.Logger, task string, err error, args ...any) {
	report(ctx, log, slog.LevelWarn, task, err, args)
}

// Stopped reports err, the end of background work that nothing restarts: logged as an
// error and counted, like Failed.
func Stopped(ctx context.Context, log *slog.Logger, task string, err error, args ...any) {
	report(ctx, log, slog.LevelError, task, err, args)
}

func report(ctx context.Context, log *slog.Logger, level slog.Level, task string, err error, args []any) {
	if err == nil || (errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled)) {
		return
	}
	errorsTotal.WithLabelValues(task).Inc()
	if log == nil {
		log = slog.Default()
	}
	log.Log(ctx, level, "background task failed", append([]any{"task", task, "err", err}, args...)...)
}

// Passes, the names of the root spans of background work.
const (
	// ReconcileRun is one run of the reconciler.
	ReconcileRun = "reconcile.run"
	// ExpiryBatch is one pass of the expiry worker: the due orders claimed and expired.
	ExpiryBatch = "expiry.batch"
	// OutboxRelay is one pass of the outbox relay: invalidations left undelivered, replayed.
	OutboxRelay = "outbox.relay"
	// PassPushes is one pass of the Wallet passes' push loop (package passkit).
	PassPushes = "passkit.push"
)

// Pass runs fn, one pass of background work, as the root span name of a trace of its
// own (a request's trace never holds it); fn's error marks the span failed.
func Pass(ctx context.Context, name string, fn func(context.Context) error) error {
	ctx, span := telemetry.RootSpan(ctx, name)
	err := fn(ctx)
	telemetry.End(span, err)
	return err
}
