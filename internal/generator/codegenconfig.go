package generator

import (
	"fmt"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"go.yaml.in/yaml/v3"
)

// codegenFile is the shape of oapi-codegen's configuration file: its
// codegen.Configuration inline, plus the output file name that its command
// adds (the command's own type is in package main, so it is mirrored here).
type codegenFile struct {
	codegen.Configuration `yaml:",inline"`

	OutputFile string `yaml:"output,omitempty"`
}

// ParseCodegenConfig parses the YAML of an oapi-codegen configuration file
// the way oapi-codegen's command does (same YAML package, same leniency,
// same defaults), so that both tools see the same configuration. It returns
// the configuration and oapi-codegen's own output file name. Only the
// current configuration format is read; the deprecated flag-style one is not.
func ParseCodegenConfig(data []byte) (codegen.Configuration, string, error) {
	var f codegenFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return codegen.Configuration{}, "", fmt.Errorf("parse oapi-codegen config: %w", err)
	}
	return f.UpdateDefaults(), f.OutputFile, nil
}
