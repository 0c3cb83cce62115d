package queue

import (
	"errors"
	"regexp"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/nodeid"
	"seatflow/internal/seats"
)

// maxPassBytes bounds what a hold may send as a pass: one is about 250 characters.
const maxPassBytes = 1024

// passPurpose derives the passes' key from the instances' secret, so that a pass is never
// a bearer token (or the reverse): the two are signed with different keys.
const passPurpose = "seatflow admission pass v1"

// passID is the form of a pass id: the epoch of the queue's state that issued it, a dot,
// the pass's number in that epoch.
var passID = regexp.MustCompile(`^[1-9][0-9]{0,9}\.[1-9][0-9]{0,15}$`)

// Passes signs and verifies admission passes: a JWT (HS256, through auth.SignHS256 and
// auth.VerifyHS256 as bearer tokens are) whose subject is the user, sho the showtime (its
// API id), pid the pass id and exp its expiry, signed with a key every instance derives
// from the same secret (auth.DeriveKey), so any instance verifies any pass without a
// store. Whether the pass is still in use (not given back, not used up) is the hold
// script's to check.
type Passes struct {
	key []byte
	// Now is the clock passes expire by; time.Now when nil.
	Now seatflow.ClockFunc
}

// NewPasses returns the passes of the instances sharing secret (SEATFLOW_JWT_SECRET).
func NewPasses(secret []byte, now func() time.Time) *Passes {
	return &Passes{key: auth.DeriveKey(secret, passPurpose), Now: now}
}

// passClaims are a pass's payload.
type passClaims struct {
	Showtime string `json:"sho"`
	PassID   string `json:"pid"`
	jwt.RegisteredClaims
}

// Sign returns the pass of userID for showtime showID with id and expiry exp (whole seconds).
func (p *Passes) Sign(userID string, showID int, id string, exp time.Time) (string, error) {
	c := passClaims{Showtime: nodeid.Encode(nodeid.Showtime, showID), PassID: id,
		RegisteredClaims: jwt.RegisteredClaims{Subject: userID, ExpiresAt: jwt.NewNumericDate(exp)}}
	return auth.SignHS256(p.key, c)
}

var errPassNotTheirs = errors.New("the pass is another user's or another showtime's")

// Verify checks pass for a hold of userID on showtime showID: our signature, HS256 only,
// not expired now, the user's and the showtime's. It returns the admission hold.lua is to
// check further, or the zero Admission (refused) for anything else: no pass is valid
// because part of it is.
func (p *Passes) Verify(pass, userID string, showID int) seats.Admission {
	a, err := p.verify(pass, userID, showID)
	if err != nil {
		return seats.Admission{}
	}
	return a
}

func (p *Passes) verify(pass, userID string, showID int) (seats.Admission, error) {
	if len(pass) == 0 || len(pass) > maxPassBytes {
		return seats.Admission{}, errors.New("no pass")
	}
	var c passClaims
	err := auth.VerifyHS256(pass, &c, p.key, p.Now.Now)
	if err != nil {
		return seats.Admission{}, err
	}
	if c.Subject != userID || c.Showtime != nodeid.Encode(nodeid.Showtime, showID) {
		return seats.Admission{}, errPassNotTheirs
	}
	if !passID.MatchString(c.PassID) {
		return seats.Admission{}, errors.New("malformed pass id")
	}
	return seats.Admission{PassID: c.PassID, ExpiresAt: c.ExpiresAt.Time}, nil
}
