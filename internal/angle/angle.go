// Package angle holds the angle arithmetic that physics and correction
// share: angles in radians, wrapped to [-π, π).
package angle

import "math"

// Wrap maps a to the half-open interval [-π, π).
func Wrap(a float64) float64 {
	if a >= -math.Pi && a < math.Pi {
		return a
	}
	a = math.Mod(a+math.Pi, 2*math.Pi)
	if a < 0 {
		a += 2 * math.Pi
	}
	a -= math.Pi
	if a >= math.Pi { // rounding at the top edge
		a = -math.Pi
	}
	return a
}

// Diff returns the shortest signed difference a-b, in [-π, π).
func Diff(a, b float64) float64 { return Wrap(a - b) }
