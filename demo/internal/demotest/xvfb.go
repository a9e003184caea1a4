package demotest

import (
	"bufio"
	"bytes"
	"image"
	"image/png"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/testwait"
)

// Xvfb starts a virtual X server (1280×720, 24 bits, no TCP) for the test
// and returns its DISPLAY; cleanup stops it. It skips the test if Xvfb or
// ImageMagick's import (for Screenshot) is missing.
func Xvfb(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"Xvfb", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (run make deps, which installs xvfb and imagemagick): %v", tool, err)
		}
	}
	// -displayfd: the server picks a free display and writes its number
	// once it accepts connections.
	cmd := exec.Command("Xvfb", "-displayfd", "1", "-screen", "0", "1280x720x24", "-nolisten", "tcp")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("Xvfb: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	num := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			num <- strings.TrimSpace(sc.Text())
		}
		close(num)
	}()
	select {
	case n, ok := <-num:
		if !ok || n == "" {
			t.Fatalf("Xvfb did not say its display:\n%s", errBuf.String())
		}
		return ":" + n
	case <-testwait.Chan(t):
		t.Fatalf("Xvfb did not start:\n%s", errBuf.String())
	}
	return ""
}

// Screenshot captures the whole screen of display as an image, and its
// PNG.
func Screenshot(t testing.TB, display string) (image.Image, []byte) {
	t.Helper()
	cmd := exec.CommandContext(testwait.Context(t), "import", "-display", display, "-window", "root", "png:-")
	cmd.WaitDelay = 10 * time.Second
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("import: %v\n%s", err, errBuf.String())
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img, b
}

// SamePixels reports whether two screenshots show the same pixels: when
// they do not, the window drew a frame between them.
func SamePixels(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	switch a := a.(type) {
	case *image.RGBA:
		if b, ok := b.(*image.RGBA); ok {
			return bytes.Equal(a.Pix, b.Pix)
		}
	case *image.NRGBA:
		if b, ok := b.(*image.NRGBA); ok {
			return bytes.Equal(a.Pix, b.Pix)
		}
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				return false
			}
		}
	}
	return true
}
