package webdist

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCacheHeaders: the wasm's content-hashed name is cached for a year,
// the page (which names it) and the loader are revalidated every load, and
// the page carries the wasm's name and sizes.
func TestCacheHeaders(t *testing.T) {
	if !Available() {
		t.Skip("no web build in this binary (make web)")
	}
	b := theBuild()
	get := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		return rec
	}
	wasmURL := "/" + strings.TrimSuffix(b.wasm, ".gz")
	page := get("/?room=ABCDEF")
	if cc := page.Header().Get("Cache-Control"); cc != cacheRevalidate {
		t.Errorf("page Cache-Control %q, want %q", cc, cacheRevalidate)
	}
	if body := page.Body.String(); !strings.Contains(body, `"`+wasmURL[1:]+`"`) || strings.Contains(body, "{{") {
		t.Errorf("page does not name %s, or has unfilled placeholders", wasmURL)
	}
	w := get(wasmURL)
	if cc := w.Header().Get("Cache-Control"); cc != cacheImmutable {
		t.Errorf("%s Cache-Control %q, want %q", wasmURL, cc, cacheImmutable)
	}
	if ce := w.Header().Get("Content-Encoding"); ce != "gzip" || int64(w.Body.Len()) != b.gzSize {
		t.Errorf("%s: encoding %q, %d bytes; want gzip, %d", wasmURL, ce, w.Body.Len(), b.gzSize)
	}
	if cc := get("/wasm_exec.js").Header().Get("Cache-Control"); cc != cacheRevalidate {
		t.Errorf("loader Cache-Control %q, want %q", cc, cacheRevalidate)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/demo.0000000000000000.wasm", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a stale hashed name: %d, want 404", rec.Code)
	}
}
