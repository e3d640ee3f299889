// Package docblocks holds the tests that keep the documents true to the
// repository: TestDocBlocks compiles the Go code blocks of README.md and
// docs/*.md against the repository's packages, so that a document cannot
// drift from the API it shows, and TestDocLinks checks that every relative
// link names a file that exists.
//
// How a block is read, by what precedes its opening fence:
//
//   - a block whose code is a whole file (it starts with a package clause)
//     is compiled as it stands;
//   - any other block is a fragment: it is compiled inside a context,
//     testdata/NAME.go, a file that declares what the fragment takes from
//     around it (imports, the generated package as api, the variables it
//     uses). NAME is the document's own name (docs/postgresql.md:
//     postgresql), or the one a line <!-- go:fragment NAME --> before the
//     fence gives. Statements go into a function of their own, top-level
//     declarations stay at the top level. What a fragment that shows
//     alternatives one after another cannot avoid is not an error: a
//     variable or import it leaves unused, a := that declares no new
//     variable;
//   - <!-- go:sketch WHY --> before the fence: not compiled (the names are
//     a reader's own, no package of the repository has them);
//   - <!-- setup:NAME --> before the fence: run by cmd/idemlocal's
//     TestSetupAsDocumented (or TestReleaseInstallsAsDocumented) instead;
//     <!-- ogen:NAME -->: run by internal/ogene2e's TestOgenDocAsWritten
//     instead.
//
// A context's first line, //docblocks:module DIR, names the module of this
// checkout whose requirements the context's imports resolve in.
package docblocks
