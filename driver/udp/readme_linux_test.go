//go:build linux

package udp_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExample checks that the README's library example is the body
// of Example, line for line (indentation aside), so that the README shows
// code that go test runs.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "## Using the library\n")
	if !ok {
		t.Fatal("README.md has no library section")
	}
	_, block, ok := strings.Cut(sec, "```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README.md's library section has no Go block")
	}
	src, err := os.ReadFile("example_linux_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "func Example() {\n")
	body, _, ok2 = strings.Cut(body, "\t// Output:")
	if !ok || !ok2 {
		t.Fatal("example_linux_test.go has no Example with an Output")
	}
	norm := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	got, want := norm(block), norm(body)
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("README line %d is %q; Example's is %q", i+1, g, w)
		}
	}
}
