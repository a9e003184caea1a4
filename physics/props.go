package physics

import (
	"fmt"

	"github.com/ByteArena/box2d"
)

// PropConfig describes a crate or a ball. Zero fields take the defaults
// listed per field.
type PropConfig struct {
	// Pos is the prop's centre. It must lie inside the arena.
	Pos Vec2
	// Size is the crate's half side or the ball's radius, in m.
	// Zero: 0.25 for a crate, 0.15 for a ball.
	Size float64
	// Density in kg/m². Zero: 40 for a crate (10 kg), 30 for a ball (2 kg).
	Density float64
	// Friction. Zero: 0.6 for a crate, 0.4 for a ball.
	Friction float64
	// Restitution (bounciness). Zero: 0.1 for a crate, 0.6 for a ball.
	Restitution float64
}

// AddCrate adds a dynamic square crate (one body).
func (w *World) AddCrate(id ObjectID, cfg PropConfig) (*Object, error) {
	return w.addProp(id, cfg, false)
}

// AddBall adds a dynamic ball (one body).
func (w *World) AddBall(id ObjectID, cfg PropConfig) (*Object, error) {
	return w.addProp(id, cfg, true)
}

func (w *World) addProp(id ObjectID, cfg PropConfig, ball bool) (*Object, error) {
	if err := w.checkNewID(id); err != nil {
		return nil, err
	}
	def := func(v *float64, crate, ballv float64) {
		if *v == 0 {
			*v = crate
			if ball {
				*v = ballv
			}
		}
	}
	def(&cfg.Size, 0.25, 0.15)
	def(&cfg.Density, 40, 30)
	def(&cfg.Friction, 0.6, 0.4)
	def(&cfg.Restitution, 0.1, 0.6)
	in := w.Arena()
	switch {
	case !cfg.Pos.IsFinite() || !in.Contains(cfg.Pos):
		return nil, fmt.Errorf("%w: prop %v: position %v outside the arena %v", ErrInvalidConfig, id, cfg.Pos, in)
	case !(cfg.Size >= 0.02 && cfg.Size <= 5):
		return nil, fmt.Errorf("%w: prop %v: size %g, want 0.02..5 m", ErrInvalidConfig, id, cfg.Size)
	case !(cfg.Density > 0 && cfg.Density <= 1e5):
		return nil, fmt.Errorf("%w: prop %v: density %g", ErrInvalidConfig, id, cfg.Density)
	case !(cfg.Friction >= 0 && cfg.Friction <= 10) || !(cfg.Restitution >= 0 && cfg.Restitution <= 1):
		return nil, fmt.Errorf("%w: prop %v: friction %g / restitution %g", ErrInvalidConfig, id, cfg.Friction, cfg.Restitution)
	}
	bd := box2d.MakeB2BodyDef()
	bd.Type = box2d.B2BodyType.B2_dynamicBody
	bd.Position = cfg.Pos.b2()
	b := w.b2.CreateBody(&bd)
	fd := box2d.MakeB2FixtureDef()
	fd.Density, fd.Friction, fd.Restitution = cfg.Density, cfg.Friction, cfg.Restitution
	fd.Filter = box2d.MakeB2Filter()
	fd.Filter.CategoryBits = CategoryProp
	if ball {
		c := box2d.MakeB2CircleShape()
		c.M_radius = cfg.Size
		fd.Shape = &c
	} else {
		s := box2d.MakeB2PolygonShape()
		s.SetAsBox(cfg.Size, cfg.Size)
		fd.Shape = &s
	}
	b.CreateFixtureFromDef(&fd)
	o := &Object{id: id, kind: kindProp, world: w, bodies: []*box2d.B2Body{b}, created: true,
		layout: Layout{Bodies: []LayoutBody{{Parent: -1, LocalCenter: fromB2(b.M_sweep.LocalCenter)}}}}
	w.register(o)
	return o, nil
}
