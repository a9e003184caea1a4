package game

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// A short bot-against-bot match in this process, through an embedded
// signaling server on loopback and real WebRTC.
func TestHeadlessInProcess(t *testing.T) {
	cfg, err := ParseFlags([]string{"-headless", "-bot", "-listen", "127.0.0.1:0", "-duration", "4s", "-json"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out, logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	err = RunHeadless(context.Background(), cfg, &out, log)
	t.Logf("output:\n%s\nlogs:\n%s", out.String(), logs.String())
	if err != nil {
		t.Fatalf("run: %v\nlogs:\n%s", err, logs.String())
	}
	js := out.String()[strings.Index(out.String(), "{"):]
	var rep RunReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Players) != 2 || !rep.Embedded || rep.Seconds < 4 {
		t.Fatalf("report %+v", rep)
	}
	if rep.GoroutinesAfter > rep.GoroutinesBefore {
		t.Errorf("goroutines %d → %d", rep.GoroutinesBefore, rep.GoroutinesAfter)
	}
	_ = time.Second
}
