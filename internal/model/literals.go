package model

import (
	"strconv"
	"strings"
	"time"
)

// Duration renders d as a Go expression of package time.
func Duration(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{
		{time.Hour, "time.Hour"},
		{time.Minute, "time.Minute"},
		{time.Second, "time.Second"},
		{time.Millisecond, "time.Millisecond"},
		{time.Microsecond, "time.Microsecond"},
	}
	if d == 0 {
		return "0"
	}
	for _, u := range units {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return strconv.FormatInt(int64(d/u.d), 10) + " * " + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + " * time.Nanosecond"
}

// Ints renders a list of ints as a Go slice literal.
func Ints(list []int) string {
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = strconv.Itoa(n)
	}
	return "[]int{" + strings.Join(parts, ", ") + "}"
}

// Strings renders a list of strings as a Go slice literal.
func Strings(list []string) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = strconv.Quote(s)
	}
	return "[]string{" + strings.Join(parts, ", ") + "}"
}

// Float renders f as a Go float literal.
func Float(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// Literal renders s as the elements of an idemop.Security composite literal,
// without braces.
func (s Security) Literal() string {
	lit := "Scheme: " + quote(s.Scheme) + ", Type: " + quote(s.Type)
	if s.In != "" || s.Name != "" {
		lit += ", In: " + quote(s.In) + ", Name: " + quote(s.Name)
	}
	return lit
}

func quote(s string) string { return strconv.Quote(s) }
