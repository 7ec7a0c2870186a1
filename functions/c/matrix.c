/*
 * matrix: FunctionBench's matmul, C = A B for n by n matrices of doubles
 * drawn uniformly from [0, 1) (cgi.h's generator from seed, A row by row,
 * then B).
 *
 * Query: n (default 128, 1 to 1024), seed (default 1). Answer: text/plain,
 * the sum of C's entries and its trace, 17 significant digits each.
 */
#include "cgi.h"

int main(void) {
    long n = (long)query_int("n", 128, 1, 1024);
    uint64_t state = (uint64_t)query_int("seed", 1, 0, 1LL << 62);
    size_t size = (size_t)n * (size_t)n;
    double *a = malloc(size * sizeof *a), *b = malloc(size * sizeof *b),
           *c = calloc(size, sizeof *c);
    if (a == NULL || b == NULL || c == NULL) {
        fail(500, "out of memory");
    }
    for (size_t i = 0; i < size; i++) {
        a[i] = draw(&state);
    }
    for (size_t i = 0; i < size; i++) {
        b[i] = draw(&state);
    }
    /* i-k-j order: the inner loop walks B and C along rows. */
    for (long i = 0; i < n; i++) {
        for (long k = 0; k < n; k++) {
            double aik = a[i * n + k];
            for (long j = 0; j < n; j++) {
                c[i * n + j] += aik * b[k * n + j];
            }
        }
    }
    double sum = 0.0, trace = 0.0;
    for (long i = 0; i < n; i++) {
        for (long j = 0; j < n; j++) {
            sum += c[i * n + j];
        }
        trace += c[i * n + i];
    }
    printf("Content-Type: text/plain\n\n%.17g %.17g\n", sum, trace);
    return 0;
}
