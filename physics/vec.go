package physics

import (
	"math"

	"github.com/ByteArena/box2d"
)

// Vec2 is a 2D vector in meters (positions) or meters per second
// (velocities). It is this package's own type so that the public API does not
// leak box2d's B2Vec2.
type Vec2 struct {
	X, Y float64
}

// V is shorthand for Vec2{x, y}.
func V(x, y float64) Vec2 { return Vec2{x, y} }

// Add returns v+u.
func (v Vec2) Add(u Vec2) Vec2 { return Vec2{v.X + u.X, v.Y + u.Y} }

// Sub returns v-u.
func (v Vec2) Sub(u Vec2) Vec2 { return Vec2{v.X - u.X, v.Y - u.Y} }

// Scale returns v*s.
func (v Vec2) Scale(s float64) Vec2 { return Vec2{v.X * s, v.Y * s} }

// Dot returns the dot product v·u.
func (v Vec2) Dot(u Vec2) float64 { return v.X*u.X + v.Y*u.Y }

// Len returns the Euclidean length of v.
func (v Vec2) Len() float64 { return math.Hypot(v.X, v.Y) }

// Rotate returns v rotated counter-clockwise by angle radians.
func (v Vec2) Rotate(angle float64) Vec2 {
	s, c := math.Sincos(angle)
	return Vec2{c*v.X - s*v.Y, s*v.X + c*v.Y}
}

// IsFinite reports whether both components are finite (not NaN or ±Inf).
func (v Vec2) IsFinite() bool { return isFinite(v.X) && isFinite(v.Y) }

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func (v Vec2) b2() box2d.B2Vec2 { return box2d.B2Vec2{X: v.X, Y: v.Y} }

func fromB2(v box2d.B2Vec2) Vec2 { return Vec2{v.X, v.Y} }

// rotCS rotates v by the rotation whose sine and cosine are s and c.
func rotCS(v Vec2, s, c float64) Vec2 { return Vec2{c*v.X - s*v.Y, s*v.X + c*v.Y} }

// crossSV returns w × r for a scalar angular velocity w (the velocity of a
// point at offset r on a body spinning at w).
func crossSV(w float64, r Vec2) Vec2 { return Vec2{-w * r.Y, w * r.X} }

// Rect is an axis-aligned rectangle [Min, Max].
type Rect struct {
	Min, Max Vec2
}

// Contains reports whether p lies inside r, borders included.
func (r Rect) Contains(p Vec2) bool {
	return p.X >= r.Min.X && p.X <= r.Max.X && p.Y >= r.Min.Y && p.Y <= r.Max.Y
}

// Size returns the width and height of r.
func (r Rect) Size() Vec2 { return r.Max.Sub(r.Min) }

func sincos(a float64) (s, c float64) { return math.Sincos(a) }
