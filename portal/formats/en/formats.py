# English's defaults ("Dec. 3, 2026" on detail pages, "12/03/2026" in some tables) beside the ISO dates of the
# tables, the CSV exports and the API read as two different dates to a reader outside the US: one format, ISO.
# Input formats are not set here, so the forms keep accepting what English accepts.
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
