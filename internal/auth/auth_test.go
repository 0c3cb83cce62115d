package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/tooling/testenv"
)

var secret = []byte("test-secret-of-thirty-two-bytes!")

// start is a whole second, so expiry boundaries fall exactly on a JWT NumericDate.
var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newAuthenticator() (*auth.Authenticator, *testenv.Clock) {
	clock := testenv.NewClock(start)
	return &auth.Authenticator{Secret: secret, Now: clock.Now}, clock
}

func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("sign %s token: %v", method.Alg(), err)
	}
	return tok
}

// withAlg returns a token whose header names alg but whose signature is HS256 over the
// secret: the "algorithm confusion" attack, where a verifier that trusts the header
// would check an RSA or ECDSA signature against the HMAC secret.
func withAlg(t *testing.T, alg string, claims jwt.MapClaims) string {
	t.Helper()
	return withHeader(t, map[string]any{"alg": alg, "typ": "JWT"}, claims)
}

// withHeader returns a token of header and claims with an HS256 signature over the secret.
func withHeader(t *testing.T, h map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	header, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	signing := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	sig, err := jwt.SigningMethodHS256.Sign(signing, secret)
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// claims are those of a valid customer token at start; set changes them (a nil value
// removes the claim).
func claims(set map[string]any) jwt.MapClaims {
	c := jwt.MapClaims{
		"sub":  "alice",
		"role": auth.RoleCustomer,
		"iat":  start.Unix(),
		"nbf":  start.Unix(),
		"exp":  start.Add(time.Hour).Unix(),
	}
	for k, v := range set {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// assertNoEcho fails if err's texts contain the token or any sizeable part of it.
func assertNoEcho(t *testing.T, err error, token string) {
	t.Helper()
	for _, text := range []string{err.Error(), seatflow.ErrorMessage(err)} {
		if token != "" && strings.Contains(text, token) {
			t.Errorf("error %q echoes the token", text)
		}
		for _, part := range strings.Split(token, ".") {
			if len(part) >= 8 && strings.Contains(text, part) {
				t.Errorf("error %q echoes part %q of the token", text, part)
			}
		}
	}
}

func TestVerify(t *testing.T) {
	a, _ := newAuthenticator()
	hs256 := func(set map[string]any) string { return sign(t, jwt.SigningMethodHS256, secret, claims(set)) }
	tampered := func() string {
		// The signature of a customer token on an admin payload.
		parts := strings.Split(hs256(nil), ".")
		admin, _ := json.Marshal(claims(map[string]any{"role": auth.RoleAdmin}))
		parts[1] = base64.RawURLEncoding.EncodeToString(admin)
		return strings.Join(parts, ".")
	}

	cases := []struct {
		name  string
		token string
		// want is the user of a valid token; nil means the token is refused with
		// UNAUTHENTICATED and a message containing wantReason.
		want       *auth.User
		wantReason string
	}{
		{name: "ValidCustomer", token: hs256(nil), want: &auth.User{ID: "alice", Role: auth.RoleCustomer}},
		{name: "ValidAdmin", token: hs256(map[string]any{"sub": "root", "role": auth.RoleAdmin}),
			want: &auth.User{ID: "root", Role: auth.RoleAdmin}},
		{name: "ValidUntilTheSecondBeforeExp", token: hs256(map[string]any{"exp": start.Add(time.Second).Unix()}),
			want: &auth.User{ID: "alice", Role: auth.RoleCustomer}},
		{name: "ValidFromItsNotBefore", token: hs256(map[string]any{"nbf": start.Unix()}),
			want: &auth.User{ID: "alice", Role: auth.RoleCustomer}},

		{name: "AlgNoneRefused", token: sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil)),
			wantReason: "bad signature"},
		{name: "AlgNoneUnsignedWithHMACRefused", token: withAlg(t, "none", claims(nil)), wantReason: "bad signature"},
		{name: "WrongSecretRefused", token: sign(t, jwt.SigningMethodHS256, []byte("another-secret-entirely"), claims(nil)),
			wantReason: "bad signature"},
		{name: "TamperedPayloadRefused", token: tampered(), wantReason: "bad signature"},
		{name: "HS512Refused", token: sign(t, jwt.SigningMethodHS512, secret, claims(nil)), wantReason: "bad signature"},
		{name: "HS384Refused", token: sign(t, jwt.SigningMethodHS384, secret, claims(nil)), wantReason: "bad signature"},
		{name: "RS256NameRefused", token: withAlg(t, "RS256", claims(nil)), wantReason: "bad signature"},
		{name: "PS256NameRefused", token: withAlg(t, "PS256", claims(nil)), wantReason: "bad signature"},
		{name: "ES256NameRefused", token: withAlg(t, "ES256", claims(nil)), wantReason: "bad signature"},
		{name: "EdDSANameRefused", token: withAlg(t, "EdDSA", claims(nil)), wantReason: "bad signature"},
		{name: "UnknownAlgRefused", token: withAlg(t, "HS256X", claims(nil)), wantReason: "malformed or unsupported algorithm"},

		{name: "ExpiredRefused", token: hs256(map[string]any{"exp": start.Add(-time.Minute).Unix()}), wantReason: "expired"},
		{name: "ExpiredAtItsExpSecond", token: hs256(map[string]any{"exp": start.Unix()}), wantReason: "expired"},
		{name: "NoExpRefused", token: hs256(map[string]any{"exp": nil}), wantReason: "missing required claim"},
		{name: "NotBeforeInTheFutureRefused", token: hs256(map[string]any{"nbf": start.Add(time.Second).Unix()}),
			wantReason: "not valid yet"},
		{name: "NoSubjectRefused", token: hs256(map[string]any{"sub": nil}), wantReason: "the user id is empty"},
		{name: "EmptySubjectRefused", token: hs256(map[string]any{"sub": ""}), wantReason: "the user id is empty"},
		// MySQL pads: "alice " would read alice's orders while Redis counts it apart.
		{name: "TrailingSpaceSubjectRefused", token: hs256(map[string]any{"sub": "alice "}), wantReason: "white space"},
		{name: "LeadingTabSubjectRefused", token: hs256(map[string]any{"sub": "\talice"}), wantReason: "white space"},
		{name: "ControlCharacterSubjectRefused", token: hs256(map[string]any{"sub": "ali\x00ce"}), wantReason: "control character"},
		{name: "LongSubjectRefused", token: hs256(map[string]any{"sub": strings.Repeat("a", 192)}), wantReason: "longer than 191 bytes"},
		{name: "LongestSubject", token: hs256(map[string]any{"sub": strings.Repeat("é", 95) + "a"}),
			want: &auth.User{ID: strings.Repeat("é", 95) + "a", Role: auth.RoleCustomer}},
		{name: "UnknownRoleRefused", token: hs256(map[string]any{"role": "superuser"}), wantReason: "unknown role"},
		{name: "RoleCaseMatters", token: hs256(map[string]any{"role": "Admin"}), wantReason: "unknown role"},
		{name: "NoRoleRefused", token: hs256(map[string]any{"role": nil}), wantReason: "unknown role"},

		{name: "MalformedOneSegment", token: "xyzzy-not-a-jwt", wantReason: "malformed"},
		{name: "MalformedFourSegments", token: hs256(nil) + ".extrasegment", wantReason: "malformed"},
		{name: "MalformedBase64", token: "!!!!####.$$$$%%%%.^^^^&&&&", wantReason: "malformed"},
		{name: "MalformedHeaderJSON", token: base64.RawURLEncoding.EncodeToString([]byte("not json")) + ".e30.c2lnbmF0dXJl",
			wantReason: "malformed"},
		{name: "StringExpRefused", token: hs256(map[string]any{"exp": "tomorrow"}), wantReason: "invalid token"},
		// golang-jwt reads a quoted number as a NumericDate; a JWT's dates are numbers (RFC 7519 §2).
		{name: "NumericStringExpRefused", token: hs256(map[string]any{"exp": strconv.FormatInt(start.Add(time.Hour).Unix(), 10)}),
			wantReason: "exp, iat and nbf must be numbers"},
		{name: "NumericStringIatRefused", token: hs256(map[string]any{"iat": strconv.FormatInt(start.Unix(), 10)}),
			wantReason: "exp, iat and nbf must be numbers"},

		{name: "LifetimeOfTheMaximum", token: hs256(map[string]any{"exp": start.Add(auth.DefaultMaxLifetime).Unix()}),
			want: &auth.User{ID: "alice", Role: auth.RoleCustomer}},
		{name: "LifetimeOverTheMaximumRefused", token: hs256(map[string]any{"exp": start.Add(auth.DefaultMaxLifetime + time.Second).Unix()}),
			wantReason: "lives longer than 720h0m0s"},
		{name: "ExpInYear9999Refused", token: hs256(map[string]any{"exp": time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Unix()}),
			wantReason: "lives longer than"},
		// Without iat the lifetime counts from now; an iat ahead counts from now too, or a
		// token dated in the future would live as long as it likes.
		{name: "NoIatLongExpRefused", token: hs256(map[string]any{"iat": nil, "exp": start.Add(800 * time.Hour).Unix()}),
			wantReason: "lives longer than"},
		{name: "NoIatShortExp", token: hs256(map[string]any{"iat": nil}), want: &auth.User{ID: "alice", Role: auth.RoleCustomer}},
		{name: "IatAheadDoesNotExtendTheLifetime", token: hs256(map[string]any{"iat": start.Add(1000 * time.Hour).Unix(),
			"exp": start.Add(1001 * time.Hour).Unix()}), wantReason: "lives longer than"},
		// An old token within its lifetime is fine: iat 20 days ago, exp in 5 days.
		{name: "OldTokenWithinItsLifetime", token: hs256(map[string]any{"iat": start.Add(-480 * time.Hour).Unix(),
			"nbf": nil, "exp": start.Add(120 * time.Hour).Unix()}), want: &auth.User{ID: "alice", Role: auth.RoleCustomer}},

		// RFC 7515 §4.1.11: a recipient must refuse a crit extension it does not understand;
		// SeatFlow understands none.
		{name: "CritHeaderRefused", token: withHeader(t, map[string]any{"alg": "HS256", "typ": "JWT", "crit": []string{"exp"}}, claims(nil)),
			wantReason: "critical header"},
		{name: "EmptyCritHeaderRefused", token: withHeader(t, map[string]any{"alg": "HS256", "typ": "JWT", "crit": []string{}}, claims(nil)),
			wantReason: "critical header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := a.Verify(c.token)
			if c.want != nil {
				if err != nil {
					t.Fatalf("Verify: %v, want user %+v", err, *c.want)
				}
				if got.ID != c.want.ID || got.Role != c.want.Role || got.ExpiresAt.IsZero() {
					t.Errorf("user = %+v, want %+v with the token's expiry", *got, *c.want)
				}
				return
			}
			if got != nil {
				t.Errorf("user = %+v, want none", *got)
			}
			if code := seatflow.ErrorCode(err); code != seatflow.EUNAUTHENTICATED {
				t.Fatalf("code = %q (%v), want %q", code, err, seatflow.EUNAUTHENTICATED)
			}
			if msg := seatflow.ErrorMessage(err); !strings.Contains(msg, c.wantReason) {
				t.Errorf("message = %q, want it to contain %q", msg, c.wantReason)
			}
			assertNoEcho(t, err, c.token)
		})
	}
}

// TestIssuedTokenLifetime: a token from Issue is valid until its ttl has passed on the
// injected clock, and refused from then on.
func TestIssuedTokenLifetime(t *testing.T) {
	a, clock := newAuthenticator()
	issued := clock.Now()
	tok, err := a.Issue("alice", auth.RoleAdmin, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ValidBeforeTTL", func(t *testing.T) {
		clock.Advance(15*time.Minute - time.Second)
		u, err := a.Verify(tok)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if got, want := *u, (auth.User{ID: "alice", Role: auth.RoleAdmin, ExpiresAt: issued.Add(15 * time.Minute).Truncate(time.Second)}); !got.ExpiresAt.Equal(want.ExpiresAt) || got.ID != want.ID || got.Role != want.Role {
			t.Errorf("user = %+v, want %+v", got, want)
		}
	})
	t.Run("ExpiredAfterTTL", func(t *testing.T) {
		clock.Advance(time.Second)
		_, err := a.Verify(tok)
		if got, want := seatflow.ErrorCode(err), seatflow.EUNAUTHENTICATED; got != want {
			t.Fatalf("code = %q (%v), want %q", got, err, want)
		}
		if got := seatflow.ErrorMessage(err); !strings.Contains(got, "expired") {
			t.Errorf("message = %q, want it to say expired", got)
		}
		assertNoEcho(t, err, tok)
	})
	t.Run("IssueRefusesALifetimeOverTheMaximum", func(t *testing.T) {
		short := &auth.Authenticator{Secret: secret, Now: clock.Now, MaxLifetime: time.Hour}
		if _, err := short.Issue("alice", auth.RoleCustomer, time.Hour); err != nil {
			t.Fatalf("Issue for the maximum: %v", err)
		}
		_, err := short.Issue("alice", auth.RoleCustomer, time.Hour+time.Second)
		if seatflow.ErrorCode(err) != seatflow.EINVALID || !strings.Contains(seatflow.ErrorMessage(err), "SEATFLOW_MAX_TOKEN_LIFETIME") {
			t.Fatalf("Issue over the maximum: %v, want BAD_USER_INPUT naming SEATFLOW_MAX_TOKEN_LIFETIME", err)
		}
	})
	t.Run("IssueRefusesBadInput", func(t *testing.T) {
		for _, in := range []struct{ subject, role string }{{"", auth.RoleCustomer}, {"alice", "root"}, {"alice", ""}} {
			if _, err := a.Issue(in.subject, in.role, time.Hour); seatflow.ErrorCode(err) != seatflow.EINVALID {
				t.Errorf("Issue(%q, %q): code = %q, want %q", in.subject, in.role, seatflow.ErrorCode(err), seatflow.EINVALID)
			}
		}
	})
}

// TestRequireUserAndAdmin: what an operation needing a user or an admin sees for each
// kind of caller WithToken can produce.
func TestRequireUserAndAdmin(t *testing.T) {
	a, _ := newAuthenticator()
	customer, err := a.Issue("alice", auth.RoleCustomer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := a.Issue("root", auth.RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expired := sign(t, jwt.SigningMethodHS256, secret, claims(map[string]any{"exp": start.Add(-time.Second).Unix()}))
	forged := sign(t, jwt.SigningMethodHS256, []byte("not-the-secret"), claims(map[string]any{"role": auth.RoleAdmin}))

	cases := []struct {
		name          string
		token         string
		wantUser      string // RequireUser's user id; "" when it fails
		wantUserCode  string
		wantAdminCode string
		wantTokenErr  bool // TokenError reports a rejected token
	}{
		{name: "CustomerIsUserNotAdmin", token: customer, wantUser: "alice", wantAdminCode: seatflow.EFORBIDDEN},
		{name: "AdminIsUserAndAdmin", token: admin, wantUser: "root"},
		{name: "AnonymousNeedsSignIn", token: "",
			wantUserCode: seatflow.EUNAUTHENTICATED, wantAdminCode: seatflow.EUNAUTHENTICATED},
		{name: "ExpiredTokenIsUnauthenticated", token: expired, wantTokenErr: true,
			wantUserCode: seatflow.EUNAUTHENTICATED, wantAdminCode: seatflow.EUNAUTHENTICATED},
		{name: "ForgedAdminIsUnauthenticatedNotForbidden", token: forged, wantTokenErr: true,
			wantUserCode: seatflow.EUNAUTHENTICATED, wantAdminCode: seatflow.EUNAUTHENTICATED},
		{name: "GarbageIsUnauthenticated", token: "garbage-token-value", wantTokenErr: true,
			wantUserCode: seatflow.EUNAUTHENTICATED, wantAdminCode: seatflow.EUNAUTHENTICATED},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := a.WithToken(context.Background(), c.token)
			if got := auth.TokenError(ctx) != nil; got != c.wantTokenErr {
				t.Errorf("TokenError = %v, want an error: %v", auth.TokenError(ctx), c.wantTokenErr)
			}

			u, err := auth.RequireUser(ctx)
			if got := seatflow.ErrorCode(err); got != c.wantUserCode {
				t.Errorf("RequireUser code = %q (%v), want %q", got, err, c.wantUserCode)
			}
			if got := userID(u); got != c.wantUser {
				t.Errorf("RequireUser user = %q, want %q", got, c.wantUser)
			}
			if err != nil {
				assertNoEcho(t, err, c.token)
			}

			u, err = auth.RequireAdmin(ctx)
			if got := seatflow.ErrorCode(err); got != c.wantAdminCode {
				t.Errorf("RequireAdmin code = %q (%v), want %q", got, err, c.wantAdminCode)
			}
			if c.wantAdminCode == "" && userID(u) != c.wantUser {
				t.Errorf("RequireAdmin user = %q, want %q", userID(u), c.wantUser)
			}
			if err != nil {
				assertNoEcho(t, err, c.token)
			}
		})
	}
}

func userID(u *auth.User) string {
	if u == nil {
		return ""
	}
	return u.ID
}

func TestBearerToken(t *testing.T) {
	cases := []struct{ name, header, want string }{
		{"BearerScheme", "Bearer abc.def.ghi", "abc.def.ghi"},
		{"SchemeIsCaseInsensitive", "bearer abc.def.ghi", "abc.def.ghi"},
		{"UpperCaseScheme", "BEARER abc.def.ghi", "abc.def.ghi"},
		{"SpacesAroundTokenTrimmed", "Bearer   abc.def.ghi  ", "abc.def.ghi"},
		{"NoSchemeIsTheToken", "abc.def.ghi", "abc.def.ghi"},
		{"Empty", "", ""},
		{"BlankIsEmpty", "   ", ""},
		{"SchemeWithBlankTokenIsEmpty", "Bearer    ", ""},
		{"SchemeWithOneSpaceIsEmpty", "Bearer ", ""},
		{"SchemeAloneIsEmpty", "Bearer", ""},
		{"SchemeGluedToTextIsNotBearer", "Bearerabc", "Bearerabc"},
		// Another scheme is passed on whole, so Verify refuses it as malformed rather
		// than reading the credentials as a token.
		{"OtherSchemeKeptWhole", "Basic YWxpY2U6cHc=", "Basic YWxpY2U6cHc="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := auth.BearerToken(c.header); got != c.want {
				t.Errorf("BearerToken(%q) = %q, want %q", c.header, got, c.want)
			}
		})
	}
}

// TestMiddleware: the Authorization header reaches RequireUser through the middleware.
func TestMiddleware(t *testing.T) {
	a, _ := newAuthenticator()
	tok, err := a.Issue("alice", auth.RoleCustomer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, header, wantUser, wantCode string }{
		{"BearerHeaderSignsIn", "Bearer " + tok, "alice", ""},
		{"LowerCaseBearerSignsIn", "bearer " + tok, "alice", ""},
		{"NoHeaderIsAnonymous", "", "", seatflow.EUNAUTHENTICATED},
		{"BasicAuthIsUnauthenticated", "Basic YWxpY2U6cHc=", "", seatflow.EUNAUTHENTICATED},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				u    *auth.User
				rerr error
			)
			h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, rerr = auth.RequireUser(r.Context())
			}))
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got := seatflow.ErrorCode(rerr); got != c.wantCode {
				t.Errorf("code = %q (%v), want %q", got, rerr, c.wantCode)
			}
			if got := userID(u); got != c.wantUser {
				t.Errorf("user = %q, want %q", got, c.wantUser)
			}
		})
	}
}

// TestStaffRole: staff work the door (RequireStaff) but are no admins; admins may work the
// door too; a role outside auth.Roles is refused when issued and when presented.
func TestStaffRole(t *testing.T) {
	a, _ := newAuthenticator()
	tokens := map[string]string{}
	for _, role := range auth.Roles {
		tok, err := a.Issue("u-"+role, role, time.Hour)
		if err != nil {
			t.Fatalf("issue a %s token: %v", role, err)
		}
		tokens[role] = tok
	}
	for role, want := range map[string][2]string{ // RequireStaff, RequireAdmin codes
		auth.RoleCustomer: {seatflow.EFORBIDDEN, seatflow.EFORBIDDEN},
		auth.RoleStaff:    {"", seatflow.EFORBIDDEN},
		auth.RoleAdmin:    {"", ""},
	} {
		ctx := a.WithToken(context.Background(), tokens[role])
		_, errStaff := auth.RequireStaff(ctx)
		_, errAdmin := auth.RequireAdmin(ctx)
		if got := [2]string{seatflow.ErrorCode(errStaff), seatflow.ErrorCode(errAdmin)}; got != want {
			t.Errorf("%s: RequireStaff, RequireAdmin = %q, want %q", role, got, want)
		}
		if auth.IsStaff(ctx) != (want[0] == "") {
			t.Errorf("%s: IsStaff = %v", role, auth.IsStaff(ctx))
		}
	}
	if _, err := auth.RequireStaff(context.Background()); seatflow.ErrorCode(err) != seatflow.EUNAUTHENTICATED {
		t.Errorf("anonymous RequireStaff: %v, want UNAUTHENTICATED", err)
	}
	if _, err := a.Issue("x", "usher", time.Hour); seatflow.ErrorCode(err) != seatflow.EINVALID {
		t.Errorf("issue role usher: %v, want BAD_USER_INPUT", err)
	}
	usher := sign(t, jwt.SigningMethodHS256, secret, claims(map[string]any{"role": "usher"}))
	if _, err := a.Verify(usher); seatflow.ErrorCode(err) != seatflow.EUNAUTHENTICATED {
		t.Errorf("verify role usher: %v, want UNAUTHENTICATED", err)
	}
}

// TestGuestSession: a guest session's token carries a random session id and expires like
// any token; it is no user (RequireUser and the staff and admin checks refuse it as they
// refuse no token), and a forged, expired or home-made guest token is rejected.
func TestGuestSession(t *testing.T) {
	a, clock := newAuthenticator()
	tok, g, err := a.IssueGuest(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, g2, err := a.IssueGuest(24 * time.Hour)
	if err != nil || g2.ID == g.ID || other == tok {
		t.Fatalf("two guest sessions share an id: %q %q (%v)", g.ID, g2.ID, err)
	}
	if !strings.HasPrefix(g.ID, "guest-") || !g.ExpiresAt.Equal(start.Add(24*time.Hour)) {
		t.Fatalf("guest %+v", g)
	}
	ctx := a.WithToken(context.Background(), tok)
	if got := auth.GuestOf(ctx); got == nil || got.ID != g.ID || auth.TokenError(ctx) != nil {
		t.Fatalf("GuestOf = %+v, token error %v", got, auth.TokenError(ctx))
	}
	if !auth.Expiry(ctx).Equal(g.ExpiresAt) {
		t.Fatalf("Expiry = %v", auth.Expiry(ctx))
	}
	for name, check := range map[string]func(context.Context) (*auth.User, error){
		"RequireUser": auth.RequireUser, "RequireStaff": auth.RequireStaff, "RequireAdmin": auth.RequireAdmin} {
		if u, err := check(ctx); u != nil || seatflow.ErrorCode(err) != seatflow.EUNAUTHENTICATED {
			t.Errorf("%s(guest) = %v, %v; want UNAUTHENTICATED", name, u, err)
		}
	}
	if _, err := a.Verify(tok); seatflow.ErrorCode(err) != seatflow.EUNAUTHENTICATED {
		t.Errorf("Verify(guest token) = %v: a guest is not a user", err)
	}
	bad := map[string]string{
		"Forged": sign(t, jwt.SigningMethodHS256, []byte("not-the-secret"), jwt.MapClaims{"sub": g.ID, "role": auth.RoleGuest,
			"exp": start.Add(time.Hour).Unix()}),
		// The role without a session id of the server's making.
		"NotASessionID": sign(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "alice", "role": auth.RoleGuest,
			"exp": start.Add(time.Hour).Unix()}),
	}
	for name, tok := range bad {
		ctx := a.WithToken(context.Background(), tok)
		if auth.GuestOf(ctx) != nil || seatflow.ErrorCode(auth.TokenError(ctx)) != seatflow.EUNAUTHENTICATED {
			t.Errorf("%s guest token: guest %+v, error %v; want it rejected", name, auth.GuestOf(ctx), auth.TokenError(ctx))
		}
	}
	clock.Advance(24*time.Hour + time.Second)
	if ctx := a.WithToken(context.Background(), tok); auth.GuestOf(ctx) != nil || !strings.Contains(auth.TokenError(ctx).Error(), "expired") {
		t.Errorf("expired guest token: %v", auth.TokenError(ctx))
	}
	if _, _, err := a.IssueGuest(auth.DefaultMaxLifetime + time.Hour); seatflow.ErrorCode(err) != seatflow.EINVALID {
		t.Errorf("a guest session past the longest lifetime: %v", err)
	}
}
