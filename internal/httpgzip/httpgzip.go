// Package httpgzip tells whether an HTTP request accepts a gzipped
// response: the one content negotiation the signaling server's /metrics
// and the web demo's files need.
package httpgzip

import (
	"strconv"
	"strings"
)

// Accepts reports whether the Accept-Encoding header values (as
// http.Header.Values returns them) name gzip, or "*", with a quality
// above zero. Encoding names are case-insensitive (RFC 9110, 12.5.3).
func Accepts(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			enc, params, _ := strings.Cut(part, ";")
			if enc = strings.TrimSpace(enc); !strings.EqualFold(enc, "gzip") && enc != "*" {
				continue
			}
			q, hasQ := strings.CutPrefix(strings.TrimSpace(params), "q=")
			if f, err := strconv.ParseFloat(strings.TrimSpace(q), 64); hasQ && (err != nil || f == 0) {
				continue
			}
			return true
		}
	}
	return false
}
