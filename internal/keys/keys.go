// Package keys names every Redis key and channel SeatFlow uses (docs/DESIGN.md "Redis").
// Everything about one showtime shares the {show:ID} hash tag, so a Lua script over a
// showtime touches one Redis Cluster slot. No other package builds a key by hand.
package keys

import (
	"strconv"
)

// Keys builds keys under one prefix ("sf" in production, a random one per test).
type Keys struct{ Prefix string }

// New returns the key builder for prefix.
func New(prefix string) Keys { return Keys{Prefix: prefix} }

func (k Keys) show(id int) string { return k.Prefix + ":{show:" + strconv.Itoa(id) + "}" }

// Seats is the hash seat_id → state of a showtime: "0" free, "1|TOKEN|HELD_AT_MS" held,
// "2|TOKEN" sold. Unsellable seats are not in it.
func (k Keys) Seats(showID int) string { return k.show(showID) + ":seats" }

// Version is the showtime's seat-map version, incremented on every change.
func (k Keys) Version(showID int) string { return k.show(showID) + ":ver" }

// Limits is the hash user_id → seats the user holds or bought for the showtime.
func (k Keys) Limits(showID int) string { return k.show(showID) + ":limits" }

// Events is the pub/sub channel of the showtime's seat-map deltas.
func (k Keys) Events(showID int) string { return k.show(showID) + ":events" }

// CheckIns is the pub/sub channel on which an admission at the showtime's door is
// announced, so every instance pushes the new count to the door's watchers.
func (k Keys) CheckIns(showID int) string { return k.show(showID) + ":checkins" }

// Waitlist is the count of the showtime's waiting-list entries WAITING (package waitlist):
// while it is above 0, seats that come back are returned to the list (lua/release.lua).
func (k Keys) Waitlist(showID int) string { return k.show(showID) + ":waitlist" }

// WaitlistLock is the lock of the one instance offering the showtime's returned seats;
// WaitlistAgain asks its holder for one more pass (seats returned while it offered).
func (k Keys) WaitlistLock(showID int) string { return k.show(showID) + ":waitlist:lock" }

// WaitlistAgain: see WaitlistLock.
func (k Keys) WaitlistAgain(showID int) string { return k.show(showID) + ":waitlist:again" }

// WaitlistEvents is the pub/sub channel on which the showtime's waiting list announces an
// offer or a change of positions, so every instance pushes its watchers' entries.
func (k Keys) WaitlistEvents(showID int) string { return k.show(showID) + ":waitlist:events" }

// The on-sale queue of a showtime (package queue), every key under its {show:ID} tag so
// that each queue operation, the admission tick and the hold's pass check are one script
// on one Cluster slot.

// Queue is the hash of a showtime's on-sale queue: its settings, phase, counters and the
// draw's seed and commitment.
func (k Keys) Queue(showID int) string { return k.show(showID) + ":queue" }

// QueueWaiting is the sorted set of the entrants waiting their turn, in the queue's order:
// the draw's for those who joined before it opened, then arrival.
func (k Keys) QueueWaiting(showID int) string { return k.show(showID) + ":queue:waiting" }

// QueueTickets is the hash ticket number → ticket (its user, status, place and pass).
func (k Keys) QueueTickets(showID int) string { return k.show(showID) + ":queue:tickets" }

// QueueUsers is the hash user id → the user's ticket number: one ticket per user.
func (k Keys) QueueUsers(showID int) string { return k.show(showID) + ":queue:users" }

// QueueSeen is the hash ticket number → when its holder was last seen (ms).
func (k Keys) QueueSeen(showID int) string { return k.show(showID) + ":queue:seen" }

// QueuePasses is the sorted set of the admission passes in use: pass id → expiry (ms).
func (k Keys) QueuePasses(showID int) string { return k.show(showID) + ":queue:passes" }

// QueueRate is the list of the admission tick's samples ("ms:admitted"), newest first,
// from which the admission rate is measured.
func (k Keys) QueueRate(showID int) string { return k.show(showID) + ":queue:rate" }

// QueueLease is the lease of the one instance running the queue's admission.
func (k Keys) QueueLease(showID int) string { return k.show(showID) + ":queue:lease" }

// QueueEvents is the pub/sub channel of the queue's changes (admissions, phases).
func (k Keys) QueueEvents(showID int) string { return k.show(showID) + ":queue:events" }

// QueueJoinRate is the counter of the joinQueue calls from a client address, for
// go-redis/redis_rate through rdb.NewLimiter.
func (k Keys) QueueJoinRate(addr string) string { return k.Prefix + ":queue-rate:" + addr }

// Cache is the Redis envelope of a catalog entry; key is "KIND:ID", e.g. "movie:7". The
// key is a hash tag, so the envelope and its rebuild lock share a Cluster slot and one
// script can check the lock and write the envelope.
func (k Keys) Cache(key string) string { return k.Prefix + ":cache:{" + key + "}" }

// CacheLock is the rebuild lock of a catalog entry.
func (k Keys) CacheLock(key string) string { return k.Prefix + ":lock:cache:{" + key + "}" }

// Catalog entries: the names Cache and CacheLock take, also the keys of the in-process
// cache and what an invalidation lists. They are stored in Redis: renaming one makes every
// instance of the old name miss (and leaves its envelopes to expire).

// Movie is a movie's entry.
func Movie(id int) string { return "movie:" + strconv.Itoa(id) }

// Hall is a hall's entry, with its seats.
func Hall(id int) string { return "hall:" + strconv.Itoa(id) }

// Showtime is a showtime's entry.
func Showtime(id int) string { return "showtime:" + strconv.Itoa(id) }

// ShowtimesOn is the id list of a cinema's showtimes starting on day (YYYY-MM-DD, in the
// cinema's time zone).
func ShowtimesOn(cinemaID int, day string) string {
	return "showtimes:cinema:" + strconv.Itoa(cinemaID) + ":date:" + day
}

// Cinema is a cinema's entry.
func Cinema(id int) string { return "cinema:" + strconv.Itoa(id) }

// CinemaIDs is the id list, in id order, of every cinema.
func CinemaIDs() string { return "cinemas:ids" }

// HallsOf is the id list, in id order, of a cinema's halls.
func HallsOf(cinemaID int) string { return "halls:cinema:" + strconv.Itoa(cinemaID) }

// ShowtimesOf is the id list of a movie's showtimes.
func ShowtimesOf(movieID int) string { return "showtimes:movie:" + strconv.Itoa(movieID) }

// MovieIDs is the id list, in id order, of every movie (status "") or of those with a
// status.
func MovieIDs(status string) string { return "movies:ids:" + status }

// LiveBeat is the channel every instance's live hub publishes a heartbeat on: receiving
// beats proves a hub's pub/sub connection is alive.
func (k Keys) LiveBeat() string { return k.Prefix + ":live:beat" }

// CacheInvalidations is the channel on which instances tell each other which local
// cache entries to drop.
func (k Keys) CacheInvalidations() string { return k.Prefix + ":cache:invalidations" }

// OrdersExpiry is the delay queue of pending orders: member order id, score expires_at ms.
func (k Keys) OrdersExpiry() string { return k.Prefix + ":orders:expiry" }

// ReconcileLock makes one reconciler run at a time across instances.
func (k Keys) ReconcileLock() string { return k.Prefix + ":lock:reconcile" }

// ShowLock is the per-showtime mutex shared by seat-hash init and the reconciler.
func (k Keys) ShowLock(showID int) string { return k.show(showID) + ":lock" }

// UserRate is the counter of a user's requests of kind ("hold", "order") for
// go-redis/redis_rate through rdb.NewLimiter, so the key in Redis is exactly this one.
func (k Keys) UserRate(kind, userID string) string { return k.Prefix + ":rate:" + kind + ":" + userID }

// GuestSessionRate is the counter of the guest sessions started from a client address,
// for go-redis/redis_rate through rdb.NewLimiter.
func (k Keys) GuestSessionRate(addr string) string { return k.Prefix + ":guest-rate:" + addr }

// Idempotency marks a holdSeats request in flight for (user, idempotency key).
func (k Keys) Idempotency(userID, key string) string {
	return k.Prefix + ":idem:" + strconv.Quote(userID) + ":" + key
}

// CostBudget is the prefix of the clients' query-cost budgets.
func (k Keys) CostBudget() string { return k.Prefix + ":cost:" }

// APQ is the automatic-persisted-query cache prefix.
func (k Keys) APQ() string { return k.Prefix + ":apq:" }

// Bench is a scratch key of the benchmarks (cmd/seatflow-bench); nothing else reads it.
func (k Keys) Bench(name string) string { return k.Prefix + ":bench:" + name }
