package idemop

// The API between the runtime and the code that idemgen generates has a
// version. A generated file states the version it was generated for, and
// compiles against every runtime whose range [MinVersion, MaxVersion] holds
// it (protobuf-go's protoimpl.EnforceVersion works the same way): adding API
// to the runtime raises MaxVersion and breaks no generated file; dropping
// support for old generated code raises MinVersion.
const (
	// MaxVersion is the newest version of generated code this runtime
	// supports; idemgen generates for it. Bump it on any change that
	// generated code calls.
	// Version 6 is the first release's: generated code calls package
	// idemgen (runtime/idemgen) for its plumbing and names the operation's
	// types here.
	MaxVersion = 6

	// MinVersion is the oldest version of generated code this runtime still
	// supports.
	MinVersion = 6
)

// EnforceVersion is used by generated code to check its version against
// the runtime's range at compile time: a conversion of a negative constant
// to it does not compile.
type EnforceVersion uint
