"""Shared helpers for end-to-end tests: connections to the throwaway cluster, fresh databases."""
import contextlib
import itertools
import os
import threading

import psycopg2

_counter = itertools.count()


def connect(dbname="postgres", user="postgres", autocommit=True):
    """A psycopg2 connection to the test cluster (PGHOST/PGPORT set by scripts/run-e2e.sh)."""
    conn = psycopg2.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=user, dbname=dbname)
    conn.autocommit = autocommit
    return conn


@contextlib.contextmanager
def fresh_db():
    """Creates a database with dxpriv installed; drops it afterwards."""
    name = f"e2e_{os.getpid()}_{next(_counter)}"
    admin = connect()
    admin.cursor().execute(f"CREATE DATABASE {name}")
    # Tests measure charging and noise per execution: answer reuse (which would replay identical
    # queries for free) is switched off unless a test turns it on (tests of the cache do).
    admin.cursor().execute(f"ALTER DATABASE {name} SET dxpriv.cache_lifetime = 0")
    try:
        conn = connect(name)
        conn.cursor().execute("CREATE EXTENSION dxpriv")
        conn.close()
        yield name
    finally:
        admin.cursor().execute(f"DROP DATABASE {name} WITH (FORCE)")
        admin.close()


def scalar(conn, sql, params=None):
    """First column of the first row."""
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchone()[0]


def execute(conn, sql, params=None):
    with conn.cursor() as cur:
        cur.execute(sql, params)


def race(dbname, sql, threads, repeats, user="postgres"):
    """Runs sql `repeats` times in each of `threads` concurrent sessions; returns one entry per run:
    "ok" for an answer, else the SQLSTATE of its error."""
    results = []

    def worker():
        conn = connect(dbname, user=user)
        for _ in range(repeats):
            try:
                scalar(conn, sql)
                results.append("ok")
            except psycopg2.Error as e:
                results.append(e.pgcode)
        conn.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return results


def us_points(n, seed):
    """n distinct pseudo-random (lon, lat) points in the US bounding box, rounded to 3 decimals."""
    import random
    rnd = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        p = (round(rnd.uniform(-124.7, -67.0), 3), round(rnd.uniform(25.1, 49.4), 3))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out
