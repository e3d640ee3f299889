module github.com/idemgen/idemgen/internal/release

go 1.25.0

require golang.org/x/mod v0.38.0

require (
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/tools v0.48.0
)
