package promtext

import "testing"

// TestParseStat: fields are counted from the last ')', so a command name
// with spaces and parentheses does not shift them.
func TestParseStat(t *testing.T) {
	const stat = "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 9 0 123456 1837854720 3524 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	st, ok := parseStat([]byte(stat))
	want := procStat{utime: 250, stime: 75, threads: 9, starttime: 123456, vsize: 1837854720, rss: 3524}
	if !ok || st != want {
		t.Fatalf("parseStat = %+v %v, want %+v", st, ok, want)
	}
	for _, bad := range []string{"", "4242 (a) S 1 2", "4242 (a) S 1 4242 4242 0 -1 4194560 1000 0 0 0 x 75 0 0 20 0 9 0 123456 1837854720 3524"} {
		if _, ok := parseStat([]byte(bad)); ok {
			t.Errorf("parseStat(%q) ok", bad)
		}
	}
}
