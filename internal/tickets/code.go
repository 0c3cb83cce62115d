package tickets

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	"seatflow"
	"seatflow/internal/nodeid"
)

// maxCodeBytes bounds what a scan may send: a code is about 300 characters.
const maxCodeBytes = 1024

// claims are a code's payload. Ids are the API's (nodeid): a scanner compares tkt with the
// revocation list and sho with the showtime it admits to, as the API names them.
type claims struct {
	Ticket    string `json:"tkt"`
	Showtime  string `json:"sho"`
	Seat      string `json:"seat"`
	NotBefore int64  `json:"nbf"`
	Expires   int64  `json:"exp"`
}

// sign returns the code of ticket t of showtime st: a compact JWS (RFC 7515), EdDSA over
// Ed25519 (RFC 8037), kid in its header, signed with the ticket's own key. Ed25519 is
// deterministic, so a ticket's code is the same at every read until its showtime moves.
func sign(key *signingKey, t *seatflow.Ticket, st *seatflow.Showtime) (string, error) {
	nbf, exp := seatflow.TicketWindow(st)
	payload, err := json.Marshal(claims{Ticket: nodeid.Encode(nodeid.Ticket, t.ID), Showtime: nodeid.Encode(nodeid.Showtime, t.ShowtimeID),
		Seat: nodeid.Encode(nodeid.Seat, t.SeatID), NotBefore: nbf.Unix(), Expires: exp.Unix()})
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: key.private, KeyID: key.kid}}, nil)
	if err != nil {
		return "", fmt.Errorf("ticket signer: %w", err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign ticket %d: %w", t.ID, err)
	}
	return obj.CompactSerialize()
}

// verified is what a genuine code says, in database ids.
type verified struct {
	ticketID, showtimeID, seatID int
	notBefore, expires           time.Time
}

// verify checks a code's signature against our keys and reads its claims; false for
// anything that is not a code we signed, unchanged (INVALID at the door).
func (s *Service) verify(ctx context.Context, code string) (*verified, bool, error) {
	if len(code) == 0 || len(code) > maxCodeBytes {
		return nil, false, nil
	}
	obj, err := jose.ParseSignedCompact(code, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(obj.Signatures) != 1 {
		return nil, false, nil
	}
	key, err := s.Keys.verifier(ctx, obj.Signatures[0].Header.KeyID)
	if err != nil {
		return nil, false, err
	} else if key == nil {
		return nil, false, nil
	}
	payload, err := obj.Verify(key.public)
	if err != nil {
		return nil, false, nil
	}
	var c claims
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, false, nil
	}
	v := &verified{notBefore: time.Unix(c.NotBefore, 0), expires: time.Unix(c.Expires, 0)}
	var ok1, ok2, ok3 bool
	v.ticketID, ok1 = idOf(c.Ticket, nodeid.Ticket)
	v.showtimeID, ok2 = idOf(c.Showtime, nodeid.Showtime)
	v.seatID, ok3 = idOf(c.Seat, nodeid.Seat)
	if !ok1 || !ok2 || !ok3 || c.NotBefore <= 0 || c.Expires <= c.NotBefore {
		return nil, false, nil
	}
	return v, true, nil
}

// idOf reads an API id of type typ.
func idOf(id, typ string) (int, bool) {
	t, parts, err := nodeid.Decode(id)
	if err != nil || t != typ || len(parts) != 1 {
		return 0, false
	}
	return parts[0], true
}
