package queue

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/nodeid"
	"seatflow/internal/rdb"
)

// Join gives userID a ticket in showtime showID's on-sale queue, or the ticket they have
// (one per user and showtime, whichever instance or tab asks): before the queue opens its
// place is drawn (seatflow.DrawKey), after, it queues behind everyone in arrival order; a
// ticket that ended is replaced by a new one at the back. While the queue is SOLD_OUT or
// CLOSED the ticket answered says so. Joins are rate-limited per client address; a
// showtime without a queue is BAD_USER_INPUT.
func (s *Service) Join(ctx context.Context, showID int, userID string) (*seatflow.QueueTicket, error) {
	if err := s.rateLimit(ctx); err != nil {
		return nil, err
	}
	st, err := s.Catalog.Showtime(ctx, showID)
	if err != nil {
		return nil, err
	}
	if !st.HasQueue {
		return nil, noQueue(showID)
	}
	secret, err := s.secret(ctx, showID)
	if err != nil {
		return nil, err
	}
	for range 4 {
		tnum := ticketNumber()
		key := seatflow.DrawKey(secret.seed, ticketID(showID, tnum))
		res, err := s.run(ctx, joinScript, s.ticketKeys(showID), s.Now.Now().UnixMilli(), userID,
			strconv.FormatInt(tnum, 10), key, secret.commitment).Slice()
		if err != nil {
			return nil, rdb.Classify("join the on-sale queue", err)
		}
		switch str(res[0]) {
		case "TICKET":
			return s.view(showID, res)
		case "RETRY": // the number was taken: draw another
		case "STALE": // the queue was removed and set up again: its seed is another
			s.secrets.drop(showID)
			if secret, err = s.secret(ctx, showID); err != nil {
				return nil, err
			}
		case "NOQUEUE":
			if err := s.rebuild(ctx, showID); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("join the on-sale queue: unexpected reply %v", res)
		}
	}
	return nil, seatflow.Unavailable("join the on-sale queue", fmt.Errorf("showtime %d: no ticket after 4 attempts", showID))
}

// Ticket is userID's ticket in showtime showID's on-sale queue, nil when they have none
// (or the showtime has no queue); reading it counts as being seen.
func (s *Service) Ticket(ctx context.Context, showID int, userID string) (*seatflow.QueueTicket, error) {
	st, err := s.Catalog.Showtime(ctx, showID)
	if err != nil || !st.HasQueue {
		return nil, err
	}
	res, err := s.run(ctx, ticketScript, s.ticketKeys(showID), s.Now.Now().UnixMilli(), userID).Slice()
	if err != nil {
		return nil, rdb.Classify("read the on-sale queue", err)
	}
	if str(res[0]) != "TICKET" { // NONE; NOQUEUE: lost with Redis, with every ticket
		return nil, nil
	}
	return s.view(showID, res)
}

// Leave takes userID's ticket out of showtime showID's queue (a pass in use is given back
// with it); false when they had none.
func (s *Service) Leave(ctx context.Context, showID int, userID string) (bool, error) {
	k := s.Keys
	n, err := s.run(ctx, leaveScript, []string{k.QueueWaiting(showID), k.QueueTickets(showID), k.QueueUsers(showID),
		k.QueueSeen(showID), k.QueuePasses(showID)}, userID).Int()
	if err != nil {
		return false, rdb.Classify("leave the on-sale queue", err)
	}
	return n == 1, nil
}

func (s *Service) rateLimit(ctx context.Context) error {
	return rdb.Allow(ctx, s.limiter, s.Keys.QueueJoinRate(auth.ClientAddr(ctx)), s.JoinRate, "queue join rate",
		"too many joins from this address")
}

// ticketNumber draws a ticket's number: random, positive, below 2^53 (a JSON number
// anywhere, and an exact Lua one).
func ticketNumber() int64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if n := int64(binary.BigEndian.Uint64(b[:]) & (1<<53 - 1)); n > 0 {
			return n
		}
	}
}

// ticketID is a ticket's id as the API returns it, from its showtime and number.
func ticketID(showID int, tnum int64) string {
	return nodeid.Encode(nodeid.QueueTicket, showID, int(tnum))
}

// record is a ticket as lua/view.lua describes it.
type record struct {
	User     string `json:"u"`
	Status   string `json:"s"`
	Member   string `json:"m"`
	Joined   string `json:"j"`
	Pass     string `json:"p"`
	Expires  string `json:"x"`
	Admitted string `json:"a"`
}

// Ticket statuses as the scripts write them.
const (
	recWaiting  = "W"
	recAdmitted = "A"
	recSpent    = "S"
	recSkipped  = "X"
	recOutside  = "O"
)

func ms(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(n).UTC()
}

// view reads view.lua's reply into the ticket its holder sees.
func (s *Service) view(showID int, res []any) (*seatflow.QueueTicket, error) {
	if len(res) != 7 {
		return nil, fmt.Errorf("on-sale queue: unexpected ticket reply %v", res)
	}
	var r record
	if err := json.Unmarshal([]byte(str(res[2])), &r); err != nil {
		return nil, fmt.Errorf("on-sale queue: read a ticket: %w", err)
	}
	rate, _ := strconv.ParseFloat(str(res[6]), 64)
	return s.ticket(showID, str(res[1]), r, seatflow.QueuePhase(str(res[3])), int(num(res[4])), int(num(res[5])), rate)
}

// ticket is a ticket as its holder sees it: its status from its record and the queue's
// phase, its position from its rank while it waits in an open queue, the wait from the
// measured rate, the pass signed for its holder while admitted.
func (s *Service) ticket(showID int, tnum string, r record, phase seatflow.QueuePhase, waiting, rank int, rate float64) (*seatflow.QueueTicket, error) {
	n, err := strconv.ParseInt(tnum, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("on-sale queue: ticket number %q: %w", tnum, err)
	}
	t := &seatflow.QueueTicket{ID: ticketID(showID, n), ShowtimeID: showID, Status: statusOf(r, phase, s.Now.Now()),
		Waiting: waiting, JoinedAt: ms(r.Joined)}
	if t.Status == seatflow.QueueWaiting && phase == seatflow.QueueOpen && rank >= 0 {
		pos := rank + 1
		t.Position = &pos
		if rate > 0 {
			wait := int(math.Ceil(float64(pos) / rate))
			t.EstimatedWaitSeconds = &wait
		}
	}
	if t.Status == seatflow.QueueAdmitted {
		exp := ms(r.Expires)
		pass, err := s.Passes.Sign(r.User, showID, r.Pass, exp)
		if err != nil {
			return nil, fmt.Errorf("on-sale queue: sign a pass: %w", err)
		}
		t.Pass, t.PassExpiresAt = &pass, &exp
	}
	return t, nil
}

// statusOf is a ticket's status: what its record says, within what the queue's phase
// allows (a closed queue closes every ticket; a sold-out one every ticket still waiting).
func statusOf(r record, phase seatflow.QueuePhase, now time.Time) seatflow.QueueStatus {
	switch {
	case phase == seatflow.QueueClosed:
		return seatflow.QueueTicketClosed
	case r.Status == recAdmitted && ms(r.Expires).After(now):
		return seatflow.QueueAdmitted
	case r.Status == recAdmitted || r.Status == recSpent || r.Status == recSkipped:
		return seatflow.QueueExpired
	case phase == seatflow.QueueSoldOut:
		return seatflow.QueueTicketSoldOut
	}
	return seatflow.QueueWaiting
}
