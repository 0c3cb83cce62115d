package tickets

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/predicate"
	"seatflow/ent/showtime"
	"seatflow/ent/ticket"
	"seatflow/ent/ticketkey"
	"seatflow/internal/database"
)

// KeyCacheFor is how long an instance keeps its view of the keys (the signing one and the
// published list): a rotation takes effect on every instance within it.
const KeyCacheFor = 30 * time.Second

// MinSecretBytes is the shortest SEATFLOW_TICKET_KEY_SECRET accepted.
const MinSecretBytes = 32

// sealInfo is the HKDF info of the key that seals private keys: a new scheme gets a new one.
const sealInfo = "seatflow ticket keys v1"

// Keyring holds the keys that sign ticket codes. They live in MySQL (ticket_keys) with
// their private halves sealed under a key derived from the configured secret, so every
// instance signs with the same newest key and a stolen database dump signs nothing.
type Keyring struct {
	db   *ent.Client
	aead cipher.AEAD
	now  seatflow.ClockFunc // nil: the system clock

	mu        sync.Mutex
	opened    map[int]*signingKey // by row id: a key never changes once written
	current   *signingKey
	currentAt time.Time
	published []*signingKey
	pubAt     time.Time
	// lookedUp is when an unknown kid was last looked for in MySQL.
	lookedUp time.Time
}

// signingKey is one opened key pair.
type signingKey struct {
	id         int
	generation int
	kid        string
	public     ed25519.PublicKey
	private    ed25519.PrivateKey
	createdAt  time.Time
}

// NewKeyring opens the keys of db with secret (at least MinSecretBytes bytes).
func NewKeyring(db *ent.Client, secret string, now func() time.Time) (*Keyring, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("the ticket key secret must be at least %d bytes", MinSecretBytes)
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, sealInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("derive the ticket sealing key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Keyring{db: db, aead: aead, now: now, opened: map[int]*signingKey{}}, nil
}

// NewSecret returns a random secret for embedded mode, which keeps it beside its database.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Ensure makes the first key when there is none and checks that the secret opens the
// signing key: an instance started with another secret than its database's fails here,
// at start, instead of at its first ticket.
func (k *Keyring) Ensure(ctx context.Context) error {
	n, err := k.db.TicketKey.Query().Count(ctx)
	if err != nil {
		return fmt.Errorf("ticket keys: %w", database.Classify(err))
	}
	if n == 0 {
		if _, err := k.add(ctx, 1); err != nil && !ent.IsConstraintError(err) {
			return err
		}
	}
	_, err = k.signing(ctx, nil, true)
	return err
}

// Rotate adds a key that signs every ticket made from now on (on every instance within
// KeyCacheFor). The older keys keep verifying their tickets and stay published until the
// last of those has expired.
func (k *Keyring) Rotate(ctx context.Context) (*seatflow.TicketKey, error) {
	for range 3 {
		last, err := k.db.TicketKey.Query().Order(ent.Desc(ticketkey.FieldGeneration)).First(ctx)
		gen := 1
		if err == nil {
			gen = last.Generation + 1
		} else if !ent.IsNotFound(err) {
			return nil, fmt.Errorf("rotate ticket keys: %w", database.Classify(err))
		}
		key, err := k.add(ctx, gen)
		if ent.IsConstraintError(err) {
			continue // a concurrent rotation took this generation: go past it
		} else if err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.current, k.published = key, nil
		k.mu.Unlock()
		out := key.public2JWK(true)
		return &out, nil
	}
	return nil, errors.New("rotate ticket keys: other rotations kept winning; try again")
}

// add writes a new key of generation gen.
func (k *Keyring) add(ctx context.Context, gen int) (*signingKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	kid, err := keyID(pub)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := k.aead.Seal(nonce, nonce, priv.Seed(), []byte(kid))
	row, err := k.db.TicketKey.Create().SetKid(kid).SetGeneration(gen).SetPublicKey(pub).
		SetSealedPrivateKey(sealed).SetCreatedAt(k.now.Now()).Save(ctx)
	if err != nil {
		if ent.IsConstraintError(err) {
			return nil, err
		}
		return nil, fmt.Errorf("add ticket key: %w", database.Classify(err))
	}
	return k.open(row)
}

// keyID names a key by its RFC 7638 thumbprint (SHA-256), cut to 16 characters: short in
// every code, and unique in ticket_keys.
func keyID(pub ed25519.PublicKey) (string, error) {
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(tp)[:16], nil
}

// open unseals a stored key, once per process.
func (k *Keyring) open(row *ent.TicketKey) (*signingKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, ok := k.opened[row.ID]; ok {
		return key, nil
	}
	n := k.aead.NonceSize()
	if len(row.SealedPrivateKey) < n {
		return nil, fmt.Errorf("ticket key %s: sealed key too short", row.Kid)
	}
	seed, err := k.aead.Open(nil, row.SealedPrivateKey[:n], row.SealedPrivateKey[n:], []byte(row.Kid))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("ticket key %s cannot be opened: SEATFLOW_TICKET_KEY_SECRET is not the secret it was sealed with", row.Kid)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	if !priv.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(row.PublicKey)) {
		return nil, fmt.Errorf("ticket key %s: its private key does not match its public key", row.Kid)
	}
	key := &signingKey{id: row.ID, generation: row.Generation, kid: row.Kid, public: ed25519.PublicKey(row.PublicKey),
		private: priv, createdAt: row.CreatedAt}
	k.opened[row.ID] = key
	return key, nil
}

// signing returns the newest key, read from MySQL at most every KeyCacheFor (fresh: now),
// through c (a transaction's client: SQLite has one connection, which the transaction
// holds) or the keyring's own client when c is nil.
func (k *Keyring) signing(ctx context.Context, c *ent.TicketKeyClient, fresh bool) (*signingKey, error) {
	k.mu.Lock()
	cur, at := k.current, k.currentAt
	k.mu.Unlock()
	if cur != nil && !fresh && k.now.Now().Sub(at) < KeyCacheFor && k.now.Now().Sub(at) >= 0 {
		return cur, nil
	}
	if c == nil {
		c = k.db.TicketKey
	}
	row, err := c.Query().Order(ent.Desc(ticketkey.FieldGeneration)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, errors.New("ticket keys: there is none (the server makes the first at start)")
	} else if err != nil {
		return nil, fmt.Errorf("ticket keys: %w", database.Classify(err))
	}
	key, err := k.open(row)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.current, k.currentAt = key, k.now.Now()
	k.mu.Unlock()
	return key, nil
}

// byID returns the key of a ticket (its key_id).
func (k *Keyring) byID(ctx context.Context, id int) (*signingKey, error) {
	k.mu.Lock()
	key, ok := k.opened[id]
	k.mu.Unlock()
	if ok {
		return key, nil
	}
	row, err := k.db.TicketKey.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("ticket key %d: %w", id, database.Classify(err))
	}
	return k.open(row)
}

// Published returns the keys whose tickets may still be presented: every key with a ticket
// of a showtime that has not ended, and the signing key, newest first. Read at most every
// KeyCacheFor.
func (k *Keyring) Published(ctx context.Context) ([]seatflow.TicketKey, error) {
	k.mu.Lock()
	list, at := k.published, k.pubAt
	k.mu.Unlock()
	if list == nil || k.now.Now().Sub(at) >= KeyCacheFor || k.now.Now().Sub(at) < 0 {
		var err error
		if list, err = k.livePublished(ctx); err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.published, k.pubAt = list, k.now.Now()
		k.mu.Unlock()
	}
	cur, err := k.signing(ctx, nil, false)
	if err != nil {
		return nil, err
	}
	out := make([]seatflow.TicketKey, len(list))
	for i, key := range list {
		out[i] = key.public2JWK(key.id == cur.id)
	}
	return out, nil
}

// livePublished reads Published's keys from MySQL.
func (k *Keyring) livePublished(ctx context.Context) ([]*signingKey, error) {
	shows, err := k.db.Showtime.Query().Where(showtime.EndsAtGT(k.now.Now())).IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("published ticket keys: %w", database.Classify(err))
	}
	var ids []int
	if len(shows) > 0 {
		if ids, err = k.db.Ticket.Query().Where(ticket.ShowtimeIDIn(shows...)).Unique(true).Select(ticket.FieldKeyID).Ints(ctx); err != nil {
			return nil, fmt.Errorf("published ticket keys: %w", database.Classify(err))
		}
	}
	cur, err := k.signing(ctx, nil, false)
	if err != nil {
		return nil, err
	}
	return k.load(ctx, ticketkey.Or(ticketkey.IDIn(ids...), ticketkey.ID(cur.id)))
}

// load opens the stored keys that match where, newest first.
func (k *Keyring) load(ctx context.Context, where predicate.TicketKey) ([]*signingKey, error) {
	rows, err := k.db.TicketKey.Query().Where(where).Order(ent.Desc(ticketkey.FieldGeneration)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("ticket keys: %w", database.Classify(err))
	}
	list := make([]*signingKey, 0, len(rows))
	for _, row := range rows {
		key, err := k.open(row)
		if err != nil {
			return nil, err
		}
		list = append(list, key)
	}
	return list, nil
}

// verifier returns the key named kid, nil when none of ours has that name. Every key ever
// made verifies (a scan uploaded after its showtime is still applied); whether the ticket
// is still valid is the claims' and the ticket's business. A kid the instance does not
// know makes it read the keys again, at most once a second: a key rotated in at another
// instance verifies here at once, and made-up kids cost no query each.
func (k *Keyring) verifier(ctx context.Context, kid string) (*signingKey, error) {
	k.mu.Lock()
	for _, key := range k.opened {
		if key.kid == kid {
			k.mu.Unlock()
			return key, nil
		}
	}
	recent := !k.lookedUp.IsZero() && k.now.Now().Sub(k.lookedUp) < time.Second && k.now.Now().Sub(k.lookedUp) >= 0
	if !recent {
		k.lookedUp = k.now.Now()
	}
	k.mu.Unlock()
	if recent {
		return nil, nil
	}
	list, err := k.load(ctx, ticketkey.Kid(kid))
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return list[0], nil
}

func findKid(list []*signingKey, kid string) *signingKey {
	for _, key := range list {
		if key.kid == kid {
			return key
		}
	}
	return nil
}

// public2JWK is the key as a JSON Web Key (RFC 8037).
func (key *signingKey) public2JWK(signing bool) seatflow.TicketKey {
	return seatflow.TicketKey{Kid: key.kid, Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(key.public),
		Use: "sig", Alg: string(jose.EdDSA), CreatedAt: key.createdAt, Signing: signing}
}
