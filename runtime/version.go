package idem

// GenVersion is the version of the API between this package and the code
// that idemgen generates. idemgen writes the GenVersion it was built with
// into every file it generates, in two constants that overflow unless it
// equals this GenVersion, so that a file generated for another version of
// this package fails to compile instead of misbehaving at run time. Bump it
// on any change to the API that generated code calls.
const GenVersion = 3
