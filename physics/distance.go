package physics

import (
	"math"

	"github.com/ByteArena/box2d"
)

// Pose is where a body is: its origin's position and its angle (what
// Object.Transform returns). Games and the sync layer record poses to judge
// what happened at an earlier moment (lag-compensated hit confirmation).
type Pose struct {
	Pos   Vec2
	Angle float64
}

// Pose returns body i's pose now.
func (o *Object) Pose(i int) Pose {
	p, a := o.Transform(i)
	return Pose{Pos: p, Angle: a}
}

// BodyDistance returns the distance between the shapes of body i of object a
// placed at pa and body j of object b placed at pb: 0 if they overlap, else
// the gap between their closest points (box2d's GJK distance, shape radii
// included). It reads only the bodies' fixtures, never their current
// positions, so it judges poses from the past; it returns +Inf if either
// index is out of range or a body has no fixture. It allocates nothing and
// is safe to call from several goroutines (GJK's package-level counters are
// updated under the box2d lock).
func BodyDistance(a *Object, i int, pa Pose, b *Object, j int, pb Pose) float64 {
	if a == nil || b == nil || i < 0 || i >= len(a.bodies) || j < 0 || j >= len(b.bodies) ||
		!isFinite(pa.Pos.X) || !isFinite(pa.Pos.Y) || !isFinite(pa.Angle) ||
		!isFinite(pb.Pos.X) || !isFinite(pb.Pos.Y) || !isFinite(pb.Angle) {
		return math.Inf(1)
	}
	best := math.Inf(1)
	box2dMu.Lock()
	defer box2dMu.Unlock()
	d := &distScratch // under box2dMu: no allocation per call
	d.in.TransformA = poseTransform(pa)
	d.in.TransformB = poseTransform(pb)
	d.in.UseRadii = true
	for fa := a.bodies[i].M_fixtureList; fa != nil; fa = fa.M_next {
		if !setProxy(&d.in.ProxyA, fa.M_shape) {
			continue
		}
		for fb := b.bodies[j].M_fixtureList; fb != nil; fb = fb.M_next {
			if !setProxy(&d.in.ProxyB, fb.M_shape) {
				continue
			}
			d.cache = box2d.B2SimplexCache{}
			box2d.B2Distance(&d.out, &d.cache, &d.in)
			best = math.Min(best, d.out.Distance)
		}
	}
	return best
}

// distScratch is BodyDistance's GJK input and output, used under box2dMu.
var distScratch struct {
	in    box2d.B2DistanceInput
	out   box2d.B2DistanceOutput
	cache box2d.B2SimplexCache
}

// setProxy sets p to a convex shape (a polygon or a circle) without
// allocating (box2d's Set allocates for circles); other shapes are not
// fighter or prop bodies and report false.
func setProxy(p *box2d.B2DistanceProxy, s box2d.B2ShapeInterface) bool {
	switch s := s.(type) {
	case *box2d.B2PolygonShape:
		p.M_vertices = s.M_vertices[:s.M_count]
		p.M_count = s.M_count
		p.M_radius = s.M_radius
	case *box2d.B2CircleShape:
		p.M_buffer[0] = s.M_p
		p.M_vertices = p.M_buffer[:1]
		p.M_count = 1
		p.M_radius = s.M_radius
	default:
		return false
	}
	return true
}

func poseTransform(p Pose) box2d.B2Transform {
	var xf box2d.B2Transform
	xf.P = box2d.B2Vec2{X: p.Pos.X, Y: p.Pos.Y}
	xf.Q.Set(p.Angle)
	return xf
}
