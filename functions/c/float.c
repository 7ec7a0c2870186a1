/*
 * float: FunctionBench's float_operation, the sum of sin, cos and sqrt
 * of 0, 1, ..., n-1 in double precision.
 *
 * Query: n=N (default 1000000, at most 10^9). Answer: text/plain, the sum
 * with 17 significant digits. A bad n is a 400 through a CGI Status line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    long n = 1000000;
    const char *query = getenv("QUERY_STRING");
    if (query != NULL && strncmp(query, "n=", 2) == 0) {
        char *end;
        n = strtol(query + 2, &end, 10);
        if (end == query + 2 || (*end != '\0' && *end != '&') || n < 0 || n > 1000000000L) {
            printf("Status: 400 Bad Request\nContent-Type: text/plain\n\n"
                   "n must be an integer from 0 to 1000000000\n");
            return 0;
        }
    }
    double sum = 0.0;
    for (long i = 0; i < n; i++) {
        double x = (double)i;
        sum += sin(x) + cos(x) + sqrt(x);
    }
    printf("Content-Type: text/plain\n\n%.17g\n", sum);
    return 0;
}
