// Package graph is the GraphQL layer: thin resolvers over the internal services, plus
// gqlgen's generated executor. Rules and multi-step work live in internal/.
package graph

import (
	"seatflow"
	"seatflow/internal/booking"
	"seatflow/internal/catalog"
	"seatflow/internal/googlewallet"
	"seatflow/internal/guests"
	"seatflow/internal/live"
	"seatflow/internal/queue"
	"seatflow/internal/reconcile"
	"seatflow/internal/reports"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tickets"
	"seatflow/internal/waitlist"
	"seatflow/internal/wallet"
)

// Resolver is the root resolver: the services the API needs.
type Resolver struct {
	Catalog *catalog.Service
	Booking *booking.Service
	Sales   *sales.Service
	Maps    *seats.Maps
	Live    *live.Hub
	Rec     *reconcile.Reconciler
	Tickets *tickets.Service
	Guests  *guests.Service
	Reports *reports.Service
	// Queues runs the on-sale queues.
	Queues *queue.Service
	// Waitlist runs the waiting lists.
	Waitlist *waitlist.Service
	// Wallet makes the tickets' Apple Wallet passes.
	Wallet *wallet.Service
	// GoogleWallet signs "Save to Google Wallet" links; nil when Google Wallet is off.
	GoogleWallet *googlewallet.Issuer
}

// ptrs returns pointers to the elements of vs (gqlgen wants []*T for lists of objects).
func ptrs[T any](vs []T) []*T {
	out := make([]*T, len(vs))
	for i := range vs {
		out[i] = &vs[i]
	}
	return out
}

// values returns the values of vs (gqlgen gives []*T for lists of inputs).
func values[T any](vs []*T) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = *v
	}
	return out
}

// present drops the entries of vs that are nil (ids whose entity disappeared).
func present[T any](vs []*T) []*T {
	out := vs[:0:0]
	for _, v := range vs {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// found turns a missing entity that must exist (a showtime's movie) into NOT_FOUND
// rather than a null in a non-null field.
func found[T any](v *T, err error) (*T, error) {
	if err == nil && v == nil {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "a referenced record does not exist")
	}
	return v, err
}

// deref returns *p, or T's zero value for a nil p (an argument left out).
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
