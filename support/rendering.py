"""Markdown to safe HTML: ``markdown`` renders, ``nh3`` (the Rust ammonia sanitiser) keeps only an allow-list
of tags and attributes, so a description cannot carry scripts, event handlers, styles or ``javascript:`` links.
Links get ``rel="noopener noreferrer nofollow"``."""

import markdown as md
import nh3
from django.utils.safestring import mark_safe

TAGS = {"p", "br", "hr", "strong", "em", "b", "i", "code", "pre", "blockquote", "ul", "ol", "li", "a",
        "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del", "sup", "sub"}
ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}
EXTENSIONS = ["fenced_code", "tables", "sane_lists", "nl2br"]


def render(text):
    """Safe HTML (marked safe for templates) from untrusted Markdown."""
    html = md.markdown(text or "", extensions=EXTENSIONS, output_format="html")
    return mark_safe(nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                               link_rel="noopener noreferrer nofollow"))
