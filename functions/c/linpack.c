/*
 * linpack: FunctionBench's linpack, A x = b solved by Gaussian elimination
 * with partial pivoting, A an n by n matrix drawn uniformly from [-1, 1)
 * (cgi.h's generator from seed, row by row) and b = A times a vector of
 * ones, so that x is known.
 *
 * Query: n (default 100, 1 to 1000), seed (default 1). Answer:
 * application/json {"n": N, "residual": MAX |A x - b|, "error": MAX
 * |x - 1|, "flops": 2/3 n^3 + 2 n^2}; a singular A is a 400.
 */
#include <math.h>

#include "cgi.h"

int main(void) {
    long n = (long)query_int("n", 100, 1, 1000);
    uint64_t state = (uint64_t)query_int("seed", 1, 0, 1LL << 62);
    size_t size = (size_t)n * (size_t)n;
    double *a = malloc(size * sizeof *a), *lu = malloc(size * sizeof *lu),
           *b = calloc((size_t)n, sizeof *b), *x = malloc((size_t)n * sizeof *x);
    if (a == NULL || lu == NULL || b == NULL || x == NULL) {
        fail(500, "out of memory");
    }
    for (size_t i = 0; i < size; i++) {
        a[i] = 2.0 * draw(&state) - 1.0;
    }
    for (long i = 0; i < n; i++) {
        for (long j = 0; j < n; j++) {
            b[i] += a[i * n + j];
        }
        x[i] = b[i];
    }
    memcpy(lu, a, size * sizeof *a);
    for (long k = 0; k < n; k++) {
        long pivot = k;
        for (long i = k + 1; i < n; i++) {
            if (fabs(lu[i * n + k]) > fabs(lu[pivot * n + k])) {
                pivot = i;
            }
        }
        if (lu[pivot * n + k] == 0.0) {
            fail(400, "the matrix is singular");
        }
        if (pivot != k) {
            for (long j = 0; j < n; j++) {
                double t = lu[k * n + j];
                lu[k * n + j] = lu[pivot * n + j];
                lu[pivot * n + j] = t;
            }
            double t = x[k];
            x[k] = x[pivot];
            x[pivot] = t;
        }
        for (long i = k + 1; i < n; i++) {
            double factor = lu[i * n + k] / lu[k * n + k];
            for (long j = k + 1; j < n; j++) {
                lu[i * n + j] -= factor * lu[k * n + j];
            }
            x[i] -= factor * x[k];
        }
    }
    for (long i = n - 1; i >= 0; i--) {
        double s = x[i];
        for (long j = i + 1; j < n; j++) {
            s -= lu[i * n + j] * x[j];
        }
        x[i] = s / lu[i * n + i];
    }
    double residual = 0.0, error = 0.0;
    for (long i = 0; i < n; i++) {
        double r = -b[i];
        for (long j = 0; j < n; j++) {
            r += a[i * n + j] * x[j];
        }
        residual = fmax(residual, fabs(r));
        error = fmax(error, fabs(x[i] - 1.0));
    }
    double flops = 2.0 / 3.0 * (double)n * (double)n * (double)n + 2.0 * (double)n * (double)n;
    printf("Content-Type: application/json\n\n"
           "{\"n\": %ld, \"residual\": %.6e, \"error\": %.6e, \"flops\": %.0f}\n",
           n, residual, error, flops);
    return 0;
}
