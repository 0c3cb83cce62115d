package seatflow

import "time"

// OrderStatus is where an order is in its life: PENDING_PAYMENT while its seats are held,
// then PAID, CANCELLED (by the customer) or EXPIRED (the hold ran out). A late payment can
// still turn an EXPIRED order PAID when its seats are free.
type OrderStatus string

// Order statuses.
const (
	OrderPending   OrderStatus = "PENDING_PAYMENT"
	OrderPaid      OrderStatus = "PAID"
	OrderCancelled OrderStatus = "CANCELLED"
	OrderExpired   OrderStatus = "EXPIRED"
)

// Values lists every order status (ent builds its enum column from it).
func (OrderStatus) Values() []string {
	return []string{string(OrderPending), string(OrderPaid), string(OrderCancelled), string(OrderExpired)}
}

// Active reports whether an order in status s occupies its seats (PENDING_PAYMENT or PAID).
func (s OrderStatus) Active() bool { return s == OrderPending || s == OrderPaid }

// MaxSeatsPerOrder is the most seats one order may cover.
const MaxSeatsPerOrder = 10

// Order is a customer's hold on seats of one showtime.
type Order struct {
	ID             int         `json:"id"`
	UserID         string      `json:"-"`
	ShowtimeID     int         `json:"showtimeId"`
	HoldToken      string      `json:"-"`
	Status         OrderStatus `json:"status"`
	AmountCents    int         `json:"amountCents"`
	Currency       string      `json:"currency"`
	ExpiresAt      *time.Time  `json:"expiresAt"`
	PaidAt         *time.Time  `json:"paidAt"`
	CreatedAt      time.Time   `json:"createdAt"`
	RefundRequired bool        `json:"refundRequired"`
	SeatIDs        []int       `json:"seatIds"`
	// Lines are its seats with their ticket types and prices, in seat order.
	Lines []OrderLine `json:"lines"`
}

// OrderLine is one seat of an order: its ticket type and what it cost when held (the
// showtime's price of the seat's kind and type then). Lines are kept whatever becomes of
// the order: a late payment keeps them, a refund marks them (RefundedAt), and the order's
// amount is the sum of those not refunded.
type OrderLine struct {
	ShowtimeID  int        `json:"-"`
	SeatID      int        `json:"seatId"`
	TicketType  TicketType `json:"ticketType"`
	AmountCents int        `json:"amountCents"`
	// RefundedAt is when the seat was refunded (refundSeats, or refundOrder for the whole
	// order); nil while it is the customer's.
	RefundedAt *time.Time `json:"refundedAt"`
}

// Refunded reports whether the line's seat was refunded.
func (l OrderLine) Refunded() bool { return l.RefundedAt != nil }

// UnrefundedSeats returns the seats of the lines not refunded, in their order.
func UnrefundedSeats(lines []OrderLine) []int {
	var out []int
	for _, l := range lines {
		if !l.Refunded() {
			out = append(out, l.SeatID)
		}
	}
	return out
}
