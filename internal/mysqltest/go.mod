module github.com/idemgen/idemgen/internal/mysqltest

go 1.25.0

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/idemgen/idemgen/runtime/mysqlstore v0.0.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/idemgen/idemgen/runtime v0.0.0 // indirect
)

replace (
	github.com/idemgen/idemgen/internal/cpumeter => ../cpumeter
	github.com/idemgen/idemgen/lua => ../../lua
	github.com/idemgen/idemgen/runtime => ../../runtime
	github.com/idemgen/idemgen/runtime/mysqlstore => ../../runtime/mysqlstore
)
