package seats

import (
	"context"
	_ "embed"
	"strconv"

	"seatflow/internal/rdb"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/recount.lua
var recountSrc string

// recountScript sets one user's count if it still has the value the caller read; its
// KEYS, ARGV and reply are in lua/recount.lua.
var recountScript = redis.NewScript(recountSrc)

// Audit reads every seat of a showtime and the per-user counts at one instant (one
// MULTI/EXEC over keys of one slot), for the reconciler to compare with MySQL. Both maps
// are empty when the showtime has no seat hash.
func (s *Store) Audit(ctx context.Context, showID int) (map[int]State, map[string]int, error) {
	var seatsCmd, limitsCmd *redis.MapStringStringCmd
	_, err := s.RDB.TxPipelined(ctx, func(p redis.Pipeliner) error {
		seatsCmd = p.HGetAll(ctx, s.Keys.Seats(showID))
		limitsCmd = p.HGetAll(ctx, s.Keys.Limits(showID))
		return nil
	})
	if err != nil {
		return nil, nil, rdb.Classify("audit seats", err)
	}
	states := make(map[int]State, len(seatsCmd.Val()))
	for f, v := range seatsCmd.Val() {
		if id, err := strconv.Atoi(f); err == nil {
			states[id] = ParseState(v)
		}
	}
	counts := make(map[string]int, len(limitsCmd.Val()))
	for user, v := range limitsCmd.Val() {
		n, _ := strconv.Atoi(v)
		counts[user] = n
	}
	return states, counts, nil
}

// Recount sets one user's seat count of a showtime from `from` (what the caller read) to
// `to` (0 deletes it), unless a hold or release changed it meanwhile; it reports whether
// it wrote. It never overwrites another user's count, so a recount cannot lose a hold
// that raced it.
func (s *Store) Recount(ctx context.Context, showID int, userID string, from, to int) (bool, error) {
	n, err := s.run(ctx, recountScript, []string{s.Keys.Limits(showID)}, userID, from, to).Int()
	if err != nil {
		return false, rdb.Classify("recount seats", err)
	}
	return n == 1, nil
}
