"""The operator's path (issue 27): the bootstrap block of doc/operator-guide.md, run as written on
fresh databases of the running nodes (the same text an operator copies), leaves Citus and dxpriv on
every node and dx.check_citus_setup() green."""
import os
import re
import subprocess

from citus_common import HOST, connect, execute, port, rows, scalar

GUIDE = os.path.join(os.path.dirname(__file__), "..", "..", "doc", "operator-guide.md")


def bootstrap_block():
    text = open(GUIDE).read()
    m = re.search(r"<!-- citus-bootstrap[^>]*-->\n```bash\n(.*?)```", text, re.S)
    assert m, "no citus-bootstrap block in doc/operator-guide.md"
    return m.group(1)


def test_bootstrap_block_of_the_operator_guide():
    db = f"boot_{os.getpid()}"
    env = dict(os.environ, DB=db, COORD_HOST=HOST, COORD_PORT=str(port("coord")),
               WORKERS=f"{HOST}:{port('w1')} {HOST}:{port('w2')}")
    try:
        out = subprocess.run(["bash", "-c", bootstrap_block()], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        coord = connect("coord", db)
        checks = rows(coord, "SELECT check_name, ok FROM dx.check_citus_setup()")
        assert checks and all(ok is not False for _, ok in checks), checks
        assert scalar(coord, "SELECT count(*) FROM pg_dist_node WHERE isactive") == 3
        coord.close()
        for n in ("w1", "w2"):
            w = connect(n, db)
            assert scalar(w, "SELECT count(*) FROM pg_extension WHERE extname IN ('citus', 'dxpriv')") == 2, n
            w.close()
    finally:
        for n in ("coord", "w1", "w2"):
            admin = connect(n)
            execute(admin, f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
            admin.close()
