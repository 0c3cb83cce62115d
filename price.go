package seatflow

import (
	"encoding/json"
	"fmt"
)

// TicketType is who a ticket is for: each (seat kind, ticket type) of a showtime has its
// own price. The set is fixed so the API stays typed. To add a type: a constant here, in
// TicketTypes and Values (ent's enum columns order_seats.ticket_type and
// tickets.ticket_type grow with it, an additive migration), the value in schema.graphql's
// TicketType and gqlgen.yml, then `make generate`.
type TicketType string

// Ticket types. ADULT is the type of a seat held without one (HoldSeatsInput.seatIds) and
// of every price from before ticket types.
const (
	TicketAdult   TicketType = "ADULT"
	TicketChild   TicketType = "CHILD"
	TicketSenior  TicketType = "SENIOR"
	TicketStudent TicketType = "STUDENT"
)

// TicketTypes lists every ticket type, in the order prices and reports show them.
var TicketTypes = []TicketType{TicketAdult, TicketChild, TicketSenior, TicketStudent}

// Values lists every ticket type (ent builds its enum columns from it).
func (TicketType) Values() []string {
	out := make([]string, len(TicketTypes))
	for i, t := range TicketTypes {
		out[i] = string(t)
	}
	return out
}

// Valid reports whether t is a known ticket type.
func (t TicketType) Valid() bool {
	for _, k := range TicketTypes {
		if t == k {
			return true
		}
	}
	return false
}

// Price is what one seat of a kind costs at a showtime for one ticket type.
type Price struct {
	Kind        SeatKind   `json:"kind"`
	TicketType  TicketType `json:"ticketType"`
	AmountCents int        `json:"amountCents"`
}

// UnmarshalJSON reads a price; one written before ticket types (no ticketType) is ADULT.
func (p *Price) UnmarshalJSON(b []byte) error {
	type plain Price
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.TicketType == "" {
		v.TicketType = TicketAdult
	}
	*p = Price(v)
	return nil
}

// PriceList is a showtime's prices as stored (showtimes.prices): a JSON array of prices.
// It also reads the object of before ticket types, {"STANDARD": 1200, …}, as ADULT prices
// (the migration rewrites such rows, internal/database).
type PriceList []Price

// UnmarshalJSON reads the array, or the object of adult prices by seat kind.
func (l *PriceList) UnmarshalJSON(b []byte) error {
	var byKind map[SeatKind]int
	if err := json.Unmarshal(b, &byKind); err == nil {
		*l = AdultPrices(byKind)
		return nil
	}
	var list []Price
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("prices: %w", err)
	}
	*l = list
	return nil
}

// AdultPrices lists prices by seat kind as ADULT prices, in SeatKinds order.
func AdultPrices(byKind map[SeatKind]int) PriceList {
	out := PriceList{}
	for _, kind := range SeatKinds {
		if cents, ok := byKind[kind]; ok {
			out = append(out, Price{Kind: kind, TicketType: TicketAdult, AmountCents: cents})
		}
	}
	return out
}

// PriceOf returns the price of a seat of a kind for a ticket type, false when the showtime
// does not sell that combination. It is the one rule of what a seat costs.
func PriceOf(prices []Price, kind SeatKind, typ TicketType) (int, bool) {
	for _, p := range prices {
		if p.Kind == kind && p.TicketType == typ {
			return p.AmountCents, true
		}
	}
	return 0, false
}

// PriceOf returns the price at the showtime of a seat of a kind for a ticket type, false
// when that combination is not sold.
func (s *Showtime) PriceOf(kind SeatKind, typ TicketType) (int, bool) {
	return PriceOf(s.Prices, kind, typ)
}

// SellsKind reports whether the showtime sells seats of kind at all, to any ticket type.
func (s *Showtime) SellsKind(kind SeatKind) bool {
	for _, p := range s.Prices {
		if p.Kind == kind {
			return true
		}
	}
	return false
}
