# ragsync — the two commands a new user needs are `make demo` and `make test`.
# Both install what is missing first (Debian/Ubuntu: apt-get, with sudo when
# not root), so they work on a fresh machine with only Go and a C compiler.
# `make demo` installs and builds only what the native demo needs; the web
# build, the lint tool and the test tools belong to `make test`/`make web`.

GO      ?= go
# Debian packages of the native demo: cgo and the X11/GL headers of Ebiten.
DEMO_PKGS := gcc libc6-dev pkg-config libxrandr-dev libxcursor-dev libxi-dev \
	libxinerama-dev libxxf86vm-dev libgl1-mesa-dev
# And of the tests: Xvfb and ImageMagick for the window test that
# screenshots the demo; iptables, iproute2 and util-linux (unshare, nsenter)
# for the demo's fault suite and the browser test, which block UDP in
# network namespaces of their own; Chromium for the test that plays the web
# demo in a headless browser (never downloaded otherwise), Node.js for the
# wasm tests.
DEB_PKGS := $(DEMO_PKGS) xvfb xauth imagemagick iptables iproute2 util-linux chromium nodejs
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Tests and benchmarks run with the race detector and cgo (Ebiten needs it).
export CGO_ENABLED := 1

# Pinned Go tools, installed by `make deps` into $(TOOLS) (not on PATH).
TOOLS := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)

# Extra arguments for the demo, e.g. make demo ARGS="-bot easy".
ARGS ?=
# Test timeout for the whole run; CI allows 90 minutes, we aim well under 15.
TEST_TIMEOUT ?= 15m

.PHONY: all deps deps-demo test test-wasm vet lint bench demo web fuzz clean check-go

all: test

check-go:
	@command -v $(GO) >/dev/null || { echo "Go is not installed: get Go 1.25 or newer from https://go.dev/dl/" >&2; exit 1; }

# apt_install installs the Debian packages of $(1) that are missing.
define apt_install
	@missing=""; \
	for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		if ! command -v apt-get >/dev/null; then \
			echo "missing packages:$$missing (install them with your package manager)" >&2; exit 1; \
		fi; \
		echo "installing:$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing \
		|| { $(SUDO) apt-get update -q && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; }; \
	fi
endef

# deps installs what `make test` needs: the Debian packages that are
# missing, the Go modules and the pinned Go tools (staticcheck), so that
# the tests then run without a network (.ci/run runs them in a namespace
# with only loopback). It is a no-op on a machine that already has
# everything.
deps: check-go $(STATICCHECK)
	$(call apt_install,$(DEB_PKGS))
	@$(GO) mod download

# deps-demo is deps for the native demo only.
deps-demo: check-go
	$(call apt_install,$(DEMO_PKGS))
	@$(GO) mod download

$(STATICCHECK): | check-go
	@echo "installing staticcheck $(STATICCHECK_VERSION)"
	mkdir -p $(TOOLS) && GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && \
		mv $(TOOLS)/staticcheck $(STATICCHECK)

vet: deps
	$(GO) vet ./...

lint: deps $(STATICCHECK)
	$(STATICCHECK) ./...

test: vet lint web test-wasm
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

# The web build of the demo, embedded by demo/webdist into cmd/signal and
# the demo: the wasm (gzip -9; served with Content-Encoding: gzip) under a
# name with its content's hash, demo.HASH.wasm.gz (cached for a year), and
# the loader of the Go that built it. All gitignored.
WEB := demo/webdist/static
WASM_EXEC := $(shell $(GO) env GOROOT)/lib/wasm
# Inlining is off in the web build for the packages a browser runs rarely
# (start-up, the shader compiler, handshakes, logs): it takes about 0.43 MB
# off the gzipped wasm (5.13 → 4.70 MB). The runtime and the game's
# packages keep it, and so do the arithmetic of the relay's TLS handshake
# and cipher, encoding/binary (the packets) and image/color (drawing).
# Later -gcflags patterns win, so WEB_INLINE re-enables what WEB_NOINLINE
# matched.
WEB_NOINLINE := crypto/... vendor/... go/... text/... encoding/... regexp/... log/... fmt \
	net/... math/big compress/... image/... archive/... os/... mime/... flag \
	github.com/hajimehoshi/ebiten/v2/internal/shader/... \
	github.com/hajimehoshi/ebiten/v2/internal/shaderir/... \
	github.com/hajimehoshi/ebiten/v2/internal/legacyshader \
	github.com/ragsync/ragsync/signaling/... github.com/ragsync/ragsync/demo/internal/cli
WEB_INLINE := encoding/binary image/color crypto/internal/fips140/nistec/... \
	crypto/internal/fips140/edwards25519/... crypto/internal/fips140/bigmod \
	crypto/internal/fips140/aes/... crypto/internal/fips140/sha256 \
	crypto/internal/fips140/sha512 crypto/internal/fips140/subtle crypto/internal/fips140/mlkem
WEB_GCFLAGS := $(foreach p,$(WEB_NOINLINE),-gcflags=$(p)=-l) $(foreach p,$(WEB_INLINE),-gcflags=$(p)=)
web: check-go
	GOOS=js GOARCH=wasm $(GO) build -trimpath $(WEB_GCFLAGS) -ldflags="-s -w" -o $(WEB)/demo.wasm ./demo/web
	gzip -9 -n -f $(WEB)/demo.wasm
	rm -f $(WEB)/demo.*.wasm.gz
	h=$$(sha256sum $(WEB)/demo.wasm.gz | cut -c1-16) && mv $(WEB)/demo.wasm.gz $(WEB)/demo.$$h.wasm.gz
	cp $(WASM_EXEC)/wasm_exec.js $(WEB)/wasm_exec.js
	@ls -l $(WEB)/demo.*.wasm.gz

# Pure-logic packages' tests, compiled to js/wasm and run by Node
# (go_js_wasm_exec). The others need sockets or a browser.
WASM_TEST_PKGS := ./clocksync ./correction ./ownership ./physics ./internal/clockwire \
	./p2p/internal/stats ./p2p/internal/wire ./p2p/internal/relay
test-wasm: check-go
	@command -v node >/dev/null || { echo "test-wasm needs Node.js (Debian: apt-get install nodejs)" >&2; exit 1; }
	PATH="$(WASM_EXEC):$$PATH" GOOS=js GOARCH=wasm $(GO) test -timeout $(TEST_TIMEOUT) $(WASM_TEST_PKGS)

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

# Short fuzzing of every fuzz target (FUZZTIME each).
FUZZTIME ?= 30s
fuzz: deps
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
		done; \
	done

# The demo and its window program (demo/window, the only part that links
# Ebiten), built by one go build (so their common packages build once, in
# parallel) into $(DEMO_BIN) as demo and window (gitignored; go build
# relinks neither when it is up to date); ./demo finds window next to
# itself. No web build: `make web` adds the browser demo.
# DEMO_LDFLAGS -w leaves out the DWARF tables a debugger reads (panics
# still print full stack traces): the link takes 1.7 s instead of 3.1 s.
# `make demo DEMO_LDFLAGS=` keeps them.
DEMO_BIN := $(CURDIR)/.bin
DEMO_LDFLAGS ?= -w
demo: deps-demo
	$(GO) build -ldflags='$(DEMO_LDFLAGS)' -o $(DEMO_BIN)/ ./demo ./demo/window
	$(DEMO_BIN)/demo $(ARGS)

clean:
	$(GO) clean -testcache
	rm -rf $(TOOLS) $(DEMO_BIN)
