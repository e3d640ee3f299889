package lua_test

import (
	"strings"
	"testing"

	"github.com/idemgen/idemgen/lua"
)

// TestScriptsDocumentTheirInterface checks that every script is embedded,
// documents KEYS and ARGV in its header, and touches no key but KEYS[1].
func TestScriptsDocumentTheirInterface(t *testing.T) {
	scripts := map[string]string{
		"acquire":  lua.Acquire,
		"complete": lua.Complete,
		"release":  lua.Release,
		"extend":   lua.Extend,
		"inspect":  lua.Inspect,
	}
	for name, src := range scripts {
		if !strings.HasPrefix(src, "-- "+name+".lua:") {
			t.Errorf("%s.lua: header does not start with its name", name)
		}
		for _, want := range []string{"-- KEYS[1]", "-- ARGV[1]", "-- Returns"} {
			if want == "-- ARGV[1]" && !strings.Contains(src, "ARGV[") {
				continue // a script without arguments
			}
			if !strings.Contains(src, want) {
				t.Errorf("%s.lua: header lacks %q", name, want)
			}
		}
		if strings.Contains(src, "KEYS[2]") {
			t.Errorf("%s.lua: touches a second key; scripts must work on Redis Cluster", name)
		}
	}
}
