package idemop

// The API between this package and the code that idemgen generates has a
// version. A generated file states the version it was generated for, and
// compiles against every runtime whose range [MinVersion, MaxVersion] holds
// it (protobuf-go's protoimpl.EnforceVersion works the same way): adding API
// to the runtime raises MaxVersion and breaks no generated file; dropping
// support for old generated code raises MinVersion.
const (
	// MaxVersion is the newest version of generated code this runtime
	// supports; idemgen generates for it. Bump it on any change that
	// generated code calls.
	// Version 4 added Operation.Provider and Operation.KeyPointers, which
	// the receivers of webhooks and callbacks set, and Operation.Final and
	// Operation.Transient, which a storage policy sets; files without them
	// still state 3. Version 5 added ClientOperation.Lock, which client
	// helpers and webhook initiators set; server-only files state 3 or 4.
	MaxVersion = 5

	// MinVersion is the oldest version of generated code this runtime still
	// supports.
	MinVersion = 2

	// GenVersion stays 2: files generated for version 2, before the range
	// existed, compare with it exactly. Newer files use MinVersion and
	// MaxVersion.
	GenVersion = 2
)

// EnforceVersion is used by generated code to check its version against
// the runtime's range at compile time: a conversion of a negative constant
// to it does not compile.
type EnforceVersion uint
