package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
)

// windowEnv names an explicit path to the window program.
const windowEnv = "RAGSYNC_DEMO_WINDOW"

// findWindow returns the command that runs the window program with args:
//
//  1. $RAGSYNC_DEMO_WINDOW, if set;
//  2. demo-window, or window, next to this executable (go build -o DIR/demo
//     ./demo and go build -o DIR/demo-window ./demo/window, or one
//     go build -o DIR/ ./demo ./demo/window as make demo does);
//  3. go run on the demo/window sources next to this file's source, when
//     they and the go command are there (go run ./demo, make demo).
func findWindow(args []string) (*exec.Cmd, error) {
	if p := os.Getenv(windowEnv); p != "" {
		return exec.Command(p, args...), nil
	}
	if exe, err := os.Executable(); err == nil {
		for _, name := range []string{"demo-window", "window"} {
			p := filepath.Join(filepath.Dir(exe), name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return exec.Command(p, args...), nil
			}
		}
	}
	_, file, _, ok := runtime.Caller(0)
	if ok {
		dir := filepath.Join(filepath.Dir(file), "window")
		if st, err := os.Stat(filepath.Join(dir, "main.go")); err == nil && !st.IsDir() {
			if gobin, err := exec.LookPath("go"); err == nil {
				fmt.Fprintln(os.Stderr, "demo: starting the window with go run ./demo/window (the first build takes a minute)")
				cmd := exec.Command(gobin, append([]string{"run", "."}, args...)...)
				cmd.Dir = dir
				return cmd, nil
			}
		}
	}
	return nil, errors.New("cannot find the window program: build it next to this one (go build -o DIR/demo-window ./demo/window), " +
		"set " + windowEnv + ", or run from the source tree with the go command on PATH; -headless needs no window")
}

// launchWindow runs the window program with the same arguments, passes it
// the terminal and the signals this process gets, and returns its exit
// code.
func launchWindow(args []string) int {
	cmd, err := findWindow(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, forwardedSignals...)
	defer signal.Stop(sig)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "demo: starting the window:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sig:
			cmd.Process.Signal(s)
		case err := <-done:
			var ee *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &ee):
				if ee.ExitCode() >= 0 {
					return ee.ExitCode()
				}
				return 1
			default:
				fmt.Fprintln(os.Stderr, "demo: window:", err)
				return 1
			}
		}
	}
}
