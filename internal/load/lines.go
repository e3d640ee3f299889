package load

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/internal/extension"
)

// lineIndex maps places in the spec file to line numbers. kin-openapi does
// not keep positions for extension values, and after an overlay it parses a
// re-encoded document whose lines are not the user's, so the index is built
// from the original file text with yaml.v3 node positions (JSON is YAML, so
// this covers .json specs too). A place missing from the file (an operation
// in a $ref'd file, an extension added by an overlay) has line 0 and the
// lookup falls back to the nearest enclosing place that has one.
type lineIndex map[string]int

// indexLines indexes the operations and x-idempotent fields of a spec's
// text. An unparsable text gives an empty index: the loader reports syntax
// errors itself.
func indexLines(text []byte) lineIndex {
	ix := lineIndex{}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil || len(doc.Content) == 0 {
		return ix
	}
	root := doc.Content[0]
	if ext := member(root, extension.Name); ext != nil {
		ix.addExtension(placeKey("", ""), ext.key, ext.value)
	}
	ix.addMisspelt(placeKey("", ""), root)
	ix.indexEvents(root)
	paths := member(root, "paths")
	if paths == nil || paths.value.Kind != yaml.MappingNode {
		return ix
	}
	for i := 0; i+1 < len(paths.value.Content); i += 2 {
		path, item := paths.value.Content[i], paths.value.Content[i+1]
		if item.Kind != yaml.MappingNode {
			continue
		}
		ix[placeKey(path.Value, "")] = path.Line
		ix.addMisspelt(placeKey(path.Value, ""), item)
		for j := 0; j+1 < len(item.Content); j += 2 {
			method, op := item.Content[j], item.Content[j+1]
			place := placeKey(path.Value, strings.ToUpper(method.Value))
			if method.Value == extension.Name {
				ix.addExtension(placeKey(path.Value, extension.Name), method, op)
				continue
			}
			ix[place] = method.Line
			if ext := member(op, extension.Name); ext != nil {
				ix.addExtension(place, ext.key, ext.value)
			}
			ix.addMisspelt(place, op)
		}
	}
	return ix
}

type keyValue struct{ key, value *yaml.Node }

func member(m *yaml.Node, name string) *keyValue {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return &keyValue{m.Content[i], m.Content[i+1]}
		}
	}
	return nil
}

// addExtension records the x-idempotent key and every field below it.
func (ix lineIndex) addExtension(place string, key, value *yaml.Node) {
	ix[place+"#"] = key.Line
	var walk func(field string, n *yaml.Node)
	walk = func(field string, n *yaml.Node) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				f := n.Content[i].Value
				if field != "" {
					f = field + "." + f
				}
				ix[place+"#"+f] = n.Content[i].Line
				walk(f, n.Content[i+1])
			}
		case yaml.SequenceNode:
			for i, e := range n.Content {
				f := field + "[" + strconv.Itoa(i) + "]"
				ix[place+"#"+f] = e.Line
				walk(f, e)
			}
		}
	}
	walk("", value)
}

// addMisspelt records the keys of m that misspell x-idempotent
// (extension.Misspelt).
func (ix lineIndex) addMisspelt(place string, m *yaml.Node) {
	if m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; extension.Misspelt(k.Value) {
			ix[place+"~"+k.Value] = k.Line
		}
	}
}

// misspeltLine returns the line of the key that misspells x-idempotent in
// the operation at path and method (the path item for method "", the
// document for both ""), or the place's own line.
func (ix lineIndex) misspeltLine(path, method, key string) int {
	if n := ix[placeKey(path, method)+"~"+key]; n > 0 {
		return n
	}
	return ix.line(path, method, "")
}

func placeKey(path, method string) string { return path + " " + method }

var lastField = regexp.MustCompile(`(\.[^.\[]*|\[\d+\])$`)

// line returns the line of field (a path below x-idempotent, "" for the
// extension itself) in the operation at path and method ("" and "" for the
// document), falling back to enclosing fields, the extension, the operation
// and the path.
func (ix lineIndex) line(path, method, field string) int {
	place := placeKey(path, method)
	for f := field; ; f = lastField.ReplaceAllString(f, "") {
		if n := ix[place+"#"+f]; n > 0 {
			return n
		}
		if !strings.ContainsAny(f, ".[") {
			if n := ix[place+"#"]; n > 0 {
				return n
			}
			break
		}
	}
	if n := ix[place]; n > 0 {
		return n
	}
	return ix[placeKey(path, "")]
}
