package physics

import (
	"strconv"
	"strings"
)

// ObjectID identifies an object (a fighter, a prop, or a set of bodies the game
// wraps) in a World. Both peers create the same objects with the same IDs, so
// an ObjectID names the same thing on every machine. The zero value is
// invalid.
type ObjectID uint16

func (id ObjectID) String() string {
	if id == 0 {
		return "obj#invalid"
	}
	return "obj#" + strconv.FormatUint(uint64(id), 10)
}

// objectKind says what an Object is.
type objectKind uint8

const (
	_ objectKind = iota // unknown
	// kindFighter is a ragdoll fighter built by World.AddFighter.
	kindFighter
	// kindProp is a prop built by World.AddCrate or World.AddBall.
	kindProp
	// kindCustom is a set of bodies the game created itself and wrapped
	// with World.AddBodies.
	kindCustom
)

func (k objectKind) String() string {
	switch k {
	case kindFighter:
		return "fighter"
	case kindProp:
		return "prop"
	case kindCustom:
		return "custom"
	}
	return "unknown(" + strconv.Itoa(int(k)) + ")"
}

// BodyPart names a body of a ragdoll fighter. A fighter's body with index i
// (in Object.Bodies, ReadState, snapshots) is BodyPart(i+1); see PartOf and
// BodyPart.Index. Left limbs are the ones drawn behind the torso, right limbs
// the ones drawn in front; both hang from the same shoulder and hip points.
type BodyPart uint8

const (
	PartUnknown   BodyPart = iota
	PartTorso              // body index 0 (the root)
	PartHead               // 1, child of torso (neck)
	PartUpperArmL          // 2, child of torso (shoulder)
	PartLowerArmL          // 3, child of upper arm L (elbow)
	PartUpperArmR          // 4, child of torso (shoulder)
	PartLowerArmR          // 5, child of upper arm R (elbow)
	PartUpperLegL          // 6, child of torso (hip)
	PartLowerLegL          // 7, child of upper leg L (knee); carries the foot
	PartUpperLegR          // 8, child of torso (hip)
	PartLowerLegR          // 9, child of upper leg R (knee); carries the foot
)

// FighterBodies is the number of bodies of a fighter.
const FighterBodies = 10

var partNames = [...]string{"unknown", "torso", "head", "upper-arm-l", "lower-arm-l",
	"upper-arm-r", "lower-arm-r", "upper-leg-l", "lower-leg-l", "upper-leg-r", "lower-leg-r"}

func (p BodyPart) String() string {
	if int(p) < len(partNames) {
		return partNames[p]
	}
	return "part(" + strconv.Itoa(int(p)) + ")"
}

// Index returns the body index of p within a fighter, or -1 for PartUnknown
// and out-of-range values.
func (p BodyPart) Index() int {
	if p == PartUnknown || int(p) > FighterBodies {
		return -1
	}
	return int(p) - 1
}

// PartOf returns the fighter body part with body index i, or PartUnknown.
func PartOf(i int) BodyPart {
	if i < 0 || i >= FighterBodies {
		return PartUnknown
	}
	return BodyPart(i + 1)
}

// Facing is the horizontal direction a fighter looks at.
type Facing int8

const (
	FacingUnknown Facing = 0
	FacingRight   Facing = 1
	FacingLeft    Facing = -1
)

func (f Facing) String() string {
	switch f {
	case FacingRight:
		return "right"
	case FacingLeft:
		return "left"
	}
	return "unknown"
}

// sign returns +1 for right and -1 for left (and unknown).
func (f Facing) sign() float64 {
	if f == FacingRight {
		return 1
	}
	return -1
}

// Input is a fighter's control bitmask for one tick. Games set it with
// Fighter.SetInput before World.Step. Jump, punch and kick act on the press
// (the tick the bit turns on); a press that comes while the fighter is busy is
// remembered for InputBufferTicks. Left, right and block act while held.
type Input uint8

const (
	InputLeft  Input = 1 << iota // walk left
	InputRight                   // walk right
	InputJump                    // jump (on press)
	InputBlock                   // crouch and block (while held)
	InputPunch                   // punch (on press)
	InputKick                    // kick (on press)

	// InputMask has every defined bit set; other bits are ignored.
	InputMask = InputLeft | InputRight | InputJump | InputBlock | InputPunch | InputKick
)

// Has reports whether every bit of b is set in in.
func (in Input) Has(b Input) bool { return in&b == b && b != 0 }

var inputNames = [...]string{"left", "right", "jump", "block", "punch", "kick"}

func (in Input) String() string {
	if in == 0 {
		return "none"
	}
	var sb strings.Builder
	for i, n := range inputNames {
		if in&(1<<i) != 0 {
			if sb.Len() > 0 {
				sb.WriteByte('|')
			}
			sb.WriteString(n)
		}
	}
	if rest := in &^ InputMask; rest != 0 {
		if sb.Len() > 0 {
			sb.WriteByte('|')
		}
		sb.WriteString("0x" + strconv.FormatUint(uint64(rest), 16))
	}
	return sb.String()
}

// Action is what a fighter is doing. It is derived by the fighter's
// controller each tick and sent in snapshots (4 bits on the wire).
type Action uint8

const (
	ActionUnknown   Action = iota
	ActionIdle             // standing, no input
	ActionWalk             // walking left or right
	ActionJump             // in the air after a jump
	ActionBlock            // crouching with arms up; hits do less damage
	ActionPunch            // a punch in progress (its phase: FighterState.Phase)
	ActionKick             // a kick in progress
	ActionDown             // fallen, limp
	ActionGettingUp        // standing back up
	ActionKO               // knocked out (HP 0), limp until Revive

	numActions
)

var actionNames = [...]string{"unknown", "idle", "walk", "jump", "block", "punch", "kick",
	"down", "getting-up", "ko"}

func (a Action) String() string {
	if a < numActions {
		return actionNames[a]
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// isValid reports whether a is a defined, non-zero action.
func (a Action) isValid() bool { return a > ActionUnknown && a < numActions }

// AttackPhase is the phase of a punch or kick (FighterState.Phase, from
// Fighter.State).
type AttackPhase uint8

const (
	PhaseNone     AttackPhase = iota // not attacking
	PhaseWindup                      // drawing back; cannot hit yet
	PhaseActive                      // the striking limb hits
	PhaseRecovery                    // returning to guard; cannot hit
)

func (p AttackPhase) String() string {
	switch p {
	case PhaseNone:
		return "none"
	case PhaseWindup:
		return "windup"
	case PhaseActive:
		return "active"
	case PhaseRecovery:
		return "recovery"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}
