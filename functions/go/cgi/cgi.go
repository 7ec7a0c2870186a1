// Package cgi is what every Go function of the suite shares: the request
// as a CGI program sees it (the query in QUERY_STRING, the body on
// standard input) and the response as one writes it (a header block, a
// blank line, the body on standard output).
package cgi

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
)

// Query is the request's query, parsed; a malformed one is a 400.
func Query() url.Values {
	q, err := url.ParseQuery(os.Getenv("QUERY_STRING"))
	if err != nil {
		Fail(400, "bad query: %v", err)
	}
	return q
}

// Body is the request's body, whole.
func Body() []byte {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		Fail(500, "cannot read the body: %v", err)
	}
	return body
}

// Int is query key's integer value within [min, max], or def if absent;
// anything else is a 400.
func Int(q url.Values, key string, def, min, max int) int {
	text := q.Get(key)
	if text == "" {
		return def
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < min || n > max {
		Fail(400, "%s must be an integer from %d to %d", key, min, max)
	}
	return n
}

// Respond writes a 200 response of contentType and ends the program.
func Respond(contentType string, body []byte) {
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "Content-Type: %s\n\n", contentType)
	out.Write(body)
	out.Flush()
	os.Exit(0)
}

// Fail writes a plain-text response of status (a CGI Status line) and
// ends the program; the exit status stays 0, since the program did its
// job: it answered.
func Fail(status int, format string, args ...any) {
	fmt.Printf("Status: %d %s\nContent-Type: text/plain\n\n", status, statusText(status))
	fmt.Printf(format+"\n", args...)
	os.Exit(0)
}

func statusText(status int) string {
	switch status {
	case 400:
		return "Bad Request"
	case 415:
		return "Unsupported Media Type"
	default:
		return "Internal Server Error"
	}
}
