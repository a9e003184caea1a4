package ragsync_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// README.md's "Using the library" code is ExampleMatch's body, so it
// compiles (ExampleMatch is built with the tests) and runs
// (ExampleMatch_loopback plays the same code).
func TestREADMEShowsExampleMatch(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var body string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "ExampleMatch" {
			b := src[fset.Position(fn.Body.Lbrace).Offset+2 : fset.Position(fn.Body.Rbrace).Offset]
			lines := strings.Split(string(b), "\n")
			for i, l := range lines {
				lines[i] = strings.TrimPrefix(l, "\t")
			}
			body = strings.Join(lines, "\n")
		}
	}
	if body == "" {
		t.Fatal("no ExampleMatch in example_test.go")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+body+"```\n") {
		t.Errorf("README.md does not show ExampleMatch's code; it should show:\n```go\n%s```", body)
	}
}
