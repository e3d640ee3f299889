// Package cli is idemgen's command line: it parses flags, reads the
// oapi-codegen config, runs the generator and writes (or, with -check,
// compares) the generated files: the Go file and, with -emit-overlay, the
// OpenAPI Overlay that publishes the idempotency contract.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"

	"github.com/idemgen/idemgen/internal/cmdline"
	"github.com/idemgen/idemgen/internal/generator"
	"github.com/idemgen/idemgen/internal/overlay"
	"github.com/idemgen/idemgen/internal/textdiff"
)

const usage = `usage: idemgen -config cfg.yaml [-o api.idem.gen.go] [-emit-overlay idempotency.overlay.yaml] [-check] openapi.yaml
       idemgen -target ogen -package api [-no-server] [-no-client] [-o api/api.idem.gen.go] [-check] openapi.yaml

idemgen generates idempotency wrappers for the operations marked x-idempotent
in an OpenAPI document, beside oapi-codegen's output for the same document.
cfg.yaml is the configuration file given to oapi-codegen.

With -emit-overlay, idemgen also (or, without -o, only) writes an OpenAPI
Overlay 1.0.0 document that publishes the idempotency contract of those
operations: the key header, the problem responses 400, 409, 413, 422 and
503, Retry-After, Idempotent-Replayed and a paragraph of description, each
only where the spec does not declare it already. It is built on the spec
after the overlay of cfg.yaml, if any, and is meant for published documents
and generated clients. When there is nothing to publish, idemgen says so and
writes no overlay (an overlay must hold at least one action); it removes an
overlay it wrote earlier, and -check reports one as stale.

With -target ogen, the file goes beside ogen's output (package -package, as
given to ogen) and wraps ogen's Server and Client; give it ogen's
--no-server or --no-client too, if ogen is given either. No oapi-codegen
config is read.

`

// Exit codes of Run.
const (
	ExitOK    = cmdline.ExitOK
	ExitError = 1 // generation failed, or -check found a stale file
	ExitUsage = cmdline.ExitUsage
)

// Run runs idemgen with args (without the program name) and returns the
// process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdline.FlagSet("idemgen", usage, stderr)
	var o options
	fs.StringVar(&o.config, "config", "", "oapi-codegen configuration file (required)")
	fs.StringVar(&o.output, "o", "", "Go file to write; standard output when empty and -emit-overlay is not given")
	fs.StringVar(&o.overlay, "emit-overlay", "", "OpenAPI Overlay file (.yaml) to write, publishing the idempotency contract; without -o, the only output")
	fs.StringVar(&o.target, "target", "", "the generator whose output the file wraps: oapi-codegen (the default) or ogen")
	fs.StringVar(&o.pkg, "package", "", "with -target ogen: the Go package of ogen's output (ogen's --package)")
	fs.BoolVar(&o.noServer, "no-server", false, "with -target ogen: ogen generates no Server (its --no-server), so none is wrapped")
	fs.BoolVar(&o.noClient, "no-client", false, "with -target ogen: ogen generates no Client (its --no-client), so none is wrapped")
	fs.BoolVar(&o.check, "check", false, "do not write: exit 1 with a short diff when a file given by -o or -emit-overlay differs from what would be generated")
	if code, done := cmdline.Parse(fs, args); done {
		return code
	}
	switch {
	case fs.NArg() != 1:
		fmt.Fprintln(stderr, "idemgen: exactly one OpenAPI document must be given, as the last argument")
		fs.Usage()
		return ExitUsage
	case o.target == generator.TargetOgen && (o.pkg == "" || o.config != ""):
		fmt.Fprintln(stderr, "idemgen: -target ogen takes -package, the package name given to ogen, and no -config")
		return ExitUsage
	case o.target != generator.TargetOgen && (o.pkg != "" || o.noServer || o.noClient):
		fmt.Fprintln(stderr, "idemgen: -package, -no-server and -no-client are for -target ogen; for oapi-codegen, -config says what to wrap")
		return ExitUsage
	case o.config == "" && o.target != generator.TargetOgen:
		fmt.Fprintln(stderr, "idemgen: -config is required: give the configuration file you give oapi-codegen")
		return ExitUsage
	case o.check && o.output == "" && o.overlay == "":
		fmt.Fprintln(stderr, "idemgen: -check needs -o or -emit-overlay, the files to compare")
		return ExitUsage
	}
	o.spec = fs.Arg(0)
	if err := run(ctx, o, stdout, stderr); err != nil {
		fmt.Fprint(stderr, cmdline.Message("idemgen: ", err))
		return ExitError
	}
	return ExitOK
}

// options are the command line's inputs.
type options struct {
	config  string // oapi-codegen configuration file
	spec    string // the OpenAPI document
	output  string // Go file; "" for standard output (unless overlay is set)
	overlay string // published overlay file; "" for none
	check   bool
	target  string // generator.Config.Target
	pkg     string // with target ogen, the package of ogen's output
	// noServer and noClient: with target ogen, ogen's --no-server and
	// --no-client
	noServer, noClient bool
}

// goCode reports whether the Go file is generated: always, except when only
// the overlay is asked for.
func (o options) goCode() bool { return o.output != "" || o.overlay == "" }

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	cg, err := o.codegen()
	if err != nil {
		return err
	}
	c := generator.Config{Spec: o.spec, SpecName: o.spec, Codegen: cg, Output: o.output, Target: o.target,
		NoServer: o.noServer, NoClient: o.noClient}
	if o.output != "" {
		c.Source = generator.SourceFor(o.spec, o.output)
	}

	// Generate everything before writing anything, so that an error leaves
	// every file as it was.
	// One load for both files.
	l, err := generator.Load(c)
	if err != nil {
		return err
	}
	var files []generator.File
	if o.goCode() {
		f, err := l.Go()
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	var nothing error // why there is no overlay to write, when there is none
	if o.overlay != "" {
		f, err := l.Overlay(o.overlay)
		switch {
		case errors.Is(err, generator.ErrNothingToPublish):
			nothing = err
		case err != nil:
			return err
		default:
			files = append(files, f)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	var errs []error
	for _, f := range files {
		switch {
		case o.check:
			if err := compare(f, stderr); err != nil {
				errs = append(errs, err)
			}
		case o.output == "" && o.overlay == "":
			if _, err := stdout.Write(f.Content); err != nil {
				return err
			}
			note(stderr, "the output", f.Note)
		default:
			if err := write(f); err != nil {
				return err
			}
			note(stderr, f.Name, f.Note)
		}
	}
	if nothing != nil {
		if err := noOverlay(o.overlay, nothing, o.check, stderr); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// codegen returns the oapi-codegen configuration of the run: the -config
// file's, or for ogen generator.OgenCodegen's.
func (o options) codegen() (codegen.Configuration, error) {
	if o.target == generator.TargetOgen {
		return generator.OgenCodegen(o.pkg), nil
	}
	data, err := os.ReadFile(o.config)
	if err != nil {
		return codegen.Configuration{}, err
	}
	cg, _, err := generator.ParseCodegenConfig(data)
	if err != nil {
		return codegen.Configuration{}, fmt.Errorf("%s: %w", o.config, err)
	}
	return cg, nil
}

// noOverlay handles an overlay with nothing to publish (why says why): no
// file is the expected state. Without check it says so on stderr and removes
// an overlay that idemgen wrote earlier, which would now be wrong; with
// check, an existing file is stale.
func noOverlay(name string, why error, check bool, stderr io.Writer) error {
	old, err := os.ReadFile(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if !check {
			fmt.Fprintf(stderr, "idemgen: %v; %s not written\n", why, name)
		}
		return nil
	case err != nil:
		return err
	case check:
		return fmt.Errorf("%s is stale: %v; run go generate", name, why)
	case !bytes.HasPrefix(old, []byte(overlay.Header+"\n")):
		return fmt.Errorf("%v, and %s was not written by idemgen: not removed", why, name)
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "idemgen: %v; removed %s, written earlier\n", why, name)
	return nil
}

// note prints what the generator says of the file name, if anything.
func note(stderr io.Writer, name, text string) {
	if text != "" {
		fmt.Fprintf(stderr, "idemgen: note: %s %s\n", name, text)
	}
}

func write(f generator.File) error {
	if dir := filepath.Dir(f.Name); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if old, err := os.ReadFile(f.Name); err == nil && bytes.Equal(old, f.Content) {
		return nil // unchanged: keep the modification time
	}
	return os.WriteFile(f.Name, f.Content, 0o644)
}

// compare reports a stale or missing file with a short diff.
func compare(f generator.File, stderr io.Writer) error {
	old, err := os.ReadFile(f.Name)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s does not exist; run go generate", f.Name)
	}
	if err != nil {
		return err
	}
	if bytes.Equal(old, f.Content) {
		return nil
	}
	fmt.Fprint(stderr, textdiff.Short(f.Name, "on disk", "generated", old, f.Content))
	return fmt.Errorf("%s is stale; run go generate", f.Name)
}
