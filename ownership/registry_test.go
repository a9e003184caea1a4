package ownership

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ragsync/ragsync/physics"
)

const (
	peerA PeerID = 1
	peerB PeerID = 2
)

func newReg(t *testing.T, local, remote PeerID) *registry {
	t.Helper()
	r, err := newRegistry(local, remote, 10)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// receive is a valid state of object id from sender arriving at tick:
// authorize, then (the state being valid) commit. It reports whether the
// object changed hands.
func receive(r *registry, sender PeerID, id physics.ObjectID, claimEpoch uint32, tick uint64) (bool, error) {
	d, err := r.authorize(sender, id, claimEpoch)
	if err != nil {
		return false, err
	}
	return r.commit(d, tick), nil
}

func TestRegistryRejectsStatesFromNonOwners(t *testing.T) {
	r := newReg(t, peerA, peerB)
	must(t, r.add(1, peerA, false)) // our fighter
	must(t, r.add(2, peerB, false)) // theirs
	must(t, r.addLocalOnly(3))      // debris
	must(t, r.add(4, peerA, true))  // a crate we own

	if moved, err := receive(r, peerB, 2, 0, 0); err != nil || moved {
		t.Errorf("state of the sender's own fighter: %v, %v", moved, err)
	}
	for _, c := range []struct {
		name   string
		id     physics.ObjectID
		sender PeerID
		epoch  uint32
		want   error
	}{
		{"our fighter", 1, peerB, 0, ErrNotOwner},
		{"a claim on our fighter", 1, peerB, 5, ErrNotOwner}, // a fighter never changes hands
		{"a claim on theirs", 2, peerB, 1, ErrNotOwner},
		{"never synced", 3, peerB, 0, ErrLocalOnly},
		{"no such object", 9, peerB, 0, physics.ErrUnknownObject},
		{"our crate, no newer claim", 4, peerB, 0, ErrClaimLost},
		{"from ourselves", 2, peerA, 0, ErrInvalidPeer},
		{"from a third peer", 2, 7, 0, ErrInvalidPeer},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := r.authorize(c.sender, c.id, c.epoch)
			if !errors.Is(err, c.want) {
				t.Errorf("Authorize = %v, want %v", err, c.want)
			}
			var ae *AuthorityError
			if !errors.As(err, &ae) || ae.Object != c.id || ae.Sender != c.sender {
				t.Errorf("error %v does not carry the object and sender", err)
			}
			if d != (decision{}) || r.commit(d, 0) {
				t.Errorf("a refused state left a decision to commit: %+v", d)
			}
		})
	}
	for id, want := range map[physics.ObjectID]PeerID{1: peerA, 2: peerB, 3: 0, 4: peerA} {
		if owner, epoch := r.owner(id); owner != want || epoch != 0 {
			t.Errorf("%v: owner %v epoch %d, want %v and 0", id, owner, epoch, want)
		}
	}
}

func TestRegistryValidation(t *testing.T) {
	for _, c := range [][2]PeerID{{0, 1}, {1, 0}, {1, 1}} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			if _, err := newRegistry(c[0], c[1], 0); !errors.Is(err, ErrInvalidPeer) {
				t.Errorf("newRegistry(%v, %v): %v", c[0], c[1], err)
			}
		})
	}
	if _, err := newRegistry(1, 2, -1); err == nil {
		t.Error("negative cooldown accepted")
	}
	r := newReg(t, peerA, peerB)
	must(t, r.add(1, peerA, false))
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"duplicate", r.add(1, peerB, false), physics.ErrDuplicateObject},
		{"duplicate local-only", r.addLocalOnly(1), physics.ErrDuplicateObject},
		{"zero id", r.add(0, peerA, false), physics.ErrInvalidID},
		{"third peer as owner", r.add(2, 9, false), ErrInvalidPeer},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
}

// Authorize is a pure check: however often a winning claim is authorized,
// nothing moves until it is committed; a decision that no longer matches
// the registry commits nothing.
func TestAuthorizeChangesNothing(t *testing.T) {
	a := newReg(t, peerA, peerB)
	must(t, a.add(5, peerA, true))
	var d decision
	for range 3 {
		var err error
		if d, err = a.authorize(peerB, 5, 1); err != nil {
			t.Fatal(err)
		}
		if o, e := a.owner(5); o != peerA || e != 0 || a.mode(5) != ModeOwned || a.transfers != 0 {
			t.Fatalf("Authorize moved the crate: owner %v epoch %d", o, e)
		}
	}
	// It commits once; committed again, it no longer matches the crate's
	// owner and epoch, and changes nothing.
	stale := d
	if !a.commit(d, 7) {
		t.Fatal("a winning claim did not commit")
	}
	if o, e := a.owner(5); o != peerB || e != 1 || a.mode(5) != ModeRemote || a.transfers != 1 {
		t.Fatalf("after Commit: owner %v epoch %d", o, e)
	}
	if a.commit(stale, 8) || a.transfers != 1 {
		t.Error("a decision committed twice")
	}
	if a.claim(5, 7+9) {
		t.Error("A re-claimed within the cooldown the commit started")
	}
	if a.commit(decision{}, 0) {
		t.Error("the zero decision committed something")
	}
}

func TestTransferByClaim(t *testing.T) {
	a, b := newReg(t, peerA, peerB), newReg(t, peerB, peerA)
	for _, r := range []*registry{a, b} {
		must(t, r.add(5, peerA, true)) // a crate A starts with
	}
	// B's fighter touches it: B claims at once.
	if !b.claim(5, 100) {
		t.Fatal("B could not claim A's crate")
	}
	if b.mode(5) != ModeOwned {
		t.Fatal("claim did not make B the owner")
	}
	if b.claim(5, 101) {
		t.Error("claimed an object B already owns")
	}
	// B's states now carry the claim (epoch 1): A hands the crate over.
	_, epoch := b.owner(5)
	if moved, err := receive(a, peerB, 5, epoch, 102); err != nil || !moved {
		t.Fatalf("A on B's claim: %v, %v", moved, err)
	}
	if a.mode(5) != ModeRemote {
		t.Error("A still owns the crate")
	}
	// A's old states (epoch 0) are now refused by B.
	if _, err := receive(b, peerA, 5, 0, 103); !errors.Is(err, ErrClaimLost) {
		t.Errorf("B on A's stale state: %v", err)
	}
	// Cooldown: A's fighter touches the crate right away, A may not take it back.
	if a.claim(5, 105) {
		t.Error("A re-claimed during the cooldown")
	}
	if !a.claim(5, 102+10) {
		t.Error("A could not claim after the cooldown")
	}
	if a.transfers != 2 || b.transfers != 1 {
		t.Errorf("transfers A=%d B=%d, want 2 and 1", a.transfers, b.transfers)
	}
}

// Both peers claim the same object in the same tick: after their states
// cross, both agree on one owner, for every epoch and object id.
func TestSimultaneousClaimsResolveTheSameOnBothPeers(t *testing.T) {
	wins := map[PeerID]int{}
	for id := physics.ObjectID(1); id <= 8; id++ {
		for epochs := range 4 {
			a, b := newReg(t, peerA, peerB), newReg(t, peerB, peerA)
			owner := peerA
			if epochs%2 == 1 {
				owner = peerB
			}
			must(t, a.add(id, owner, true))
			must(t, b.add(id, owner, true))
			// Walk both to the same epoch by alternating transfers,
			// each after the cooldown.
			tick := uint64(0)
			for range epochs {
				tick += 100
				cur, _ := a.owner(id)
				claimer, other := a, b
				if cur == peerA {
					claimer, other = b, a
				}
				if !claimer.claim(id, tick) {
					t.Fatal("setup claim failed")
				}
				_, e := claimer.owner(id)
				if _, err := receive(other, claimer.local, id, e, tick); err != nil {
					t.Fatal(err)
				}
			}
			// Now exactly one of them owns it; make the owner lose it
			// by having both "claim": the non-owner claims, and the
			// owner re-claims the same epoch as if it had not yet
			// seen the other's claim.
			cur, e0 := a.owner(id)
			var x, y *registry = a, b
			if cur == peerA {
				x, y = b, a
			}
			tick += 100
			if !x.claim(id, tick) {
				t.Fatal("claim failed")
			}
			// y claims the same epoch (it did not see x's claim): model
			// it directly.
			ye := y.get(id)
			ye.epoch, ye.owner = e0+1, y.local
			_, ex := x.owner(id)
			_, ey := y.owner(id)
			if ex != ey {
				t.Fatalf("epochs differ: %d %d", ex, ey)
			}
			// The states cross.
			_, errX := receive(x, y.local, id, ey, tick)
			_, errY := receive(y, x.local, id, ex, tick)
			ox, _ := x.owner(id)
			oy, _ := y.owner(id)
			if ox != oy {
				t.Fatalf("id %v epoch %d: peers disagree: %v vs %v (%v / %v)", id, ex, ox, oy, errX, errY)
			}
			if want := tieWinner(id, ex, peerA, peerB); ox != want {
				t.Errorf("id %v epoch %d: owner %v, want tie winner %v", id, ex, ox, want)
			}
			// The loser's state is refused by the winner as a lost
			// claim; the winner's is accepted by the loser, who hands
			// the object over.
			loser, atWinner, atLoser := y, errX, errY
			if ox == y.local {
				loser, atWinner, atLoser = x, errY, errX
			}
			if !errors.Is(atWinner, ErrClaimLost) || atLoser != nil {
				t.Errorf("the winner on the loser's state: %v, want ErrClaimLost; the loser on the winner's: %v, want nil", atWinner, atLoser)
			}
			// The tie is counted once, by the peer whose claim lost.
			if x.ties+y.ties != 1 || loser.ties != 1 {
				t.Errorf("ties counted %d+%d, want 1 by the loser", x.ties, y.ties)
			}
			wins[ox]++
		}
	}
	if wins[peerA] == 0 || wins[peerB] == 0 {
		t.Errorf("tie-break always favours one peer: %v", wins)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A claim can only be one epoch ahead of the receiver's: a peer claims an
// object it sees the other own, at the epoch it shares with it, plus one.
// A claim further ahead is garbage (or a cheat) and is refused without
// moving anything; it must not let the sender keep the object for ever
// (an epoch near 2³² would make every later claim of the receiver look
// older) nor wrap the receiver's epoch around.
func TestRegistryRefusesClaimsThatSkipEpochs(t *testing.T) {
	a := newReg(t, peerA, peerB)
	must(t, a.add(5, peerA, true))
	for _, epoch := range []uint32{2, 1000, 1<<32 - 1} {
		t.Run(fmt.Sprint("epoch ", epoch), func(t *testing.T) {
			d, err := a.authorize(peerB, 5, epoch)
			var ae *AuthorityError
			if !errors.Is(err, ErrBadClaim) || !errors.As(err, &ae) || ae.Epoch != epoch || ae.Object != 5 || d != (decision{}) {
				t.Errorf("claim at epoch %d over epoch 0: %v, %+v; want an *AuthorityError wrapping ErrBadClaim", epoch, err, d)
			}
			if o, e := a.owner(5); o != peerA || e != 0 || a.transfers != 0 {
				t.Fatalf("claim at epoch %d moved the crate: owner %v epoch %d", epoch, o, e)
			}
		})
	}
	// The next epoch is a real claim.
	if moved, err := receive(a, peerB, 5, 1, 2); err != nil || !moved {
		t.Fatalf("claim at epoch 1: %v, %v", moved, err)
	}
	// And A can take it back later, at epoch 2, which B accepts.
	b := newReg(t, peerB, peerA)
	must(t, b.add(5, peerA, true))
	if !b.claim(5, 0) {
		t.Fatal("B could not claim")
	}
	if !a.claim(5, 100) {
		t.Fatal("A could not claim back after the cooldown")
	}
	_, e := a.owner(5)
	if moved, err := receive(b, peerA, 5, e, 100); err != nil || !moved || e != 2 {
		t.Errorf("B on A's claim at epoch %d: %v, %v", e, moved, err)
	}
}
