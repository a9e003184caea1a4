package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{{MsgData, 0}, {MsgPing, 1}, {MsgPong, 0xdeadbeef}, {MsgControl, 0xffffffff}} {
		t.Run(fmt.Sprint(h.Type), func(t *testing.T) {
			b := AppendHeader([]byte("xx"), h)
			if len(b) != 2+HeaderLen {
				t.Fatalf("len %d", len(b))
			}
			got, p, err := ParseHeader(append(b[2:], "payload"...))
			if err != nil || got != h || string(p) != "payload" {
				t.Errorf("%+v: got %+v %q %v", h, got, p, err)
			}
		})
	}
}

func TestHeaderErrors(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want error
	}{
		{nil, ErrShortMessage},
		{[]byte{0x11, 0, 0, 0}, ErrShortMessage},
		{[]byte{0x21, 0, 0, 0, 0}, ErrBadVersion},
		{[]byte{0x10, 0, 0, 0, 0}, ErrBadType},
		{[]byte{0x15, 0, 0, 0, 0}, ErrBadType},
	} {
		t.Run(fmt.Sprintf("% x", c.in), func(t *testing.T) {
			_, _, err := ParseHeader(c.in)
			if !errors.Is(err, c.want) {
				t.Errorf("% x: %v, want %v", c.in, err, c.want)
			}
			var we *Error
			if !errors.As(err, &we) || we.Len != len(c.in) || !bytes.Equal(we.Input, c.in) {
				t.Errorf("% x: error does not carry the input: %#v", c.in, err)
			}
		})
	}
}

func TestControlRoundTrip(t *testing.T) {
	for _, c := range []Control{
		{Kind: CtrlSelect, Epoch: 7, Transport: TransportTCP},
		{Kind: CtrlSelectAck, Epoch: 0xffffffff, Transport: TransportWebRTC},
		{Kind: CtrlBye, Reason: ByeClosed},
		{Kind: CtrlHello, Enabled: 3},
		{Kind: CtrlHello, Enabled: 2},
	} {
		t.Run(c.Kind.String(), func(t *testing.T) {
			got, err := ParseControl(AppendControl(nil, c))
			if err != nil || got != c {
				t.Errorf("%+v: got %+v, %v", c, got, err)
			}
		})
	}
	for _, bad := range [][]byte{
		nil, {9}, {1, 0, 0, 0, 1}, {1, 0, 0, 0, 1, 3}, {1, 0, 0, 0, 1, 1, 0}, {3}, {3, 1, 1},
		{4}, {4, 0}, {4, 4}, {4, 1, 1},
	} {
		t.Run(fmt.Sprintf("% x", bad), func(t *testing.T) {
			if _, err := ParseControl(bad); !errors.Is(err, ErrBadControl) {
				t.Errorf("% x: %v", bad, err)
			}
		})
	}
}

func TestHeaderDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	n := testing.AllocsPerRun(1000, func() {
		b := AppendHeader(buf[:0], Header{MsgData, 42})
		b = append(b, 1, 2, 3)
		if _, _, err := ParseHeader(b); err != nil {
			t.Fatal(err)
		}
		c := AppendControl(b[:0], Control{Kind: CtrlSelect, Epoch: 1, Transport: TransportTCP})
		if _, err := ParseControl(c); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocs per run", n)
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add([]byte{0x11, 0, 0, 0, 1, 'h', 'i'})
	f.Add([]byte{0x14, 0, 0, 0, 1, 1, 0, 0, 0, 2, 2})
	f.Add([]byte{0x14, 0, 0, 0, 1, 3, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := ParseHeader(b)
		if err != nil {
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("error %T", err)
			}
			return
		}
		// Round trip: re-encoding gives the same bytes.
		re := append(AppendHeader(nil, h), p...)
		if !bytes.Equal(re, b) {
			t.Fatalf("re-encoded % x, input % x", re, b)
		}
		if h.Type == MsgControl {
			c, err := ParseControl(p)
			if err != nil {
				return
			}
			if re := AppendControl(nil, c); !bytes.Equal(re, p) {
				t.Fatalf("control re-encoded % x, input % x", re, p)
			}
		}
	})
}
