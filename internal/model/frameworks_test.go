package model

import (
	"strings"
	"testing"
)

// TestFrameworkTableRows checks that each framework's row says what the
// templates need: a framework other than the net/http routers names its
// package, import, adapter and context type, and the net/http routers
// name none (the templates tell the two apart by Adapter).
func TestFrameworkTableRows(t *testing.T) {
	for fw, x := range frameworks {
		if len(x.Flags) == 0 {
			t.Errorf("framework %d: no generate: flag chooses it", fw)
		}
		if Framework(fw) == NetHTTP {
			if x.Pkg != "" || x.Import != "" || x.Adapter != "" || x.Ctx != "" {
				t.Errorf("net/http routers: %+v, want no framework package", x)
			}
			continue
		}
		if x.Pkg == "" || !strings.Contains(x.Import, "/"+x.Pkg) {
			t.Errorf("%s: package %q does not match its import %q", x.Flags[0], x.Pkg, x.Import)
		}
		if !strings.HasPrefix(x.Adapter, "idem") || strings.Count(x.Ctx, "%s") != 1 {
			t.Errorf("%s: adapter %q, context type %q", x.Flags[0], x.Adapter, x.Ctx)
		}
	}
}
