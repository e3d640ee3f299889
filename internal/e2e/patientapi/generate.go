// Package patientapi is oapi-codegen's and idemgen's output for patient.yaml:
// a chi server and a client of one operation with a 5s lock and the
// client's default retry policy, used by the end-to-end patience test.
// Regenerate with go generate.

package patientapi

//go:generate go tool oapi-codegen -config cfg.yaml patient.yaml
//go:generate go tool idemgen -config cfg.yaml -o api.idem.gen.go patient.yaml
