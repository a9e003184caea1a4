//go:build !js

package game

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// seatFile is the file of a seat token (see Seat tokens).
func seatFile(signal, room string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ragsync", "seat-"+seatKey(signal, room)), nil
}

// loadSeat returns the kept seat token of room on signal, "" if none.
func loadSeat(signal, room string) string {
	name, err := seatFile(signal, room)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// saveSeat keeps token as the seat of room on signal, readable by this
// user only.
func saveSeat(signal, room, token string) error {
	name, err := seatFile(signal, room)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // an older file's mode
		return err
	}
	return os.Rename(tmp, name)
}

// dropSeat forgets the seat of room on signal.
func dropSeat(signal, room string) error {
	name, err := seatFile(signal, room)
	if err != nil {
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
