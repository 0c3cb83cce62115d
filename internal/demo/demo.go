// Package demo is the live seat-map demo: plain HTML/JS pages under /demo/ (the seat map
// with the customer's tickets, behind the waiting room of a showtime with an on-sale
// queue, with the waiting list of a sold-out one, and the door at /demo/door) that use only the public API,
// demo customer and staff tokens in embedded mode, and the demo data (the catalog for
// an empty database, showtimes for each day of the coming week that has none). It holds no
// business rule.
package demo

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// demoFiles is the live seat-map page: plain HTML, CSS and JavaScript, no build step. It
// talks to the API only through /query (POST) and the seatMap subscription over
// graphql-transport-ws, as any front end would.
//
//go:embed page
var pageFiles embed.FS

// demoTokenTTL is how long a token handed out by /demo/token lasts.
const demoTokenTTL = 12 * time.Hour

// Issuer signs customer tokens for demo users.
type Issuer interface {
	Issue(subject, role string, ttl time.Duration) (string, error)
}

// Handler serves the demo page under /demo/, the door page (staff check tickets in) at
// /demo/door and, when tokens is not nil (embedded mode), GET /demo/token: {"token": "..."},
// a customer token for a fresh demo user (demo-<random>), so two tabs are two customers, or
// with ?role=staff a staff token for the door. Without tokens /demo/token is 204 No Content
// (not a 404, which a browser logs as an error on every load of the page) and the pages ask
// for a token.
func Handler(tokens Issuer, log *slog.Logger) http.Handler {
	sub, err := fs.Sub(pageFiles, "page")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix("/demo/", http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/demo", "/demo/":
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/demo/"
			demoHeaders(w)
			files.ServeHTTP(w, r2)
		case "/demo/door":
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/demo/door.html"
			demoHeaders(w)
			files.ServeHTTP(w, r2)
		case "/demo/token":
			demoToken(w, r, tokens, log)
		default:
			demoHeaders(w)
			files.ServeHTTP(w, r)
		}
	})
}

func demoHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "+
		"style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
}

func demoToken(w http.ResponseWriter, r *http.Request, tokens Issuer, log *slog.Logger) {
	if tokens == nil {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		http.Error(w, "no randomness", http.StatusInternalServerError)
		return
	}
	role, prefix := "customer", "demo-"
	if r.URL.Query().Get("role") == "staff" { // the door page's
		role, prefix = "staff", "demo-door-"
	}
	sub := prefix + hex.EncodeToString(b[:])
	tok, err := tokens.Issue(sub, role, demoTokenTTL)
	if err != nil {
		log.Error("issue demo token", "err", err)
		http.Error(w, "cannot issue a token", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"token": tok, "user": sub})
}

// demoLink is what WithLink adds to the playground page: the link and its style sheet
// (a file, not a style attribute, so the page's Content-Security-Policy can refuse inline
// styles).
const demoLink = `<link rel="stylesheet" href="/demo/link.css">` +
	`<a href="/demo/" id="seatflow-demo-link">Live seat map demo &rarr;</a>`

// WithLink adds a "Live seat map demo →" link to the HTML page next serves (the
// GraphiQL playground), just before </body>; anything else passes through unchanged.
func WithLink(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		body := rec.body.Bytes()
		if rec.status == http.StatusOK && strings.HasPrefix(rec.header.Get("Content-Type"), "text/html") {
			if i := bytes.LastIndex(body, []byte("</body>")); i >= 0 {
				body = append(body[:i:i], append([]byte(demoLink), body[i:]...)...)
			}
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		if r.Method == http.MethodHead {
			w.Header().Del("Content-Length") // the body was not written: its length is unknown here
		} else {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(rec.status)
		w.Write(body)
	})
}

type bufferedResponse struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) WriteHeader(code int) {
	if !b.wrote {
		b.status, b.wrote = code, true
	}
}
func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}
