/*
 * fetch-http: makes one outgoing request (wasi:http/outgoing-handler) and
 * answers with what came back.
 *
 * Query: url=http://HOST[:PORT][/PATH[?QUERY]], taken as it is (not
 * percent-decoded; it ends at the first '&' of the request's query). Only
 * the http scheme: the authority is what follows "http://" up to the first
 * '/', the path-with-query the rest ("/" when there is none). A missing or
 * malformed url (one whose authority or path the host refuses included) is
 * answered with 400, text/plain, one line; nothing is sent.
 *
 * Outgoing: GET, scheme http, that authority and path-with-query, no
 * headers (the host adds host), no body. Its body is never taken: wasi:http
 * lets a request go without one, and the host sends it empty.
 *
 * Answer: the upstream's status and body (read whole, at most
 * FETCH_MAX_BODY bytes), with
 *   content-type       the upstream's, or application/octet-stream;
 *   x-upstream-status  the upstream's status, in decimal.
 * Failures are answered with 502, text/plain, "error: CODE\n": CODE the
 * WIT name of the error-code the request failed with (http_error_code_name,
 * e.g. HTTP-request-denied, connection-refused), "too long" for a body of
 * more than FETCH_MAX_BODY bytes; a body that cannot be held in memory is
 * answered with 500.
 */
#include "http.h"

#include <stdio.h>

/* The most bytes of the upstream's body answered with; past it, 502. */
#define FETCH_MAX_BODY (1024 * 1024)

/*
 * Splits URL (http://AUTHORITY[/PATH]) into views into it: true with the
 * authority in *AUTHORITY and the path-with-query in *PATH (empty for "/"),
 * false if URL is not http or its authority is empty or holds a character
 * no authority has ('?', '#', a space or a control).
 */
static bool parse_url(proxy_string_t url, proxy_string_t *authority, proxy_string_t *path) {
    static const char scheme[] = "http://";
    size_t prefix = sizeof scheme - 1;
    if (url.len <= prefix) {
        return false;
    }
    /* Schemes are case-insensitive: "HTTP://" is http too. */
    for (size_t i = 0; i < prefix; i++) {
        uint8_t c = url.ptr[i];
        if ((c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c) != (uint8_t)scheme[i]) {
            return false;
        }
    }
    const uint8_t *start = url.ptr + prefix;
    const uint8_t *end = url.ptr + url.len;
    const uint8_t *slash = memchr(start, '/', (size_t)(end - start));
    const uint8_t *stop = slash != NULL ? slash : end;
    if (stop == start) {
        return false;
    }
    for (const uint8_t *p = start; p < stop; p++) {
        if (*p == '?' || *p == '#' || *p <= ' ' || *p >= 0x7f) {
            return false;
        }
    }
    *authority = (proxy_string_t){(uint8_t *)start, (size_t)(stop - start)};
    *path = (proxy_string_t){(uint8_t *)stop, (size_t)(end - stop)};
    return true;
}

/* Answers 502 with "error: WHAT\n". */
static void answer_error(wasi_http_types_own_response_outparam_t out, const char *what) {
    char text[96];
    snprintf(text, sizeof text, "error: %s\n", what);
    http_respond_text(out, 502, text);
}

/* Answers 502 with ERR's WIT name, and frees ERR. */
static void answer_error_code(wasi_http_types_own_response_outparam_t out, wasi_http_types_error_code_t *err) {
    const char *name = http_error_code_name(err);
    wasi_http_types_error_code_free(err);
    answer_error(out, name);
}

/* How making the outgoing request went. */
enum send_result { SEND_OK, SEND_BAD_URL, SEND_FAILED };

/*
 * Makes the outgoing request: SEND_OK with its future in *FUTURE;
 * SEND_BAD_URL if the host refuses AUTHORITY or PATH (checked by parse_url
 * only roughly: "a:b" or "a%20b", say, pass it); SEND_FAILED with the
 * error-code handle failed with in *ERR (the caller's to free).
 */
static enum send_result send_request(proxy_string_t authority, proxy_string_t path,
                         wasi_http_types_own_future_incoming_response_t *future, wasi_http_types_error_code_t *err) {
    wasi_http_types_own_outgoing_request_t request =
        wasi_http_types_constructor_outgoing_request(wasi_http_types_constructor_fields());
    wasi_http_types_borrow_outgoing_request_t borrowed = wasi_http_types_borrow_outgoing_request(request);
    wasi_http_types_method_t get = {.tag = WASI_HTTP_TYPES_METHOD_GET};
    wasi_http_types_scheme_t http = {.tag = WASI_HTTP_TYPES_SCHEME_HTTP};
    proxy_string_t root = http_str("/");
    proxy_string_t *path_with_query = path.len > 0 ? &path : &root;
    if (!wasi_http_types_method_outgoing_request_set_method(borrowed, &get) ||
        !wasi_http_types_method_outgoing_request_set_scheme(borrowed, &http) ||
        !wasi_http_types_method_outgoing_request_set_authority(borrowed, &authority) ||
        !wasi_http_types_method_outgoing_request_set_path_with_query(borrowed, path_with_query)) {
        wasi_http_types_outgoing_request_drop_own(request);
        return SEND_BAD_URL;
    }
    /* handle takes the request, whether it fails or not. */
    return wasi_http_outgoing_handler_handle(request, NULL, future, err) ? SEND_OK : SEND_FAILED;
}

/*
 * Waits for FUTURE's response: true with it in *RESPONSE, false with the
 * error-code it failed with in *ERR (the caller's to free).
 */
static bool await_response(wasi_http_types_borrow_future_incoming_response_t future,
                           wasi_http_types_own_incoming_response_t *response, wasi_http_types_error_code_t *err) {
    wasi_http_types_result_result_own_incoming_response_error_code_void_t result;
    while (!wasi_http_types_method_future_incoming_response_get(future, &result)) {
        wasi_http_types_own_pollable_t ready = wasi_http_types_method_future_incoming_response_subscribe(future);
        wasi_io_poll_method_pollable_block(wasi_io_poll_borrow_pollable(ready));
        wasi_io_poll_pollable_drop_own(ready);
    }
    if (result.is_err) {
        /* Taken already: cannot happen here, the first get that is some. */
        err->tag = WASI_HTTP_TYPES_ERROR_CODE_INTERNAL_ERROR;
        err->val.internal_error.is_some = false;
        return false;
    }
    if (result.val.ok.is_err) {
        *err = result.val.ok.val.err;
        return false;
    }
    *response = result.val.ok.val.ok;
    return true;
}

/* Answers with RESPONSE (the upstream's status, content-type and body);
 * consumes OUT, leaves RESPONSE the caller's to drop. */
static void relay(wasi_http_types_own_response_outparam_t out, wasi_http_types_borrow_incoming_response_t response) {
    wasi_http_types_status_code_t status = wasi_http_types_method_incoming_response_status(response);

    /* The upstream's content-type, copied out of its headers. */
    static const char octets[] = "application/octet-stream";
    size_t content_type_len;
    uint8_t *content_type =
        http_first_value(wasi_http_types_method_incoming_response_headers(response), "content-type", &content_type_len);

    uint8_t *body = NULL;
    size_t len = 0;
    enum http_read read = HTTP_READ_FAILED;
    wasi_http_types_error_code_t err = {.tag = WASI_HTTP_TYPES_ERROR_CODE_HTTP_RESPONSE_INCOMPLETE};
    wasi_http_types_own_incoming_body_t incoming;
    if (wasi_http_types_method_incoming_response_consume(response, &incoming)) {
        wasi_http_types_own_input_stream_t stream;
        if (wasi_http_types_method_incoming_body_stream(wasi_http_types_borrow_incoming_body(incoming), &stream)) {
            read = http_read_stream(wasi_io_streams_borrow_input_stream(stream), FETCH_MAX_BODY, &body, &len, &err);
            wasi_io_streams_input_stream_drop_own(stream);
        }
        /* The trailers are not wanted: the body is dropped, not finished. */
        wasi_http_types_incoming_body_drop_own(incoming);
    }

    if (read == HTTP_READ_OK) {
        char status_text[8];
        int status_len = snprintf(status_text, sizeof status_text, "%u", (unsigned)status);
        struct http_header answer[] = {
            content_type != NULL ? (struct http_header){"content-type", content_type, content_type_len}
                                 : (struct http_header){"content-type", (const uint8_t *)octets, sizeof octets - 1},
            {"x-upstream-status", (const uint8_t *)status_text, (size_t)status_len},
        };
        http_respond(out, status, answer, sizeof answer / sizeof answer[0], body, len);
    } else if (read == HTTP_READ_TOO_LONG) {
        answer_error(out, "too long");
    } else if (read == HTTP_READ_NO_MEMORY) {
        http_respond_text(out, 500, "cannot hold the upstream's body in memory\n");
    } else {
        answer_error_code(out, &err);
    }
    free(body);
    free(content_type);
}

void exports_wasi_http_incoming_handler_handle(exports_wasi_http_incoming_handler_own_incoming_request_t request,
                                               exports_wasi_http_incoming_handler_own_response_outparam_t out) {
    proxy_string_t path = http_path(wasi_http_types_borrow_incoming_request(request));
    wasi_http_types_incoming_request_drop_own(request);

    wasi_http_types_own_future_incoming_response_t future;
    wasi_http_types_error_code_t err;
    proxy_string_t url, authority, target;
    enum send_result sent = http_query_param(path, "url", &url) && parse_url(url, &authority, &target)
                                ? send_request(authority, target, &future, &err)
                                : SEND_BAD_URL;
    /* authority and target are views into path: done with them now. */
    proxy_string_free(&path);
    if (sent == SEND_BAD_URL) {
        http_respond_text(out, 400, "url must be http://HOST[:PORT][/PATH]\n");
        return;
    }
    if (sent == SEND_FAILED) {
        answer_error_code(out, &err);
        return;
    }

    wasi_http_types_own_incoming_response_t response;
    bool answered = await_response(wasi_http_types_borrow_future_incoming_response(future), &response, &err);
    if (!answered) {
        wasi_http_types_future_incoming_response_drop_own(future);
        answer_error_code(out, &err);
        return;
    }
    relay(out, wasi_http_types_borrow_incoming_response(response));
    /* Children before parents: the response (its body gone) before the
     * future it came from. */
    wasi_http_types_incoming_response_drop_own(response);
    wasi_http_types_future_incoming_response_drop_own(future);
}
