// gzip: FunctionBench's gzip_compression, the body compressed at level
// (query level, 1 to 9, default 6). Answer: application/gzip, one gzip
// member holding the body.
package main

import (
	"bytes"
	"compress/gzip"

	"faasched/functions/cgi"
)

func main() {
	level := cgi.Int(cgi.Query(), "level", gzip.DefaultCompression, 1, 9)
	body := cgi.Body()
	var out bytes.Buffer
	writer, err := gzip.NewWriterLevel(&out, level)
	if err != nil {
		cgi.Fail(500, "%v", err)
	}
	writer.Write(body)
	if err := writer.Close(); err != nil {
		cgi.Fail(500, "%v", err)
	}
	cgi.Respond("application/gzip", out.Bytes())
}
