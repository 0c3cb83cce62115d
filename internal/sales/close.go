package sales

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"seatflow"
)

func (s *Service) closeAfter() time.Duration {
	if s.CloseAfter > 0 {
		return s.CloseAfter
	}
	return seatflow.DefaultSalesCloseAfter
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// CloseDue closes the sales of every showtime still ON_SALE whose sales are due to close
// (CloseAfter after its start) through CloseSales, as staff's closeSales would (its cache
// entries are invalidated on every instance), then has Orders end the pending orders of
// the showtimes whose sales closed. It reports how many showtimes it closed. Instances
// may run it at once: a showtime closed meanwhile (or cancelled) is skipped, and every
// change is a conditional update. Holds do not wait for it: booking checks the time
// itself.
func (s *Service) CloseDue(ctx context.Context) (int, error) {
	due, err := s.Catalog.OnSaleStartedBy(ctx, s.Now.Now().Add(-s.closeAfter()))
	if err != nil {
		return 0, err
	}
	closed := 0
	var errs []error
	for _, id := range due {
		_, err := s.CloseSales(ctx, id)
		switch seatflow.ErrorCode(err) {
		case "":
			closed++
		case seatflow.EINVALIDSTATE: // closed or cancelled meanwhile, here or elsewhere
		default:
			errs = append(errs, err)
		}
	}
	if s.Orders != nil {
		if _, err := s.Orders.ExpireAtSalesClose(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return closed, errors.Join(errs...)
}

// RunCloser runs CloseDue every interval until ctx ends. Every instance runs one.
func (s *Service) RunCloser(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.CloseDue(ctx); err != nil && ctx.Err() == nil {
			s.log().Warn("sales: closing the sales of started showtimes; trying again", "closed", n, "err", err)
		} else if n > 0 {
			s.log().Info("sales: closed the sales of started showtimes", "closed", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
