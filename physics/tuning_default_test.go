package physics

import (
	"reflect"
	"testing"
)

// TestDefaultTuning checks what the docs promise about DefaultTuning: it
// is valid, every field has a default (a zero there would leave the field
// without one), and a zero Tuning filled with defaults equals it.
func TestDefaultTuning(t *testing.T) {
	d := DefaultTuning()
	if err := d.check(); err != nil {
		t.Fatalf("DefaultTuning is invalid: %v", err)
	}
	v := reflect.ValueOf(d)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Errorf("DefaultTuning.%s is zero: the field has no default", v.Type().Field(i).Name)
		}
	}
	if got := (Tuning{}).withDefaults(); got != d {
		t.Errorf("a zero Tuning with defaults = %+v, want DefaultTuning %+v", got, d)
	}
}
