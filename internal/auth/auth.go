// Package auth turns bearer tokens (HS256 JWT: subject = user id, claim role) into a
// request identity, and answers who may do what. A guest session's token (role guest,
// subject a random session id) identifies an anonymous browser for its budgets and is no
// user: everything that needs a user refuses it as it refuses no token. It never talks to
// a store.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"seatflow"
)

// Roles: a customer buys, staff work the door (check-in), an admin runs the cinema (and
// may work the door too).
const (
	RoleCustomer = "customer"
	RoleStaff    = "staff"
	RoleAdmin    = "admin"
)

// RoleGuest is the role of a guest session's token: an anonymous browser, never a user.
const RoleGuest = "guest"

// guestIDPrefix begins every guest session id, so a log or a budget key tells it from a
// user id at a glance.
const guestIDPrefix = "guest-"

// Roles are every role a user's token may carry, as usage messages list them: a new role is
// one line here (and the checks that grant it something).
var Roles = []string{RoleCustomer, RoleStaff, RoleAdmin}

// ValidRole reports whether role is one of Roles.
func ValidRole(role string) bool { return slices.Contains(Roles, role) }

// RoleList is Roles for a message: "customer, staff or admin".
func RoleList() string {
	if len(Roles) < 2 {
		return strings.Join(Roles, "")
	}
	return strings.Join(Roles[:len(Roles)-1], ", ") + " or " + Roles[len(Roles)-1]
}

// User is the caller of a request, taken from its token.
type User struct {
	ID   string
	Role string
	// ExpiresAt is when the token the user signed in with stops being valid: a connection
	// that outlives it (a websocket) must end then.
	ExpiresAt time.Time
}

// Guest is the guest session of a request, taken from its token: an anonymous browser
// with budgets of its own.
type Guest struct {
	ID        string
	ExpiresAt time.Time
}

// Claims are the JWT claims SeatFlow issues and accepts.
type Claims struct {
	Role string `json:"role"`
	jwt.RegisteredClaims
}

// errDateNotNumber refuses a date claim written as a string.
var errDateNotNumber = errors.New("exp, iat and nbf must be numbers")

// UnmarshalJSON reads the claims, refusing a date claim that is a JSON string: RFC 7519
// makes a NumericDate a number, but golang-jwt's NumericDate also reads "1700000000".
func (c *Claims) UnmarshalJSON(b []byte) error {
	var dates struct{ Exp, Iat, Nbf json.RawMessage }
	if err := json.Unmarshal(b, &dates); err != nil {
		return err
	}
	for _, d := range [][]byte{dates.Exp, dates.Iat, dates.Nbf} {
		if len(d) > 0 && d[0] == '"' {
			return errDateNotNumber
		}
	}
	type plain Claims // without this method
	return json.Unmarshal(b, (*plain)(c))
}

// DefaultMaxLifetime is the longest a token may live when MaxLifetime is not set.
const DefaultMaxLifetime = 30 * 24 * time.Hour

// Authenticator signs and verifies tokens with one HS256 secret.
type Authenticator struct {
	Secret []byte
	Now    seatflow.ClockFunc
	// MaxLifetime is the longest a token may live (SEATFLOW_MAX_TOKEN_LIFETIME): from its
	// iat, or from now when it has none or one ahead, to its exp. DefaultMaxLifetime when
	// zero. It bounds what a leaked token is worth.
	MaxLifetime time.Duration
}

// Issue signs a token for subject with role, valid for ttl.
func (a *Authenticator) Issue(subject, role string, ttl time.Duration) (string, error) {
	if err := seatflow.CheckUserID(subject); err != nil {
		return "", seatflow.Errorf(seatflow.EINVALID, "a token's subject is a user id: %v", err)
	}
	if !ValidRole(role) {
		return "", seatflow.Errorf(seatflow.EINVALID, "role must be %s", RoleList())
	}
	if ttl > a.maxLifetime() {
		return "", seatflow.Errorf(seatflow.EINVALID, "a token lives at most %s (SEATFLOW_MAX_TOKEN_LIFETIME); %s is longer",
			a.maxLifetime(), ttl)
	}
	now := a.Now.Now()
	claims := Claims{Role: role, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   subject,
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	return SignHS256(a.Secret, claims)
}

// IssueGuest signs the token of a new guest session, valid for ttl: its subject is a
// random session id.
func (a *Authenticator) IssueGuest(ttl time.Duration) (string, Guest, error) {
	if ttl > a.maxLifetime() {
		return "", Guest{}, seatflow.Errorf(seatflow.EINVALID, "a token lives at most %s (SEATFLOW_MAX_TOKEN_LIFETIME); %s is longer",
			a.maxLifetime(), ttl)
	}
	now := a.Now.Now()
	g := Guest{ID: guestIDPrefix + uuid.NewString(), ExpiresAt: now.Add(ttl).Truncate(time.Second)}
	claims := Claims{Role: RoleGuest, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   g.ID,
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(g.ExpiresAt),
	}}
	tok, err := SignHS256(a.Secret, claims)
	return tok, g, err
}

// Verify parses a user's token and returns its user; every defect is UNAUTHENTICATED, and
// so is a guest session's token (VerifyAny reads both).
func (a *Authenticator) Verify(token string) (*User, error) {
	u, g, err := a.VerifyAny(token)
	if err == nil && g != nil {
		return nil, seatflow.Errorf(seatflow.EUNAUTHENTICATED, "invalid token: a guest session is not a user")
	}
	return u, err
}

// VerifyAny parses a token and returns its user or its guest session (one of them); every
// defect is UNAUTHENTICATED.
func (a *Authenticator) VerifyAny(token string) (*User, *Guest, error) {
	var claims Claims
	err := VerifyHS256(token, &claims, a.Secret, a.Now.Now)
	if err != nil {
		return nil, nil, seatflow.Errorf(seatflow.EUNAUTHENTICATED, "invalid token: %s", reason(err))
	}
	if a.lifetime(&claims) > a.maxLifetime() {
		return nil, nil, seatflow.Errorf(seatflow.EUNAUTHENTICATED, "invalid token: it lives longer than %s, the most a token may", a.maxLifetime())
	}
	if err := seatflow.CheckUserID(claims.Subject); err != nil {
		return nil, nil, seatflow.Errorf(seatflow.EUNAUTHENTICATED, "invalid token: its subject is not a valid user id: %v", err)
	}
	switch {
	case claims.Role == RoleGuest && strings.HasPrefix(claims.Subject, guestIDPrefix):
		return nil, &Guest{ID: claims.Subject, ExpiresAt: claims.ExpiresAt.Time}, nil
	case !ValidRole(claims.Role):
		return nil, nil, seatflow.Errorf(seatflow.EUNAUTHENTICATED, "invalid token: unknown role")
	}
	return &User{ID: claims.Subject, Role: claims.Role, ExpiresAt: claims.ExpiresAt.Time}, nil, nil
}

// lifetime is how long a verified token lives: from its iat to its exp, counted from now
// when it has no iat or one ahead (a token dated in the future would otherwise live as
// long as it likes).
func (a *Authenticator) lifetime(c *Claims) time.Duration {
	from := a.Now.Now()
	if c.IssuedAt != nil && c.IssuedAt.Before(from) {
		from = c.IssuedAt.Time
	}
	return c.ExpiresAt.Sub(from)
}

// MaxTTL is the longest ttl Issue accepts: MaxLifetime, or DefaultMaxLifetime.
func (a *Authenticator) MaxTTL() time.Duration { return a.maxLifetime() }

func (a *Authenticator) maxLifetime() time.Duration {
	if a.MaxLifetime > 0 {
		return a.MaxLifetime
	}
	return DefaultMaxLifetime
}

// reason names what is wrong with a token without echoing it.
func reason(err error) string {
	switch {
	case errors.Is(err, errDateNotNumber):
		return errDateNotNumber.Error()
	case errors.Is(err, errCritical):
		return errCritical.Error()
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "not valid yet"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature"
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed or unsupported algorithm"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "missing required claim"
	}
	return "rejected"
}

type ctxKey struct{}

// identity is what the middleware found: a user, or the error of a bad token. A bad
// token is remembered rather than rejected at once so that public reads still work and
// an operation that needs a user reports UNAUTHENTICATED.
type identity struct {
	user  *User
	guest *Guest
	err   error
}

// WithToken returns ctx carrying the identity of a bearer token ("" = anonymous).
func (a *Authenticator) WithToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	u, g, err := a.VerifyAny(token)
	return context.WithValue(ctx, ctxKey{}, identity{user: u, guest: g, err: err})
}

// Middleware reads "Authorization: Bearer <token>" into the request context.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(a.WithToken(r.Context(), BearerToken(r.Header.Get("Authorization")))))
	})
}

// BearerToken extracts the token of an "Authorization: Bearer …" value. The scheme alone
// ("Bearer", as clients send before sign-in) is no token; another scheme is returned
// whole, for Verify to refuse.
func BearerToken(header string) string {
	const scheme = "bearer"
	h := strings.TrimSpace(header)
	if len(h) >= len(scheme) && strings.EqualFold(h[:len(scheme)], scheme) &&
		(len(h) == len(scheme) || h[len(scheme)] == ' ' || h[len(scheme)] == '\t') {
		return strings.TrimSpace(h[len(scheme):])
	}
	return h
}

// TokenError reports whether ctx carries a token that was rejected, and why.
func TokenError(ctx context.Context) error {
	id, _ := ctx.Value(ctxKey{}).(identity)
	return id.err
}

type addrKey struct{}

// WithClientAddr returns ctx carrying the caller's client address (the transport names
// it, trusted proxies applied): what per-address limits count by.
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, addrKey{}, addr)
}

// ClientAddr is the caller's client address WithClientAddr gave ctx; "" when none.
func ClientAddr(ctx context.Context) string {
	addr, _ := ctx.Value(addrKey{}).(string)
	return addr
}

// GuestOf returns the guest session of ctx's valid guest token, or nil (no token, a
// user's token, a rejected token).
func GuestOf(ctx context.Context) *Guest {
	id, _ := ctx.Value(ctxKey{}).(identity)
	return id.guest
}

// Expiry is when ctx's valid token, a user's or a guest session's, expires; zero without
// one.
func Expiry(ctx context.Context) time.Time {
	id, _ := ctx.Value(ctxKey{}).(identity)
	switch {
	case id.user != nil:
		return id.user.ExpiresAt
	case id.guest != nil:
		return id.guest.ExpiresAt
	}
	return time.Time{}
}

// RequireUser returns the caller, or UNAUTHENTICATED when there is no valid user's token:
// a guest session is refused as no token is.
func RequireUser(ctx context.Context) (*User, error) {
	id, _ := ctx.Value(ctxKey{}).(identity)
	if id.err != nil {
		return nil, id.err
	}
	if id.guest != nil {
		return nil, seatflow.Errorf(seatflow.EUNAUTHENTICATED, "sign in: this operation needs a user's bearer token; a guest session only browses and watches")
	}
	if id.user == nil {
		return nil, seatflow.Errorf(seatflow.EUNAUTHENTICATED, "sign in: this operation needs a bearer token")
	}
	return id.user, nil
}

// RequireAdmin returns the caller if it is an admin: UNAUTHENTICATED without a valid
// token, FORBIDDEN for a customer.
func RequireAdmin(ctx context.Context) (*User, error) {
	u, err := RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	if u.Role != RoleAdmin {
		return nil, seatflow.Errorf(seatflow.EFORBIDDEN, "this operation is for admins only")
	}
	return u, nil
}

// RequireStaff returns the caller if it works the door (staff or admin): UNAUTHENTICATED
// without a valid token, FORBIDDEN for a customer.
func RequireStaff(ctx context.Context) (*User, error) {
	u, err := RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	if u.Role != RoleStaff && u.Role != RoleAdmin {
		return nil, seatflow.Errorf(seatflow.EFORBIDDEN, "this operation is for staff and admins only")
	}
	return u, nil
}

// IsStaff reports whether ctx's caller is staff or an admin (false when anonymous).
func IsStaff(ctx context.Context) bool {
	_, err := RequireStaff(ctx)
	return err == nil
}
