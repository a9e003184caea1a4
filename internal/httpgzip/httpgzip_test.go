package httpgzip

import "testing"

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"br, gzip;q=0.5"}, true},
		{[]string{"deflate", "gzip"}, true},
		{[]string{"*"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip;q=0.0"}, false},
		{[]string{"gzip;q=x"}, false},
		{[]string{"identity, br"}, false},
		{[]string{"gzipx"}, false},
	} {
		if got := Accepts(tc.values); got != tc.want {
			t.Errorf("Accepts(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}
