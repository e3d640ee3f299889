package overlay

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemgen/idemgen/runtime/idemop"
	speakeasy "github.com/speakeasy-api/openapi/overlay"
	"gopkg.in/yaml.v3"
)

// TestQuoteName checks that a quoted name selects the same member, and only
// it, in both JSONPath dialects of oapi-codegen's overlay library.
func TestQuoteName(t *testing.T) {
	names := []string{
		"/pets/{petId}", "/it's", `/back\slash`, `/both\'`, "/a,b", "/a', 'b", "/[x]", "/ünï", "$.paths", `"dq"`,
	}
	var root yaml.Node
	doc := object{}
	for _, n := range names {
		doc = doc.set(n, object{}.set("post", object{}.set("operationId", n)))
	}
	doc = doc.set("/it", object{}.set("post", object{}.set("operationId", "decoy")))
	root.Kind = yaml.DocumentNode
	root.Content = []*yaml.Node{node(doc)}

	for _, dialect := range []string{speakeasy.JSONPathLegacy, speakeasy.JSONPathRFC9535} {
		o := &speakeasy.Overlay{Version: "1.0.0", JSONPathVersion: dialect}
		for _, n := range names {
			quoted, err := quoteName(n)
			if err != nil {
				t.Fatalf("quoteName(%q): %v", n, err)
			}
			target := "$" + quoted + ".post"
			p, err := o.NewPath(target, nil)
			if err != nil {
				t.Errorf("%s: %s: %v", dialect, target, err)
				continue
			}
			got := p.Query(&root)
			if len(got) != 1 || len(got[0].Content) != 2 || got[0].Content[1].Value != n {
				t.Errorf("%s: %s selected %d nodes, want the operation of %q", dialect, target, len(got), n)
			}
		}
	}
	if _, err := quoteName("/a\nb"); err == nil {
		t.Error("quoteName accepted a control character")
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour:                       "24h",
		90 * time.Minute:                     "1h30m",
		90 * time.Second:                     "1m30s",
		1500 * time.Millisecond:              "1s500ms",
		time.Hour + time.Second:              "1h1s",
		time.Microsecond:                     "1µs",
		7 * 24 * time.Hour:                   "168h",
		time.Hour + 30*time.Millisecond:      "1h30ms",
		-time.Second:                         "-1s",
		2*time.Minute + 250*time.Microsecond: "2m0.00025s",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestAppendParagraph(t *testing.T) {
	for _, tc := range []struct{ desc, want string }{
		{"", "P"},
		{"Text.", "Text.\n\nP"},
		{"Text.\n", "Text.\n\nP"},
		{"Text.\n\n", "Text.\n\nP"},
		{"  Text  ", "  Text  \n\nP"},
	} {
		got := appendParagraph(tc.desc, "P")
		if got != tc.want {
			t.Errorf("appendParagraph(%q) = %q, want %q", tc.desc, got, tc.want)
		}
		if !strings.HasPrefix(got, tc.desc) {
			t.Errorf("appendParagraph(%q) does not keep the text", tc.desc)
		}
	}
}

// TestProblemCodes checks the problem codes against the runtime's, so that
// the two cannot drift apart unnoticed.
func TestProblemCodes(t *testing.T) {
	want := []string{
		idemop.CodeMissingKey, idemop.CodeInvalidKey, idemop.CodeBodyUnreadable, idemop.CodeBadRequest, idemop.CodeConflict,
		idemop.CodePayloadTooLarge, idemop.CodeUnsupportedContentEncoding, idemop.CodeFingerprintMismatch, idemop.CodeStoreUnavailable,
		idemop.CodeStoreMisconfigured, idemop.CodeReconcileFailed, idemop.CodeRequestCancelled, idemop.CodeStoreCompletionFailed, idemop.CodeMissingCredential,
	}
	if got := problemCodes(); !slices.Equal(got, want) {
		t.Errorf("problemCodes() = %v, want %v", got, want)
	}
	if replayedHeader != idemop.HeaderReplayed || problemMediaType != idemop.ProblemContentType {
		t.Error("header or media type differs from the runtime's")
	}
}

const errorSpec = `
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /a:
    post:
      responses:
        "201": {description: ok}
  /b:
    $ref: "#/paths/~1a"
`

func TestBuildErrors(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(errorSpec))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ops  []Operation
		want string
	}{
		{"unknown path", []Operation{{Method: "POST", Path: "/x"}}, `operation POST /x: path "/x" is not in the document`},
		{"unknown method", []Operation{{Method: "put", Path: "/a"}}, "operation PUT /a: method PUT is not in the document"},
		{"no method", []Operation{{Path: "/a"}}, "operation  /a: no method"},
		{"two keys", []Operation{{Method: "POST", Path: "/a", KeyHeader: "K", KeyPointer: "/k"}},
			"operation POST /a: both a key header (K) and a key body pointer (/k)"},
		{"bad pointer", []Operation{{Method: "POST", Path: "/a", KeyPointer: "k"}},
			`operation POST /a: key body pointer "k": a JSON Pointer begins with /`},
		{"negative retention", []Operation{{Method: "POST", Path: "/a", Retention: -time.Second}},
			"operation POST /a: negative retention -1s"},
		{"twice", []Operation{{Method: "POST", Path: "/a"}, {Method: "post", Path: "/a"}}, "operation POST /a: listed twice"},
		{"path item ref", []Operation{{Method: "POST", Path: "/b"}},
			"operation POST /b: path item is a $ref (#/paths/~1a): the overlay cannot address its operations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(doc, "openapi.yaml", tc.ops)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Build: got error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Build(doc, "openapi.yaml", nil); !errors.Is(err, ErrNothingToAdd) {
		t.Errorf("Build without operations: got error %v, want ErrNothingToAdd", err)
	}
	if _, err := Build(nil, "openapi.yaml", nil); err == nil {
		t.Error("Build accepted a nil document")
	}
}

func TestProblemSchemaName(t *testing.T) {
	same := openapi3.NewSchemaRef("", nil)
	if err := same.UnmarshalJSON(mustJSON(t, plain(problemSchema("IdempotencyProblem2")))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		components openapi3.Components
		want       string
		add        bool
	}{
		{"none", openapi3.Components{}, "IdempotencyProblem", true},
		{"other schema", openapi3.Components{Schemas: openapi3.Schemas{"IdempotencyProblem": openapi3.NewStringSchema().NewRef()}}, "IdempotencyProblem2", true},
		{"same Go name", openapi3.Components{Schemas: openapi3.Schemas{"idempotency_problem": openapi3.NewStringSchema().NewRef()}}, "IdempotencyProblem2", true},
		{"a response", openapi3.Components{Responses: openapi3.ResponseBodies{"IdempotencyProblem": &openapi3.ResponseRef{}}}, "IdempotencyProblem2", true},
		{"ours already", openapi3.Components{Schemas: openapi3.Schemas{
			"IdempotencyProblem": openapi3.NewStringSchema().NewRef(), "IdempotencyProblem2": same,
		}}, "IdempotencyProblem2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, add := problemSchemaName(&openapi3.T{Components: &tc.components})
			if name != tc.want || add != tc.add {
				t.Errorf("problemSchemaName = %s, %t; want %s, %t", name, add, tc.want, tc.add)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
