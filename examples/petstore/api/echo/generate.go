package echoapi

//go:generate go tool oapi-codegen -config cfg.yaml ../openapi.yaml
//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go ../openapi.yaml
