package validate

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Routes maps each path the service serves to its methods.
type Routes map[string]map[string]bool

// Serves reports whether method on path is routed.
func (r Routes) Serves(method, path string) bool {
	return r[path][method]
}

// ReadRoutes lists the routes of the service's OpenAPI document
// (service/openapi.json), which the service's own tests hold equal to the
// routes it serves: paths, and under each the operations by method.
func ReadRoutes(path string) (Routes, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}
	routes := Routes{}
	for p, ops := range doc.Paths {
		for m := range ops {
			if !methods[m] || !strings.HasPrefix(p, "/") {
				continue // path-level fields: parameters, summary, servers
			}
			if routes[p] == nil {
				routes[p] = map[string]bool{}
			}
			routes[p][strings.ToUpper(m)] = true
		}
	}
	if len(routes) == 0 {
		return nil, fmt.Errorf("%s: no operation under paths: not the service's OpenAPI document", path)
	}
	return routes, nil
}
