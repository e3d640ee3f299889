//go:build !unix

package loadtest

import "time"

// processCPU is not measured outside Unix; the report shows zero.
func processCPU() time.Duration { return 0 }
