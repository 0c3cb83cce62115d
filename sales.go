package seatflow

// MaxReportDays is the longest range of days a sales report covers.
const MaxReportDays = 366

// SalesReport is a showtime's sales, computed from its orders as they are (see
// docs/DESIGN.md "Sales reports"): Sold counts the seats of PAID orders whose payment is
// not being refunded, Held those of PENDING_PAYMENT orders whose hold has not expired,
// Available the sellable seats neither sold nor held (never below 0). RevenueCents is the
// money received minus RefundedCents (the payments whose refund is decided).
type SalesReport struct {
	Sold      int `json:"sold"`
	Held      int `json:"held"`
	Available int `json:"available"`
	// Blocked counts the showtime's house seats (blockSeats): neither for sale nor sold.
	Blocked       int               `json:"blocked"`
	RevenueCents  int               `json:"revenueCents"`
	RefundedCents int               `json:"refundedCents"`
	ByTicketType  []TicketTypeSales `json:"byTicketType"`
	CheckedIn     int               `json:"checkedIn"`
	// SoldThroughWaitingList counts the sold seats of orders that were waiting-list offers.
	SoldThroughWaitingList int `json:"soldThroughWaitingList"`
}

// TicketTypeSales is the sold seats of one ticket type and what they were sold for.
type TicketTypeSales struct {
	TicketType  TicketType `json:"ticketType"`
	Count       int        `json:"count"`
	AmountCents int        `json:"amountCents"`
}

// ShowtimeSales is one showtime's line of a sales report.
type ShowtimeSales struct {
	ShowtimeID int          `json:"showtimeId"`
	Sales      *SalesReport `json:"sales"`
}
