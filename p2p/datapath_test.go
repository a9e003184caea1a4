package p2p

import (
	"testing"
	"time"

	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// recLink records what is sent on it; busy makes it refuse.
type recLink struct {
	k    TransportKind
	busy bool
	got  [][]byte
}

func (l *recLink) kind() TransportKind { return l.k }
func (l *recLink) send(p []byte) error {
	if l.busy {
		return errTransportBusy
	}
	l.got = append(l.got, append([]byte(nil), p...))
	return nil
}
func (l *recLink) sendData(p []byte) error { return l.send(p) }
func (l *recLink) close() error            { return nil }

// The data path numbers what it sends, counts drops, and on the receive
// side delivers each number once and accounts for the gaps.
func TestDataPathSendAndReceive(t *testing.T) {
	d := newDataPath(8, 4)
	l := &recLink{k: TransportTCP}
	d.send(l, []byte("a"))
	d.send(nil, []byte("b")) // no link: dropped
	l.busy = true
	d.send(l, []byte("c")) // refused: dropped, number not used
	l.busy = false
	d.send(l, []byte("d"))
	d.sendOther(l, []byte("ping"))
	if len(l.got) != 3 {
		t.Fatalf("link got %d messages, want 3", len(l.got))
	}
	for i, want := range []uint32{0, 1} {
		h, p, err := wire.ParseHeader(l.got[i])
		if err != nil || h.Type != wire.MsgData || h.Seq != want {
			t.Errorf("message %d: %+v %q %v, want data #%d", i, h, p, err, want)
		}
	}
	var st Stats
	d.stats(&st)
	if st.Sent != 2 || st.SendDropped != 2 || st.TCP.TxPackets != 3 || st.WebRTC.TxPackets != 0 {
		t.Errorf("sent %d dropped %d tcp tx %d webrtc tx %d, want 2, 2, 3, 0", st.Sent, st.SendDropped, st.TCP.TxPackets, st.WebRTC.TxPackets)
	}

	for _, seq := range []uint32{0, 2, 2, 3} { // 1 lost, 2 duplicated
		d.received(10)
		d.deliver(seq, []byte{byte(seq)})
	}
	var got []byte
	if n := d.poll(func(p []byte) { got = append(got, p...) }); n != 3 || string(got) != "\x00\x02\x03" {
		t.Errorf("poll handed %d messages %q, want 0, 2, 3", n, got)
	}
	// Rate windows close in virtual time: the recent loss is over the last one.
	for now := time.Duration(0); now <= 3*time.Second; now += 100 * time.Millisecond {
		d.tick(now)
	}
	d.stats(&st)
	if st.Received != 3 || st.Expected != 4 || st.Lost != 1 || st.Duplicates != 1 {
		t.Errorf("received %d expected %d lost %d dup %d, want 3, 4, 1, 1", st.Received, st.Expected, st.Lost, st.Duplicates)
	}
	if st.LossRecent != 0 {
		t.Errorf("recent loss %v after quiet windows, want 0", st.LossRecent)
	}
}
