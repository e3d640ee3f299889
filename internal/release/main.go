// Command release publishes idemgen's modules at one version, or rehearses
// that on disk.
//
// The repository's go.mod files require each other at v0.0.0 and resolve
// one another through replace lines, which a dependent module ignores. A
// release sets every requirement of a published module (the directories
// listed in scripts/published-modules) to the release's version and drops
// those replace lines, then tags each module. Run from a clean checkout of
// the commit to release:
//
//	go run ./internal/release -version v0.1.0 tag
//
// rewrites the published go.mod files, commits them ("release v0.1.0")
// and tags every published module (v0.1.0 for the root, runtime/v0.1.0,
// runtime/pgstore/v0.1.0, ...); pushing the commit and the tags publishes
// them (the module proxy fetches a tag on its first request).
//
//	go run ./internal/release -version v0.1.0 -proxy DIR
//
// writes the same modules, as that release would publish them, into a
// module proxy on disk, changing nothing in the checkout: each module's
// .info, .mod and .zip (the zip made by golang.org/x/mod/zip, with the
// rules the go command checks), from the files git tracks. With
// GOPROXY=file://DIR,https://proxy.golang.org and GONOSUMDB naming
// github.com/idemgen/idemgen, a fresh module installs the release as a user
// would (the rehearsal test in cmd/idemlocal does).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	version := flag.String("version", "", "the release's version, such as v0.1.0")
	proxy := flag.String("proxy", "", "write the release into a module proxy in this directory instead of tagging")
	root := flag.String("C", ".", "the repository's root")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: release -version vX.Y.Z (-proxy DIR | tag)\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	r, err := open(*root, *version)
	if err == nil {
		switch {
		case *proxy != "" && flag.NArg() == 0:
			err = r.writeProxy(*proxy)
		case *proxy == "" && flag.NArg() == 1 && flag.Arg(0) == "tag":
			err = r.tag()
		default:
			flag.Usage()
			os.Exit(2)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}
