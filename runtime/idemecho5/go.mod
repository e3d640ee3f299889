module github.com/idemgen/idemgen/runtime/idemecho5

go 1.25.0

require (
	github.com/idemgen/idemgen/runtime v0.0.0
	github.com/labstack/echo/v5 v5.4.4
)

require github.com/stretchr/testify v1.12.1 // indirect

replace (
	github.com/idemgen/idemgen/lua => ../../lua
	github.com/idemgen/idemgen/runtime => ..
)
