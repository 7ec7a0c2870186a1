"""What the wasi:http/proxy functions in Python share: answering a request.

Imported by each function's app.py; scripts/build-functions puts this
folder on componentize-py's Python path next to the function's own. The
order of an answer is the canonical one (functions/http/http.h says why
the outparam is set before the body is written): new fields, new
outgoing-response, set its status, take its body, set the outparam, write
the body in chunks of at most WRITE_CHUNK bytes, drop the stream, finish
the body.
"""

from componentize_py_types import Ok
from wit_world.imports.types import (
    Fields,
    OutgoingBody,
    OutgoingResponse,
    ResponseOutparam,
)

WRITE_CHUNK = 4096
"""Bytes in one blocking-write-and-flush: the most wasi:io promises a
check-write allows."""


def query_param(path_with_query: str | None, key: str) -> str | None:
    """The value of the first `key=VALUE` in the query, as it stands (not
    percent-decoded, as the C functions read it), or None without one."""
    if path_with_query is None or "?" not in path_with_query:
        return None
    for pair in path_with_query.split("?", 1)[1].split("&"):
        name, equals, value = pair.partition("=")
        if equals and name == key:
            return value
    return None


def respond(out: ResponseOutparam, status: int, content_type: str, body: bytes) -> None:
    """Answers `status` with `body` as `content_type`; consumes `out`."""
    response = OutgoingResponse(Fields.from_list([("content-type", content_type.encode())]))
    response.set_status_code(status)
    outgoing = response.body()
    ResponseOutparam.set(out, Ok(response))
    with outgoing.write() as stream:
        for start in range(0, len(body), WRITE_CHUNK):
            stream.blocking_write_and_flush(body[start : start + WRITE_CHUNK])
    OutgoingBody.finish(outgoing, None)


def respond_text(out: ResponseOutparam, status: int, text: str) -> None:
    """Answers `status` with text/plain `text`; consumes `out`."""
    respond(out, status, "text/plain", text.encode())
