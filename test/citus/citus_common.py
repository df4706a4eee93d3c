"""Shared helpers of the Citus end-to-end tests: a coordinator and two workers started by
scripts/run-citus.sh (ports in DXPRIV_CITUS_COORD/_W1/_W2), fresh distributed databases."""
import contextlib
import itertools
import os
import sys

import psycopg2

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from e2e_common import execute, scalar  # noqa: E402,F401  (shared with the single-node tests)

_counter = itertools.count()
HOST = "127.0.0.1"


def port(node):
    return int(os.environ[{"coord": "DXPRIV_CITUS_COORD", "w1": "DXPRIV_CITUS_W1", "w2": "DXPRIV_CITUS_W2"}[node]])


def connect(node="coord", dbname="postgres", user="postgres", autocommit=True):
    conn = psycopg2.connect(host=HOST, port=port(node), user=user, dbname=dbname)
    conn.autocommit = autocommit
    return conn


def rows(conn, sql, params=None):
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


@contextlib.contextmanager
def citus_db(workers=("w1", "w2")):
    """A database with citus on every node and dxpriv on the coordinator (propagated by Citus),
    the workers registered; dropped afterwards on every node."""
    name = f"citus_{os.getpid()}_{next(_counter)}"
    nodes = ("coord",) + tuple(workers)
    for n in nodes:
        admin = connect(n)
        execute(admin, f"CREATE DATABASE {name}")
        execute(admin, f"ALTER DATABASE {name} SET dxpriv.cache_lifetime = 0")
        admin.close()
        c = connect(n, name)
        execute(c, "CREATE EXTENSION citus")
        c.close()
    coord = connect("coord", name)
    try:
        execute(coord, "SELECT citus_set_coordinator_host(%s, %s)", (HOST, port("coord")))
        for w in workers:
            execute(coord, "SELECT citus_add_node(%s, %s)", (HOST, port(w)))
        execute(coord, "CREATE EXTENSION dxpriv")
        yield name
    finally:
        coord.close()
        for n in nodes:
            admin = connect(n)
            execute(admin, f"DROP DATABASE {name} WITH (FORCE)")
            admin.close()


def create_role(name):
    """Roles are cluster objects: Citus propagates CREATE ROLE from the coordinator when workers exist;
    create it on every node that lacks it so tests do not depend on that."""
    for n in ("coord", "w1", "w2"):
        c = connect(n)
        if not scalar(c, "SELECT count(*) FROM pg_roles WHERE rolname = %s", (name,)):
            execute(c, f"SET citus.enable_ddl_propagation = off; CREATE ROLE {name} LOGIN")
        c.close()
