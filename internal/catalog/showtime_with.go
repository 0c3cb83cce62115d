package catalog

import (
	"context"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/keys"
)

// WriteShowtime runs fn over showtime id's row in one catalog write: whatever fn writes
// commits with the drop of the showtime's cache entry (on every instance, through the
// outbox), and the showtime is returned as MySQL has it after. It is how another package
// writes a record that belongs with a showtime and changes what the showtime shows (the
// on-sale queue and has_queue, package queue). NOT_FOUND when there is no such showtime.
func (s *Service) WriteShowtime(ctx context.Context, id int, fn func(tx *ent.Tx, st *ent.Showtime) error) (*seatflow.Showtime, error) {
	err := s.write(ctx, func(tx *ent.Tx) ([]string, error) {
		st, err := showtimeIn(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if err := fn(tx, st); err != nil {
			return nil, err
		}
		return []string{keys.Showtime(id)}, nil
	})
	if err != nil {
		return nil, err
	}
	return s.FreshShowtime(ctx, id)
}
