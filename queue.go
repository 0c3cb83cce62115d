package seatflow

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// QueuePhase is where a showtime's on-sale queue is: PREQUEUE until it opens (entrants
// join, nobody has a place), OPEN while it admits, SOLD_OUT once no seat is available and
// none is held, CLOSED when the showtime starts or is cancelled. SOLD_OUT and CLOSED are
// final; the draw's seed is revealed in both.
type QueuePhase string

// Queue phases.
const (
	QueuePrequeue QueuePhase = "PREQUEUE"
	QueueOpen     QueuePhase = "OPEN"
	QueueSoldOut  QueuePhase = "SOLD_OUT"
	QueueClosed   QueuePhase = "CLOSED"
)

// Revealed reports whether the draw's seed is public in phase p (SOLD_OUT or CLOSED).
func (p QueuePhase) Revealed() bool { return p == QueueSoldOut || p == QueueClosed }

// Gates reports whether holds need an admission pass in phase p: from the queue's
// creation until it is SOLD_OUT or CLOSED (a showtime put on sale by hand before its
// queue opens sells to nobody until then).
func (p QueuePhase) Gates() bool { return !p.Revealed() }

// QueueStatus is where one entrant's ticket is: WAITING for its turn, ADMITTED with a
// pass, EXPIRED (the pass ran out or was used up, or the entrant was absent when its turn
// came: it may join again, at the back), SOLD_OUT (no seat left for those still waiting),
// CLOSED (the queue ended).
type QueueStatus string

// Queue ticket statuses.
const (
	QueueWaiting       QueueStatus = "WAITING"
	QueueAdmitted      QueueStatus = "ADMITTED"
	QueueExpired       QueueStatus = "EXPIRED"
	QueueTicketSoldOut QueueStatus = "SOLD_OUT"
	QueueTicketClosed  QueueStatus = "CLOSED"
)

// Final reports whether a ticket in status s can change no more (only joining again
// makes a new one).
func (s QueueStatus) Final() bool { return s != QueueWaiting && s != QueueAdmitted }

// Defaults and bounds of an on-sale queue (docs/DESIGN.md "On-sale queue").
const (
	// DefaultPassMinutes is how long an admission pass lasts when the admin sets none.
	DefaultPassMinutes = 10
	// DefaultAveragePartySize is the seats one admitted entrant is expected to buy, which
	// sizes the inventory cap: never more passes in use than ceil(available / it).
	DefaultAveragePartySize = 2.5
	// QueueAbsence is how long an entrant may go unseen (no subscription, no queueTicket
	// or joinQueue call) before its turn is skipped and its ticket EXPIRED.
	QueueAbsence = 5 * time.Minute
)

// OnSaleQueue is a showtime's virtual waiting room: who may hold seats while its sale is
// opening is decided by a verifiable draw and admitted at a set rate.
type OnSaleQueue struct {
	ShowtimeID     int       `json:"showtimeId"`
	OpensAt        time.Time `json:"opensAt"`
	AdmitPerMinute int       `json:"admitPerMinute"`
	MaxActive      int       `json:"maxActive"`
	PassMinutes    int       `json:"passMinutes"`
	// AveragePartySize sizes the inventory cap (DefaultAveragePartySize).
	AveragePartySize float64    `json:"averagePartySize"`
	Phase            QueuePhase `json:"phase"`
	// Waiting counts the entrants waiting (joined before opensAt, or waiting their turn).
	Waiting int `json:"waiting"`
	// Admitted counts the passes issued so far.
	Admitted int `json:"admitted"`
	// DrawCommitment is DrawCommitment(seed), public from the queue's creation.
	DrawCommitment string `json:"drawCommitment"`
	// DrawSeed is the seed in lowercase hex, nil until the phase is Revealed.
	DrawSeed *string `json:"drawSeed"`
}

// QueueTicket is one entrant's place in a showtime's on-sale queue, as its holder sees it.
type QueueTicket struct {
	// ID is the ticket's id as the API returns it (an opaque global id): the draw orders
	// the entrants who joined before opensAt by DrawKey(seed, ID).
	ID         string      `json:"id"`
	ShowtimeID int         `json:"showtimeId"`
	Status     QueueStatus `json:"status"`
	// Position is 1 for the next entrant to be admitted; nil before the queue opens and
	// once the ticket is not WAITING.
	Position *int `json:"position"`
	// Waiting counts every entrant waiting in the queue.
	Waiting int `json:"waiting"`
	// EstimatedWaitSeconds is Position over the admission rate measured in the last
	// minute; nil without a position or while nobody was admitted in that minute.
	EstimatedWaitSeconds *int `json:"estimatedWaitSeconds"`
	// Pass is the signed admission pass while ADMITTED (holdSeats' admissionPass).
	Pass          *string    `json:"pass"`
	PassExpiresAt *time.Time `json:"passExpiresAt"`
	JoinedAt      time.Time  `json:"joinedAt"`
}

// DrawSeedBytes is the length of a draw's secret seed.
const DrawSeedBytes = 32

// DrawCommitment is what a queue publishes before it opens: the lowercase hex SHA-256 of
// its seed's bytes. Once the seed is revealed anyone can check it against this.
func DrawCommitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// DrawKey is where the draw puts an entrant who joined before opensAt: the lowercase hex
// HMAC-SHA256 of the ticket's id (as the API returns it) keyed with the seed's bytes. The
// pre-open entrants are admitted in ascending order of their keys (compared as strings,
// which for lowercase hex of one length is their numeric order); who joins later queues
// behind them in arrival order.
func DrawKey(seed []byte, ticketID string) string {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(ticketID))
	return hex.EncodeToString(m.Sum(nil))
}
