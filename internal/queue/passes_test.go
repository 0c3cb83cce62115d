package queue_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seatflow/internal/queue"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// TestPassVerification: a pass is valid only unchanged, signed with the instances' key,
// for its user and its showtime, before its expiry; anything else is refused whole.
func TestPassVerification(t *testing.T) {
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	p := queue.NewPasses(secret, clk.Now)
	exp := clk.Now().Add(10 * time.Minute)
	pass, err := p.Sign("alice", 7, "1.42", exp)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Verify(pass, "alice", 7); got.PassID != "1.42" || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("valid pass = %+v", got)
	}
	// A pass is never a bearer token: signed with the secret itself it is refused.
	bearer, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "sho": "U2hvd3RpbWU6Nw",
		"pid": "1.42", "exp": exp.Unix()}).SignedString(secret)
	parts := strings.Split(pass, ".")
	flip := func(s string) string {
		b := []byte(s)
		b[len(b)/2] ^= 1
		return string(b)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	otherPayload := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"pid":"1.42"`, `"pid":"1.43"`, 1)))
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	otherKey, _ := queue.NewPasses([]byte("another deployment's secret......"), clk.Now).Sign("alice", 7, "1.42", exp)
	cases := map[string]struct {
		pass, user string
		show       int
	}{
		"OtherUser":         {pass, "bob", 7},
		"OtherShowtime":     {pass, "alice", 8},
		"TamperedSignature": {parts[0] + "." + parts[1] + "." + flip(parts[2]), "alice", 7},
		"TamperedClaims":    {parts[0] + "." + otherPayload + "." + parts[2], "alice", 7},
		"AlgNone":           {none, "alice", 7},
		"SignedWithSecret":  {bearer, "alice", 7},
		"OtherDeployment":   {otherKey, "alice", 7},
		"Empty":             {"", "alice", 7},
		"Garbage":           {"not a pass", "alice", 7},
		"TooLong":           {strings.Repeat("a", 5000), "alice", 7},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.Verify(c.pass, c.user, c.show); got != (seats.Admission{}) {
				t.Fatalf("Verify = %+v, want refused", got)
			}
		})
	}
	t.Run("Expired", func(t *testing.T) {
		clk.Advance(10 * time.Minute)
		if got := p.Verify(pass, "alice", 7); got != (seats.Admission{}) {
			t.Fatalf("Verify at its expiry = %+v, want refused", got)
		}
	})
}
