package signaling

import "testing"

func TestEndpointURL(t *testing.T) {
	for _, tc := range []struct{ in, path, want string }{
		{"http://127.0.0.1:8080", "/ws", "ws://127.0.0.1:8080/ws?v=1"},
		{"ws://127.0.0.1:8080/", "/ws", "ws://127.0.0.1:8080/ws?v=1"},
		{"https://example.test/signal/ws", "/ws", "wss://example.test/signal/ws?v=1"},
		{"ws://127.0.0.1:8080/ws?v=7&x=1", "/ws", "ws://127.0.0.1:8080/ws?v=1&x=1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := endpointURL(tc.in, tc.path, true)
			if err != nil || got != tc.want {
				t.Errorf("endpointURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ in, want string }{
		{"ws://127.0.0.1:8080", "http://127.0.0.1:8080/relay?v=1"},
		{"wss://example.test/signal/ws", "https://example.test/signal/relay?v=1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := endpointURL(tc.in, "/relay", false)
			if err != nil || got != tc.want {
				t.Errorf("relay endpointURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"ftp://x", "127.0.0.1:8080", "ws://", "::"} {
		t.Run(bad, func(t *testing.T) {
			if _, err := endpointURL(bad, "/ws", true); err == nil {
				t.Errorf("endpointURL(%q) succeeded", bad)
			}
		})
	}
}
