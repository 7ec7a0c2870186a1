"""hello-py: the smallest wasi:http/proxy component in Python, a greeting.

Request: any; its body is not read. Answer: 200, text/plain
"hello, world\\n".
"""

from reply import respond_text
from wit_world import exports
from wit_world.imports.types import IncomingRequest, ResponseOutparam


class IncomingHandler(exports.IncomingHandler):
    """The component's wasi:http/incoming-handler."""

    def handle(self, request: IncomingRequest, response_out: ResponseOutparam) -> None:
        """Answers every request with the greeting."""
        with request:
            pass
        respond_text(response_out, 200, "hello, world\n")
