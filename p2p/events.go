package p2p

import (
	"fmt"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	EventUnknown EventKind = 0
	// EventTransportChanged: the active transport changed from From to
	// Transport (a failover, a switch back, or a better ping). Reason says
	// why.
	EventTransportChanged EventKind = 1
	// EventTransportUp: Transport opened after the session started (e.g.
	// WebRTC connected late, after the session settled on TCP).
	EventTransportUp EventKind = 2
	// EventTransportDown: Transport died (Err says how). The session goes
	// on over the other one if it works.
	EventTransportDown EventKind = 3
	// EventInterrupted: nothing has arrived from the peer for Silence
	// (Config.InterruptAfter).
	EventInterrupted EventKind = 4
	// EventResumed: packets arrive again after an interruption that
	// lasted Silence.
	EventResumed EventKind = 5
	// EventDisconnected: the session is over: nothing arrived for
	// Config.DisconnectAfter (Silence), or the peer closed it (Reason).
	// It is the last event; the channel is closed after it.
	EventDisconnected EventKind = 6
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventTransportChanged:
		return "transport-changed"
	case EventTransportUp:
		return "transport-up"
	case EventTransportDown:
		return "transport-down"
	case EventInterrupted:
		return "interrupted"
	case EventResumed:
		return "resumed"
	case EventDisconnected:
		return "disconnected"
	case EventUnknown:
		return "unknown"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is something that happened to a session. Which fields are set
// depends on Kind.
type Event struct {
	Kind EventKind
	// At is the session time of the event: time since Connect started, on
	// the session's clock.
	At        time.Duration
	Transport TransportKind // the transport concerned; the new one for EventTransportChanged
	From      TransportKind // EventTransportChanged: the previous one
	Silence   time.Duration // EventInterrupted, EventResumed, EventDisconnected
	Reason    string
	Err       error // EventTransportDown
	// Merged is how many earlier events this one summarises: they were
	// folded into it because the Events channel was full (see
	// Session.Events). For EventTransportChanged, From is then the
	// transport before the first of them.
	Merged int
}

// String formats the event for logs.
func (e Event) String() string {
	s := fmt.Sprintf("%v at %v", e.Kind, e.At.Round(time.Millisecond))
	switch e.Kind {
	case EventTransportChanged:
		s += fmt.Sprintf(": %v → %v", e.From, e.Transport)
	case EventTransportUp, EventTransportDown:
		s += ": " + e.Transport.String()
	}
	if e.Silence > 0 {
		s += fmt.Sprintf(" (silent %v)", e.Silence.Round(time.Millisecond))
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Merged > 0 {
		s += fmt.Sprintf(" [%d earlier merged]", e.Merged)
	}
	return s
}
