package seatflow

import "time"

// WaitlistStatus is where a waiting-list entry is: WAITING for seats, OFFERED while seats
// are held for it as a pending order, then ACCEPTED (the order paid), EXPIRED (it ran out
// unpaid), DECLINED (cancelled by the entrant), LEFT (left before any offer) or CLOSED (the
// showtime's sales ended first). An offered
// entry's status follows its order's, so it is written once: in the order.
type WaitlistStatus string

// Waiting-list entry statuses.
const (
	WaitlistWaiting  WaitlistStatus = "WAITING"
	WaitlistOffered  WaitlistStatus = "OFFERED"
	WaitlistAccepted WaitlistStatus = "ACCEPTED"
	WaitlistExpired  WaitlistStatus = "EXPIRED"
	WaitlistDeclined WaitlistStatus = "DECLINED"
	WaitlistLeft     WaitlistStatus = "LEFT"
	// WaitlistClosed is a waiting entry whose showtime's sales ended (it started, was
	// cancelled or closed) before any offer.
	WaitlistClosed WaitlistStatus = "CLOSED"
)

// Final reports whether an entry in status s can change no more.
func (s WaitlistStatus) Final() bool { return s != WaitlistWaiting && s != WaitlistOffered }

// OfferStatus is the status of an entry whose offer's order is in status o.
func OfferStatus(o OrderStatus) WaitlistStatus {
	switch o {
	case OrderPending:
		return WaitlistOffered
	case OrderPaid:
		return WaitlistAccepted
	case OrderCancelled:
		return WaitlistDeclined
	}
	return WaitlistExpired
}

// DefaultOfferTTL is how long seats offered to a waiting-list entry stay held for it
// (SEATFLOW_WAITLIST_OFFER_TTL).
const DefaultOfferTTL = 10 * time.Minute

// WaitlistEntry is a customer's place on a sold-out showtime's waiting list: Seats seats
// together, each of the TicketTypes in order, offered in join order (ID) when seats come
// back (docs/DESIGN.md "Waiting list").
type WaitlistEntry struct {
	ID          int            `json:"id"`
	UserID      string         `json:"-"`
	ShowtimeID  int            `json:"showtimeId"`
	Seats       int            `json:"seats"`
	TicketTypes []TicketType   `json:"ticketTypes"`
	Status      WaitlistStatus `json:"status"`
	// Position is 1 for the first WAITING entry of the showtime, nil once not WAITING.
	Position *int `json:"position"`
	// Waiting counts the showtime's WAITING entries.
	Waiting int `json:"waiting"`
	// Offer is the offer made to it, nil before one.
	Offer    *WaitlistOffer `json:"offer"`
	JoinedAt time.Time      `json:"joinedAt"`
}

// WaitlistOffer is seats held for an entry: its order, PENDING_PAYMENT until paid,
// cancelled or expired at ExpiresAt.
type WaitlistOffer struct {
	OrderID    int       `json:"orderId"`
	ShowtimeID int       `json:"-"`
	SeatIDs    []int     `json:"-"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// WaitlistReport is a showtime's waiting list in figures.
type WaitlistReport struct {
	ShowtimeID int `json:"showtimeId"`
	Entries    int `json:"entries"`
	Waiting    int `json:"waiting"`
	Offered    int `json:"offered"`
	Accepted   int `json:"accepted"`
	Expired    int `json:"expired"`
	Declined   int `json:"declined"`
	Left       int `json:"left"`
	SeatsSold  int `json:"seatsSold"`
}
