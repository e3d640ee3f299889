package canonjson

import (
	"bytes"
	"slices"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendCanonical appends the canonical form of raw to dst and reports
// whether raw is exactly one JSON value (surrounded by optional whitespace);
// if it is not, dst is returned unchanged.
//
// The canonical form is, byte for byte, what the fingerprint used before
// this canonicaliser existed: raw decoded by encoding/json into any (numbers
// as json.Number, duplicate members: the last wins, invalid UTF-8 replaced
// by U+FFFD) and re-encoded by json.Marshal (members sorted by key, no
// insignificant whitespace, numbers verbatim, strings escaped the way
// encoding/json escapes them). Keeping the very bytes keeps the
// fingerprints of records stored by earlier versions, so an upgrade in the
// middle of a retry sequence does not turn a retry into a 422. It accepts
// exactly the inputs that decoder accepts (nesting up to 10,000 levels).
//
// It works on the bytes: tokens are checked and copied, object members are
// reordered by moving their byte ranges, and nothing is decoded into Go
// values but member keys that need unescaping. The members and elements
// named by drop (parsed JSON Pointers) are left out: a member disappears, an
// array element leaves RemovedElement in its place (so later indexes keep
// their meaning), the empty pointer turns the whole document into null.
func AppendCanonical(dst, raw []byte, drop []Pointer) ([]byte, bool) {
	out, _, ok := Walk(dst, raw, drop, -1)
	return out, ok
}

// Walk is the one pass over a JSON document behind the fingerprint, the
// server's body key and the client's filling of it: it appends the
// canonical form of raw to dst as AppendCanonical does and, when find
// >= 0, also locates drop[find] in raw. The Located pointer is one of the
// dropped ones because the walk follows only those; both callers want its
// member out of the canonical form anyway (the fingerprint leaves out the
// body key, and the client has no use for the canonical form).
func Walk(dst, raw []byte, drop []Pointer, find int) ([]byte, Located, bool) {
	c := canonPool.Get().(*canonicalizer)
	defer c.free()
	c.src, c.pos, c.out, c.drop, c.depth = raw, 0, dst, drop, 0
	c.find, c.at = find, Located{}
	start := len(dst)
	whole := false
	c.live = c.live[:0]
	for i, p := range drop {
		whole = whole || len(p) == 0
		c.live = append(c.live, i)
	}
	c.skipSpace()
	if !c.pathValue(0, len(c.live)) {
		return dst, Located{}, false
	}
	c.skipSpace()
	if c.pos != len(c.src) {
		return dst, Located{}, false
	}
	out := c.out
	if whole {
		out = append(out[:start], "null"...)
	}
	c.out = nil
	return out, c.at, true
}

// Located is where a walk found the value a pointer names and the value
// its parent names (the pointer without its last token), as byte ranges of
// the source. Where a member is duplicated, on the pointer's path or at
// its end, the last one counts, as when decoding: the value of
// {"a":{"k":1},"a":{}} at /a/k is missing.
type Located struct {
	Value, Parent Span
}

// Span is the byte range [start, end) of a JSON value in the source. The
// zero Span means none: a value is never empty.
type Span struct{ Start, End int }

// Found reports whether s is a value.
func (s Span) Found() bool { return s.End > 0 }

// In returns the bytes of s in src, nil for none.
func (s Span) In(src []byte) []byte {
	if !s.Found() {
		return nil
	}
	return src[s.Start:s.End]
}

// RemovedElement stands for an array element left out by a
// fingerprint.ignore pointer. It is a NUL byte, which canonical JSON never
// contains (control characters inside strings are escaped), so a removed
// element can never hash like any JSON value in its place.
const RemovedElement = 0

// MaxDepth is encoding/json's nesting limit, kept so that exactly the
// documents it decodes are treated as JSON.
const MaxDepth = 10000

// canonicalizer is the state of one Walk call; pooled, so
// that its stacks are reused.
type canonicalizer struct {
	src   []byte
	pos   int
	out   []byte
	drop  []Pointer
	depth int
	find  int     // index into drop of the pointer to locate; -1 for none
	at    Located // what was located of drop[find] so far

	members []member // members of the objects being written, innermost last
	keys    []byte   // their decoded keys, innermost last
	live    []int    // indexes into drop of the pointers that match the current path, per level
	scratch []byte   // decoded string values; reordered members
}

// member is one object member written to out: its decoded key in keys and
// its canonical `"key":value` bytes in out.
type member struct {
	key0, key1 int
	out0, out1 int
}

// insertionSortMax is the most members sortMembers sorts by insertion
// (SortStableFunc does so too, in blocks of 20).
const insertionSortMax = 20

var canonPool = sync.Pool{New: func() any { return new(canonicalizer) }}

// free returns c to the pool unless it grew unusually large.
func (c *canonicalizer) free() {
	c.src, c.out, c.drop = nil, nil, nil
	if cap(c.scratch) > 64<<10 || cap(c.keys) > 64<<10 || cap(c.members) > 4096 || cap(c.live) > 4096 {
		return
	}
	c.members, c.keys, c.live, c.scratch = c.members[:0], c.keys[:0], c.live[:0], c.scratch[:0]
	canonPool.Put(c)
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// pathValue is value for the values on the path of some drop pointer, the
// few that can be Located (most values go to value directly). On the path
// of drop[find], depth tokens into it, the value replaces whatever an
// earlier duplicate member held, so what was located at or below it is
// forgotten first.
func (c *canonicalizer) pathValue(l0, l1 int) bool {
	if c.find < 0 || !slices.Contains(c.live[l0:l1], c.find) {
		return c.value(l0, l1)
	}
	n, d := len(c.drop[c.find]), c.depth
	c.at.Value = Span{}
	if d < n {
		c.at.Parent = Span{}
	}
	start := c.pos
	if !c.value(l0, l1) {
		return false
	}
	switch d {
	case n:
		c.at.Value = Span{start, c.pos}
	case n - 1:
		c.at.Parent = Span{start, c.pos}
	}
	return true
}

// value writes the canonical form of the value at pos. live[l0:l1] are the
// drop pointers matching the path so far (depth tokens of them).
func (c *canonicalizer) value(l0, l1 int) bool {
	if c.pos >= len(c.src) {
		return false
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.object(l0, l1)
	case b == '[':
		return c.array(l0, l1)
	case b == '"':
		return c.stringValue()
	case b == '-' || ('0' <= b && b <= '9'):
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	}
	return false
}

func (c *canonicalizer) literal(lit string) bool {
	if !bytes.HasPrefix(c.src[c.pos:], []byte(lit)) {
		return false
	}
	c.out = append(c.out, lit...)
	c.pos += len(lit)
	return true
}

// number copies a number token verbatim after checking its grammar.
func (c *canonicalizer) number() bool {
	s, i := c.src, c.pos
	if s[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	c.out = append(c.out, s[c.pos:i]...)
	c.pos = i
	return true
}

// enter and leave track the nesting depth.
func (c *canonicalizer) enter() bool {
	c.depth++
	c.pos++
	return c.depth <= MaxDepth
}

func (c *canonicalizer) leave() { c.depth--; c.pos++ }

// descend pushes the pointers of live[l0:l1] whose token at this depth
// matches (by name, or by index when index >= 0) and reports the pushed
// range and whether one of them ends here (the member or element is
// dropped).
func (c *canonicalizer) descend(l0, l1 int, name []byte, index int) (n0, n1 int, dropped bool) {
	n0 = len(c.live)
	d := c.depth - 1
	for _, i := range c.live[l0:l1] {
		p := c.drop[i]
		if len(p) <= d {
			continue
		}
		t := p[d]
		if (index < 0 && t.Name == string(name)) || (index >= 0 && t.Index == index) {
			if len(p) == d+1 {
				dropped = true
			}
			c.live = append(c.live, i)
		}
	}
	return n0, len(c.live), dropped
}

func (c *canonicalizer) object(l0, l1 int) bool {
	if !c.enter() {
		return false
	}
	open := len(c.out)
	c.out = append(c.out, '{')
	m0, k0 := len(c.members), len(c.keys)
	defer func() { c.members, c.keys = c.members[:m0], c.keys[:k0] }()
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.leave()
		c.out = append(c.out, '}')
		return true
	}
	for {
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return false
		}
		mark := len(c.out)
		if len(c.members) > m0 {
			c.out = append(c.out, ',')
		}
		out0 := len(c.out)
		key0 := len(c.keys)
		if end := c.plainString(); end > 0 {
			c.keys = append(c.keys, c.src[c.pos+1:end-1]...)
			c.out = append(c.out, c.src[c.pos:end]...)
			c.pos = end
		} else {
			var ok bool
			if c.keys, ok = c.decodeString(c.keys); !ok {
				return false
			}
			c.out = AppendString(c.out, c.keys[key0:])
		}
		key := c.keys[key0:]
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return false
		}
		c.pos++
		c.out = append(c.out, ':')
		c.skipSpace()
		live := len(c.live)
		ok, dropped := false, false
		if l1 > l0 {
			var n0, n1 int
			n0, n1, dropped = c.descend(l0, l1, key, -1)
			ok = c.pathValue(n0, n1)
		} else {
			ok = c.value(0, 0)
		}
		if !ok {
			return false
		}
		c.live = c.live[:live]
		if dropped {
			c.out, c.keys = c.out[:mark], c.keys[:key0]
		} else {
			c.members = append(c.members, member{key0: key0, key1: len(c.keys), out0: out0, out1: len(c.out)})
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return false
		}
		if c.src[c.pos] == '}' {
			break
		}
		if c.src[c.pos] != ',' {
			return false
		}
		c.pos++
		c.skipSpace()
	}
	c.leave()
	c.sortMembers(open, c.members[m0:])
	c.out = append(c.out, '}')
	return true
}

// sortMembers rewrites the members written after out[open] ('{') in key
// order, keeping only the last of members with equal keys, as a decoded map
// re-encoded by encoding/json would.
func (c *canonicalizer) sortMembers(open int, ms []member) {
	key := func(m member) []byte { return c.keys[m.key0:m.key1] }
	sorted := true
	for i := 1; i < len(ms) && sorted; i++ {
		sorted = bytes.Compare(key(ms[i-1]), key(ms[i])) < 0 // equal keys: a duplicate to drop
	}
	if sorted {
		return
	}
	if len(ms) <= insertionSortMax {
		// Stable, as SortStableFunc, without a call per comparison.
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && bytes.Compare(key(ms[j-1]), key(ms[j])) > 0; j-- {
				ms[j-1], ms[j] = ms[j], ms[j-1]
			}
		}
	} else {
		slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(key(a), key(b)) })
	}
	c.scratch = append(c.scratch[:0], c.out[open+1:]...)
	base := open + 1
	c.out = c.out[:base]
	first := true
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(key(m), key(ms[i+1])) {
			continue // a later duplicate wins
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.out = append(c.out, c.scratch[m.out0-base:m.out1-base]...)
	}
}

func (c *canonicalizer) array(l0, l1 int) bool {
	if !c.enter() {
		return false
	}
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.leave()
		c.out = append(c.out, ']')
		return true
	}
	for i := 0; ; i++ {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		mark := len(c.out)
		live := len(c.live)
		ok, dropped := false, false
		if l1 > l0 {
			var n0, n1 int
			n0, n1, dropped = c.descend(l0, l1, nil, i)
			ok = c.pathValue(n0, n1)
		} else {
			ok = c.value(0, 0)
		}
		if !ok {
			return false
		}
		c.live = c.live[:live]
		if dropped {
			c.out = append(c.out[:mark], RemovedElement)
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return false
		}
		if c.src[c.pos] == ']' {
			break
		}
		if c.src[c.pos] != ',' {
			return false
		}
		c.pos++
		c.skipSpace()
	}
	c.leave()
	c.out = append(c.out, ']')
	return true
}

// stringValue writes the string at pos in canonical form.
func (c *canonicalizer) stringValue() bool {
	if end := c.plainString(); end > 0 {
		c.out = append(c.out, c.src[c.pos:end]...)
		c.pos = end
		return true
	}
	var ok bool
	if c.scratch, ok = c.decodeString(c.scratch[:0]); !ok {
		return false
	}
	c.out = AppendString(c.out, c.scratch)
	return true
}

// plainString returns the end (after the closing quote) of the string at
// pos if it is printable ASCII that encoding/json writes as is, without
// escapes: its canonical form is itself. It returns 0 for any other string.
func (c *canonicalizer) plainString() int {
	s := c.src
	i := c.pos + 1
	for i < len(s) && plainByte[s[i]] {
		i++
	}
	if i < len(s) && s[i] == '"' {
		return i + 1
	}
	return 0
}

// plainByte tells the bytes a plain string (plainString) holds as they
// are: printable ASCII but for '"', '\\', '<', '>' and '&'.
var plainByte = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// decodeString checks the string at pos and appends its decoded value to
// dst as encoding/json decodes it: invalid UTF-8 and unpaired surrogate
// escapes become U+FFFD.
func (c *canonicalizer) decodeString(dst []byte) ([]byte, bool) {
	s := c.src
	i := c.pos + 1
	for i < len(s) {
		b := s[i]
		switch {
		case b == '"':
			c.pos = i + 1
			return dst, true
		case b < 0x20:
			return dst, false
		case b == '\\':
			if i+1 >= len(s) {
				return dst, false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i+2:])
				if r < 0 {
					return dst, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2 := hex4Escape(s[i:]); r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, false
			}
			i += 2
		case b < utf8.RuneSelf:
			dst = append(dst, b)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			dst = utf8.AppendRune(dst, r) // RuneError for invalid UTF-8
			i += size
		}
	}
	return dst, false
}

// DecodeString returns the value of s, a JSON string token that a walk
// has checked, decoded by decodeString.
func DecodeString(s []byte) string {
	c := canonicalizer{src: s}
	if end := c.plainString(); end == len(s) {
		return string(s[1 : end-1])
	}
	b, _ := c.decodeString(nil)
	return string(b)
}

// hex4 parses four hex digits; -1 if s does not start with them.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, b := range s[:4] {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(b)
	}
	return r
}

// hex4Escape parses a \uXXXX escape; -1 if s does not start with one.
func hex4Escape(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	return hex4(s[2:])
}

// AppendString appends s quoted as json.Marshal quotes a string: ", \
// and control characters escaped (\b \f \n \r \t by name), <, > and & as
// \u003c, \u003e, \u0026, U+2028 and U+2029 escaped, each byte of invalid
// UTF-8 as \ufffd (decoded strings have none), everything else as is.
func AppendString(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			start = i + size
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
