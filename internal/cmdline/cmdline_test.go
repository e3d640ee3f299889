package cmdline_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/cmdline"
)

func TestMessage(t *testing.T) {
	err := errors.Join(errors.New("a.yaml:3: operation x: lock: not a duration"), fmt.Errorf("b: %w", errors.New("c")))
	want := "idemgen: a.yaml:3: operation x: lock: not a duration\nidemgen: b: c\n"
	if got := cmdline.Message("idemgen: ", err); got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		done      bool
		errOutHas string
	}{
		{[]string{"-n", "3", "x"}, cmdline.ExitOK, false, ""},
		{[]string{"-h"}, cmdline.ExitOK, true, "usage: cmd\n"},
		{[]string{"-nope"}, cmdline.ExitUsage, true, "flag provided but not defined: -nope"},
	} {
		var errOut bytes.Buffer
		fs := cmdline.FlagSet("cmd", "usage: cmd\n", &errOut)
		n := fs.Int("n", 1, "a number")
		code, done := cmdline.Parse(fs, tc.args)
		if code != tc.code || done != tc.done || !strings.Contains(errOut.String(), tc.errOutHas) {
			t.Errorf("%q: code %d, done %v, stderr %q; want %d, %v, %q", tc.args, code, done, &errOut, tc.code, tc.done, tc.errOutHas)
		}
		if !done && (*n != 3 || fs.Arg(0) != "x") {
			t.Errorf("%q: -n %d, args %q", tc.args, *n, fs.Args())
		}
	}
}
