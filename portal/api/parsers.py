"""The API's JSON parser: a body nested deeper than ``API_MAX_JSON_DEPTH`` is a 400, not a crash.

Python's JSON decoder recurses once per level: a body of 100,000 ``[`` ends in a ``RecursionError`` (a 500 and a
stack trace for every caller, role or not). The depth is counted first, in one pass over the text that skips strings,
so such a body is refused before it is decoded."""

import io
import re

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# Strings (with their escapes) and the brackets outside them.
TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth(text):
    """How deeply the arrays and objects of JSON ``text`` nest (strings skipped)."""
    depth = deepest = 0
    for match in TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


class DepthLimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        body = stream.read() if stream is not None else b""
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as error:
            raise ParseError(f"JSON parse error - the body is not {encoding} text.") from error
        limit = settings.API_MAX_JSON_DEPTH
        if json_depth(text) > limit:
            raise ParseError(f"JSON parse error - nested deeper than {limit} levels.")
        try:
            return super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError as error:  # a limit set above what the decoder can take
            raise ParseError("JSON parse error - nested too deeply.") from error
