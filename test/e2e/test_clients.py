"""Client behaviour: psycopg2 parameters, transactions, concurrent sessions, psql."""
import os
import subprocess

import psycopg2

from e2e_common import connect, execute, fresh_db, race, scalar


def _people(conn, budget=100.0):
    execute(conn, "CREATE TABLE people (age int, sex text)")
    execute(conn, "INSERT INTO people SELECT 18 + i % 60, CASE WHEN i % 2 = 0 THEN 'M' ELSE 'F' END "
                  "FROM generate_series(1, 1000) AS i")
    execute(conn, "SELECT dx.protect_table('people')")
    execute(conn, """SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}')""")
    execute(conn, """SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 1}')""")
    execute(conn, "SELECT dx.grant_budget(current_user::regrole, 'people', %s)", (budget,))


def test_psycopg2_client_side_parameters_are_literals():
    with fresh_db() as db:
        conn = connect(db)
        _people(conn)
        # psycopg2 interpolates on the client: the server sees literals and answers
        v = scalar(conn, "SELECT dx.count(*) FROM people WHERE age > %s AND sex = %s", (40, "M"))
        assert isinstance(v, int)
        assert abs(scalar(conn, "SELECT spent FROM dx.budgets") - 0.1) < 1e-12


def test_transaction_with_error_after_aggregate_is_still_charged_within_transaction():
    # A committed transaction keeps its charge, and an expression that fails on the declared domain
    # makes the statement fail closed before anything is charged (refund attempts after a charge
    # are covered in test_ledger.py).
    with fresh_db() as db:
        conn = connect(db, autocommit=False)
        _people(conn)
        conn.commit()
        execute(conn, "SELECT dx.count(*) FROM people")
        conn.commit()
        assert abs(scalar(conn, "SELECT spent FROM dx.budgets") - 0.1) < 1e-12
        try:
            execute(conn, "SELECT dx.count(*) FROM people WHERE age / 0 > 1")
            raise AssertionError("division by zero over the domain must fail")
        except psycopg2.Error as e:
            assert e.pgcode == "22012", e.pgcode
        conn.rollback()
        assert abs(scalar(conn, "SELECT spent FROM dx.budgets") - 0.1) < 1e-12


def test_concurrent_sessions_never_overspend():
    with fresh_db() as db:
        admin = connect(db)
        _people(admin, budget=1.0)
        results = race(db, "SELECT dx.count(*) FROM people", threads=8, repeats=5)
        answered = results.count("ok")
        assert answered == 10, results          # 1.0 / 0.1
        assert results.count("53000") == 30, results
        spent = scalar(admin, "SELECT spent FROM dx.budgets")
        assert spent <= 1.0 + 1e-9, spent
        assert scalar(admin, "SELECT count(*) FROM dx.ledger") == answered


def test_psql_shows_errors_with_hints():
    with fresh_db() as db:
        conn = connect(db)
        _people(conn)
        env = dict(os.environ, PGDATABASE=db, PGUSER="postgres")
        out = subprocess.run(["psql", "-X", "-v", "VERBOSITY=verbose", "-c", "SELECT dx.count(*) FROM people WHERE age > random()"],
                             capture_output=True, text=True, env=env)
        assert out.returncode != 0
        assert "0A000" in out.stderr and "HINT" in out.stderr, out.stderr
        out = subprocess.run(["psql", "-X", "-At", "-c", "SELECT dx.count(*) >= 0 OR true FROM people"],
                             capture_output=True, text=True, env=env)
        assert out.returncode == 0 and out.stdout.strip() == "t", out
