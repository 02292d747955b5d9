"""Reading an imported CSV file (``portal.imports``): its text (UTF-8, NULs kept visible) and its rows, each
unreadable row reported as "row N: ..."."""

import csv
import io

from .exports import plain_text

# Python's csv refuses fields over 131,072 characters with an error that names no field; read up to the
# upload limit and refuse long fields ourselves, as a row error that names the row and the column.
FIELD_MAX_CHARS = 131_072
csv.field_size_limit(max(csv.field_size_limit(), 16 * 1024 * 1024))


# PostgreSQL text holds no NUL, and a large file's text waits in the database for its background run (an
# ``ImportJob``: saving it was a DataError). An uploaded file's NULs are kept as this noncharacter, which no text file
# has either: ``read_csv`` reports a line with one as with a NUL, whether the file is checked in the request or later.
NUL_STAND_IN = "\uffff"


def has_nul(text):
    return "\0" in text or NUL_STAND_IN in text


def decode(data):
    """The text of an uploaded file (UTF-8, a BOM tolerated, NULs as ``NUL_STAND_IN``); ``ValueError`` saying where it
    is not UTF-8."""
    try:
        return data.decode("utf-8-sig").replace("\0", NUL_STAND_IN)
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ValueError(
            f"The file is not UTF-8 text (byte 0x{data[error.start]:02X} on line {line}); "
            "save it as CSV UTF-8 and try again."
        ) from error


def read_csv(text):
    """``(columns, rows, errors)``: the header's trimmed names, ``(row number, {column: trimmed value})`` for
    each non-blank row (the header is row 1), and a "row N: ..." error for each row that cannot be read.
    Line ends may be CRLF, LF or CR alone (old Mac files); a UTF-8 BOM is tolerated."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""))  # newline="": any line end
    try:
        header = next(reader, [])
    except csv.Error as error:
        return [], [], [f"row 1: {unreadable(error)}"]
    if any(has_nul(name) for name in header):
        return [], [], [f"row 1: {NUL_MESSAGE}"]
    columns = [name.strip() for name in header]
    rows, errors, number = [], [], 1
    while True:
        number += 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            errors.append(f"row {number}: {unreadable(error)}")
            continue
        if not any(value.strip() for value in record):
            continue
        if any(has_nul(value) for value in record):  # Python's csv reads it; no database stores it
            errors.append(f"row {number}: {NUL_MESSAGE}")
            continue
        if any(value.strip() for value in record[len(columns):]):
            errors.append(f"row {number}: {len(record)} values for {len(columns)} columns.")
            continue
        data = {}
        for column, value in zip(columns, record, strict=False):
            if len(value) > FIELD_MAX_CHARS:
                errors.append(f"row {number}, {column}: the value is {len(value):,} characters long; "
                              f"at most {FIELD_MAX_CHARS:,} are read.")
            elif column:
                data[column] = plain_text(value.strip())  # an exported formula-like text without its quote
        rows.append((number, data))
    return columns, rows, errors


NUL_MESSAGE = "the line contains a NUL character (a binary file, or not saved as text CSV)."


def unreadable(error):
    if "NUL" in str(error):
        return NUL_MESSAGE
    return f"cannot be read as CSV ({error})."
