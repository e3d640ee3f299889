// Package cmdline is what idemgen's commands (idemgen, idemctl and
// idemctl probe) share: how a command's flags are set up and parsed, and
// how a run's errors are printed.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/idemgen/idemgen/internal/errtree"
)

// Exit codes every command shares.
const (
	ExitOK    = 0
	ExitUsage = 2 // bad flags or arguments
)

// FlagSet returns the flag set of the command name: errors and -h go to
// stderr, where -h prints usage and then the flags with their defaults.
func FlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args with fs. When the command should stop there, done is
// true and code is its exit code: ExitOK after -h, ExitUsage after a bad
// flag (fs has said what was wrong).
func Parse(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return ExitOK, false
	case errors.Is(err, flag.ErrHelp):
		return ExitOK, true
	}
	return ExitUsage, true
}

// Message is what a command prints for err on standard error: every error
// that err joins (errors.Join, the loader's and the extension's problems),
// each on a line of its own that starts with prefix ("idemgen: "), like a
// compiler's errors.
func Message(prefix string, err error) string {
	var b strings.Builder
	for _, e := range errtree.Leaves(err) {
		fmt.Fprintf(&b, "%s%v\n", prefix, e)
	}
	return b.String()
}
