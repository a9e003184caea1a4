# ragsync — the two commands a new user needs are `make demo` and `make test`.
# Both install what is missing first (Debian/Ubuntu: apt-get, with sudo when
# not root), so they work on a fresh machine with only Go and a C compiler.

GO      ?= go
# Debian packages: X11/GL headers for Ebiten's cgo build, Xvfb and ImageMagick
# for the window test that screenshots the demo; iptables, iproute2 and
# util-linux (unshare, nsenter) for the demo's fault suite, which blocks UDP
# in network namespaces of its own.
DEB_PKGS := gcc libc6-dev pkg-config libxrandr-dev libxcursor-dev libxi-dev \
	libxinerama-dev libxxf86vm-dev libgl1-mesa-dev \
	xvfb xauth imagemagick iptables iproute2 util-linux
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Tests and benchmarks run with the race detector and cgo (Ebiten needs it).
export CGO_ENABLED := 1

# Pinned Go tools, installed by `make deps` into $(TOOLS) (not on PATH).
TOOLS := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)

# Extra arguments for the demo, e.g. make demo ARGS="-bot".
ARGS ?=
# Test timeout for the whole run; CI allows 90 minutes, we aim well under 15.
TEST_TIMEOUT ?= 15m

.PHONY: all deps test vet lint bench demo fuzz clean check-go

all: test

check-go:
	@command -v $(GO) >/dev/null || { echo "Go is not installed: get Go 1.25 or newer from https://go.dev/dl/" >&2; exit 1; }

# deps installs only the Debian packages that are missing, and downloads the
# Go modules. It is a no-op on a machine that already has everything.
deps: check-go
	@missing=""; \
	for p in $(DEB_PKGS); do \
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
	@$(GO) mod download
	@[ -x $(STATICCHECK) ] || { echo "installing staticcheck $(STATICCHECK_VERSION)"; \
		mkdir -p $(TOOLS) && GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && \
		mv $(TOOLS)/staticcheck $(STATICCHECK); }

vet: deps
	$(GO) vet ./...

lint: deps
	$(STATICCHECK) ./...

test: vet lint
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

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

demo: deps
	$(GO) run ./demo $(ARGS)

clean:
	$(GO) clean -testcache
	rm -rf $(TOOLS)
