package signaling

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseRoomCode(t *testing.T) {
	for _, ok := range []string{"ABCDEF", "abcdef", "23456Z", "zzzzzz"} {
		t.Run(ok, func(t *testing.T) {
			c, err := ParseRoomCode(ok)
			if err != nil || !validCode(c) || string(c) != strings.ToUpper(ok) {
				t.Errorf("ParseRoomCode(%q) = %q, %v", ok, c, err)
			}
		})
	}
	for _, bad := range []string{"", "ABCDE", "ABCDEFG", "ABCDE0", "ABCDE1", "ABCDEI", "ABCDEO", "ABC DE", "ÄBCDEF", "ABCDE\x00"} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			c, err := ParseRoomCode(bad)
			if !errors.Is(err, ErrBadRoomCode) {
				t.Errorf("ParseRoomCode(%q) = %q, %v; want ErrBadRoomCode", bad, c, err)
			}
		})
	}
	if validCode("abcdef") || validCode("") {
		t.Error("un-normalised or empty code is valid")
	}
}

func TestRole(t *testing.T) {
	for _, r := range []Role{RoleOfferer, RoleAnswerer} {
		b, err := r.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Role
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Fatalf("%v round trip: %v %v", r, got, err)
		}
	}
	if RoleUnknown.String() != "unknown" || Role(9).String() != "unknown" {
		t.Fatal("String of unknown roles")
	}
	if _, err := Role(9).MarshalText(); err == nil {
		t.Fatal("marshalled an invalid role")
	}
	var r Role
	if err := r.UnmarshalText([]byte("host")); err == nil {
		t.Fatal("accepted role host")
	}
}

func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		code ErrorCode // "" = valid
	}{
		{`{"type":"create"}`, ""},
		{`{"type":"join","room":"abcdef"}`, ""},
		{`{"type":"join","room":"abcdef","future_field":[1,2]}`, ""},
		{`{"type":"offer","sdp":"v=0"}`, ""},
		{`{"type":"candidate","candidate":{"candidate":""}}`, ""},
		{`{"type":"paired","room":"ABCDEF","role":"answerer","token":"t"}`, ""},
		{`{"type":"error","code":"room_full","message":"m","ref":"join"}`, ""},
		{`{"type":"welcome","v":1,"limits":{"max_message_bytes":1}}`, ""},
		{``, ErrBadJSON},
		{`null`, ErrBadMessage},
		{`{"type":"create"} {}`, ErrBadJSON},
		{`{"type":"join","room":5}`, ErrBadJSON},
		{`{"type":"paired","room":"ABCDEF","role":"boss","token":"t"}`, ErrBadJSON},
		{`{"type":"join","room":"abcde"}`, ErrBadRoomCode},
		{`{"type":"create","room":"!!!!!!"}`, ErrBadRoomCode},
		{`{"type":"nope"}`, ErrUnknownType},
		{`{"type":"offer","sdp":""}`, ErrBadMessage},
		{`{"type":"offer","sdp":"` + strings.Repeat("a", maxSDPLen+1) + `"}`, ErrBadMessage},
		{`{"type":"candidate","candidate":{"candidate":"` + strings.Repeat("a", maxCandidateLen+1) + `"}}`, ErrBadMessage},
		{`{"type":"paired","room":"ABCDEF","role":"offerer"}`, ErrBadMessage},
		{`{"type":"error"}`, ErrBadMessage},
		{`{"type":"welcome"}`, ErrBadMessage},
		{`{"type":"create","reason":"` + strings.Repeat("a", maxTextLen+1) + `"}`, ErrBadMessage},
	} {
		t.Run(fmt.Sprintf("%.40q", tc.in), func(t *testing.T) {
			m, err := DecodeMessage([]byte(tc.in))
			if tc.code == "" {
				if err != nil {
					t.Errorf("DecodeMessage(%.60q) = %v", tc.in, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Message == "" {
				t.Errorf("DecodeMessage(%.60q) = %+v, %v; want code %s", tc.in, m, err, tc.code)
			}
		})
	}
	m, _ := DecodeMessage([]byte(`{"type":"join","room":"abcdef"}`))
	if m.Room != "ABCDEF" {
		t.Fatalf("room not normalised: %q", m.Room)
	}
}

func TestErrorIs(t *testing.T) {
	err := error(&Error{Code: ErrRoomFull, Message: "room X full", Ref: TypeJoin})
	if !errors.Is(err, ErrRoomFull) || errors.Is(err, ErrRoomNotFound) {
		t.Fatal("Is by code")
	}
	if got := err.Error(); got != "signaling: room_full: room X full" {
		t.Fatal(got)
	}
	// An ErrorCode is an error of its own, and matches an *Error of its
	// code both ways round, wrapped or not.
	var code error = ErrRoomFull
	if code.Error() != "signaling: room_full" || !errors.Is(fmt.Errorf("joining: %w", err), ErrRoomFull) ||
		!errors.Is(err, &Error{Code: ErrRoomFull}) || errors.Is(err, errors.New("signaling: room_full")) {
		t.Fatal("ErrorCode as an error")
	}
}

// FuzzDecodeMessage checks that the decoder never panics, that every
// failure is an *Error with a code and a message, and that an accepted
// message re-encodes to something that decodes to the same message.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"create"}`,
		`{"type":"join","room":"7kq2mx"}`,
		`{"type":"offer","sdp":"v=0\r\no=- 1 1 IN IP4 127.0.0.1"}`,
		`{"type":"candidate","candidate":{"candidate":"candidate:1 1 udp 1 127.0.0.1 5000 typ host","sdpMid":"0","sdpMLineIndex":0,"usernameFragment":"u"}}`,
		`{"type":"paired","room":"ABCDEF","role":"offerer","token":"abc"}`,
		`{"type":"error","code":"room_full","message":"full","ref":"join"}`,
		`{"type":"welcome","v":1,"limits":{"max_message_bytes":16384,"rate_per_sec":20,"rate_burst":40,"idle_timeout_ms":60000}}`,
		`{"type":"peer_left","room":"ABCDEF","reason":"left"}`,
		`{"type":"x"}`, `[]`, `{`, `"\u0000"`, `{"type":"join","room":"ABCDEF","type":"quick"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMessage(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Message == "" {
				t.Fatalf("error %#v is not a coded *Error", err)
			}
			return
		}
		if !m.Type.known() {
			t.Fatalf("accepted unknown type %q", m.Type)
		}
		if m.Room != "" && !validCode(m.Room) {
			t.Fatalf("accepted room %q", m.Room)
		}
		b, err := AppendMessage(nil, &m)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", m, err)
		}
		m2, err := DecodeMessage(b)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, m2)
		}
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatalf("re-encoded message is not a JSON object: %s", b)
		}
	})
}

// validCode reports whether c is a well-formed, normalised room code.
func validCode(c RoomCode) bool {
	p, err := ParseRoomCode(string(c))
	return err == nil && p == c
}
