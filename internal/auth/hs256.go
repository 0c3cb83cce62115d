package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The one HS256 signing and verifying of the project: bearer tokens (Authenticator) and the
// on-sale queue's admission passes (internal/queue/passes.go) both go through SignHS256 and
// VerifyHS256, so what a signature must be (HS256 only, no critical header, an expiry
// required and checked against an injected clock) is written once.

// errCritical refuses a token with a crit header: RFC 7515 §4.1.11 has a recipient refuse
// the extensions it does not understand, and SeatFlow understands none.
var errCritical = errors.New("critical header extensions are not supported")

// SignHS256 returns claims as a JWT signed with key by HS256.
func SignHS256(key []byte, claims jwt.Claims) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
}

// VerifyHS256 reads token into claims when it is signed with key by HS256 (any other
// algorithm, "none" included, is refused), has no crit header, and carries an expiry that
// now has not reached (nor a nbf or iat it has not). Its errors are golang-jwt's, wrapping
// errCritical for a crit header (reason names them for a client).
func VerifyHS256(token string, claims jwt.Claims, key []byte, now func() time.Time) error {
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errCritical
		}
		return key, nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(now),
		jwt.WithExpirationRequired(),
	)
	return err
}

// DeriveKey returns the HS256 key of one purpose derived from secret (HMAC-SHA256 of the
// purpose), so that what is signed for one purpose never verifies for another.
func DeriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
