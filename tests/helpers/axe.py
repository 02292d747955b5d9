"""axe-core in the browser tests: ``tests/static/axe.min.js`` (vendored, MPL-2.0: see ``tests/static/README.md``)
evaluated in the page, never fetched. The page's Content-Security-Policy allows no inline script, so it runs through
Playwright's evaluate (the DevTools protocol), not a script tag."""

from tests.helpers.paths import ROOT

AXE_SOURCE = (ROOT / "tests" / "static" / "axe.min.js").read_text(encoding="utf-8")
BLOCKING = ("serious", "critical")

RUN_JS = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations.map(v => ({
  id: v.id, impact: v.impact, help: v.help,
  nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5), count: v.nodes.length}))"""


def axe_violations(page):
    """Every axe violation on the page as it stands: ``{id, impact, help, nodes (the first 5), count}``."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(f"() => {{ {AXE_SOURCE}\n}}")
    return page.evaluate(RUN_JS)


def blocking(violations):
    """The serious and critical ones: what the tests allow none of."""
    return [violation for violation in violations if violation["impact"] in BLOCKING]
