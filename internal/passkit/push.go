package passkit

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync"
	"time"

	"seatflow/ent"
	"seatflow/ent/passregistration"
	"seatflow/ent/predicate"
	"seatflow/internal/background"
)

// Pusher tells a device that one of its passes changed: an empty push to its token on
// the passes' topic (the device then lists its updated passes and fetches them).
type Pusher interface {
	Push(ctx context.Context, pushToken string) error
}

// ErrUnregistered is a Pusher's answer for a token no longer valid (APNs 410, or a bad
// token): its registrations are forgotten.
var ErrUnregistered = errors.New("the device token is no longer registered")

// Recorder is the Pusher that sends nothing: it keeps the last pushes (tests read them)
// and logs each when Log is set (SEATFLOW_WALLET_APNS=off).
type Recorder struct {
	Log *slog.Logger

	mu     sync.Mutex
	pushes []string
}

// maxRecorded bounds the pushes a Recorder keeps (the latest).
const maxRecorded = 1000

// Push records pushToken.
func (r *Recorder) Push(ctx context.Context, pushToken string) error {
	r.mu.Lock()
	if len(r.pushes) == maxRecorded {
		r.pushes = append(r.pushes[:0], r.pushes[1:]...)
	}
	r.pushes = append(r.pushes, pushToken)
	r.mu.Unlock()
	if r.Log != nil {
		r.Log.InfoContext(ctx, "wallet pass push not sent (SEATFLOW_WALLET_APNS=off)", "push_token", redact(pushToken))
	}
	return nil
}

// Pushes are the push tokens pushed, oldest first.
func (r *Recorder) Pushes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.pushes...)
}

// pushBatch is how many registrations one step of a pass reads.
const pushBatch = 500

// Run pushes the changed passes every period until ctx ends.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := background.Pass(ctx, background.PassPushes, func(ctx context.Context) error {
			_, err := s.PushDue(ctx)
			return err
		})
		background.Failed(ctx, s.Log, background.PassPush, err)
	}
}

// PushDue is one pass of the push loop: the registrations whose pass's tag moved past
// their pushed_tag are claimed, a device's all at once (a conditional update setting
// push_claim and push_claimed_until, so of two instances one pushes), the device pushed
// once however many of its passes changed, and pushed_tag moved to the tag pushed. A claim
// whose push failed, or whose instance stopped before marking it, lapses after PushLease
// and a later pass tries again: a change is pushed at least once, and once unless an
// instance stops between a push and its mark. It returns how many devices were pushed.
func (s *Service) PushDue(ctx context.Context) (int, error) {
	pushed, after := 0, 0
	for {
		regs, err := s.DB.PassRegistration.Query().Where(passregistration.IDGT(after)).
			Order(ent.Asc(passregistration.FieldID)).Limit(pushBatch).All(ctx)
		if err != nil || len(regs) == 0 {
			return pushed, err
		}
		after = regs[len(regs)-1].ID
		n, err := s.pushBatch(ctx, regs)
		pushed += n
		if err != nil {
			return pushed, err
		}
	}
}

// pushBatch pushes the changed passes of regs: each device's changed registrations
// claimed in one conditional update, the device pushed once, each claimed row marked.
func (s *Service) pushBatch(ctx context.Context, regs []*ent.PassRegistration) (int, error) {
	ids := make([]int, len(regs))
	for i, r := range regs {
		ids[i] = r.TicketID
	}
	tags, err := s.passTags(ctx, ids)
	if err != nil {
		return 0, err
	}
	now := s.Now()
	due := map[string][]predicate.PassRegistration{}
	dueIDs := map[string][]int{}
	var tokens []string
	for _, r := range regs {
		tag, ok := tags[r.TicketID]
		if !ok || tag <= r.PushedTag || (r.PushClaimedUntil != nil && r.PushClaimedUntil.After(now)) {
			continue
		}
		if due[r.PushToken] == nil {
			tokens = append(tokens, r.PushToken)
		}
		due[r.PushToken] = append(due[r.PushToken], passregistration.And(passregistration.ID(r.ID), passregistration.PushedTagLT(tag)))
		dueIDs[r.PushToken] = append(dueIDs[r.PushToken], r.ID)
	}
	pushed := 0
	for _, token := range tokens {
		ok, err := s.pushDevice(ctx, token, due[token], dueIDs[token], tags, now)
		if err != nil {
			return pushed, err
		}
		if ok {
			pushed++
		}
	}
	return pushed, nil
}

// pushDevice claims the registrations of token that are due (still behind their pass's
// tag, not claimed by another instance; ids are theirs), pushes the device once and marks
// them pushed.
func (s *Service) pushDevice(ctx context.Context, token string, due []predicate.PassRegistration, ids []int, tags map[int]int64, now time.Time) (bool, error) {
	claim := rand.Text()[:24]
	n, err := s.DB.PassRegistration.Update().Where(passregistration.PushToken(token), passregistration.Or(due...),
		passregistration.Or(passregistration.PushClaimedUntilIsNil(), passregistration.PushClaimedUntilLTE(now))).
		SetPushClaim(claim).SetPushClaimedUntil(now.Add(s.PushLease)).Save(ctx)
	if err != nil || n == 0 { // n == 0: another instance claimed them, or pushed them meanwhile
		return false, err
	}
	err = s.Pusher.Push(ctx, token)
	switch {
	case errors.Is(err, ErrUnregistered):
		_, err := s.DB.PassRegistration.Delete().Where(passregistration.IDIn(ids...), passregistration.PushClaim(claim)).Exec(ctx)
		return false, err
	case err != nil:
		// The claim lapses: a pass after PushLease tries again.
		background.Failed(ctx, s.Log, background.PassPush, err)
		return false, nil
	}
	claimed, err := s.DB.PassRegistration.Query().Where(passregistration.IDIn(ids...), passregistration.PushClaim(claim)).
		Select(passregistration.FieldTicketID).All(ctx)
	if err != nil {
		return true, err
	}
	for _, r := range claimed {
		if err := s.DB.PassRegistration.Update().Where(passregistration.ID(r.ID), passregistration.PushClaim(claim)).
			SetPushedTag(tags[r.TicketID]).ClearPushClaim().ClearPushClaimedUntil().Exec(ctx); err != nil {
			return true, err
		}
	}
	return true, nil
}

// redact is the start of a push token, enough to tell devices apart in a log, not to push.
func redact(pushToken string) string {
	if len(pushToken) <= 8 {
		return pushToken
	}
	return pushToken[:8] + "…"
}
