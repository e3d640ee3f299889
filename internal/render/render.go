// Package render turns the model into Go source: it executes the embedded
// templates in order and formats the result with go/format. Imports are
// computed by the model, never guessed by goimports.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"go/scanner"
	"strings"
	"text/template"

	"github.com/idemgen/idemgen/internal/model"
	"github.com/idemgen/idemgen/templates"
)

// parsed holds the templates, parsed once at start-up and only read after.
var parsed = template.Must(template.New("idemgen").Funcs(template.FuncMap{
	"quote":    quote,
	"duration": model.Duration,
	"ints":     model.Ints,
	"strings":  model.Strings,
	"float":    model.Float,
	"comment":  comment,
}).ParseFS(templates.FS, "*.tmpl"))

// File renders f as formatted Go source.
func File(f model.File) ([]byte, error) {
	var buf bytes.Buffer
	order := templates.Order()
	if f.Ogen {
		order = templates.OgenOrder()
	}
	for _, name := range order {
		if err := parsed.ExecuteTemplate(&buf, name, f); err != nil {
			return nil, fmt.Errorf("render %s: %w", name, err)
		}
	}
	return formatSource(buf.Bytes())
}

// formatSource formats src with go/format alone: imports are exact already.
func formatSource(src []byte) ([]byte, error) {
	out, err := format.Source(src)
	if err != nil {
		return nil, formatError(src, err)
	}
	return out, nil
}

// formatError shows the lines go/format rejected, numbered, with two lines
// of context, so a template bug can be found without a debugger.
func formatError(src []byte, err error) error {
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return fmt.Errorf("format generated code: %w", err)
	}
	lines := strings.Split(string(src), "\n")
	var b strings.Builder
	for i, e := range list {
		if i == 3 {
			fmt.Fprintf(&b, "\n... and %d more errors", len(list)-i)
			break
		}
		fmt.Fprintf(&b, "\n%s", e)
		for n := max(1, e.Pos.Line-2); n <= min(len(lines), e.Pos.Line+2); n++ {
			mark := "  "
			if n == e.Pos.Line {
				mark = "> "
			}
			fmt.Fprintf(&b, "\n%s%4d | %s", mark, n, lines[n-1])
		}
	}
	return fmt.Errorf("format generated code: %w:%s", err, b.String())
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// comment renders text as // lines of at most about 76 columns.
func comment(text string) string {
	var b strings.Builder
	line := "//"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 76 && line != "//" {
			b.WriteString(line + "\n")
			line = "//"
		}
		line += " " + w
	}
	b.WriteString(line)
	return b.String()
}
