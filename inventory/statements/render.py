"""A statement as a CSV file and as a PDF (reportlab), from its stored lines: what the page shows, in the same
order and rounding.

The CSV has one row per line, then one per adjustment, then the totals row; no markup, ISO dates, plain decimals
(``Decimal`` reads them back exactly): the usage, credit and adjustment amounts add up to the total row's.
"""

import csv
import io

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4, landscape
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from .models import NO_TEAM

CSV_FIELDS = ["month", "team", "rate_card", "kind", "partition", "gpu_model", "user", "gpu_hours",
              "price_per_gpu_hour", "amount", "currency", "note"]


def filename(statement, extension):
    return f"statement-{statement.team_name.replace(' ', '-')}-{statement.month_label}.{extension}"


def rows(statement):
    """The statement's rows as the CSV and PDF show them: its lines, adjustments and totals (dicts of strings)."""
    common = {"month": statement.month_label, "team": statement.team_name,
              "rate_card": statement.rate_card.effective_from.isoformat(), "currency": statement.currency}
    found = []
    for line in statement.lines.all():
        found.append({**common, "kind": line.kind, "partition": line.partition, "gpu_model": line.gpu_model_name,
                      "user": line.user, "gpu_hours": str(line.gpu_hours),
                      "price_per_gpu_hour": str(line.price_per_gpu_hour), "amount": str(line.amount), "note": ""})
    for row in statement.adjustment_rows.all():
        found.append({**common, "kind": "adjustment", "partition": "", "gpu_model": "", "user": "",
                      "gpu_hours": "" if row.gpu_hours is None else str(row.gpu_hours), "price_per_gpu_hour": "",
                      "amount": str(row.amount), "note": f"corrects {row.corrects:%Y-%m}: {row.reason}"})
    found.append({**common, "kind": "total", "partition": "", "gpu_model": "", "user": "",
                  "gpu_hours": str(statement.gpu_hours), "price_per_gpu_hour": "", "amount": str(statement.total),
                  "note": f"charges {statement.charges} - credit {statement.credit} ({statement.credit_gpu_hours} "
                          f"GPU-hours) + adjustments {statement.adjustments}"})
    return found


def to_csv(statement):
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows(statement))
    return out.getvalue()


def to_pdf(statement):
    """The statement as a one-table PDF: header (team, month, rate card, currency), its lines, the credit, the
    adjustments and the total. Not compressed: small, and its text can be read back (the tests do)."""
    out = io.BytesIO()
    document = SimpleDocTemplate(out, pagesize=landscape(A4), title=f"Statement {statement}", author="Cluster Portal",
                                 leftMargin=15 * mm, rightMargin=15 * mm, topMargin=15 * mm, bottomMargin=15 * mm,
                                 pageCompression=0, invariant=1)
    styles = getSampleStyleSheet()
    team = statement.team_name if statement.team_id else f"{NO_TEAM} (jobs of no team's account)"
    story = [
        Paragraph(f"GPU statement {statement.month_label}: {escape(team)}", styles["Title"]),
        Paragraph(f"Rate card from {statement.rate_card.effective_from.isoformat()}; amounts in "
                  f"{escape(statement.currency)}; issued {statement.closed_month.issued_at:%Y-%m-%d}.",
                  styles["Normal"]),
        Spacer(1, 6 * mm),
    ]
    header = ["Kind", "Partition", "GPU model", "User", "GPU-hours", "Price / GPU-hour", "Amount"]
    body = [[row["kind"], row["partition"], row["gpu_model"], row["user"], row["gpu_hours"],
             row["price_per_gpu_hour"], row["amount"]] for row in rows(statement) if row["kind"] != "total"]
    totals = [
        ["Charges", "", "", "", str(statement.gpu_hours), "", str(statement.charges)],
        ["Infrastructure credit", "", "", "", str(statement.credit_gpu_hours), "", f"-{statement.credit}"],
        ["Adjustments", "", "", "", "", "", str(statement.adjustments)],
        [f"Total {statement.total} {statement.currency}", "", "", "", "", "", str(statement.total)],
    ]
    table = Table([header, *body, *totals], repeatRows=1, hAlign="LEFT")
    table.setStyle(TableStyle([
        ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
        ("LINEBELOW", (0, 0), (-1, 0), 0.5, colors.black),
        ("LINEABOVE", (0, len(body) + 1), (-1, len(body) + 1), 0.5, colors.black),
        ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
        ("ALIGN", (4, 0), (-1, -1), "RIGHT"),
        ("FONTSIZE", (0, 0), (-1, -1), 9),
    ]))
    story.append(table)
    for row in statement.adjustment_rows.all():
        story.append(Paragraph(f"Adjustment of {row.corrects:%Y-%m}: {escape(row.reason)}", styles["Normal"]))
    document.build(story)
    return out.getvalue()


def escape(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
