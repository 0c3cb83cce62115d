package model

// Node is what node(id:) returns: a *seatflow.Cinema, *Movie, *Hall, *Seat, *Showtime, *Order, *Ticket or *WaitlistEntry.
// The domain types need no marker method: any of them is a Node.
type Node interface{}
