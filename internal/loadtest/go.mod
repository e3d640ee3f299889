module github.com/idemgen/idemgen/internal/loadtest

go 1.25.0

require (
	github.com/go-chi/chi/v5 v5.5.0
	github.com/idemgen/idemgen/runtime v0.0.0
	github.com/oapi-codegen/runtime v1.8.0
	// v9.22.0, not v9.23.0: v9.23.0 declares go 1.26.0, which would force
	// Go 1.26 on every module that requires idemgen. Users on Go 1.26 may
	// require v9.23.0 themselves.
	github.com/redis/go-redis/v9 v9.22.0
)

require github.com/idemgen/idemgen/runtime/redisstore v0.0.0

require github.com/idemgen/idemgen/internal/benchchart v0.0.0

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/idemgen/idemgen/lua v0.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.32.0 // indirect
	gonum.org/v1/plot v0.17.0 // indirect
)

replace (
	github.com/idemgen/idemgen => ../..
	github.com/idemgen/idemgen/internal/benchchart => ../benchchart
	github.com/idemgen/idemgen/lua => ../../lua
	github.com/idemgen/idemgen/runtime => ../../runtime
	github.com/idemgen/idemgen/runtime/redisstore => ../../runtime/redisstore
)
