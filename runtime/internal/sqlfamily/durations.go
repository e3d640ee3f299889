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

// DurationUS converts d to whole milliseconds, rounded up, and returns
// them as microseconds; 0 means def.
func DurationUS(name string, d, def time.Duration) (int64, error) {
	ms, err := DurationMS(name, d, def)
	return ms * 1000, err
}
