// hello-go: the C hello in Go, the smallest Go function: what a request
// costs when Go's runtime starts in every sandbox. Query: name (default
// "world"). Body: any; its length is reported. Answer: text/plain
// "hello, NAME (N bytes)".
package main

import (
	"fmt"

	"faasched/functions/cgi"
)

func main() {
	name := cgi.Query().Get("name")
	if name == "" {
		name = "world"
	}
	cgi.Respond("text/plain", []byte(fmt.Sprintf("hello, %s (%d bytes)\n", name, len(cgi.Body()))))
}
