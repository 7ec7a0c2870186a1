// template: FunctionBench's chameleon, an HTML table rendered by a
// template that escapes what it is given. The body, if any, is JSON
// {"title": TEXT, "rows": [[TEXT, ...], ...]}; without one the table is
// generated: rows by cols cells (query rows and cols, default 10 and 10,
// each at most 1000) reading "ROW,COL". Answer: text/html.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"

	"faasched/functions/cgi"
)

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1>
<table>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
</body></html>
`))

type table struct {
	Title string     `json:"title"`
	Rows  [][]string `json:"rows"`
}

func main() {
	q := cgi.Query()
	body := cgi.Body()
	var t table
	if len(bytes.TrimSpace(body)) > 0 {
		decoder := json.NewDecoder(bytes.NewReader(body))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&t); err != nil {
			cgi.Fail(400, "the body is not a table: %v", err)
		}
	} else {
		rows := cgi.Int(q, "rows", 10, 0, 1000)
		cols := cgi.Int(q, "cols", 10, 0, 1000)
		t.Title = fmt.Sprintf("%d by %d", rows, cols)
		t.Rows = make([][]string, rows)
		for r := range t.Rows {
			t.Rows[r] = make([]string, cols)
			for c := range t.Rows[r] {
				t.Rows[r][c] = fmt.Sprintf("%d,%d", r, c)
			}
		}
	}
	var out bytes.Buffer
	if err := page.Execute(&out, t); err != nil {
		cgi.Fail(500, "%v", err)
	}
	cgi.Respond("text/html; charset=utf-8", out.Bytes())
}
