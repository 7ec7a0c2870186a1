/*
 * primes-http: counts the primes up to n by trial division, deliberately
 * CPU-bound (seconds for n in the millions), so that it can be preempted.
 *
 * Query: n=N (0..100000000, default 1000). Request body: ignored.
 * Answer: 200, text/plain, the count in decimal and "\n"; 400 with a text
 * message for an N that is not a whole number or is above 100000000.
 */
#include "http.h"

#include <stdio.h>

/* The largest n answered; above it a request is refused. */
#define PRIMES_MAX_N 100000000u

/* The number of primes p <= n, each odd candidate tried by every odd
 * divisor up to its square root. */
static uint32_t count_primes(uint32_t n) {
    uint32_t count = n >= 2 ? 1 : 0;
    for (uint32_t k = 3; k <= n; k += 2) {
        bool prime = true;
        for (uint32_t d = 3; d * d <= k; d += 2) {
            if (k % d == 0) {
                prime = false;
                break;
            }
        }
        count += prime;
    }
    return count;
}

void exports_wasi_http_incoming_handler_handle(exports_wasi_http_incoming_handler_own_incoming_request_t request,
                                               exports_wasi_http_incoming_handler_own_response_outparam_t out) {
    proxy_string_t path = http_path(wasi_http_types_borrow_incoming_request(request));
    wasi_http_types_incoming_request_drop_own(request);

    uint32_t n = 1000;
    proxy_string_t text;
    bool ok = !http_query_param(path, "n", &text) || http_parse_u32(text, PRIMES_MAX_N, &n);
    proxy_string_free(&path);
    if (!ok) {
        http_respond_text(out, 400, "n must be a whole number from 0 to 100000000\n");
        return;
    }
    char answer[16];
    snprintf(answer, sizeof answer, "%u\n", (unsigned)count_primes(n));
    http_respond_text(out, 200, answer);
}
