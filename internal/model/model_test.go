package model

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// op returns an operation named name with path parameters of type string.
func op(name string, params ...string) Operation {
	o := Operation{GoName: name, Method: "POST", Path: "/" + strings.ToLower(name)}
	for _, p := range params {
		o.PathParams = append(o.PathParams, Param{Name: p, Type: "string"})
	}
	return o
}

func TestAllocateNamesAvoidsParameters(t *testing.T) {
	put := op("PutThing", "key", "p", "call", "ctx", "s", "c")
	put.HasParams = true
	put.KeyParam = &KeyParam{Name: "Idempotency-Key", Field: "IdempotencyKey", Type: "string", Pointer: true, Fillable: true}
	put.OtherParams = true
	put.Bodies = []Body{{ContentType: "application/json", Kind: BodyJSON, Type: "PutThingJSONRequestBody", Field: "Body"}}
	f := File{Server: true, Strict: true, Client: true, Operations: []Operation{put, op("TagIt")}}
	if clashes := f.AllocateNames(nil); clashes != nil {
		t.Fatalf("clashes %v", clashes)
	}

	if f.Names.ServerReceiver != "s1" || f.Names.ClientReceiver != "c1" || f.Names.ServerType != "idempotentServer" {
		t.Errorf("file names %+v", f.Names)
	}
	got := f.Operations[0].Names.Client
	want := ClientLocals{Ctx: "ctx1", Params: "params", Body: "body", ContentType: "contentType", Opts: "opts",
		Call: "call1", Buf: "buf", Err: "err", Key: "key1", P: "p1", Resp: "resp", R: "r",
		Context: "context", HTTP: "http", IO: "io", Bytes: "bytes", Gen: "idemgen"}
	if got != want {
		t.Errorf("client locals\n got %+v\nwant %+v", got, want)
	}
	o := f.Operations[0]
	if s := o.ClientParams(); s != ", key string, p string, call string, ctx string, s string, c string, params *PutThingParams, body PutThingJSONRequestBody" {
		t.Errorf("ClientParams %q", s)
	}
	if s := o.ClientCallArgs(); s != `, key, p, call, ctx, s, c, &p1, "application/json", bytes.NewReader(buf)` {
		t.Errorf("ClientCallArgs %q", s)
	}
	if o.KeyExpr() != "call1.Key()" || o.KeyParamValue() != "&key1" {
		t.Errorf("KeyExpr %q, KeyParamValue %q", o.KeyExpr(), o.KeyParamValue())
	}
	if s := o.ServerParams(); s != ", key string, p string, call string, ctx string, s string, c string, params PutThingParams" {
		t.Errorf("ServerParams %q", s)
	}
	// A locals' name is fresh within its own method only.
	if l := f.Operations[1].Names.Client; l.Ctx != "ctx" || l.Call != "call" {
		t.Errorf("TagIt, without parameters, has locals %+v", l)
	}
	if len(f.Names.Aliases) != 0 {
		t.Errorf("aliases %v: no path parameter hides a package", f.Names.Aliases)
	}
}

func TestAllocateNamesPackageLevel(t *testing.T) {
	f := File{Server: true, Strict: true, Client: true, Operations: []Operation{
		op("PutThing"),
		op("TagIt", "putThingIdempotencyOp"),
	}}
	declared := map[string]bool{"putThingIdempotencyClientOp": true, "idempotentServer": true, "IdempotentClient": true, "TagItIdempotentResponse": true,
		"idempotentStrictServer": true, "NewStrictHandlerWithIdempotency": true}
	clashes := f.AllocateNames(declared)
	if want := []Clash{{Operation: -1, Name: "NewStrictHandlerWithIdempotency"}, {Operation: -1, Name: "IdempotentClient"}, {Operation: 1, Name: "TagItIdempotentResponse"}}; !reflect.DeepEqual(clashes, want) {
		t.Errorf("clashes %v, want %v", clashes, want)
	}
	n := f.Operations[0].Names
	if n.OpVar != "putThingIdempotencyOp1" || n.ClientOpVar != "putThingIdempotencyClientOp1" || n.StrictFunc != "putThingIdempotencyStrict" {
		t.Errorf("PutThing's package-level names %+v", n)
	}
	if f.Names.ServerType != "idempotentServer1" || f.Names.StrictType != "idempotentStrictServer1" || f.Names.StrictMW != "idempotencyStrictMiddleware" {
		t.Errorf("file names %+v", f.Names)
	}
}

// TestKeyParamCond: IdempotencyErrorHandler recognises the key headers
// that operations declare as parameters, each once.
func TestKeyParamCond(t *testing.T) {
	a, b, c := op("A"), op("B"), op("C")
	a.KeyParam = &KeyParam{Name: "Idempotency-Key"}
	b.KeyParam = &KeyParam{Name: "PayPal-Request-Id"}
	c.KeyParam = &KeyParam{Name: "Idempotency-Key"}
	f := File{Operations: []Operation{a, b, c}}
	if got, want := f.KeyParamCond("p"), `(p == "Idempotency-Key" || p == "PayPal-Request-Id")`; got != want {
		t.Errorf("KeyParamCond = %s, want %s", got, want)
	}
	f.Operations = []Operation{a}
	if got, want := f.KeyParamCond("p"), `p == "Idempotency-Key"`; got != want {
		t.Errorf("KeyParamCond = %s, want %s", got, want)
	}
	if f.Operations = []Operation{op("D")}; f.KeyParamNames() != nil || f.KeyParamCond("p") != "" {
		t.Errorf("no key parameter: %v, %q", f.KeyParamNames(), f.KeyParamCond("p"))
	}
}

// TestAllocateNamesAliasesHiddenPackages: a path parameter named like a
// package that the method body uses gets that package a second import, and
// only where the body uses it.
func TestAllocateNamesAliasesHiddenPackages(t *testing.T) {
	upload := op("Upload", "context", "io", "bytes", "idemgen")
	upload.Bodies = []Body{{ContentType: "application/octet-stream", Kind: BodyReader, Field: "Body"}}
	f := File{Client: true, Operations: []Operation{upload, op("Get", "io")}}
	f.AllocateNames(nil)
	l := f.Operations[0].Names.Client
	if l.Context != "context1" || l.IO != "io1" || l.Bytes != "bytes1" || l.HTTP != "http" || l.Gen != "idemgen1" {
		t.Errorf("Upload's packages: context %s, io %s, bytes %s, http %s, idemgen %s", l.Context, l.IO, l.Bytes, l.HTTP, l.Gen)
	}
	if g := f.Operations[1].Names.Client; g.IO != "io" {
		t.Errorf("Get, whose body does not read, names io %q", g.IO)
	}
	want := []string{`"bytes"`, `bytes1 "bytes"`, `"context"`, `context1 "context"`, `"io"`, `io1 "io"`, `"net/http"`, `"time"`, "",
		`idem "github.com/idemgen/idemgen/runtime"`, `"github.com/idemgen/idemgen/runtime/idemgen"`, `idemgen1 "github.com/idemgen/idemgen/runtime/idemgen"`, `"github.com/idemgen/idemgen/runtime/idemop"`}
	if got := f.Imports(); !reflect.DeepEqual(got, want) {
		t.Errorf("imports\n got %q\nwant %q", got, want)
	}
	if s := f.Operations[0].ClientCallArgs(); s != ", context, io, bytes, idemgen, contentType, bytes1.NewReader(buf)" {
		t.Errorf("ClientCallArgs %q", s)
	}

	// Without a client nothing is aliased: the server's body uses only http.
	s := File{Server: true, Operations: []Operation{op("Upload", "context", "io")}}
	s.AllocateNames(nil)
	if len(s.Names.Aliases) != 0 {
		t.Errorf("server-only aliases %v", s.Names.Aliases)
	}
}

func TestImportsTypeImports(t *testing.T) {
	f := File{Server: true, TypeImports: map[string]string{
		"openapi_types": "github.com/oapi-codegen/runtime/types",
		"gotime":        "time",
		"uuid":          "github.com/google/uuid",
	}, Operations: []Operation{op("A")}}
	f.AllocateNames(nil)
	want := []string{`"net/http"`, `"time"`, `gotime "time"`, "", `"github.com/google/uuid"`, `idem "github.com/idemgen/idemgen/runtime"`,
		`"github.com/idemgen/idemgen/runtime/idemgen"`, `"github.com/idemgen/idemgen/runtime/idemop"`, `"github.com/idemgen/idemgen/runtime/idemstore"`, `openapi_types "github.com/oapi-codegen/runtime/types"`}
	if got := f.Imports(); !reflect.DeepEqual(got, want) {
		t.Errorf("imports\n got %q\nwant %q", got, want)
	}
}

func TestLiterals(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", time.Hour: "time.Hour", 24 * time.Hour: "24 * time.Hour", 90 * time.Second: "90 * time.Second",
		1500 * time.Millisecond: "1500 * time.Millisecond", 3 * time.Microsecond: "3 * time.Microsecond", 7: "7 * time.Nanosecond",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
	if got := Ints([]int{409, 503}); got != "[]int{409, 503}" {
		t.Errorf("Ints: %q", got)
	}
	if got := Ints([]int{}); got != "[]int{}" {
		t.Errorf("Ints of none: %q", got)
	}
	if got := Strings([]string{"/a", `"q"`}); got != `[]string{"/a", "\"q\""}` {
		t.Errorf("Strings: %q", got)
	}
	for f, want := range map[float64]string{2: "2.0", 1.5: "1.5", 1e21: "1e+21"} {
		if got := Float(f); got != want {
			t.Errorf("Float(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestOperationText(t *testing.T) {
	o := op("CreatePet")
	o.Summary = "  Create a\n pet "
	if o.Sentence() != "Create a pet." || o.Route() != "POST /createpet" || o.Name() != "POST /createpet" {
		t.Errorf("Sentence %q, Route %q, Name %q", o.Sentence(), o.Route(), o.Name())
	}
	o.SpecID = "createPet"
	if o.Name() != "createPet" {
		t.Errorf("Name %q", o.Name())
	}
	o.Retry.RetryOn = []int{409, 429, 503}
	if doc := o.ClientRetryDoc(); !strings.Contains(doc, "Attempts that fail in transport or are answered 409, 429 or 503 are retried") {
		t.Errorf("ClientRetryDoc %q", doc)
	}
	o.Retry.RetryOn = []int{}
	if doc := o.ClientRetryDoc(); !strings.Contains(doc, "Attempts that fail in transport are retried") {
		t.Errorf("ClientRetryDoc without statuses %q", doc)
	}
}

// Every file states the runtime's newest version, the only one it
// supports: what a file holds does not matter while there is one.
func TestRuntimeVersion(t *testing.T) {
	for _, f := range []File{{Client: true}, {Initiators: true}, {Server: true}, {Receivers: true},
		{Server: true, Operations: []Operation{{Transient: []int{402}}}}} {
		if v := f.RuntimeVersion(); v != idemop.MaxVersion {
			t.Errorf("%+v states version %d, want the runtime's newest, %d", f, v, idemop.MaxVersion)
		}
	}
}
