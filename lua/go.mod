module github.com/idemgen/idemgen/lua

go 1.25.0
