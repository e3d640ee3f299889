// Package model is the plain-data description of what idemgen generates:
// the idempotent operations of one spec, with the Go names oapi-codegen
// gives them and their resolved x-idempotent settings. The loader builds it;
// templates read it, and only it. Decisions that depend on several fields
// live in methods here, not in template conditionals.
package model

import (
	"time"
)

// File is one generated file.
type File struct {
	Package string // Go package name, from the oapi-codegen config
	Source  string // the spec as named on the command line, for the header

	Server bool // emit the ServerInterface decorator, for Framework
	Strict bool // emit the strict-server middleware of the net/http routers
	// FrameworkStrict: emit the strict-server middleware of Framework
	// (not the net/http routers).
	FrameworkStrict bool
	Client          bool // emit the client helpers
	// Receivers: decorate the webhook and callback receiver interfaces
	// (oapi-codegen generates them with every server flag, strict or not).
	Receivers bool
	// Initiators: wrap the webhook and callback initiators (oapi-codegen
	// generates them with the client).
	Initiators bool
	// Ogen: the file wraps ogen's output instead of oapi-codegen's
	// (ForOgen): its Server when OgenServer, its Client when OgenClient.
	Ogen, OgenServer, OgenClient bool
	// OgenWebhooks are the marked webhooks, which the file wraps in
	// ogen's WebhookServer; nil when there are none.
	OgenWebhooks *EventGroup

	// Framework is the web framework of oapi-codegen's ServerInterface;
	// the zero value is the net/http routers'.
	Framework Framework

	// API is the API's identity in storage keys (idemop.Operation.API): the
	// document-level x-idempotent api, else a slug of info.title.
	API string

	Operations []Operation // sorted by GoName

	// Events are the marked webhook and callback operations, webhooks
	// first (see EventGroups).
	Events []EventGroup

	// Names are the names the generated code chooses itself (AllocateNames).
	Names FileNames

	// Unwrapped says why the file wraps no operation ("" when it wraps
	// some): it then holds its header and version guard alone (see Bare).
	Unwrapped string
	// Note is what the command tells its user about the file, "" for
	// nothing: that a configuration which asks for a server or client got
	// none, as Unwrapped says.
	Note string

	// TypeImports maps the package names used in oapi-codegen's Go types
	// (path parameters such as openapi_types.UUID) to their import paths.
	TypeImports map[string]string
}

// Operation is one idempotent operation.
type Operation struct {
	GoName  string // oapi-codegen's name: ServerInterface method, XRequestObject prefix
	SpecID  string // operationId as written in the spec ("" when absent)
	Method  string // upper case
	Path    string // path template from the spec
	Summary string // one line, may be empty

	KeyHeader  string // header carrying the key ("" for a body key)
	KeyPointer string // JSON Pointer of a body key ("" for a header key)
	// KeyPointers are the JSON Pointers of a composite body key (webhooks
	// and callbacks), with KeyHeader and KeyPointer "".
	KeyPointers []string
	Optional    bool // a request without a key runs unprotected
	Retention   time.Duration
	Lock        time.Duration
	Wait        time.Duration

	FingerprintIgnore  []string
	FingerprintHeaders []string

	// Final and Transient are the storage policy as idemop.Operation takes
	// it: nil where the runtime's default applies (idemop.DefaultFinal, no
	// transient statuses).
	Final     []string
	Transient []int

	Retry Retry

	// Security lists the schemes of the operation's effective security
	// requirements (its own, else the document's), sorted by name; nil
	// when it requires none.
	Security []Security

	PathParams []Param // in path order, as oapi-codegen passes them
	HasParams  bool    // oapi-codegen declares GoName+"Params" (query, header or cookie parameters)
	// KeyParam is the header parameter that the spec declares for the key
	// header, nil when it declares none.
	KeyParam *KeyParam
	// OtherParams is true when the operation has parameters besides KeyParam.
	OtherParams bool

	Bodies       []Body // request bodies, sorted by content type as oapi-codegen does
	ResponseType string // client response type, e.g. CreatePetResponse

	// Names are the names its generated code chooses itself (File.AllocateNames).
	Names OpNames

	// Event is set on a webhook or callback operation.
	Event *Event

	// ClientForm is set on the copy of the operation that File.ClientMethods
	// makes for its typed form variant.
	ClientForm bool
}

// Retry is the client helper's default retry policy.
type Retry struct {
	MaxAttempts     int
	InitialInterval time.Duration
	MaxInterval     time.Duration
	Multiplier      float64
	MaxElapsed      time.Duration
	AttemptTimeout  time.Duration
	RetryOn         []int
}

// Security is one security scheme an operation requires, as the runtime's
// idemop.Security declares it.
type Security struct {
	Scheme string // name under components.securitySchemes
	Type   string // apiKey, http, oauth2, openIdConnect or mutualTLS
	In     string // apiKey: header, query or cookie
	Name   string // apiKey: the header, query parameter or cookie name
}

// Param is a path parameter as it appears in oapi-codegen's signatures.
type Param struct {
	Name string // Go variable name
	Type string // Go type
}

// KeyParam is the key header declared as a parameter: a field of the
// operation's Params struct.
type KeyParam struct {
	Name     string // header name as declared
	Field    string // Go field name in GoName+"Params"
	Type     string // Go type of the field, without the * of an optional one
	Pointer  bool   // the field is a pointer (an optional parameter)
	Fillable bool   // Type is a local name for a string: the key converts to it
	Required bool   // declared required: oapi-codegen's wrapper rejects a request without it
}

// BodyKind is how oapi-codegen hands a request body to a handler.
type BodyKind int

// The kinds of request bodies.
const (
	BodyJSON      BodyKind = iota + 1 // decoded into a typed value
	BodyForm                          // application/x-www-form-urlencoded, decoded into a struct
	BodyText                          // text/plain, held as a string
	BodyReader                        // any other media type, an io.Reader
	BodyMultipart                     // multipart/*, a *multipart.Reader
)

// Body is one request body media type of an operation.
type Body struct {
	ContentType string
	Kind        BodyKind
	Type        string // oapi-codegen's request body type, e.g. CreatePetJSONRequestBody ("" for BodyReader and BodyMultipart)
	Field       string // field of the strict XRequestObject that holds it
	// String: a BodyText whose Go type is a string, which the client sends
	// as its bytes (oapi-codegen gives a text body of another schema, an
	// array say, a type of that schema).
	String bool
}
