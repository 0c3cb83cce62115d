package seats

import (
	"context"
	"sync"

	"seatflow"
)

// HallReader reads a hall with its seats (the catalog, through its cache).
type HallReader interface {
	Hall(ctx context.Context, id int) (*seatflow.Hall, error)
}

// Layouts keeps the prepared Layout of every hall it was asked for. Halls never change
// once created, so each is read and prepared once per instance: a hold then costs no
// decoding and no sorting of the hall's seats.
type Layouts struct {
	Halls HallReader

	byHall sync.Map // hall id → *Layout
}

// Of returns the prepared layout of a hall.
func (l *Layouts) Of(ctx context.Context, hallID int) (*Layout, error) {
	if v, ok := l.byHall.Load(hallID); ok {
		return v.(*Layout), nil
	}
	hall, err := l.Halls.Hall(ctx, hallID)
	if err != nil {
		return nil, err
	}
	v, _ := l.byHall.LoadOrStore(hallID, NewLayout(hall))
	return v.(*Layout), nil
}
