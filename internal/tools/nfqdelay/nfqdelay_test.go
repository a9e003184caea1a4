//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func TestHolderFixedDelayKeepsOrder(t *testing.T) {
	h := newHolder(150*time.Millisecond, 0, 100, nil)
	for i := range uint32(10) {
		if !h.hold(i, flow{proto: uint8(i % 3)}, time.Duration(i)*time.Millisecond) {
			t.Fatal("hold refused under max")
		}
	}
	if _, ok := h.pop(158 * time.Millisecond); !ok {
		t.Fatal("packet 0 not due 158 ms after it arrived")
	}
	if _, ok := h.pop(150*time.Millisecond + 999*time.Microsecond); ok {
		t.Fatal("packet 1 released before its 150 ms")
	}
	for want := uint32(1); want < 10; want++ {
		id, ok := h.pop(time.Second)
		if !ok || id != want {
			t.Fatalf("pop = %d %v, want %d", id, ok, want)
		}
	}
	if h.len() != 0 || len(h.last) != 0 {
		t.Fatalf("held %d, flows %d after all popped", h.len(), len(h.last))
	}
}

func TestHolderJitterKeepsFlowOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := newHolder(100*time.Millisecond, 80*time.Millisecond, 1000, r.Int64N)
	flows := []flow{{proto: 17, sport: 1}, {proto: 17, sport: 2}, {proto: 6, sport: 1}}
	var sent [3][]uint32
	for i := range uint32(600) {
		f := i % 3
		h.hold(i, flows[f], time.Duration(i)*time.Millisecond)
		sent[f] = append(sent[f], i)
	}
	var got [3][]uint32
	reordered := false
	last := uint32(0)
	for now := time.Duration(0); h.len() > 0; now += time.Millisecond {
		for {
			id, ok := h.pop(now)
			if !ok {
				break
			}
			if id < last {
				reordered = true // across flows: allowed
			}
			last = id
			if now < time.Duration(id)*time.Millisecond+100*time.Millisecond {
				t.Fatalf("packet %d released at %v, before its delay", id, now)
			}
			got[id%3] = append(got[id%3], id)
		}
	}
	for f := range sent {
		if !equal(got[f], sent[f]) {
			t.Fatalf("flow %d reordered: %v", f, got[f])
		}
	}
	if !reordered {
		t.Error("80 ms of jitter never reordered packets of different flows: is it applied?")
	}
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestHolderBounded(t *testing.T) {
	h := newHolder(time.Second, 0, 3, nil)
	for i := range uint32(3) {
		if !h.hold(i, flow{}, 0) {
			t.Fatalf("hold %d refused", i)
		}
	}
	if h.hold(3, flow{}, 0) {
		t.Fatal("hold beyond max accepted")
	}
}

// packetMsg builds an NFQNL_MSG_PACKET datagram as the kernel sends it.
func packetMsg(id uint32, payload []byte) []byte {
	b := appendHeader(nil, nfqnlMsgPacket, 0, 0, 7)
	hdr := binary.BigEndian.AppendUint32(nil, id)
	hdr = append(hdr, 0x08, 0x00, 3) // ETH_P_IP, NF_INET_LOCAL_OUT
	b = appendAttr(b, nfqaPacketHdr, hdr)
	b = appendAttr(b, 3, []byte{0, 0, 0, 0}) // NFQA_MARK, skipped
	b = appendAttr(b, nfqaPayload|0x4000, payload)
	return finishMsg(b, 0)
}

func udp4(sport, dport uint16) []byte {
	p := make([]byte, 28)
	p[0] = 0x45
	p[9] = 17
	copy(p[12:], []byte{127, 0, 0, 1, 127, 0, 0, 2})
	binary.BigEndian.PutUint16(p[20:], sport)
	binary.BigEndian.PutUint16(p[22:], dport)
	return p
}

func TestParsePacketAndFlow(t *testing.T) {
	d := append(packetMsg(42, udp4(5000, 6000)), packetMsg(43, nil)...)
	var ids []uint32
	var flows []flow
	var st Stats
	if err := handle(d, &st, func(p packet) error {
		ids = append(ids, p.id)
		flows = append(flows, flowOf(p.payload))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !equal(ids, []uint32{42, 43}) || st.Received != 2 {
		t.Fatalf("ids %v, received %d", ids, st.Received)
	}
	want := flow{proto: 17, sport: 5000, dport: 6000}
	copy(want.src[:], []byte{127, 0, 0, 1})
	copy(want.dst[:], []byte{127, 0, 0, 2})
	if flows[0] != want || flows[1] != (flow{}) {
		t.Fatalf("flows %+v, want %+v and zero", flows, want)
	}
	p6 := make([]byte, 44)
	p6[0], p6[6] = 0x60, 6
	p6[23], p6[39] = 1, 1 // ::1 to ::1
	binary.BigEndian.PutUint16(p6[40:], 80)
	binary.BigEndian.PutUint16(p6[42:], 81)
	if f := flowOf(p6); f.proto != 6 || f.sport != 80 || f.dport != 81 || f.src[15] != 1 {
		t.Fatalf("IPv6 flow %+v", f)
	}
}

func TestWireErrors(t *testing.T) {
	good := packetMsg(1, udp4(1, 2))
	for name, d := range map[string][]byte{
		"short header":   good[:10],
		"length too big": append(binary.NativeEndian.AppendUint32(nil, 1000), good[4:]...),
		"no packet id":   finishMsg(appendAttr(appendHeader(nil, nfqnlMsgPacket, 0, 0, 7), nfqaPayload, []byte{1}), 0),
		"bad attribute":  finishMsg(append(appendHeader(nil, nfqnlMsgPacket, 0, 0, 7), 2, 0, 1, 0), 0),
	} {
		var we *WireError
		if err := handle(d, &Stats{}, func(packet) error { return nil }); !errors.As(err, &we) {
			t.Errorf("%s: got %v, want a *WireError", name, err)
		}
	}
	// A refused verdict comes back as NLMSG_ERROR with a negative errno.
	b := binary.NativeEndian.AppendUint32(nil, 36)
	b = binary.NativeEndian.AppendUint16(b, nlmsgError)
	b = append(b, make([]byte, 10)...)
	b = binary.NativeEndian.AppendUint32(b, uint32(0xfffffffe)) // -ENOENT
	b = append(b, make([]byte, 16)...)
	var st Stats
	if err := handle(b, &st, nil); err != nil || st.VerdictErrors != 1 {
		t.Fatalf("error message: %v, verdict errors %d", err, st.VerdictErrors)
	}
}

func TestAppendVerdict(t *testing.T) {
	b := appendVerdict(nil, 0x0102, 0xa0b0c0d0)
	want := binary.NativeEndian.AppendUint32(nil, verdictMsgLen)
	want = binary.NativeEndian.AppendUint16(want, 3<<8|1)
	want = binary.NativeEndian.AppendUint16(want, 1)
	want = append(want, make([]byte, 8)...)
	want = append(want, 0, 0, 0x01, 0x02)
	want = binary.NativeEndian.AppendUint16(want, 12)
	want = binary.NativeEndian.AppendUint16(want, 2)
	want = append(want, 0, 0, 0, 1, 0xa0, 0xb0, 0xc0, 0xd0)
	if !bytes.Equal(b, want) {
		t.Fatalf("verdict\n got % x\nwant % x", b, want)
	}
	buf := make([]byte, 0, 4*verdictMsgLen)
	if n := testing.AllocsPerRun(100, func() { buf = appendVerdict(buf[:0], 1, 2) }); n != 0 {
		t.Errorf("appendVerdict allocates %v times", n)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Queue: 65536, Max: 1}, {Delay: -1, Max: 1}, {Jitter: -1, Max: 1}, {}} {
		var ce *ConfigError
		if err := c.validate(); !errors.As(err, &ce) {
			t.Errorf("%+v: got %v, want a *ConfigError", c, err)
		}
	}
	if err := (Config{Queue: 3, Delay: time.Second, Max: 1}).validate(); err != nil {
		t.Error(err)
	}
}

// FuzzHandle feeds arbitrary datagrams to the reader: errors, never a
// panic, and every packet's flow readable.
func FuzzHandle(f *testing.F) {
	f.Add(packetMsg(1, udp4(1, 2)))
	f.Add(append(packetMsg(1, nil), packetMsg(2, []byte{0x60})...))
	f.Fuzz(func(t *testing.T, d []byte) {
		handle(d, &Stats{}, func(p packet) error {
			flowOf(p.payload)
			return nil
		})
	})
}
