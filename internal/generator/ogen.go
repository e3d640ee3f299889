package generator

import (
	"fmt"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

// Targets of Config.Target: the generator whose output the file wraps.
const (
	TargetOapiCodegen = "oapi-codegen" // the default: oapi-codegen's servers, clients and receivers
	TargetOgen        = "ogen"         // ogen's Server (github.com/ogen-go/ogen)
)

// OgenCodegen is the Config.Codegen of a file generated beside ogen's output
// in package pkg. ogen has no configuration file that names the package (its
// command line does), and oapi-codegen's loader only needs the package
// name and a server flag to describe every operation of the spec.
func OgenCodegen(pkg string) codegen.Configuration {
	return codegen.Configuration{
		PackageName: pkg,
		Generate:    codegen.GenerateOptions{StdHTTPServer: true},
	}.UpdateDefaults()
}

// validTarget reports what is wrong with target, nil when nothing is.
func validTarget(target string) error {
	switch target {
	case "", TargetOapiCodegen, TargetOgen:
		return nil
	}
	return fmt.Errorf("target %q: must be %s (the default) or %s", target, TargetOapiCodegen, TargetOgen)
}
