//go:build !js

package game

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Natively each kept seat is a file seat-<key>-<token hash> in
// os.UserCacheDir()/ragsync (mode 0600, directory 0700) that the process
// playing the seat holds locked (flock, where there is one). A process
// that starts takes back a seat only from a file nobody holds: its player
// is gone. So two players of one room on one machine each find their own.

// seatFiles are the seat files this process wrote or read, by name, with
// the open (locked) file of those it holds.
var seatFiles = struct {
	sync.Mutex
	m map[string]*os.File
}{m: map[string]*os.File{}}

// seatPrefix is the path prefix of the seat files of room on signal.
func seatPrefix(signal, room string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ragsync", "seat-"+seatKey(signal, room)+"-"), nil
}

// loadSeat returns the token of a kept seat of room on signal that no
// running process holds, "" if none.
func loadSeat(signal, room string) string {
	prefix, err := seatPrefix(signal, room)
	if err != nil {
		return ""
	}
	names, _ := filepath.Glob(prefix + "*")
	seatFiles.Lock()
	defer seatFiles.Unlock()
	for _, name := range names {
		if _, ours := seatFiles.m[name]; ours || strings.HasSuffix(name, ".tmp") {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if !tryLock(f) { // its player runs
			f.Close()
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, 4096))
		f.Close()
		if tok := strings.TrimSpace(string(b)); err == nil && tok != "" {
			seatFiles.m[name] = nil // read, not held: dropSeat removes it
			return tok
		}
	}
	return ""
}

// saveSeat keeps token as this process's seat of room on signal, readable
// by this user only, and holds its file locked; it forgets the seat files
// of room this process had before.
func saveSeat(signal, room, token string) error {
	prefix, err := seatPrefix(signal, room)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(prefix), 0o700); err != nil {
		return err
	}
	h := sha256.Sum256([]byte(token))
	name := prefix + hex.EncodeToString(h[:6])
	seatFiles.Lock()
	defer seatFiles.Unlock()
	if f := seatFiles.m[name]; f != nil {
		return nil // already kept
	}
	forgetSeatFiles(prefix, name)
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // an older file's mode
		return err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	if !tryLock(f) {
		f.Close()
		return errors.New("the seat file is held by another process")
	}
	if err := os.Rename(tmp, name); err != nil {
		f.Close()
		return err
	}
	seatFiles.m[name] = f
	return nil
}

// dropSeat forgets this process's seat of room on signal: its files are
// removed.
func dropSeat(signal, room string) error {
	prefix, err := seatPrefix(signal, room)
	if err != nil {
		return err
	}
	seatFiles.Lock()
	defer seatFiles.Unlock()
	return forgetSeatFiles(prefix, "")
}

// forgetSeatFiles removes the files with prefix this process knows, but
// keep. Called with seatFiles locked.
func forgetSeatFiles(prefix, keep string) error {
	var errs []error
	for name, f := range seatFiles.m {
		if name == keep || !strings.HasPrefix(name, prefix) {
			continue
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if f != nil {
			f.Close()
		}
		delete(seatFiles.m, name)
	}
	return errors.Join(errs...)
}
