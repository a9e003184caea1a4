// Package demotest is what the demo's real-process tests share: the demo,
// window and signaling binaries built once per test binary, a process
// whose log is followed line by line, and the pixel counts the screenshot
// tests judge by. Those tests live in three packages (demo itself, the
// fault suite in demo/internal/faults, the browser test in
// demo/internal/browser) so that no single test binary runs for long.
//
// The package is for tests only: no production code imports it.
package demotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The binaries the tests build, by import path.
const (
	DemoPkg   = "github.com/ragsync/ragsync/demo"
	WindowPkg = "github.com/ragsync/ragsync/demo/window"
	SignalPkg = "github.com/ragsync/ragsync/cmd/signal"
)

var builds = struct {
	mu   sync.Mutex
	dir  string
	done map[buildKey]*build
}{done: map[buildKey]*build{}}

type buildKey struct {
	pkg  string
	race bool
}

type build struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// Binary builds the package at import path pkg (DemoPkg, WindowPkg,
// SignalPkg) once per test binary and race setting (race: with -race),
// and returns its path. The demo's binary and its window program share a
// directory, as the demo expects (it runs demo-window next to itself).
func Binary(t testing.TB, pkg string, race bool) string {
	t.Helper()
	builds.mu.Lock()
	k := buildKey{pkg, race}
	b := builds.done[k]
	if b == nil {
		b = &build{}
		builds.done[k] = b
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "ragsync-demotest")
		if err != nil {
			builds.mu.Unlock()
			t.Fatal(err)
		}
		builds.dir = dir
	}
	sub := "plain"
	if race {
		sub = "race"
	}
	dir := filepath.Join(builds.dir, sub)
	builds.mu.Unlock()
	b.once.Do(func() {
		name := map[string]string{DemoPkg: "demo", WindowPkg: "demo-window", SignalPkg: "signal"}[pkg]
		if name == "" {
			name = filepath.Base(pkg)
		}
		b.path = filepath.Join(dir, name)
		args := []string{"build", "-o", b.path}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, b.err, b.out)
	}
	return b.path
}

// Cleanup removes what Binary built; TestMain calls it after m.Run.
func Cleanup() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir = ""
}
