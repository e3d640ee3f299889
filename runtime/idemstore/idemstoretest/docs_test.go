package idemstoretest_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsStoresIsATest: the Go code of docs/stores.md is this package's
// example_test.go, so it compiles and passes. Outside the repository (the
// module from its cache) the document is not there, and the test skips.
func TestDocsStoresIsATest(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/stores.md")
	if os.IsNotExist(err) {
		t.Skip("docs/stores.md is not beside this module")
	}
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/stores.md shows no Go code")
	}
	for _, b := range blocks {
		if !strings.Contains(string(src), string(b[1])) {
			t.Errorf("docs/stores.md shows Go code that example_test.go does not hold:\n%s", b[1])
		}
	}
}
