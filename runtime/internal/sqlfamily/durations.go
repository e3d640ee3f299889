package sqlfamily

import (
	"fmt"
	"time"
)

// DurationMS converts d to whole milliseconds, rounded up; 0 means def.
func DurationMS(name string, d, def time.Duration) (int64, error) {
	if d < 0 {
		return 0, fmt.Errorf("idem: negative %s %v", name, d)
	}
	if d == 0 {
		d = def
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond), nil
}

// Duration converts a duration argument (named name; 0 means def) to the
// integer of Units its SQL takes: whole milliseconds, rounded up, in the
// dialect's unit.
func (d *Dialect) Duration(name string, v, def time.Duration) (int64, error) {
	ms, err := DurationMS(name, v, def)
	return ms * int64(time.Millisecond/d.Unit), err
}
