package passkit

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"seatflow/ent/passregistration"
)

const token2 = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

// TestPushOncePerChange: of two instances pushing at once, each device registered for a
// changed pass is pushed once (however many of its passes changed); nothing more until
// the next change; a pass not changed pushes nothing.
func TestPushOncePerChange(t *testing.T) {
	e := newEnv(t)
	a, _ := e.ticket()
	b, _ := e.ticket()
	e.register("dev1", a, token1, http.StatusCreated)
	e.register("dev1", b, token1, http.StatusCreated)
	e.register("dev2", a, token2, http.StatusCreated)
	ctx := context.Background()
	if n, err := e.svc.PushDue(ctx); err != nil || n != 0 {
		t.Fatalf("pushes before any change: %d %v, want none", n, err)
	}
	other, otherPushes := e.instance()
	for round := range 2 {
		e.touchShowtime()
		var wg sync.WaitGroup
		for _, s := range []*Service{e.svc, other} {
			wg.Go(func() {
				if _, err := s.PushDue(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got := append(e.pushes.Pushes(), otherPushes.Pushes()...)
		slices.Sort(got)
		want := []string{token1, token2}
		if round == 1 {
			want = []string{token1, token1, token2, token2}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: pushes %v, want %v", round, got, want)
		}
		if n, err := e.svc.PushDue(ctx); err != nil || n != 0 {
			t.Fatalf("round %d: pushes again without a change: %d %v", round, n, err)
		}
	}
}

// failing is a Pusher that fails with err.
type failing struct{ err error }

func (f failing) Push(context.Context, string) error { return f.err }

// TestPushRetried: a failed push leaves its claim to lapse, and the change is pushed after
// PushLease; a token APNs no longer knows loses its registrations.
func TestPushRetried(t *testing.T) {
	e := newEnv(t)
	a, _ := e.ticket()
	e.register("dev1", a, token1, http.StatusCreated)
	e.register("dev2", a, token2, http.StatusCreated)
	ctx := context.Background()
	e.touchShowtime()
	e.svc.Pusher = failing{errors.New("apns: 503")}
	if n, err := e.svc.PushDue(ctx); err != nil || n != 0 {
		t.Fatalf("failed pushes: %d %v, want 0 and no error", n, err)
	}
	e.svc.Pusher = e.pushes
	if n, _ := e.svc.PushDue(ctx); n != 0 {
		t.Fatalf("pushed %d while the failed claims hold, want 0", n)
	}
	e.clock.Advance(time.Minute + time.Second)
	if n, err := e.svc.PushDue(ctx); err != nil || n != 2 {
		t.Fatalf("after the lease: %d %v, want both devices", n, err)
	}
	e.touchShowtime()
	e.svc.Pusher = failing{ErrUnregistered}
	if _, err := e.svc.PushDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.db.PassRegistration.Query().Where(passregistration.SerialNumber(a)).CountX(ctx); n != 0 {
		t.Fatalf("%d registrations left of unregistered tokens, want none", n)
	}
}

// TestAPNs: the APNs client sends an empty push on the pass type's topic over HTTP/2 with
// a token signed by the key; 410 is ErrUnregistered, another refusal an error.
func TestAPNs(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, string(b))
		mu.Unlock()
		switch filepath.Base(r.URL.Path) {
		case "dead":
			w.WriteHeader(http.StatusGone)
			w.Write([]byte(`{"reason":"Unregistered","timestamp":1}`))
		case "busy":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"reason":"ServiceUnavailable"}`))
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "AuthKey.p8")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := NewAPNs(APNsConfig{KeyFile: keyFile, KeyID: "KEY123", TeamID: "TEAM123", Topic: passType, Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	p.client.HTTPClient.Transport.(*http2.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}

	ctx := context.Background()
	if err := p.Push(ctx, token1); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, "dead"); !errors.Is(err, ErrUnregistered) {
		t.Fatalf("410: %v, want ErrUnregistered", err)
	}
	if err := p.Push(ctx, "busy"); err == nil || errors.Is(err, ErrUnregistered) {
		t.Fatalf("503: %v, want an error", err)
	}
	r := got[0]
	if r.ProtoMajor != 2 || r.URL.Path != "/3/device/"+token1 || r.Header.Get("apns-topic") != passType || bodies[0] != "{}" ||
		len(r.Header.Get("authorization")) < len("bearer x.y.z") {
		t.Fatalf("push: HTTP/%d %s topic %q auth %q body %q", r.ProtoMajor, r.URL.Path, r.Header.Get("apns-topic"),
			r.Header.Get("authorization"), bodies[0])
	}
	if _, err := NewAPNs(APNsConfig{Topic: passType}); err == nil {
		t.Fatal("an APNs client without a key or certificate")
	}
	if _, err := NewAPNs(APNsConfig{KeyFile: filepath.Join(t.TempDir(), "missing.p8")}); err == nil {
		t.Fatal("an APNs client with a missing key file")
	}
}
