package angle

import (
	"math"
	"testing"
)

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in, out float64
	}{
		{"zero", 0, 0},
		{"inside", 1, 1},
		{"minus pi stays", -math.Pi, -math.Pi},
		{"pi wraps to minus pi", math.Pi, -math.Pi},
		{"one turn more", 1 + 2*math.Pi, 1},
		{"three turns less", -1 - 6*math.Pi, -1},
		{"just below minus pi", -math.Pi - 0.5, math.Pi - 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(tc.in)
			if math.Abs(got-tc.out) > 1e-12 || got < -math.Pi || got >= math.Pi {
				t.Errorf("Wrap(%v) = %v, want %v", tc.in, got, tc.out)
			}
		})
	}
}

func TestWrapStaysInRange(t *testing.T) {
	// The rounding at the top edge: values whose wrap rounds to π.
	for _, a := range []float64{math.Pi - 1e-17, 3 * math.Pi, -math.Pi - 1e-16, math.Nextafter(math.Pi, 0) + 4*math.Pi, 1e9} {
		if got := Wrap(a); !(got >= -math.Pi && got < math.Pi) {
			t.Errorf("Wrap(%v) = %v, outside [-π, π)", a, got)
		}
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name       string
		a, b, want float64
	}{
		{"same", 2, 2, 0},
		{"short way across pi", math.Pi - 0.1, -math.Pi + 0.1, -0.2},
		{"short way back", -math.Pi + 0.1, math.Pi - 0.1, 0.2},
		{"whole turns ignored", 0.3 + 4*math.Pi, 0.1, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Diff(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
