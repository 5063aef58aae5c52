package validate

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// Routes maps each path the service serves to its methods ("*" for any).
type Routes map[string]map[string]bool

// Serves reports whether method on path is routed.
func (r Routes) Serves(method, path string) bool {
	return r[path][method] || r[path]["*"]
}

// chiMethods are the chi.Router methods named after an HTTP method.
var chiMethods = map[string]string{
	"Get": "GET", "Head": "HEAD", "Post": "POST", "Put": "PUT", "Patch": "PATCH",
	"Delete": "DELETE", "Options": "OPTIONS", "Connect": "CONNECT", "Trace": "TRACE",
}

// ReadRoutes parses the Go file that holds the service's addRoutes function
// and lists the routes registered in it: chi calls such as r.Get("/health", h),
// r.Method("GET", "/x", h), r.Handle("/x", h), r.Route("/api", func(r chi.Router) {...}),
// and net/http patterns such as mux.Handle("GET /health", h).
func ReadRoutes(path string) (Routes, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "addRoutes" || fn.Body == nil {
			continue
		}
		routes := Routes{}
		collectRoutes(fn.Body, "", routes)
		if len(routes) == 0 {
			return nil, fmt.Errorf("%s: addRoutes registers no route that this parser recognises", path)
		}
		return routes, nil
	}
	return nil, fmt.Errorf("%s: no func addRoutes", path)
}

func collectRoutes(body ast.Node, prefix string, routes Routes) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		name := sel.Sel.Name
		switch {
		case name == "Route" && len(call.Args) == 2:
			sub, isLit := call.Args[1].(*ast.FuncLit)
			if p, ok := stringArg(call, 0); ok && isLit {
				collectRoutes(sub.Body, prefix+p, routes)
				return false
			}
		case chiMethods[name] != "":
			if p, ok := stringArg(call, 0); ok {
				routes.add(chiMethods[name], prefix+p)
			}
		case name == "Method" || name == "MethodFunc":
			m, ok1 := stringArg(call, 0)
			p, ok2 := stringArg(call, 1)
			if ok1 && ok2 {
				routes.add(strings.ToUpper(m), prefix+p)
			}
		case name == "Handle" || name == "HandleFunc":
			if p, ok := stringArg(call, 0); ok {
				method := "*"
				if m, rest, found := strings.Cut(p, " "); found { // net/http "GET /path"
					method, p = m, strings.TrimSpace(rest)
				}
				routes.add(method, prefix+p)
			}
		}
		return true
	})
}

func (r Routes) add(method, path string) {
	if !strings.HasPrefix(path, "/") {
		return
	}
	if r[path] == nil {
		r[path] = map[string]bool{}
	}
	r[path][method] = true
}

func stringArg(call *ast.CallExpr, i int) (string, bool) {
	if i >= len(call.Args) {
		return "", false
	}
	lit, ok := call.Args[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
