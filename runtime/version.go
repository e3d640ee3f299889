package idem

import "github.com/idemgen/idemgen/runtime/idemop"

// The API between this package and the code that idemgen generates has a
// version range, [MinVersion] to [MaxVersion]; see idemop's version.go
// for what each version added. A generated file states the version it was
// generated for and compiles against every runtime whose range holds it.
const (
	// MaxVersion is the newest version of generated code this runtime
	// supports; idemgen generates for it.
	MaxVersion = idemop.MaxVersion

	// MinVersion is the oldest version of generated code this runtime still
	// supports.
	MinVersion = idemop.MinVersion

	// GenVersion stays 2: files generated for version 2, before the range
	// existed, compare with it exactly.
	GenVersion = idemop.GenVersion
)

// EnforceVersion is used by generated code to check its version against
// the runtime's range at compile time: a conversion of a negative constant
// to it does not compile.
type EnforceVersion = idemop.EnforceVersion
