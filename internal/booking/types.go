// Package booking owns orders: holdSeats, extendHold, payOrder, cancelOrder, expiry,
// purchase limits and idempotency. It writes orders in MySQL and changes seats only
// through package seats; it is the only code that creates or changes an order.
package booking

import "time"

// Order statuses.
const (
	OrderPending   = "PENDING_PAYMENT"
	OrderPaid      = "PAID"
	OrderCancelled = "CANCELLED"
	OrderExpired   = "EXPIRED"
)

// MaxSeatsPerHold is the most seats one holdSeats request may ask for.
const MaxSeatsPerHold = 10

// Order is a customer's hold on seats of one showtime.
type Order struct {
	ID             int        `json:"id"`
	UserID         string     `json:"-"`
	ShowtimeID     int        `json:"showtimeId"`
	HoldToken      string     `json:"-"`
	Status         string     `json:"status"`
	AmountCents    int        `json:"amountCents"`
	Currency       string     `json:"currency"`
	ExpiresAt      *time.Time `json:"expiresAt"`
	PaidAt         *time.Time `json:"paidAt"`
	CreatedAt      time.Time  `json:"createdAt"`
	RefundRequired bool       `json:"refundRequired"`
	SeatIDs        []int      `json:"seatIds"`
}

// HoldSeatsInput asks to hold seats of a showtime for the caller.
type HoldSeatsInput struct {
	ShowtimeID     int    `json:"showtimeId"`
	SeatIDs        []int  `json:"seatIds"`
	IdempotencyKey string `json:"idempotencyKey"`
}
