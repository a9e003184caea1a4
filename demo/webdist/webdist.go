// Package webdist serves the web build of the demo: the page, the
// demo compiled to WebAssembly (gzip-compressed) and Go's loader for it.
// `make web` (part of `make test`, not of `make demo`) builds them into
// static/, where go:embed takes them: a binary built without them serves
// a page that says so. cmd/signal and the demo's embedded signaling
// server serve it at / (server.Config.Site).
//
// Every response carries a strict Content-Security-Policy (the page's
// inline script and style are allowed by their SHA-256 hashes, computed
// from the page as served; wasm compiles under 'wasm-unsafe-eval';
// nothing may frame the page), X-Content-Type-Options: nosniff and
// Referrer-Policy: no-referrer (see securityHeaders).
package webdist

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/ragsync/ragsync/internal/httpgzip"
)

//go:embed static
var static embed.FS

// Files of the web build in static/.
const (
	pageFile    = "index.html"
	wasmPattern = "demo.*.wasm.gz" // GOOS=js GOARCH=wasm go build ./demo/web, gzip -9, named demo.HASH.wasm.gz by its content
	loaderFile  = "wasm_exec.js"   // $(go env GOROOT)/lib/wasm/wasm_exec.js of the Go that built it
)

// Cache policies: the page and the loader are revalidated on every load
// (their names never change); the wasm's name changes with its content,
// so a browser keeps it for a year without asking.
const (
	cacheRevalidate = "no-cache"
	cacheImmutable  = "public, max-age=31536000, immutable"
)

// build is the web build found in static/: the wasm's file name and its
// sizes, and the page with them filled in.
type build struct {
	wasm    string // e.g. demo.0123456789abcdef.wasm.gz; "" if none
	gzSize  int64
	rawSize int64 // from the gzip trailer (the size mod 2³², ample for a wasm)
	page    []byte
	csp     string // the Content-Security-Policy of every response (see buildCSP)
}

var theBuild = sync.OnceValue(func() build {
	b := findBuild()
	page := b.page
	if page == nil {
		page, _ = static.ReadFile("static/" + pageFile)
	}
	b.csp = buildCSP(string(page))
	return b
})

func findBuild() build {
	var b build
	names, _ := fs.Glob(static, "static/"+wasmPattern)
	if len(names) == 0 {
		return b
	}
	b.wasm = path.Base(names[len(names)-1]) // `make web` leaves one
	data, err := static.ReadFile("static/" + b.wasm)
	if err != nil || len(data) < 18 {
		b.wasm = ""
		return b
	}
	b.gzSize = int64(len(data))
	b.rawSize = int64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	page, err := static.ReadFile("static/" + pageFile)
	if err == nil {
		r := strings.NewReplacer("{{WASM_URL}}", strings.TrimSuffix(b.wasm, ".gz"),
			"{{WASM_GZ_SIZE}}", itoa(b.gzSize), "{{WASM_RAW_SIZE}}", itoa(b.rawSize))
		b.page = []byte(r.Replace(string(page)))
	}
	return b
}

// buildCSP returns the Content-Security-Policy of every response, for
// page (as served):
//
//   - default-src 'none': nothing is loaded unless listed below;
//   - script-src 'self' 'wasm-unsafe-eval' and the hash of each inline
//     script of the page: the loader and the page's own script run, and
//     WebAssembly compiles, but no injected script or eval does;
//   - style-src 'self' and the hashes of the page's inline styles (the
//     demo sets its canvas's style from script, which CSP allows);
//   - connect-src 'self' https: wss:: the page's own origin (its
//     signaling WebSocket and the wasm download) and, for ?signal= on
//     another origin, only over TLS;
//   - img-src 'self' data:; base-uri, form-action and object-src 'none';
//   - frame-ancestors 'none': no page may frame this one (clickjacking).
func buildCSP(page string) string {
	return "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'" + inlineHashes(page, "script") +
		"; style-src 'self'" + inlineHashes(page, "style") +
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
func securityHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY") // frame-ancestors for browsers without CSP 2
}

// Available reports whether the web build is in this binary.
func Available() bool {
	_, err := fs.Stat(static, "static/"+loaderFile)
	return theBuild().wasm != "" && err == nil
}

// WasmSize returns the size of the compressed wasm download (0 if none).
func WasmSize() int64 { return theBuild().gzSize }

// Handler serves the web build: GET / (with any query: ?room=CODE,
// ?bot=easy, ... are the demo's flags) the page, /demo.HASH.wasm the wasm
// (gzip-encoded when the client accepts it, as browsers do; cached for a
// year, immutable), /demo.wasm the same without the long cache, and
// /wasm_exec.js the loader. Other paths get 404.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header(), theBuild().csp)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b := theBuild()
	switch p := r.URL.Path; {
	case p == "/" || p == "/index.html":
		if !Available() || b.page == nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "The web build of the ragsync demo is not in this binary: run `make web` and build again.\n")
			return
		}
		serveBytes(w, r, b.page, "text/html; charset=utf-8")
	case p == "/wasm_exec.js":
		data, err := static.ReadFile("static/" + loaderFile)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		serveBytes(w, r, data, "text/javascript; charset=utf-8")
	case b.wasm != "" && p == "/"+strings.TrimSuffix(b.wasm, ".gz"):
		serveWasm(w, r, b, cacheImmutable)
	case b.wasm != "" && p == "/demo.wasm":
		serveWasm(w, r, b, cacheRevalidate)
	default:
		http.NotFound(w, r)
	}
}

func serveWasm(w http.ResponseWriter, r *http.Request, b build, cache string) {
	data, err := static.ReadFile("static/" + b.wasm)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/wasm")
	w.Header().Set("Cache-Control", cache)
	w.Header().Set("Vary", "Accept-Encoding")
	if httpgzip.Accepts(r.Header.Values("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", itoa(int64(len(data))))
		if r.Method == http.MethodGet {
			w.Write(data)
		}
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		http.Error(w, "corrupt web build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Length", itoa(b.rawSize))
	if r.Method == http.MethodGet {
		io.Copy(w, zr)
	}
}

func serveBytes(w http.ResponseWriter, r *http.Request, data []byte, ctype string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", cacheRevalidate)
	w.Header().Set("Content-Length", itoa(int64(len(data))))
	if r.Method == http.MethodGet {
		w.Write(data)
	}
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
