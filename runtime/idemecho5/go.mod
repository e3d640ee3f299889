module github.com/idemgen/idemgen/runtime/idemecho5

go 1.25.0

require (
	github.com/idemgen/idemgen/runtime v0.0.0
	github.com/labstack/echo/v5 v5.4.4
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/idemgen/idemgen/lua v0.0.0 // indirect
	// v9.22.0, not v9.23.0: v9.23.0 declares go 1.26.0, which would force
	// Go 1.26 on every module that requires idemgen. Users on Go 1.26 may
	// require v9.23.0 themselves.
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace (
	github.com/idemgen/idemgen/lua => ../../lua
	github.com/idemgen/idemgen/runtime => ..
)
