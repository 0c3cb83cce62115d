// Package playground serves the GraphiQL playground at / from files embedded in the
// binary, so it works with no internet: GraphiQL and React as their npm packages build
// them (vendor/, written by scripts/playground.sh from the versions pinned in
// web/package-lock.json, never edited by hand) and the page that starts them (page/). It
// talks to the API only through the public endpoint, as any client would.
package playground

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed page vendor
var files embed.FS

// asset is one file served under /playground/.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// assets are the embedded files by name, read once: vendor's generated files and page's.
var assets = func() map[string]asset {
	out := map[string]asset{}
	for _, dir := range []string{"vendor", "page"} {
		entries, err := fs.ReadDir(files, dir)
		if err != nil {
			panic(err) // the embedded tree is fixed at build time
		}
		for _, e := range entries {
			body, err := files.ReadFile(dir + "/" + e.Name())
			if err != nil {
				panic(err)
			}
			sum := sha256.Sum256(body)
			ct := mime.TypeByExtension(path.Ext(e.Name()))
			if path.Ext(e.Name()) == ".ico" {
				ct = "image/x-icon" // not in Go's built-in table, and a distroless image has no mime.types
			}
			if ct == "" {
				ct = "text/plain; charset=utf-8"
			}
			out[e.Name()] = asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		}
	}
	return out
}()

// ContentSecurityPolicy is the playground's: everything from the server itself, the API
// over HTTP and websockets, no inline script. Inline styles are allowed: GraphiQL's dialogs
// (settings, short keys) inject <style> elements to lock scrolling. The browser test fails
// on any violation.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self' ws: wss:; worker-src 'self' blob:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Handler serves the playground page at /, its files under /playground/ and the site's
// icon at /favicon.ico (browsers ask for it on every page: /demo too). The files are
// revalidated on every load (no-cache with an ETag): a new binary may bring new ones
// under the same names.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := "index.html"
		switch {
		case r.URL.Path == "/favicon.ico":
			name = "favicon.ico"
		case r.URL.Path != "/":
			name = strings.TrimPrefix(r.URL.Path, "/playground/")
		}
		a, ok := assets[name]
		if !ok || name == "MANIFEST" {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
	})
}
