package idem

// SupportPackageIsVersion1 is referenced by generated code so that a file
// generated for another version of this package fails to compile instead of
// misbehaving at run time. Bump it (and the generator's guard) on any change
// to the API that generated code calls.
const SupportPackageIsVersion1 = true
