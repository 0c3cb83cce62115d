package playground

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestVendorMatchesManifest: the generated files are the ones scripts/playground.sh wrote
// (MANIFEST holds their hashes) from the versions web/package.json pins. A hand edit, or
// a version bump without `make playground`, fails here; `scripts/playground.sh --check`
// (make test) rebuilds them from npm and compares.
func TestVendorMatchesManifest(t *testing.T) {
	manifest, err := os.Open("vendor/MANIFEST")
	if err != nil {
		t.Fatal(err)
	}
	defer manifest.Close()
	var pkg struct{ Dependencies map[string]string }
	raw, err := os.ReadFile("web/package.json")
	if err != nil || json.Unmarshal(raw, &pkg) != nil {
		t.Fatalf("web/package.json: %v", err)
	}
	hashed := 0
	sc := bufio.NewScanner(manifest)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case len(f) == 2 && len(f[0]) == 64: // sha256  file
			body, err := os.ReadFile("vendor/" + f[1])
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != f[0] {
				t.Errorf("vendor/%s differs from what scripts/playground.sh wrote: run make playground", f[1])
			}
			if _, ok := assets[f[1]]; !ok {
				t.Errorf("vendor/%s is not served", f[1])
			}
			hashed++
		case len(f) == 2: // package version
			if want := pkg.Dependencies[f[0]]; want != f[1] {
				t.Errorf("vendor/ was built from %s %s, web/package.json pins %q: run make playground", f[0], f[1], want)
			}
		}
	}
	if hashed != 4 {
		t.Fatalf("MANIFEST lists %d files, want 4", hashed)
	}
}

func TestHandler(t *testing.T) {
	h := Handler()
	get := func(path string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	page := get("/")
	if page.Code != 200 || !strings.Contains(page.Body.String(), `src="/playground/graphiql.min.js"`) ||
		page.Header().Get("Content-Security-Policy") != ContentSecurityPolicy {
		t.Fatalf("GET /: %d %v %.200s", page.Code, page.Header(), page.Body)
	}
	if strings.Contains(page.Body.String(), "https://") {
		t.Errorf("the page refers to another site: %s", page.Body)
	}
	js := get("/playground/graphiql.min.js")
	if js.Code != 200 || !strings.HasPrefix(js.Header().Get("Content-Type"), "text/javascript") || js.Body.Len() < 100000 {
		t.Fatalf("GET graphiql.min.js: %d %q, %d bytes", js.Code, js.Header().Get("Content-Type"), js.Body.Len())
	}
	if again := get("/playground/graphiql.min.js", "If-None-Match", js.Header().Get("ETag")); again.Code != http.StatusNotModified {
		t.Errorf("revalidation with the ETag: %d, want 304", again.Code)
	}
	// The site's icon (browsers ask for it on every page): an ICO holding a 32x32 PNG.
	icon := get("/favicon.ico")
	if icon.Code != 200 || icon.Header().Get("Content-Type") != "image/x-icon" || !bytes.HasPrefix(icon.Body.Bytes(), []byte{0, 0, 1, 0, 1, 0}) {
		t.Fatalf("GET /favicon.ico: %d %q % x", icon.Code, icon.Header().Get("Content-Type"), icon.Body.Bytes()[:min(8, icon.Body.Len())])
	}
	if img, err := png.Decode(bytes.NewReader(icon.Body.Bytes()[22:])); err != nil || img.Bounds().Dx() != 32 {
		t.Errorf("the icon's image: %v, %v", err, img)
	}
	for _, path := range []string{"/playground/MANIFEST", "/playground/nope.js", "/playground/../web/package.json"} {
		if rec := get(path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
}
