/*
 * hello-http: the smallest wasi:http/proxy component, a greeting.
 *
 * Request: any; its body is not read. Answer: 200, text/plain
 * "hello, world\n".
 */
#include "http.h"

void exports_wasi_http_incoming_handler_handle(exports_wasi_http_incoming_handler_own_incoming_request_t request,
                                               exports_wasi_http_incoming_handler_own_response_outparam_t out) {
    wasi_http_types_incoming_request_drop_own(request);
    http_respond_text(out, 200, "hello, world\n");
}
