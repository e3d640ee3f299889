package overlay

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// object is a YAML mapping whose members keep the order they were added in,
// so that the overlay reads like the OpenAPI it extends and encodes the same
// way every time.
type object []member

// member is one key and value of an object. The value is a string, an int, a
// bool, a nested object, a []any of those, or a []string.
type member struct {
	key   string
	value any
}

// set returns o with key set to value, appended at the end.
func (o object) set(key string, value any) object {
	return append(o, member{key: key, value: value})
}

// node converts v, one of the value types of member, to a YAML node.
func node(v any) *yaml.Node {
	switch v := v.(type) {
	case object:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, m := range v {
			n.Content = append(n.Content, scalar(m.key), node(m.value))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range v {
			n.Content = append(n.Content, node(e))
		}
		return n
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, e := range v {
			n.Content = append(n.Content, scalar(e))
		}
		return n
	case string:
		return scalar(v)
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
	default:
		// Only this package builds objects, from the types above.
		panic(fmt.Sprintf("overlay: unsupported value type %T", v))
	}
}

// scalar is a string node; the encoder quotes it where YAML would otherwise
// read a number or a boolean ("409", "true").
func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// get returns the value of o's member key, or nil.
func (o object) get(key string) any {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// quoteName returns name as a bracketed, single-quoted JSONPath member name,
// for example ['/pets/{petId}']. Quotes and backslashes are escaped with a
// backslash, which both the legacy yamlpath dialect and RFC 9535 accept.
// Control characters would need \u escapes, which yamlpath does not know, so
// they are refused.
func quoteName(name string) (string, error) {
	var b strings.Builder
	b.WriteString("['")
	for _, r := range name {
		switch {
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			return "", fmt.Errorf("name %q: a control character cannot be addressed by a JSONPath target", name)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString("']")
	return b.String(), nil
}
