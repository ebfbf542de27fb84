// Command shape reports hand-written Go files over 600 lines and functions
// over 100 lines, the limits the project's code rules set. Test files and
// generated files (a "Code generated ... DO NOT EDIT." line) are left out.
// It prints one line per finding, "path:line: what", and exits 1 if any.
//
// Usage: go run ./tools/shape DIR...
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

const (
	maxFileLines = 600
	maxFuncLines = 100
)

var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func main() {
	var findings []string
	for _, root := range os.Args[1:] {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := check(path)
			findings = append(findings, f...)
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		os.Exit(1)
	}
}

// check returns the findings for one Go file; generated files have none.
func check(path string) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if generated.Match(src) {
		return nil, nil
	}
	var out []string
	if n := countLines(src); n > maxFileLines {
		out = append(out, fmt.Sprintf("%s:1: file has %d lines (limit %d)", path, n, maxFileLines))
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	ast.Inspect(file, func(n ast.Node) bool {
		var name string
		var body *ast.BlockStmt
		switch fn := n.(type) {
		case *ast.FuncDecl:
			name, body = fn.Name.Name, fn.Body
		case *ast.FuncLit:
			name, body = "func literal", fn.Body
		default:
			return true
		}
		if body == nil {
			return true
		}
		start, end := fset.Position(n.Pos()).Line, fset.Position(body.End()).Line
		if lines := end - start + 1; lines > maxFuncLines {
			out = append(out, fmt.Sprintf("%s:%d: %s has %d lines (limit %d)", path, start, name, lines, maxFuncLines))
		}
		return true
	})
	return out, nil
}

func countLines(src []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}
