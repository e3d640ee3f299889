package load

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"

	"github.com/idemgen/idemgen/internal/model"
)

// TestFrameworkFlags checks the framework table against oapi-codegen: each
// flag the table names is a generate: flag that chooses that framework,
// and each server flag oapi-codegen has is in the table (a framework it
// adds is noticed here, not by a user whose server gets no wrapper).
func TestFrameworkFlags(t *testing.T) {
	table := model.FrameworkFlags()
	typ := reflect.TypeFor[codegen.GenerateOptions]()
	var servers []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if strings.HasSuffix(name, "-server") && name != "strict-server" {
			servers = append(servers, name)
		}
	}
	slices.Sort(servers)
	if got := slices.Sorted(slices.Values(table)); !slices.Equal(got, servers) {
		t.Errorf("framework table flags %v; oapi-codegen's server flags %v", got, servers)
	}

	for _, flag := range table {
		var g codegen.GenerateOptions
		v := reflect.ValueOf(&g).Elem()
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); name == flag {
				v.Field(i).SetBool(true)
			}
		}
		fw, ok := model.FrameworkFor(generateFlags(g))
		if !ok || !slices.Contains(fw.Facts().Flags, flag) {
			t.Errorf("%s: FrameworkFor = %v, %v; want the framework whose row names it", flag, fw, ok)
		}
	}
	if _, ok := model.FrameworkFor(generateFlags(codegen.GenerateOptions{Client: true, Models: true, Strict: true})); ok {
		t.Error("FrameworkFor found a server in a config without a server flag")
	}
}
