package generator

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	"github.com/idemgen/idemgen/internal/load"
	"github.com/idemgen/idemgen/internal/overlay"
)

// ErrNothingToPublish is returned (wrapped) by GenerateOverlay when the spec
// has no x-idempotent operation or already declares every idempotency detail
// the overlay would add. An Overlay 1.0.0 document must hold at least one
// action, so there is no file to write.
var ErrNothingToPublish = errors.New("nothing to publish")

// GenerateOverlay generates the OpenAPI Overlay that publishes the idempotency
// contract of c's x-idempotent operations (see Loaded.Overlay), to be
// written as the file name, a .yaml or .yml file. c.Output is not used.
func GenerateOverlay(c Config, name string) (File, error) {
	l, err := Load(c)
	if err != nil {
		return File{}, err
	}
	return l.Overlay(name)
}

// Overlay renders the OpenAPI Overlay that publishes the idempotency
// contract of the x-idempotent operations, to be written as the file name,
// a .yaml or .yml file.
//
// The overlay is built against the document as oapi-codegen sees it for
// the config, that is after the user's own overlay was applied, for the
// operations the generated Go code covers, with their resolved settings
// (key header or body pointer, required, retention). When there is nothing
// to add, it returns an error that wraps ErrNothingToPublish.
func (l *Loaded) Overlay(name string) (File, error) {
	c := l.c
	switch ext := strings.ToLower(filepath.Ext(name)); {
	case name == "":
		return File{}, errors.New("no overlay file name given")
	case ext != ".yaml" && ext != ".yml":
		return File{}, fmt.Errorf("overlay %q: must be a .yaml or .yml file", name)
	}
	opts := c.Overlay()
	if opts.Path != "" && !strings.Contains(opts.Path, "://") && samePath(opts.Path, name) {
		return File{}, fmt.Errorf("overlay %q is the overlay that the oapi-codegen config applies to the spec; give the config of the server, not of the published client", name)
	}
	// A fresh copy of the document: the one load.Load used has been through
	// codegen.Generate, which prunes unused components and drops filtered
	// operations in place, and Build must see everything the spec declares.
	doc, err := util.LoadSwaggerWithOverlay(c.Spec, opts)
	if err != nil {
		return File{}, &load.Error{File: c.SpecName, Err: err}
	}
	ops := make([]overlay.Operation, 0, len(l.model.Operations))
	for _, o := range l.model.Operations {
		ops = append(ops, overlayOperation(o))
	}
	ops = append(ops, eventOverlayOperations(l.model)...)
	if len(ops) == 0 {
		return File{}, fmt.Errorf("%s: %w: no operation is x-idempotent", c.SpecName, ErrNothingToPublish)
	}
	content, err := overlay.Build(doc, specName(c.Spec), ops)
	if errors.Is(err, overlay.ErrNothingToAdd) {
		return File{}, fmt.Errorf("%s: %w: the document declares every idempotency detail already", c.SpecName, ErrNothingToPublish)
	}
	if err != nil {
		return File{}, fmt.Errorf("%s: overlay: %w", c.SpecName, err)
	}
	return File{Name: name, Content: content}, nil
}

// specName is the base name of the spec, for the overlay's header: a path
// or the last segment of a URL.
func specName(spec string) string {
	if i := strings.Index(spec, "://"); i >= 0 {
		p := spec[i+3:]
		if j := strings.IndexAny(p, "?#"); j >= 0 {
			p = p[:j]
		}
		return path.Base(p)
	}
	return filepath.Base(spec)
}

// samePath reports whether two file names name the same file.
func samePath(a, b string) bool {
	abs := func(p string) string {
		if q, err := filepath.Abs(p); err == nil {
			return q
		}
		return filepath.Clean(p)
	}
	return abs(a) == abs(b)
}
