package tickets

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	return s.apply(ctx, scan{showtimeID: showID, code: code, nonce: n, at: s.Now.Now(), staffID: staffID})
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
	now := s.Now.Now()
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

// apply checks a scan's code, then admits its ticket or says why not. The ticket is read
// first: an online scan of a used or revoked ticket is answered from it with no write and
// no lock.
func (s *Service) apply(ctx context.Context, sc scan) (*seatflow.CheckInResult, error) {
	v, ok, err := s.verify(ctx, sc.code)
	if err != nil {
		return nil, err
	} else if !ok {
		return result(seatflow.CheckInInvalid, nil), nil
	}
	t, err := ticketRow(ctx, s.DB.Ticket, v)
	switch {
	case err != nil:
		return nil, fmt.Errorf("check in: %w", database.Classify(err))
	case t == nil:
		return result(seatflow.CheckInInvalid, nil), nil
	case v.showtimeID != sc.showtimeID:
		return result(seatflow.CheckInWrongShowtime, t), nil
	case sc.at.Before(v.notBefore):
		return result(seatflow.CheckInNotYetValid, t), nil
	case sc.at.After(v.expires):
		return result(seatflow.CheckInExpired, t), nil
	case !sc.offline && (t.RevokedAt != nil || t.CheckedInAt != nil):
		return s.answer(t, sc), nil
	}
	var r *seatflow.CheckInResult
	if sc.offline {
		err = s.withTx(ctx, func(tx *ent.Tx) error {
			r, err = s.applyOffline(ctx, tx, sc, v)
			return err
		})
		if errors.Is(err, errNothingDone) {
			err = nil
		}
	} else {
		r, err = s.admit(ctx, sc, v, t)
	}
	if err != nil {
		return nil, fmt.Errorf("check in: %w", database.Classify(err))
	}
	if r.Status == seatflow.CheckInAdmitted || sc.offline {
		s.announce(ctx, sc.showtimeID)
	}
	return r, nil
}

// errNothingDone rolls back an offline scan's transaction that decided without writing.
var errNothingDone = errors.New("nothing to write")

// admit lets an online scan in: the ticket's row goes from not checked in to checked in
// by this scan in one conditional update, one statement committed on its own. InnoDB's row
// lock lets exactly one of any number of simultaneous scans change it; the others match no
// row and answer from the row as it is then (ALREADY_CHECKED_IN, or REVOKED when a
// revocation came first). The row keeps who admitted whom, when, with which nonce.
func (s *Service) admit(ctx context.Context, sc scan, v *verified, t *seatflow.Ticket) (*seatflow.CheckInResult, error) {
	n, err := s.DB.Ticket.Update().Where(ticket.ID(v.ticketID), ticket.RevokedAtIsNil(), ticket.CheckedInAtIsNil()).
		SetCheckedInAt(sc.at).SetCheckInNonce(sc.nonce).SetCheckedInBy(sc.staffID).SetAdmissions(1).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	if n == 1 {
		admitted := *t
		admitted.CheckedInAt, admitted.CheckInNonce = &sc.at, sc.nonce
		return result(seatflow.CheckInAdmitted, &admitted), nil
	}
	if t, err = ticketRow(ctx, s.DB.Ticket, v); err != nil {
		return nil, err
	}
	return s.answer(t, sc), nil
}

// applyOffline is an uploaded scan's transaction: the scan is recorded (its nonce once per
// ticket: a scan uploaded again answers as it stands), the ticket counts one more person
// let in, and the scan becomes its admission if it is earlier than the one so far.
func (s *Service) applyOffline(ctx context.Context, tx *ent.Tx, sc scan, v *verified) (*seatflow.CheckInResult, error) {
	err := tx.OfflineScan.Create().SetTicketID(v.ticketID).SetShowtimeID(v.showtimeID).SetNonce(sc.nonce).
		SetScannedAt(sc.at).SetRecordedAt(s.Now.Now()).SetStaffID(sc.staffID).Exec(ctx)
	if ent.IsConstraintError(err) {
		cur, err := ticketRow(ctx, tx.Ticket, v)
		if err != nil {
			return nil, err
		}
		return s.answer(cur, sc), errNothingDone
	} else if err != nil {
		return nil, fmt.Errorf("record the scan: %w", err)
	}
	first, err := tx.Ticket.Update().Where(ticket.ID(v.ticketID), ticket.RevokedAtIsNil(),
		ticket.Or(ticket.CheckedInAtIsNil(), ticket.CheckedInAtGT(sc.at))).
		SetCheckedInAt(sc.at).SetCheckInNonce(sc.nonce).SetCheckedInBy(sc.staffID).AddAdmissions(1).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	if first == 0 {
		if _, err := tx.Ticket.Update().Where(ticket.ID(v.ticketID), ticket.RevokedAtIsNil()).AddAdmissions(1).Save(ctx); err != nil {
			return nil, fmt.Errorf("count the admission: %w", err)
		}
	}
	cur, err := ticketRow(ctx, tx.Ticket, v)
	switch {
	case err != nil:
		return nil, err
	case cur.RevokedAt != nil: // a scan of a revoked ticket is not recorded
		return result(seatflow.CheckInRevoked, cur), errNothingDone
	case first == 1:
		return result(seatflow.CheckInAdmitted, cur), nil
	}
	return result(seatflow.CheckInAlreadyCheckedIn, cur), nil // recorded: a duplicate scan
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

// ticketRow reads the scan's ticket through c (inside a transaction: as it is now), nil
// when the code names no ticket of ours (a ticket of another seat or showtime than its
// claims say is none).
func ticketRow(ctx context.Context, c *ent.TicketClient, v *verified) (*seatflow.Ticket, error) {
	r, err := c.Get(ctx, v.ticketID)
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

// sortedIndexes returns the indexes of scans ordered by scan time (stable).
func sortedIndexes(scans []seatflow.OfflineScan) []int {
	idx := make([]int, len(scans))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return scans[a].ScannedAt.Compare(scans[b].ScannedAt) })
	return idx
}
