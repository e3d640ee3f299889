module github.com/idemgen/idemgen/internal/cpumeter

go 1.25.0
