module github.com/idemgen/idemgen

// The oldest Go release idemgen supports: a module that requires idemgen
// needs no newer one (testdata/requirer, built with it in CI).
go 1.25.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/getkin/kin-openapi v0.152.0
	github.com/idemgen/idemgen/runtime v0.0.0
	github.com/oapi-codegen/oapi-codegen/v2 v2.8.2
	// v9.22.0, not v9.23.0: v9.23.0 declares go 1.26.0, which would force
	// Go 1.26 on every module that requires idemgen. Users on Go 1.26 may
	// require v9.23.0 themselves.
	github.com/redis/go-redis/v9 v9.22.0
	github.com/speakeasy-api/openapi v1.24.0
	go.yaml.in/yaml/v3 v3.0.6
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dprotaso/go-yit v0.0.0-20220510233725-9ba8df137936 // indirect
	github.com/go-openapi/jsonpointer v0.23.1 // indirect
	github.com/go-openapi/swag/jsonname v0.26.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/idemgen/idemgen/lua v0.0.0 // indirect
	github.com/oasdiff/yaml v0.1.1 // indirect
	github.com/oasdiff/yaml3 v0.0.14 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/speakeasy-api/jsonpath v0.6.3 // indirect
	github.com/vmware-labs/yaml-jsonpath v0.3.2 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/mod v0.38.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	golang.org/x/tools v0.48.0 // indirect
)

replace (
	github.com/idemgen/idemgen/lua => ./lua
	github.com/idemgen/idemgen/runtime => ./runtime
)

tool (
	github.com/idemgen/idemgen/cmd/idemgen
	github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen
)
