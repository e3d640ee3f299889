package lua_test

import (
	"strings"
	"testing"

	"github.com/idemgen/idemgen/lua"
)

// TestStepScriptsDocumentTheirInterface checks the journal's scripts (and
// forget.lua, which deletes a journal with its record) as
// TestScriptsDocumentTheirInterface checks the others, except that they
// document and touch a second key, and no third.
func TestStepScriptsDocumentTheirInterface(t *testing.T) {
	for name, src := range map[string]string{"step": lua.Step, "steps": lua.Steps, "forget": lua.Forget} {
		if !strings.HasPrefix(src, "-- "+name+".lua:") {
			t.Errorf("%s.lua: header does not start with its name", name)
		}
		for _, want := range []string{"-- KEYS[1]", "-- KEYS[2]", "-- ARGV[1]", "-- Returns"} {
			if !strings.Contains(src, want) {
				t.Errorf("%s.lua: header lacks %q", name, want)
			}
		}
		if strings.Contains(src, "KEYS[3]") {
			t.Errorf("%s.lua: touches a third key", name)
		}
	}
}
