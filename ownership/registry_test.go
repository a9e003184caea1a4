package ownership

import (
	"errors"
	"testing"

	"github.com/ragsync/ragsync/physics"
)

const (
	peerA PeerID = 1
	peerB PeerID = 2
)

func newReg(t *testing.T, local, remote PeerID) *Registry {
	t.Helper()
	r, err := NewRegistry(local, remote, 10)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryRejectsStatesFromNonOwners(t *testing.T) {
	r := newReg(t, peerA, peerB)
	must(t, r.Add(1, peerA, false)) // our fighter
	must(t, r.Add(2, peerB, false)) // theirs
	must(t, r.AddLocalOnly(3))      // debris
	must(t, r.Add(4, peerA, true))  // a crate we own

	if v, err := r.Receive(peerB, 2, 0, 0); err != nil || v != Accept {
		t.Errorf("state of the sender's own fighter: %v, %v", v, err)
	}
	cases := []struct {
		id     physics.ObjectID
		sender PeerID
		want   error
	}{
		{1, peerB, ErrNotOwner},      // our fighter
		{3, peerB, ErrLocalOnly},     // never synced
		{9, peerB, ErrUnknownObject}, // no such object
		{4, peerB, ErrClaimLost},     // our crate, no newer claim
		{2, peerA, ErrInvalidPeer},   // "from" ourselves
		{2, 7, ErrInvalidPeer},       // a third peer
	}
	for _, c := range cases {
		_, err := r.Receive(c.sender, c.id, 0, 0)
		if !errors.Is(err, c.want) {
			t.Errorf("object %v from %v: %v, want %v", c.id, c.sender, err, c.want)
		}
		var ae *AuthorityError
		if !errors.As(err, &ae) || ae.Object != c.id || ae.Sender != c.sender {
			t.Errorf("object %v from %v: error %v does not carry the object and sender", c.id, c.sender, err)
		}
	}
	// A fighter's owner never changes, whatever the claim says.
	if _, err := r.Receive(peerB, 1, 5, 0); !errors.Is(err, ErrNotOwner) {
		t.Errorf("claim on a fighter: %v, want ErrNotOwner", err)
	}
	if owner, _ := r.Owner(1); owner != peerA {
		t.Errorf("fighter owner became %v", owner)
	}
}

func TestRegistryValidation(t *testing.T) {
	for _, c := range [][2]PeerID{{0, 1}, {1, 0}, {1, 1}} {
		if _, err := NewRegistry(c[0], c[1], 0); !errors.Is(err, ErrInvalidPeer) {
			t.Errorf("NewRegistry(%v, %v): %v", c[0], c[1], err)
		}
	}
	r := newReg(t, peerA, peerB)
	must(t, r.Add(1, peerA, false))
	if err := r.Add(1, peerB, false); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
	if err := r.Add(0, peerA, false); !errors.Is(err, physics.ErrInvalidID) {
		t.Errorf("zero id: %v", err)
	}
	if err := r.Add(2, 9, false); !errors.Is(err, ErrInvalidPeer) {
		t.Errorf("third peer as owner: %v", err)
	}
}

func TestTransferByClaim(t *testing.T) {
	a, b := newReg(t, peerA, peerB), newReg(t, peerB, peerA)
	for _, r := range []*Registry{a, b} {
		must(t, r.Add(5, peerA, true)) // a crate A starts with
	}
	// B's fighter touches it: B claims at once.
	if !b.Claim(5, 100) {
		t.Fatal("B could not claim A's crate")
	}
	if b.Mode(5) != ModeOwned {
		t.Fatal("claim did not make B the owner")
	}
	if b.Claim(5, 101) {
		t.Error("claimed an object B already owns")
	}
	// B's states now carry the claim (epoch 1): A hands the crate over.
	_, epoch := b.Owner(5)
	if v, err := a.Receive(peerB, 5, epoch, 102); err != nil || v != AcceptTransfer {
		t.Fatalf("A on B's claim: %v, %v", v, err)
	}
	if a.Mode(5) != ModeRemote {
		t.Error("A still owns the crate")
	}
	// A's old states (epoch 0) are now refused by B.
	if _, err := b.Receive(peerA, 5, 0, 103); !errors.Is(err, ErrClaimLost) {
		t.Errorf("B on A's stale state: %v", err)
	}
	// Cooldown: A's fighter touches the crate right away, A may not take it back.
	if a.Claim(5, 105) {
		t.Error("A re-claimed during the cooldown")
	}
	if !a.Claim(5, 102+10) {
		t.Error("A could not claim after the cooldown")
	}
	if a.Transfers() != 2 || b.Transfers() != 1 {
		t.Errorf("transfers A=%d B=%d, want 2 and 1", a.Transfers(), b.Transfers())
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
			must(t, a.Add(id, owner, true))
			must(t, b.Add(id, owner, true))
			// Walk both to the same epoch by alternating transfers,
			// each after the cooldown.
			now := uint64(0)
			for range epochs {
				now += 100
				cur, _ := a.Owner(id)
				claimer, other := a, b
				if cur == peerA {
					claimer, other = b, a
				}
				if !claimer.Claim(id, now) {
					t.Fatal("setup claim failed")
				}
				_, e := claimer.Owner(id)
				if _, err := other.Receive(claimer.Local(), id, e, now); err != nil {
					t.Fatal(err)
				}
			}
			// Now exactly one of them owns it; make the owner lose it
			// by having both "claim": the non-owner claims, and the
			// owner re-claims the same epoch as if it had not yet
			// seen the other's claim.
			cur, e0 := a.Owner(id)
			var x, y *Registry = a, b
			if cur == peerA {
				x, y = b, a
			}
			now += 100
			if !x.Claim(id, now) {
				t.Fatal("claim failed")
			}
			// y claims the same epoch (it did not see x's claim): model
			// it directly.
			ye := y.get(id)
			ye.epoch, ye.owner = e0+1, y.Local()
			_, ex := x.Owner(id)
			_, ey := y.Owner(id)
			if ex != ey {
				t.Fatalf("epochs differ: %d %d", ex, ey)
			}
			// The states cross.
			_, errX := x.Receive(y.Local(), id, ey, now)
			_, errY := y.Receive(x.Local(), id, ex, now)
			ox, _ := x.Owner(id)
			oy, _ := y.Owner(id)
			if ox != oy {
				t.Fatalf("id %v epoch %d: peers disagree: %v vs %v (%v / %v)", id, ex, ox, oy, errX, errY)
			}
			if want := TieWinner(id, ex, peerA, peerB); ox != want {
				t.Errorf("id %v epoch %d: owner %v, want tie winner %v", id, ex, ox, want)
			}
			// The loser's state is refused as a lost claim, the
			// winner's accepted.
			loserErr := errX
			if ox == x.Local() {
				loserErr = errY
			}
			if !errors.Is(loserErr, ErrClaimLost) && loserErr != nil {
				t.Errorf("loser's state: %v", loserErr)
			}
			if x.Ties()+y.Ties() != 2 {
				t.Errorf("ties counted %d+%d, want 1 each", x.Ties(), y.Ties())
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
	must(t, a.Add(5, peerA, true))
	for _, epoch := range []uint32{2, 1000, 1<<32 - 1} {
		v, err := a.Receive(peerB, 5, epoch, 1)
		var ae *AuthorityError
		if !errors.Is(err, ErrBadClaim) || !errors.As(err, &ae) || ae.Epoch != epoch || ae.Object != 5 || v != VerdictUnknown {
			t.Errorf("claim at epoch %d over epoch 0: %v, %v; want an *AuthorityError wrapping ErrBadClaim", epoch, v, err)
		}
		if o, e := a.Owner(5); o != peerA || e != 0 || a.Transfers() != 0 {
			t.Fatalf("claim at epoch %d moved the crate: owner %v epoch %d", epoch, o, e)
		}
	}
	// The next epoch is a real claim.
	if v, err := a.Receive(peerB, 5, 1, 2); err != nil || v != AcceptTransfer {
		t.Fatalf("claim at epoch 1: %v, %v", v, err)
	}
	// And A can take it back later, at epoch 2, which B accepts.
	b := newReg(t, peerB, peerA)
	must(t, b.Add(5, peerA, true))
	if !b.Claim(5, 0) {
		t.Fatal("B could not claim")
	}
	if !a.Claim(5, 100) {
		t.Fatal("A could not claim back after the cooldown")
	}
	_, e := a.Owner(5)
	if v, err := b.Receive(peerA, 5, e, 100); err != nil || v != AcceptTransfer || e != 2 {
		t.Errorf("B on A's claim at epoch %d: %v, %v", e, v, err)
	}
}
