package physics

import (
	"math"
	"strconv"

	"github.com/ByteArena/box2d"
)

// ShapeKind is the geometry type of a Shape.
type ShapeKind uint8

const (
	ShapeUnknown ShapeKind = iota
	ShapeBox               // an oriented rectangle: Center, Angle, HalfExtents (also Vertices)
	ShapeCircle            // Center, Radius
	ShapePolygon           // a convex polygon: Vertices (counter-clockwise)
	ShapeEdge              // a segment: Vertices[0], Vertices[1]
	ShapeChain             // a chain: Vertices
)

func (k ShapeKind) String() string {
	switch k {
	case ShapeBox:
		return "box"
	case ShapeCircle:
		return "circle"
	case ShapePolygon:
		return "polygon"
	case ShapeEdge:
		return "edge"
	case ShapeChain:
		return "chain"
	}
	return "shape(" + strconv.Itoa(int(k)) + ")"
}

// Shape is one collision shape (a box2d fixture) of an object, for drawing.
// All geometry is in the frame of body Body; transform it with the body's
// position and angle (Object.Transform) to get world coordinates.
type Shape struct {
	Body        int // body index within the object
	Kind        ShapeKind
	Center      Vec2    // box / circle centre
	Angle       float64 // box rotation within the body
	HalfExtents Vec2    // box half width and half height
	Radius      float64 // circle radius
	Vertices    []Vec2  // polygon, box, edge and chain vertices
}

// shapesOf describes every fixture of bodies, in body order and, within a
// body, in the order the fixtures were created.
func shapesOf(bodies []*box2d.B2Body) []Shape {
	var out []Shape
	for i, b := range bodies {
		start := len(out)
		for f := b.M_fixtureList; f != nil; f = f.M_next {
			out = append(out, shapeOf(i, f.M_shape))
		}
		// box2d prepends fixtures; restore creation order.
		for l, r := start, len(out)-1; l < r; l, r = l+1, r-1 {
			out[l], out[r] = out[r], out[l]
		}
	}
	return out
}

func shapeOf(body int, s box2d.B2ShapeInterface) Shape {
	sh := Shape{Body: body}
	switch s := s.(type) {
	case *box2d.B2CircleShape:
		sh.Kind, sh.Center, sh.Radius = ShapeCircle, fromB2(s.M_p), s.M_radius
	case *box2d.B2PolygonShape:
		sh.Kind = ShapePolygon
		for k := 0; k < s.M_count; k++ {
			sh.Vertices = append(sh.Vertices, fromB2(s.M_vertices[k]))
		}
		if c, a, h, ok := asBox(sh.Vertices); ok {
			sh.Kind, sh.Center, sh.Angle, sh.HalfExtents = ShapeBox, c, a, h
		}
	case *box2d.B2EdgeShape:
		sh.Kind = ShapeEdge
		sh.Vertices = []Vec2{fromB2(s.M_vertex1), fromB2(s.M_vertex2)}
	case *box2d.B2ChainShape:
		sh.Kind = ShapeChain
		for _, v := range s.M_vertices {
			sh.Vertices = append(sh.Vertices, fromB2(v))
		}
	}
	return sh
}

// asBox recognises a rectangle given as 4 counter-clockwise vertices.
func asBox(v []Vec2) (center Vec2, angle float64, half Vec2, ok bool) {
	if len(v) != 4 {
		return
	}
	e0, e1 := v[1].Sub(v[0]), v[2].Sub(v[1])
	e2, e3 := v[3].Sub(v[2]), v[0].Sub(v[3])
	const eps = 1e-9
	if math.Abs(e0.Dot(e1)) > eps || e0.Add(e2).Len() > eps || e1.Add(e3).Len() > eps {
		return
	}
	center = v[0].Add(v[2]).Scale(0.5)
	angle = math.Atan2(e0.Y, e0.X)
	return center, angle, Vec2{e0.Len() / 2, e1.Len() / 2}, true
}
