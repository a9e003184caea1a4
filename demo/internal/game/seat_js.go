//go:build js

package game

import "syscall/js"

// In a browser the seat token lives in sessionStorage (see Seat tokens):
// a reload of the tab finds it, another tab does not.

func seatStorage() js.Value {
	s := js.Global().Get("sessionStorage")
	if s.IsUndefined() || s.IsNull() {
		return js.Undefined()
	}
	return s
}

func loadSeat(signal, room string) (tok string) {
	defer func() {
		if recover() != nil { // storage disabled
			tok = ""
		}
	}()
	s := seatStorage()
	if s.IsUndefined() {
		return ""
	}
	v := s.Call("getItem", "ragsync-seat-"+seatKey(signal, room))
	if v.IsNull() || v.IsUndefined() {
		return ""
	}
	return v.String()
}

func saveSeat(signal, room, token string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = js.Error{Value: js.ValueOf("sessionStorage refused the seat token")}
		}
	}()
	if s := seatStorage(); !s.IsUndefined() {
		s.Call("setItem", "ragsync-seat-"+seatKey(signal, room), token)
	}
	return nil
}

func dropSeat(signal, room string) error {
	defer func() { _ = recover() }()
	if s := seatStorage(); !s.IsUndefined() {
		s.Call("removeItem", "ragsync-seat-"+seatKey(signal, room))
	}
	return nil
}
