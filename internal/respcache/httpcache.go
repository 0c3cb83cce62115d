package respcache

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HTTP caching of catalog answers: an anonymous GET whose answer is catalog data only,
// without errors, and built from the local cache level may be kept by browsers and CDNs
// for as long as the local copies it was built from have left (Cache-Control: public,
// max-age), and carries a strong ETag of its data, answered with 304 Not Modified when the
// client already has it. Everything else is private, no-store (the HTTP transport's
// default): seat state, orders, anything for a signed-in caller, errors.

// etagOf is the strong ETag of an answer's data.
func etagOf(data []byte) string {
	sum := sha256.Sum256(data)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// fresh notes that the answer, of data with etag, is fresh until until, when it may be
// shared; called by the extension before the answer is written.
func (p *pending) fresh(etag string, until, now time.Time) {
	if !p.shareable {
		return
	}
	p.etag = etag
	p.maxAge = int(until.Sub(now) / time.Second)
}

// Shared reports whether the answer of the request in ctx is going out publicly
// cacheable: then it carries nothing about its client (extensions.cost leaves out the
// client's budget), so that the same bytes can serve everyone.
func Shared(ctx context.Context) bool {
	p, _ := ctx.Value(pendingKey{}).(*pending)
	return p != nil && p.maxAge > 0
}

// answer writes the caching headers of a response before its first byte, and a 304
// instead of a body the client already has.
type answer struct {
	http.ResponseWriter
	p           *pending
	ifNoneMatch string
	started     bool
	notModified bool
}

func (a *answer) start() {
	if a.started {
		return
	}
	a.started = true
	h := a.Header()
	if a.p.hit {
		h.Set("X-Response-Cache", "hit")
	}
	if a.p.maxAge <= 0 {
		return
	}
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(a.p.maxAge))
	h.Set("ETag", a.p.etag)
	h.Add("Vary", "Accept")
	if matches(a.ifNoneMatch, a.p.etag) {
		a.notModified = true
		h.Del("Content-Length")
		h.Del("Content-Type")
		a.ResponseWriter.WriteHeader(http.StatusNotModified)
	}
}

func (a *answer) WriteHeader(code int) {
	a.start()
	if !a.notModified {
		a.ResponseWriter.WriteHeader(code)
	}
}

func (a *answer) Write(b []byte) (int, error) {
	a.start()
	if a.notModified {
		return len(b), nil
	}
	return a.ResponseWriter.Write(b)
}

func (a *answer) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// matches reports whether an If-None-Match header names etag (or is "*").
func matches(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}
