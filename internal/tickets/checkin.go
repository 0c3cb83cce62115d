package tickets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/ticket"
	"seatflow/internal/database"
)

// scan is one reading of a code at the door.
type scan struct {
	showtimeID int
	code       string
	nonce      string
	at         time.Time // when the code was read
	offline    bool      // read by a scanner that admitted on its own
	staffID    string
}

// CheckIn answers a scan at the door of showtime showID, made now by staff member staffID.
// The first valid scan of a ticket is ADMITTED; a later one ALREADY_CHECKED_IN with the
// first time, except a retry with the nonce of the admitting scan, which answers ADMITTED
// again and changes nothing (no nonce: the scan gets one of its own, so it is never a retry).
func (s *Service) CheckIn(ctx context.Context, staffID string, showID int, code string, nonce *string) (*seatflow.CheckInResult, error) {
	n := uuid.NewString()
	if nonce != nil {
		if err := checkNonce(*nonce); err != nil {
			return nil, err
		}
		n = *nonce
	}
	return s.apply(ctx, scan{showtimeID: showID, code: code, nonce: n, at: s.now(), staffID: staffID})
}

// Upload applies the scans an offline scanner made at the door of showtime showID: each
// once (by its nonce, however often it is uploaded), in the order they were made. The
// earliest scan of a ticket is its admission; every later one, from any scanner, answers
// ALREADY_CHECKED_IN and is counted in the showtime's duplicate scans. Results are in the
// order of scans.
func (s *Service) Upload(ctx context.Context, staffID string, showID int, scans []seatflow.OfflineScan) ([]*seatflow.CheckInResult, error) {
	if len(scans) > seatflow.MaxUploadScans {
		return nil, seatflow.Errorf(seatflow.EINVALID, "upload at most %d scans at a time", seatflow.MaxUploadScans)
	}
	for i, sc := range scans {
		if err := checkNonce(sc.Nonce); err != nil {
			return nil, seatflow.Errorf(seatflow.EINVALID, "scan %d: %s", i, seatflow.ErrorMessage(err))
		}
	}
	out := make([]*seatflow.CheckInResult, len(scans))
	now := s.now()
	for _, i := range sortedIndexes(scans) {
		sc := scans[i]
		at := sc.ScannedAt
		if at.After(now) { // a scanner whose clock runs ahead: the scan happened by now at the latest
			at = now
		}
		r, err := s.apply(ctx, scan{showtimeID: showID, code: sc.Code, nonce: sc.Nonce, at: at, offline: true, staffID: staffID})
		if err != nil {
			return nil, fmt.Errorf("scan %d: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}

func checkNonce(n string) error {
	if n == "" || len(n) > seatflow.MaxScanNonce {
		return seatflow.Errorf(seatflow.EINVALID, "a nonce is 1 to %d characters", seatflow.MaxScanNonce)
	}
	return nil
}

func result(status seatflow.CheckInStatus, t *seatflow.Ticket) *seatflow.CheckInResult {
	r := &seatflow.CheckInResult{Status: status, Ticket: t}
	if t != nil && (status == seatflow.CheckInAdmitted || status == seatflow.CheckInAlreadyCheckedIn) {
		r.FirstCheckedInAt = t.CheckedInAt
	}
	return r
}

// apply checks a scan's code, then admits its ticket or says why not.
func (s *Service) apply(ctx context.Context, sc scan) (*seatflow.CheckInResult, error) {
	v, ok, err := s.verify(ctx, sc.code)
	if err != nil {
		return nil, err
	} else if !ok {
		return result(seatflow.CheckInInvalid, nil), nil
	}
	if v.showtimeID != sc.showtimeID || sc.at.Before(v.notBefore) || sc.at.After(v.expires) {
		t, err := s.Ticket(ctx, v.ticketID)
		switch {
		case err != nil:
			return nil, err
		case t == nil || t.SeatID != v.seatID || t.ShowtimeID != v.showtimeID:
			return result(seatflow.CheckInInvalid, nil), nil
		case v.showtimeID != sc.showtimeID:
			return result(seatflow.CheckInWrongShowtime, t), nil
		case sc.at.Before(v.notBefore):
			return result(seatflow.CheckInNotYetValid, t), nil
		}
		return result(seatflow.CheckInExpired, t), nil
	}
	var r *seatflow.CheckInResult
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		r, err = s.admit(ctx, tx, sc, v)
		return err
	})
	if errors.Is(err, errNothingDone) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("check in: %w", database.Classify(err))
	}
	if r.Status == seatflow.CheckInAdmitted || sc.offline {
		s.announce(ctx, sc.showtimeID)
	}
	return r, nil
}

// errNothingDone rolls back a check-in transaction that decided without writing.
var errNothingDone = errors.New("nothing to write")

// admit is the check-in's transaction. Online: the ticket's row goes from not checked in
// to checked in by this scan, in one conditional update, and the scan is recorded. Offline:
// the scan is recorded first (its nonce once per ticket), and it becomes the admission if it
// is earlier than the one recorded so far.
func (s *Service) admit(ctx context.Context, tx *ent.Tx, sc scan, v *verified) (*seatflow.CheckInResult, error) {
	if sc.offline {
		err := s.record(ctx, tx, sc, v)
		if ent.IsConstraintError(err) { // applied before: answer as it stands
			t, err := s.lockedTicket(ctx, tx, v)
			if err != nil {
				return nil, err
			}
			return s.answer(t, sc), errNothingDone
		} else if err != nil {
			return nil, err
		}
	}
	cond := ticket.CheckedInAtIsNil()
	if sc.offline {
		cond = ticket.Or(ticket.CheckedInAtIsNil(), ticket.CheckedInAtGT(sc.at))
	}
	n, err := tx.Ticket.Update().Where(ticket.ID(v.ticketID), ticket.ShowtimeID(v.showtimeID), ticket.SeatID(v.seatID),
		ticket.RevokedAtIsNil(), cond).
		SetCheckedInAt(sc.at).SetCheckInNonce(sc.nonce).SetCheckedInBy(sc.staffID).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	t, err := s.lockedTicket(ctx, tx, v)
	if err != nil {
		return nil, err
	}
	switch {
	case t == nil:
		return result(seatflow.CheckInInvalid, nil), errNothingDone
	case t.RevokedAt != nil: // an offline scan of a revoked ticket is not recorded either
		return result(seatflow.CheckInRevoked, t), errNothingDone
	case n == 1 && !sc.offline:
		if err := s.record(ctx, tx, sc, v); err != nil {
			return nil, err
		}
		return result(seatflow.CheckInAdmitted, t), nil
	case n == 1:
		return result(seatflow.CheckInAdmitted, t), nil
	case sc.offline: // recorded: a duplicate scan
		return result(seatflow.CheckInAlreadyCheckedIn, t), nil
	}
	return s.answer(t, sc), errNothingDone
}

// answer is the status of a scan that changes nothing: ADMITTED again when it is the
// ticket's admission (same nonce), else why not.
func (s *Service) answer(t *seatflow.Ticket, sc scan) *seatflow.CheckInResult {
	switch {
	case t == nil:
		return result(seatflow.CheckInInvalid, nil)
	case t.RevokedAt != nil:
		return result(seatflow.CheckInRevoked, t)
	case t.CheckedInAt != nil && t.CheckInNonce == sc.nonce:
		return result(seatflow.CheckInAdmitted, t)
	case t.CheckedInAt != nil:
		return result(seatflow.CheckInAlreadyCheckedIn, t)
	}
	return result(seatflow.CheckInInvalid, t) // recorded but never admitted: cannot happen
}

// record writes the scan's check-in row; a constraint error when its nonce was recorded.
func (s *Service) record(ctx context.Context, tx *ent.Tx, sc scan, v *verified) error {
	return tx.CheckIn.Create().SetTicketID(v.ticketID).SetShowtimeID(v.showtimeID).SetNonce(sc.nonce).
		SetScannedAt(sc.at).SetRecordedAt(s.now()).SetStaffID(sc.staffID).SetOffline(sc.offline).Exec(ctx)
}

// lockedTicket reads the scan's ticket inside the check-in's transaction (after its
// update, so as it is now), nil when the code names no ticket of ours.
func (s *Service) lockedTicket(ctx context.Context, tx *ent.Tx, v *verified) (*seatflow.Ticket, error) {
	r, err := tx.Ticket.Query().Where(ticket.ID(v.ticketID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("load ticket: %w", err)
	}
	if r.SeatID != v.seatID || r.ShowtimeID != v.showtimeID {
		return nil, nil
	}
	return toTicket(r, ""), nil
}

func (s *Service) withTx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.DB.Tx(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
