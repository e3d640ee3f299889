package load

import (
	"errors"
	"testing"
)

func TestErrorsSortedAndPrinted(t *testing.T) {
	es := Errors{
		{File: "a.yaml", Line: 9, Operation: "b", Err: errors.New("second")},
		{File: "a.yaml", Line: 9, Operation: "b", Err: errors.New("first")},
		{File: "a.yaml", Operation: "", Err: errors.New("whole file")},
		{File: "a.yaml", Line: 3, Operation: "z", Err: errors.New("early")},
		{File: "a.yaml", Line: 9, Operation: "a", Err: errors.New("other op")},
	}
	es.sort()
	want := "a.yaml: whole file\n" +
		"a.yaml:3: operation z: early\n" +
		"a.yaml:9: operation a: other op\n" +
		"a.yaml:9: operation b: first\n" +
		"a.yaml:9: operation b: second"
	if got := es.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var e *Error
	if !errors.As(es, &e) || e.Err.Error() != "whole file" {
		t.Errorf("errors.As finds %v", e)
	}
}
