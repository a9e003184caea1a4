package promtext

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDemoLinksNoPrometheusClient: the demo (which embeds the signaling
// server) links this package and none of Prometheus's client, protobuf or
// procfs, whose compiling cost a cold build about 10 s.
func TestDemoLinksNoPrometheusClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/ragsync/ragsync/demo", "github.com/ragsync/ragsync/demo/window").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, p := range deps {
		if strings.Contains(p, "prometheus") || strings.Contains(p, "protobuf") {
			t.Errorf("the demo links %s", p)
		}
	}
	if !strings.Contains(" "+strings.Join(deps, " ")+" ", " github.com/ragsync/ragsync/internal/promtext ") {
		t.Errorf("the demo does not link internal/promtext: is the signaling server still in it?")
	}
}
