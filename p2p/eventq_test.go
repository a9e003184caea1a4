package p2p

import "testing"

// A full queue folds transitions into later ones instead of blocking or
// losing the last word; after close, emit is a no-op.
func TestEventQueueMergesWhenFull(t *testing.T) {
	q := newEventQueue(2)
	q.emit(Event{Kind: EventTransportChanged, From: TransportWebRTC, Transport: TransportTCP})
	q.emit(Event{Kind: EventTransportChanged, From: TransportTCP, Transport: TransportWebRTC})
	q.emit(Event{Kind: EventTransportChanged, From: TransportWebRTC, Transport: TransportTCP}) // full: merges
	q.emit(Event{Kind: EventDisconnected, Reason: "bye"})
	q.close()
	q.emit(Event{Kind: EventInterrupted}) // discarded
	var got []Event
	for e := range q.ch {
		got = append(got, e)
	}
	if len(got) != 2 {
		t.Fatalf("got %d events %v, want 2", len(got), got)
	}
	if c := got[0]; c.Kind != EventTransportChanged || c.From != TransportWebRTC || c.Transport != TransportTCP || c.Merged != 2 {
		t.Errorf("first event %v (merged %d), want webrtc → tcp standing for 3", c, c.Merged)
	}
	if got[1].Kind != EventDisconnected {
		t.Errorf("last event %v, want disconnected", got[1])
	}
	if m, d := q.counts(); m != 2 || d != 0 {
		t.Errorf("counts merged %d dropped %d, want 2, 0", m, d)
	}
}
