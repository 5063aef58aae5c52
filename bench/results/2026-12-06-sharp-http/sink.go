//go:build ignore

// sink: reads a POST's body into a buffer of its Content-Length and
// answers its length: the floor of receiving an upload.
package main

import (
	"bytes"
	"fmt"
	"net/http"
	"time"
)

func main() {
	var total time.Duration
	var n int
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t := time.Now()
		buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+512))
		buf.ReadFrom(r.Body)
		total += time.Since(t)
		n++
		fmt.Fprintf(w, "%d %.3f\n", buf.Len(), float64(total.Microseconds())/1000/float64(n))
	})
	http.ListenAndServe("127.0.0.1:8097", nil)
}
