// json: FunctionBench's json_dumps_loads, the body parsed as JSON and
// serialised again, n times (query n, default 1, at most 1000). Answer:
// application/json, the last serialisation (objects' keys sorted, numbers
// as they were written); a body that is not JSON is a 400.
package main

import (
	"bytes"
	"encoding/json"

	"faasched/functions/cgi"
)

func main() {
	n := cgi.Int(cgi.Query(), "n", 1, 1, 1000)
	doc := cgi.Body()
	for i := 0; i < n; i++ {
		decoder := json.NewDecoder(bytes.NewReader(doc))
		decoder.UseNumber()
		var value any
		if err := decoder.Decode(&value); err != nil {
			cgi.Fail(400, "the body is not JSON: %v", err)
		}
		if decoder.More() {
			cgi.Fail(400, "the body holds more than one JSON value")
		}
		out, err := json.Marshal(value)
		if err != nil {
			cgi.Fail(500, "cannot serialise: %v", err)
		}
		doc = out
	}
	cgi.Respond("application/json", append(doc, '\n'))
}
