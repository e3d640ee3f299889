module github.com/idemgen/idemgen/runtime

go 1.25.0
