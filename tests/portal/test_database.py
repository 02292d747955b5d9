from django.db import connection


def test_suite_runs_on_postgresql(db):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        assert int(cursor.fetchone()[0].split(".")[0]) >= 13
