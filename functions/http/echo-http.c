/*
 * echo-http: answers a request with its own body.
 *
 * Request: any method, path and body. Query: status=N (200..599, default
 * 200) sets the answer's status; any other N is refused with 400.
 * Answer: the request's body, byte for byte, with
 *   x-method      the request's method (GET, POST, ...);
 *   x-path        its path-with-query as received;
 *   content-type  the request's, or application/octet-stream without one.
 * A body that cannot be read (or held in memory) is answered with 500.
 */
#include "http.h"

/* The longest body echoed: past any a node takes (its --max-body-kib). */
#define ECHO_MAX_BODY (64u << 20)

void exports_wasi_http_incoming_handler_handle(exports_wasi_http_incoming_handler_own_incoming_request_t request,
                                               exports_wasi_http_incoming_handler_own_response_outparam_t out) {
    wasi_http_types_borrow_incoming_request_t borrowed = wasi_http_types_borrow_incoming_request(request);

    wasi_http_types_method_t method;
    wasi_http_types_method_incoming_request_method(borrowed, &method);
    proxy_string_t path = http_path(borrowed);

    /* The request's content-type, copied out of its headers. */
    static const char octets[] = "application/octet-stream";
    size_t content_type_len;
    uint8_t *content_type =
        http_first_value(wasi_http_types_method_incoming_request_headers(borrowed), "content-type", &content_type_len);

    uint32_t status = 200;
    proxy_string_t wanted;
    bool bad_status = http_query_param(path, "status", &wanted) &&
                      !(http_parse_u32(wanted, 599, &status) && status >= 200);

    uint8_t *body = NULL;
    size_t len = 0;
    bool read = !bad_status && http_read_body(borrowed, ECHO_MAX_BODY, &body, &len);
    wasi_http_types_incoming_request_drop_own(request);

    if (bad_status) {
        http_respond_text(out, 400, "status must be a whole number from 200 to 599\n");
    } else if (!read) {
        http_respond_text(out, 500, "cannot read the request's body\n");
    } else {
        proxy_string_t method_text = http_method_text(&method);
        struct http_header answer[] = {
            {"x-method", method_text.ptr, method_text.len},
            {"x-path", path.ptr, path.len},
            content_type != NULL ? (struct http_header){"content-type", content_type, content_type_len}
                                 : (struct http_header){"content-type", (const uint8_t *)octets, sizeof octets - 1},
        };
        http_respond(out, (uint16_t)status, answer, sizeof answer / sizeof answer[0], body, len);
    }
    free(body);
    free(content_type);
    proxy_string_free(&path);
    wasi_http_types_method_free(&method);
}
