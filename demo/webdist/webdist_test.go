package webdist

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
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

// TestSecurityHeaders checks that every response, the page and the 404s
// alike, carries a strict CSP, nosniff and a referrer policy, and that the
// CSP allows exactly the served page's inline script and style by hash.
func TestSecurityHeaders(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	page := rec.Body.String()
	if rec.Code != http.StatusOK { // no web build: the page as embedded
		b, err := static.ReadFile("static/" + pageFile)
		if err != nil {
			t.Fatal(err)
		}
		page = string(b)
	}
	inline := regexp.MustCompile(`(?s)<(script|style)>(.*?)</(?:script|style)>`).FindAllStringSubmatch(page, -1)
	if len(inline) < 2 {
		t.Fatalf("the page has %d inline script/style elements, want its script and style", len(inline))
	}
	for _, path := range []string{"/", "/index.html?room=ABCDEF", "/wasm_exec.js", "/demo.wasm", "/nope"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		hd := rec.Header()
		if got := hd.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
		if got := hd.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q", path, got)
		}
		c := hd.Get("Content-Security-Policy")
		dirs := map[string]string{}
		for _, d := range strings.Split(c, ";") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), " ")
			dirs[name] = val
		}
		for name, want := range map[string]string{"default-src": "'none'", "frame-ancestors": "'none'", "object-src": "'none'", "base-uri": "'none'"} {
			if dirs[name] != want {
				t.Errorf("%s: CSP %s = %q, want %q (CSP %q)", path, name, dirs[name], want, c)
			}
		}
		script := dirs["script-src"]
		if !strings.Contains(script, "'wasm-unsafe-eval'") || strings.Contains(script, "'unsafe-inline'") || strings.Contains(script, "'unsafe-eval'") || strings.Contains(script, "*") {
			t.Errorf("%s: script-src %q: want 'wasm-unsafe-eval' and no unsafe-inline, unsafe-eval or wildcard", path, script)
		}
		if strings.Contains(dirs["style-src"], "unsafe") {
			t.Errorf("%s: style-src %q allows unsafe styles", path, dirs["style-src"])
		}
		for _, m := range inline {
			sum := sha256.Sum256([]byte(m[2]))
			hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
			if !strings.Contains(dirs[m[1]+"-src"], hash) {
				t.Errorf("%s: %s-src %q lacks the page's inline %s hash %s", path, m[1], dirs[m[1]+"-src"], m[1], hash)
			}
		}
	}
}

// TestInlineHashesSkipsExternal checks that a <script src> is not hashed
// (it is allowed by 'self') and that every inline one is.
func TestInlineHashesSkipsExternal(t *testing.T) {
	got := inlineHashes(`<script src="a.js"></script><script>x()</script><script type="module">y()</script>`, "script")
	if n := strings.Count(got, "'sha256-"); n != 2 {
		t.Fatalf("inlineHashes = %q: %d hashes, want 2", got, n)
	}
}
