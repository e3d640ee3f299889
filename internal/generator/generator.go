package generator

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/load"
	"github.com/idemgen/idemgen/internal/model"
	"github.com/idemgen/idemgen/internal/render"
)

// DefaultOutput is the name of the generated file when Config.Output is empty.
const DefaultOutput = "api.idem.gen.go"

// Config is everything one generation needs.
type Config struct {
	// Spec is the path (or URL) of the OpenAPI document.
	Spec string
	// Source is how the header of the generated file names the spec; Spec
	// when empty. Keep it relative to the generated file's directory, so
	// that the output depends neither on the machine nor on the directory
	// idemgen runs in (SourceFor computes it).
	Source string
	// SpecName is how error messages name the spec; Source when empty. A
	// command line gives the spec as its user wrote it, relative to the
	// working directory, as a compiler names its files.
	SpecName string
	// Codegen is the oapi-codegen configuration, as ParseCodegenConfig
	// parses the file given to oapi-codegen.
	Codegen codegen.Configuration
	// Output is the generated file's name; DefaultOutput when empty.
	Output string
	// Dir is the directory that relative paths inside Codegen (the overlay)
	// are relative to. Empty means the working directory, as for
	// oapi-codegen itself.
	Dir string
	// Target is the generator whose output the file wraps: TargetOgen, or
	// TargetOapiCodegen (the default, also for ""). For ogen, Codegen is
	// OgenCodegen's.
	Target string
	// NoServer and NoClient, for TargetOgen, say that ogen was told
	// --no-server or --no-client: the file then wraps no Server or no
	// Client, which ogen did not generate.
	NoServer, NoClient bool
}

// Validate reports what is missing or contradictory in c.
func (c Config) Validate() error {
	var errs []error
	if c.Spec == "" {
		errs = append(errs, errors.New("no OpenAPI document given"))
	}
	if c.Codegen.PackageName == "" {
		errs = append(errs, errors.New("oapi-codegen config: package name must be specified (package:)"))
	}
	if err := validTarget(c.Target); err != nil {
		errs = append(errs, err)
	}
	if c.Output != "" && !strings.HasSuffix(c.Output, ".go") {
		errs = append(errs, fmt.Errorf("output %q: must be a .go file", c.Output))
	}
	if err := c.Codegen.Validate(); err != nil && c.Codegen.PackageName != "" {
		errs = append(errs, fmt.Errorf("oapi-codegen config: %w", err))
	}
	return errors.Join(errs...)
}

// File is one generated file.
type File struct {
	Name    string // as given in Config.Output
	Content []byte
	// Note is what the command should tell its user about the file, ""
	// for nothing (a config that asks for a server or client, and gets a
	// file that wraps no operation, is told why).
	Note string
}

// Generate generates the idemgen file for c.
func Generate(c Config) ([]File, error) {
	l, err := Load(c)
	if err != nil {
		return nil, err
	}
	f, err := l.Go()
	if err != nil {
		return nil, err
	}
	return []File{f}, nil
}

// Loaded is a spec loaded once for a Config, from which both outputs
// render: the Go file (Go) and the published overlay (Overlay), so that a
// run that writes both loads the spec and runs oapi-codegen once.
type Loaded struct {
	c     Config     // with its names and output filled in
	model model.File // what load.Load made of the spec
}

// Load validates c and loads its spec.
func Load(c Config) (*Loaded, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withNames()
	if c.Output == "" {
		c.Output = DefaultOutput
	}
	m, err := load.Load(load.Input{
		Spec:     c.Spec,
		Source:   c.Source,
		SpecName: c.SpecName,
		Codegen:  c.Codegen,
		Overlay:  c.Overlay(),
	})
	if err != nil {
		return nil, err
	}
	if c.Target == TargetOgen {
		m = m.ForOgen(!c.NoServer, !c.NoClient)
	}
	return &Loaded{c: c, model: m}, nil
}

// Go renders the Go file, named as Config.Output says.
func (l *Loaded) Go() (File, error) {
	src, err := render.File(l.model)
	if err != nil {
		return File{}, err
	}
	return File{Name: l.c.Output, Content: src, Note: l.model.Note}, nil
}

// withNames returns c with Source and SpecName filled in.
func (c Config) withNames() Config {
	if c.Source == "" {
		c.Source = c.Spec
	}
	if c.SpecName == "" {
		c.SpecName = c.Source
	}
	return c
}

// SourceFor returns how the header of the generated file output names the
// spec: its path relative to output's directory, with forward slashes, so
// that the same file is generated whichever directory idemgen runs in
// (../openapi.yaml from the package directory under go generate and from
// the module root alike). A URL, or a spec on another volume, is named as
// given.
func SourceFor(spec, output string) string {
	if strings.Contains(spec, "://") {
		return spec
	}
	from, err1 := filepath.Abs(filepath.Dir(output))
	to, err2 := filepath.Abs(spec)
	if err1 != nil || err2 != nil {
		return filepath.ToSlash(spec)
	}
	rel, err := filepath.Rel(from, to)
	if err != nil {
		return filepath.ToSlash(spec)
	}
	return filepath.ToSlash(rel)
}

// Overlay returns the overlay options the way oapi-codegen's command builds
// them: strict unless the config says otherwise.
func (c Config) Overlay() util.LoadSwaggerWithOverlayOpts {
	o := util.LoadSwaggerWithOverlayOpts{
		Path:                c.Codegen.OutputOptions.Overlay.Path,
		Strict:              true,
		AllowRemoteRefsFrom: c.Codegen.AllowRemoteRefsFrom,
	}
	if s := c.Codegen.OutputOptions.Overlay.Strict; s != nil {
		o.Strict = *s
	}
	if o.Path != "" && c.Dir != "" && !filepath.IsAbs(o.Path) && !strings.Contains(o.Path, "://") {
		o.Path = filepath.Join(c.Dir, o.Path)
	}
	return o
}
