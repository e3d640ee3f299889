module github.com/idemgen/idemgen/internal/storebench

go 1.25.0

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/idemgen/idemgen/internal/benchchart v0.0.0
	github.com/idemgen/idemgen/internal/cpumeter v0.0.0
	github.com/idemgen/idemgen/runtime v0.0.0
	github.com/idemgen/idemgen/runtime/mysqlstore v0.0.0
	github.com/idemgen/idemgen/runtime/pgstore v0.0.0
	github.com/idemgen/idemgen/runtime/redisstore v0.0.0
	github.com/jackc/pgx/v5 v5.12.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	golang.org/x/image v0.30.0 // indirect
	gonum.org/v1/plot v0.17.0 // indirect
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/idemgen/idemgen/lua v0.0.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	// v9.22.0, not v9.23.0: v9.23.0 declares go 1.26.0, which would force
	// Go 1.26 on every module that requires idemgen. Users on Go 1.26 may
	// require v9.23.0 themselves.
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace (
	github.com/idemgen/idemgen/internal/benchchart => ../benchchart
	github.com/idemgen/idemgen/internal/cpumeter => ../cpumeter
	github.com/idemgen/idemgen/lua => ../../lua
	github.com/idemgen/idemgen/runtime => ../../runtime
	github.com/idemgen/idemgen/runtime/mysqlstore => ../../runtime/mysqlstore
	github.com/idemgen/idemgen/runtime/pgstore => ../../runtime/pgstore
	github.com/idemgen/idemgen/runtime/redisstore => ../../runtime/redisstore
)
