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

void exports_wasi_http_incoming_handler_handle(exports_wasi_http_incoming_handler_own_incoming_request_t request,
                                               exports_wasi_http_incoming_handler_own_response_outparam_t out) {
    wasi_http_types_borrow_incoming_request_t borrowed = wasi_http_types_borrow_incoming_request(request);

    wasi_http_types_method_t method;
    wasi_http_types_method_incoming_request_method(borrowed, &method);
    proxy_string_t path = {NULL, 0};
    if (!wasi_http_types_method_incoming_request_path_with_query(borrowed, &path)) {
        path = (proxy_string_t){NULL, 0};
    }

    /* The request's content-type, copied out of its headers. */
    static const char octets[] = "application/octet-stream";
    uint8_t *content_type = NULL;
    size_t content_type_len = 0;
    wasi_http_types_own_headers_t headers = wasi_http_types_method_incoming_request_headers(borrowed);
    proxy_string_t name = http_str("content-type");
    wasi_http_types_list_field_value_t values;
    wasi_http_types_method_fields_get(wasi_http_types_borrow_fields(headers), &name, &values);
    if (values.len > 0 && values.ptr[0].len > 0 && (content_type = malloc(values.ptr[0].len)) != NULL) {
        memcpy(content_type, values.ptr[0].ptr, values.ptr[0].len);
        content_type_len = values.ptr[0].len;
    }
    wasi_http_types_list_field_value_free(&values);
    wasi_http_types_fields_drop_own(headers);

    uint32_t status = 200;
    proxy_string_t wanted;
    bool bad_status = http_query_param(path, "status", &wanted) &&
                      !(http_parse_u32(wanted, 599, &status) && status >= 200);

    uint8_t *body = NULL;
    size_t len = 0;
    bool read = !bad_status && http_read_body(borrowed, &body, &len);
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
