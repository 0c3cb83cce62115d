package seatflow

import "time"

// GuestSession is an anonymous browser's session: a bearer token it sends like any token,
// so that its query-cost budget and its websockets are its own rather than its address's
// (a crowd behind one address each get theirs). It is no user: it holds no seats and sees
// no orders.
type GuestSession struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
	// CostBudget is the query-cost points the session may spend at once (0: no budget).
	CostBudget int `json:"costBudget"`
}
