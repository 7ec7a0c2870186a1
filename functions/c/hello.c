/*
 * hello: a CGI greeting, the smallest real function.
 *
 * Query: name=NAME (default "world"). Body: any; its length is reported.
 * Answer: text/plain "hello, NAME (N bytes)".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    const char *query = getenv("QUERY_STRING");
    char name[64] = "world";
    if (query != NULL && strncmp(query, "name=", 5) == 0) {
        int len = (int)strcspn(query + 5, "&");
        snprintf(name, sizeof name, "%.*s", len, query + 5);
    }
    static char chunk[4096];
    size_t body = 0, n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
        body += n;
    }
    printf("Content-Type: text/plain\r\n\r\nhello, %s (%zu bytes)\n", name, body);
    return 0;
}
