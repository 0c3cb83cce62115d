package seats

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/keys"
	"seatflow/internal/nodeid"
	"seatflow/internal/rdb"
)

// ErrNoSeatMap is in the chain of a Hold on a showtime whose seat hash does not exist
// (sales never opened, or Redis lost it): the caller may build it and try again.
var ErrNoSeatMap = errors.New("no seat map")

// Store is the seat inventory of every showtime in Redis. Its methods are the only way
// seat state changes; each runs one Lua script, so each change is atomic.
type Store struct {
	RDB  redis.UniversalClient
	Keys keys.Keys
	// Now is the clock (HELD_AT of new holds); time.Now when nil.
	Now seatflow.ClockFunc

	// OnReturned, when set, is told of a showtime whose seats a release or unblock has just
	// returned to its waiting list (package waitlist offers them).
	OnReturned func(showID int)

	batch rdb.Batch
	seen  seenVersions
}

func (s *Store) showKeys(showID int, withLimits bool) []string {
	k := []string{s.Keys.Seats(showID), s.Keys.Version(showID)}
	if withLimits {
		k = append(k, s.Keys.Limits(showID))
	}
	return append(k, s.Keys.Events(showID))
}

func ids(seatIDs []int) []any {
	out := make([]any, len(seatIDs))
	for i, id := range seatIDs {
		out[i] = strconv.Itoa(id)
	}
	return out
}

// Init builds the seat hash of a showtime from the hall's sellable seats overlaid with
// occupancy, and sets the users' counts from it. It never overwrites an existing hash and
// reports whether it created one. Its version starts above the version key (if Redis
// kept it); InitBlocked is Init for the build of a showtime on sale.
func (s *Store) Init(ctx context.Context, showID int, hall *seatflow.Hall, occ []Occupancy) (bool, error) {
	return s.InitBlocked(ctx, showID, hall, occ, nil, 0)
}

// InitBlocked is Init with house seats and a base: the seats in blocked (MySQL's block
// rows) start BLOCKED unless an occupancy takes them (an active order wins over a block),
// and the hash's version starts above base (EpochBase) when Redis lost the version key
// too: above every version an earlier build issued.
func (s *Store) InitBlocked(ctx context.Context, showID int, hall *seatflow.Hall, occ []Occupancy, blocked []int, base int) (bool, error) {
	isBlocked := uniq(blocked)
	taken := make(map[int]Occupancy, len(occ))
	counts := map[string]int{}
	for _, o := range occ {
		taken[o.SeatID] = o
	}
	var seatArgs []any
	n := 0
	for _, seat := range hall.Seats {
		if !seat.Sellable {
			continue
		}
		v := "0"
		if isBlocked[seat.ID] {
			v = "3"
		}
		if o, ok := taken[seat.ID]; ok {
			if o.Sold {
				v = "2|" + o.Token
			} else {
				v = "1|" + o.Token + "|" + strconv.FormatInt(o.HeldAt.UnixMilli(), 10)
			}
			counts[o.UserID]++
		}
		seatArgs = append(seatArgs, strconv.Itoa(seat.ID), v)
		n++
	}
	args := append([]any{base, n}, seatArgs...)
	users := make([]string, 0, len(counts))
	for u := range counts {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		args = append(args, u, counts[u])
	}
	res, err := s.run(ctx, initScript, s.showKeys(showID, true), args...).Int64Slice()
	if err != nil {
		return false, rdb.Classify("init seats", err)
	}
	s.saw(showID, int(res[1]))
	return res[0] == 1, nil
}

// Version returns the showtime's seat-map version now (0 before its seat hash exists).
func (s *Store) Version(ctx context.Context, showID int) (int, error) {
	v, err := s.RDB.Get(ctx, s.Keys.Version(showID)).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	} else if err != nil {
		return 0, rdb.Classify("read seat-map version", err)
	}
	return v, nil
}

// Exists reports whether the showtime has a seat hash (it is created at open sale).
func (s *Store) Exists(ctx context.Context, showID int) (bool, error) {
	n, err := s.RDB.Exists(ctx, s.Keys.Seats(showID)).Result()
	if err != nil {
		return false, rdb.Classify("seat hash exists", err)
	}
	return n == 1, nil
}

// Hold takes all the requested seats for req.Token or none. It fails with
// SEATS_UNAVAILABLE or SEAT_GAP (Extensions["seatIds"] names the taken or the stranded
// seats, as API ids), PURCHASE_LIMIT_EXCEEDED, or BAD_USER_INPUT for a seat not in the hall.
func (s *Store) Hold(ctx context.Context, req HoldRequest) error {
	if len(req.SeatIDs) == 0 || len(req.SeatIDs) != len(uniq(req.SeatIDs)) {
		return seatflow.Errorf(seatflow.EINVALID, "choose one or more distinct seats")
	}
	rows, err := req.Layout.gapRows(req.SeatIDs, req.AllowGaps)
	if err != nil {
		return err
	}
	// A late payment's takeover holds again the seats its order had: the rules of kinds
	// were kept when it first held them.
	var general []int
	if req.TakeOver == "" {
		if err := req.Layout.CheckCompanions(req.SeatIDs); err != nil {
			return err
		}
		if !req.NeedsAccessible && len(req.Layout.accessibleOf(req.SeatIDs)) > 0 {
			general = req.Layout.general
		}
	}
	gaps := "0"
	if req.AllowGaps {
		gaps = "1"
	}
	useBlocked := "0"
	if req.UseBlocked {
		useBlocked = "1"
	}
	args := []any{s.Now.Now().UnixMilli(), req.Token, req.UserID, req.Limit, gaps, req.TakeOver, useBlocked, len(req.SeatIDs)}
	args = append(args, ids(req.SeatIDs)...)
	args = append(args, len(general))
	args = append(args, ids(general)...)
	for _, row := range rows {
		args = append(args, len(row))
		args = append(args, ids(row)...)
	}
	args = append(append(args, req.Admission.args()...), traceparent(ctx))
	keys := append(s.showKeys(req.ShowtimeID, true), s.Keys.Queue(req.ShowtimeID), s.Keys.QueuePasses(req.ShowtimeID))
	res, err := s.run(ctx, holdScript, keys, args...).StringSlice()
	if err != nil {
		return rdb.Classify("hold seats", err)
	}
	switch res[0] {
	case "OK":
		v, _ := strconv.Atoi(res[1])
		s.saw(req.ShowtimeID, v)
		return nil
	case "UNAVAILABLE":
		taken := seatIDs(res[1:])
		return Error(seatflow.ESEATSUNAVAILABLE, taken, "some of these seats were just taken: %s", labels(req.Layout, taken))
	case "RESERVED":
		kept := req.Layout.accessibleOf(req.SeatIDs)
		return Error(seatflow.ESEATSUNAVAILABLE, kept,
			"accessible seat %s is kept for customers who need one while other seats are free: hold it with needsAccessible if you do",
			labels(req.Layout, kept))
	case "LIMIT":
		return seatflow.Errorf(seatflow.ELIMIT, "at most %d seats per customer for this showtime (you have %s)", req.Limit, res[1])
	case "GAP":
		stranded := seatIDs(res[1:2])
		return Error(seatflow.ESEATGAP, stranded, "this selection would leave seat %s empty on its own", labels(req.Layout, stranded))
	case "NOHASH":
		return seatflow.Unavailable("hold seats", ErrNoSeatMap)
	case "NOT_ADMITTED":
		return errNotAdmitted
	}
	return fmt.Errorf("hold seats: unexpected reply %q", res)
}

// errNotAdmitted is a hold refused by the on-sale queue's gate.
var errNotAdmitted = seatflow.Errorf(seatflow.ENOTADMITTED,
	"this showtime's sale is open to admitted entrants of its queue only: join the queue (joinQueue) and hold with the admission pass it gives you")

// args are hold.lua's admission-gate section: gated or not, the pass id and its expiry.
func (a *Admission) args() []any {
	switch {
	case a == nil:
		return []any{"0", "", ""}
	case a.PassID == "":
		return []any{"1", "", ""}
	}
	return []any{"1", a.PassID, a.ExpiresAt.UnixMilli()}
}

// Error is a refusal because of the seats ids; extensions.seatIds names them to the
// client as the API's ids (nodeid), so the error presenter passes them as they are.
func Error(code string, ids []int, format string, args ...any) *seatflow.Error {
	api := make([]string, len(ids))
	for i, id := range ids {
		api[i] = nodeid.Encode(nodeid.Seat, id)
	}
	e := seatflow.Errorf(code, format, args...)
	e.Extensions = map[string]any{"seatIds": api}
	return e
}

func uniq(ids []int) map[int]bool {
	m := make(map[int]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// hallRows groups the hall's seats by row, in the hall's row order, each ordered by number.
func hallRows(hall *seatflow.Hall) [][]seatflow.Seat {
	index := map[string]int{}
	var rows [][]seatflow.Seat
	for _, seat := range hall.Seats {
		i, ok := index[seat.Row]
		if !ok {
			i = len(rows)
			index[seat.Row] = i
			rows = append(rows, nil)
		}
		rows[i] = append(rows[i], seat)
	}
	for _, row := range rows {
		sort.Slice(row, func(a, b int) bool { return row[a].Number < row[b].Number })
	}
	return rows
}

// Confirm marks the seats held by token as sold to it (payment). It is idempotent and
// returns how many of the seats are now sold to token: fewer than len(seatIDs) means some
// were lost and must be repaired.
func (s *Store) Confirm(ctx context.Context, showID int, token string, seatIDs []int) (int, error) {
	if len(seatIDs) == 0 {
		return 0, nil
	}
	args := append(append([]any{token}, ids(seatIDs)...), traceparent(ctx))
	res, err := s.run(ctx, confirmScript, s.showKeys(showID, false), args...).Int64Slice()
	if err != nil {
		return 0, rdb.Classify("confirm seats", err)
	}
	s.saw(showID, int(res[1]))
	return int(res[0]), nil
}

// Release frees the seats held or sold by token and gives them back to the user's count
// (userID "" leaves counts alone: an orphan hold's user is unknown, the reconciler
// recounts). Seats of other tokens are untouched, so it is idempotent. It returns how
// many it freed.
func (s *Store) Release(ctx context.Context, showID int, token, userID string, seatIDs []int) (int, error) {
	if len(seatIDs) == 0 {
		return 0, nil
	}
	if seatIDs = releasable(seatIDs); len(seatIDs) == 0 {
		return 0, nil
	}
	args := append(append([]any{token, userID}, ids(seatIDs)...), traceparent(ctx))
	keys := append(s.showKeys(showID, true), s.Keys.Waitlist(showID))
	res, err := s.run(ctx, releaseScript, keys, args...).Int64Slice()
	if err != nil {
		return 0, rdb.Classify("release seats", err)
	}
	s.saw(showID, int(res[1]))
	s.returned(showID, res[2])
	return int(res[0]), nil
}

// Restore marks the seats of a paid order sold to its token again where they are free or
// still held by it (the reconciler's paid-seat repair), adding formerly free seats to the
// user's count. It returns how many seats it changed and the ids of seats another token
// has, which it leaves alone.
func (s *Store) Restore(ctx context.Context, showID int, token, userID string, seatIDs []int) (int, []string, error) {
	return s.restore(ctx, showID, token, userID, "", seatIDs)
}

// Rehold holds the free seats of a pending order for its token again, as held at heldAt
// (the reconciler's re-hold repair: a seat hash rebuilt from MySQL before the order's
// commit shows its seats free), adding them to the user's count. Seats the token already
// has are left as they are. It returns how many seats it changed and the ids of seats
// another token has, which it leaves alone.
func (s *Store) Rehold(ctx context.Context, showID int, token, userID string, heldAt time.Time, seatIDs []int) (int, []string, error) {
	return s.restore(ctx, showID, token, userID, strconv.FormatInt(heldAt.UnixMilli(), 10), seatIDs)
}

func (s *Store) restore(ctx context.Context, showID int, token, userID, heldAt string, seatIDs []int) (int, []string, error) {
	if len(seatIDs) == 0 {
		return 0, nil, nil
	}
	args := append(append([]any{token, userID, heldAt}, ids(seatIDs)...), traceparent(ctx))
	res, err := s.run(ctx, restoreScript, s.showKeys(showID, true), args...).StringSlice()
	if err != nil {
		return 0, nil, rdb.Classify("restore seats", err)
	}
	n, _ := strconv.Atoi(res[0])
	v, _ := strconv.Atoi(res[1])
	s.saw(showID, v)
	return n, res[2:], nil
}

// Count returns the seats one user holds or bought for the showtime.
func (s *Store) Count(ctx context.Context, showID int, userID string) (int, error) {
	n, err := s.RDB.HGet(ctx, s.Keys.Limits(showID), userID).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	} else if err != nil {
		return 0, rdb.Classify("read seat count", err)
	}
	return n, nil
}

// Counts returns the showtime's per-user seat counts (held or bought), for the purchase
// limit; users with none are absent.
func (s *Store) Counts(ctx context.Context, showID int) (map[string]int, error) {
	raw, err := s.RDB.HGetAll(ctx, s.Keys.Limits(showID)).Result()
	if err != nil {
		return nil, rdb.Classify("read seat counts", err)
	}
	counts := make(map[string]int, len(raw))
	for user, v := range raw {
		n, _ := strconv.Atoi(v)
		counts[user] = n
	}
	return counts, nil
}

// States reads every seat of the showtime's hash and the version at one instant. Seats not
// in the map are unsellable (or the hash is missing: then the map is empty).
func (s *Store) States(ctx context.Context, showID int) (map[int]State, int, error) {
	res, err := s.run(ctx, snapshotScript, []string{s.Keys.Seats(showID), s.Keys.Version(showID)}).Slice()
	if err != nil {
		return nil, 0, rdb.Classify("read seats", err)
	}
	if len(res) != 2 {
		return nil, 0, fmt.Errorf("read seats: unexpected reply %v", res)
	}
	vs, _ := res[0].(string)
	version, _ := strconv.Atoi(vs)
	flat, _ := res[1].([]any)
	states := make(map[int]State, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		f, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		id, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		states[id] = ParseState(v)
	}
	return states, version, nil
}

// ParseState decodes a hash value: "0" free, "1|TOKEN|HELD_AT_MS" held, "2|TOKEN" sold,
// "3" blocked (a house seat), "4|RETURNED_AT_MS" returned to the waiting list (held, with
// no token). Anything else reads as held with no token, so it is never offered as free.
func ParseState(v string) State {
	switch v {
	case "0":
		return State{Status: seatflow.SeatAvailable}
	case "3":
		return State{Status: seatflow.SeatBlocked}
	}
	// Cut, not Split: a seat map of 150 seats parses 150 of these per read.
	kind, rest, ok := strings.Cut(v, "|")
	token, heldAt, held := strings.Cut(rest, "|")
	switch {
	case ok && kind == "1" && held && !strings.Contains(heldAt, "|"):
		ms, _ := strconv.ParseInt(heldAt, 10, 64)
		return State{Status: seatflow.SeatHeld, Token: token, HeldAt: time.UnixMilli(ms)}
	case ok && kind == "2" && !held:
		return State{Status: seatflow.SeatSold, Token: rest}
	case ok && kind == "4" && !held:
		ms, _ := strconv.ParseInt(rest, 10, 64)
		return State{Status: seatflow.SeatHeld, HeldAt: time.UnixMilli(ms), Returned: true}
	}
	return State{Status: seatflow.SeatHeld}
}

// seatIDs reads the seat ids a script returned.
func seatIDs(raw []string) []int {
	out := make([]int, 0, len(raw))
	for _, r := range raw {
		if id, err := strconv.Atoi(r); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// labels names seats as customers do: "C3, C4".
func labels(l *Layout, ids []int) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = l.Label(id)
	}
	return strings.Join(names, ", ")
}

// Map returns the seat map of a showtime: every seat of the hall with its status
// (UNAVAILABLE when unsellable or not in the hash), the available count and the version.
func (s *Store) Map(ctx context.Context, showID int, hall *seatflow.Hall) (*seatflow.SeatMap, error) {
	states, version, err := s.States(ctx, showID)
	if err != nil {
		return nil, err
	}
	m := &seatflow.SeatMap{ShowtimeID: showID, Version: version, Seats: make([]seatflow.SeatState, len(hall.Seats))}
	for i, seat := range hall.Seats {
		status := seatflow.SeatUnavailable
		if st, ok := states[seat.ID]; ok && seat.Sellable {
			status = st.Status
		}
		if status == seatflow.SeatAvailable {
			m.Available++
		}
		m.Seats[i] = seatflow.SeatState{ShowtimeID: showID, Seat: seat, Status: status}
	}
	return m, nil
}
