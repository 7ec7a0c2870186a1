"""primes-py: counts the primes up to n by trial division, in Python.

The contract of primes-http (functions/http/primes-http.c): query n=N
(0..100000000, default 1000); request body ignored. Answer: 200,
text/plain, the count in decimal and "\\n"; 400 with a text message for an
N that is not a whole number or is above 100000000. Deliberately CPU-bound.
"""

from reply import query_param, respond_text
from wit_world import exports
from wit_world.imports.types import IncomingRequest, ResponseOutparam

MAX_N = 100_000_000
"""The largest n answered; above it a request is refused."""


def count_primes(n: int) -> int:
    """The number of primes p <= n, each odd candidate tried by every odd
    divisor up to its square root."""
    count = 1 if n >= 2 else 0
    for k in range(3, n + 1, 2):
        d = 3
        while d * d <= k:
            if k % d == 0:
                break
            d += 2
        else:
            count += 1
    return count


def parse_n(text: str | None) -> int | None:
    """n from the query's text: 1000 without one, None if not allowed."""
    if text is None:
        return 1000
    if not text.isascii() or not text.isdigit() or len(text) > 9 or int(text) > MAX_N:
        return None
    return int(text)


class IncomingHandler(exports.IncomingHandler):
    """The component's wasi:http/incoming-handler."""

    def handle(self, request: IncomingRequest, response_out: ResponseOutparam) -> None:
        """Counts the primes up to the query's n."""
        with request:
            n = parse_n(query_param(request.path_with_query(), "n"))
        if n is None:
            respond_text(response_out, 400, "n must be a whole number from 0 to 100000000\n")
            return
        respond_text(response_out, 200, f"{count_primes(n)}\n")
