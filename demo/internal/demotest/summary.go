package demotest

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ragsync/ragsync/demo/internal/game"
)

// ParseSummary reads a "summary" log line of the demo (slog text: the
// JSON is the quoted json attribute, the last one).
func ParseSummary(line string) (game.Summary, bool) {
	var s game.Summary
	if !strings.Contains(line, "msg=summary") {
		return s, false
	}
	i := strings.Index(line, " json=")
	if i < 0 {
		return s, false
	}
	q, err := strconv.QuotedPrefix(line[i+len(" json="):])
	if err != nil {
		return s, false
	}
	js, err := strconv.Unquote(q)
	if err != nil || json.Unmarshal([]byte(js), &s) != nil {
		return s, false
	}
	return s, true
}

// LogFields returns the integer key=value fields of line i of log (none
// if there is no such line).
func LogFields(log string, i int) map[string]int {
	lines := strings.Split(log, "\n")
	f := map[string]int{}
	if i < 0 || i >= len(lines) {
		return f
	}
	for _, kv := range strings.Fields(lines[i]) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(v); err == nil {
			f[k] = n
		}
	}
	return f
}
