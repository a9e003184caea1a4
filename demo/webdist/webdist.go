// Package webdist serves the web build of the demo: the page, the
// demo compiled to WebAssembly (gzip-compressed) and Go's loader for it.
// `make web` (part of `make demo` and `make test`) builds them into
// static/, where go:embed takes them: a binary built without them serves
// a page that says so. cmd/signal and the demo's embedded signaling
// server serve it at / (server.Config.Site).
//
// Every response carries a strict Content-Security-Policy (the page's
// inline script and style are allowed by their SHA-256 hashes, computed
// from the embedded page; wasm compiles under 'wasm-unsafe-eval'; nothing
// may frame the page), X-Content-Type-Options: nosniff and
// Referrer-Policy: no-referrer (see securityHeaders).
package webdist

import (
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Files of the web build in static/.
const (
	pageFile   = "index.html"
	wasmFile   = "demo.wasm.gz" // GOOS=js GOARCH=wasm go build ./demo/web, gzip -9
	loaderFile = "wasm_exec.js" // $(go env GOROOT)/lib/wasm/wasm_exec.js of the Go that built it
)

// Available reports whether the web build is in this binary.
func Available() bool {
	_, err1 := fs.Stat(static, "static/"+wasmFile)
	_, err2 := fs.Stat(static, "static/"+loaderFile)
	return err1 == nil && err2 == nil
}

// WasmSize returns the size of the compressed wasm download (0 if none).
func WasmSize() int64 {
	st, err := fs.Stat(static, "static/"+wasmFile)
	if err != nil {
		return 0
	}
	return st.Size()
}

// Handler serves the web build: GET / (with any query: ?room=CODE,
// ?bot=1, ... are the demo's flags) the page, /demo.wasm the wasm
// (gzip-encoded when the client accepts it, as browsers do), and
// /wasm_exec.js the loader. Other paths get 404.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

// csp is the Content-Security-Policy of every response:
//
//   - default-src 'none': nothing is loaded unless listed below;
//   - script-src 'self' 'wasm-unsafe-eval' and the hash of each inline
//     script of the page: the loader and the page's own script run, and
//     WebAssembly compiles, but no injected script or eval does;
//   - style-src with the hashes of the page's inline styles (the demo
//     sets its canvas's style from script, which CSP allows);
//   - connect-src 'self' https: wss:: the page's own origin (its
//     signaling WebSocket and the wasm download) and, for ?signal= on
//     another origin, only over TLS;
//   - img-src 'self' data:; base-uri, form-action and object-src 'none';
//   - frame-ancestors 'none': no page may frame this one (clickjacking).
var csp = buildCSP()

func buildCSP() string {
	page, _ := static.ReadFile("static/" + pageFile)
	scripts := inlineHashes(string(page), "script")
	styles := inlineHashes(string(page), "style")
	return "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'" + scripts +
		"; style-src 'self'" + styles +
		"; connect-src 'self' https: wss:; img-src 'self' data:; base-uri 'none'; form-action 'none'; object-src 'none'; frame-ancestors 'none'"
}

// inlineHashes returns " 'sha256-…'" for the content of every <tag>…</tag>
// element of page with no src attribute (an inline script or style).
func inlineHashes(page, tag string) string {
	var out strings.Builder
	open, end := "<"+tag, "</"+tag+">"
	for {
		i := strings.Index(page, open)
		if i < 0 {
			return out.String()
		}
		page = page[i+len(open):]
		gt := strings.IndexByte(page, '>')
		if gt < 0 {
			return out.String()
		}
		attrs := page[:gt]
		page = page[gt+1:]
		j := strings.Index(page, end)
		if j < 0 {
			return out.String()
		}
		body := page[:j]
		page = page[j+len(end):]
		if strings.Contains(attrs, "src=") {
			continue
		}
		sum := sha256.Sum256([]byte(body))
		out.WriteString(" 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'")
	}
}

// securityHeaders sets the headers every response carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY") // frame-ancestors for browsers without CSP 2
}

func serve(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/", "/index.html":
		if !Available() {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "The web build of the ragsync demo is not in this binary: run `make web` (or `make demo`) and build again.\n")
			return
		}
		serveFile(w, r, pageFile, "text/html; charset=utf-8")
	case "/wasm_exec.js":
		serveFile(w, r, loaderFile, "text/javascript; charset=utf-8")
	case "/demo.wasm":
		f, err := static.Open("static/" + wasmFile)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/wasm")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			w.Header().Set("Content-Encoding", "gzip")
			if st, err := f.Stat(); err == nil {
				w.Header().Set("Content-Length", itoa(st.Size()))
			}
			if r.Method == http.MethodGet {
				io.Copy(w, f)
			}
			return
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			http.Error(w, "corrupt web build", http.StatusInternalServerError)
			return
		}
		if r.Method == http.MethodGet {
			io.Copy(w, zr)
		}
	default:
		http.NotFound(w, r)
	}
}

func serveFile(w http.ResponseWriter, r *http.Request, name, ctype string) {
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Length", itoa(int64(len(b))))
	if r.Method == http.MethodGet {
		w.Write(b)
	}
}

func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, t := range strings.Split(v, ",") {
			t, q, _ := strings.Cut(strings.TrimSpace(t), ";")
			if strings.EqualFold(t, "gzip") && strings.TrimSpace(q) != "q=0" {
				return true
			}
		}
	}
	return false
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
