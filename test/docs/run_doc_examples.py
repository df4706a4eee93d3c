#!/usr/bin/env python3
"""Runs every SQL example of README.md and doc/*.md against a throwaway cluster and checks its output.

Format (see doc/development.md, "Documentation examples"):
  * every ```sql block is an example; it runs through psql (-X -q, ON_ERROR_STOP) as one session;
  * a ```output block right after it is the expected output (stdout and stderr as psql prints them,
    without psql's "psql:<stdin>:N: " prefix, trailing spaces ignored); without one, the block must
    only succeed;
  * an HTML comment on the line before the block sets options:
      <!-- doctest: as=analyst -->   run as that role (default: postgres, the superuser)
      <!-- doctest: error -->        errors are expected (they appear in the output block)
      <!-- doctest: db=other -->     run in that database (created empty when missing)
      <!-- doctest: skip=citus -->   not executable here (counted and reported by reason)
  * <!-- doctest-setup ... --> holds SQL run as postgres at that point of the file (not shown on
    GitHub, not counted as an example): the tables an example needs; <!-- doctest-setup: FILE -->
    runs a file of test/docs/fixtures/ the same way;
  * <!-- doctest-file: no-fixture --> anywhere in a file: the file's cluster starts with only the
    demo table people (otherwise: CREATE EXTENSION dxpriv and a LOGIN role analyst too).
Each file gets a fresh cluster (shared_preload_libraries = 'dxpriv', dxpriv.test_seed = 1 for the
database, so noisy answers are deterministic) loaded with test/demo/people.sql; the examples of a
file run in document order and share its state. After doc/reference.md, the reference
completeness check (test/docs/check_reference.py) runs against the same cluster.

Environment: DXPRIV_DOCS_PORT (default: a free port from 55460), DXPRIV_DOCS_ONLY=<file substring>,
DXPRIV_DOCS_UPDATE=1 writes the actual output into the existing output blocks (review the diff).
"""
import difflib, glob, os, re, shlex, subprocess, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PREFIX = re.compile(r'^psql:<stdin>:\d+: ', re.M)


def doc_files():
    files = [os.path.join(ROOT, 'README.md')] + sorted(glob.glob(os.path.join(ROOT, 'doc', '*.md')))
    only = os.environ.get('DXPRIV_DOCS_ONLY')
    return [f for f in files if not only or only in f]


class Item:
    def __init__(self, kind, sql, line, opts=None, expected=None, out_span=None):
        self.kind, self.sql, self.line, self.opts = kind, sql, line, opts or {}
        self.expected, self.out_span = expected, out_span


def parse(path):
    """Items of one file: ('setup', sql) and ('example', sql, options, expected output)."""
    lines = open(path, encoding='utf-8').read().split('\n')
    items, i, fixture = [], 0, True
    while i < len(lines):
        ln = lines[i]
        if ln.strip().startswith('<!-- doctest-file:') and 'no-fixture' in ln:
            fixture = False
        m = re.match(r'^<!-- doctest-setup: (\S+) -->$', ln.strip())
        if m:
            items.append(Item('setup', '\\i ' + m.group(1), i + 1))
            i += 1
            continue
        if ln.strip().startswith('<!-- doctest-setup'):
            j = i + 1
            while not lines[j].strip().startswith('-->'):
                j += 1
            items.append(Item('setup', '\n'.join(lines[i + 1:j]), i + 1))
            i = j + 1
            continue
        if ln.startswith('```'):
            lang = ln[3:].strip()
            j = i + 1
            while not lines[j].startswith('```'):
                j += 1
            if lang == 'sql':
                opts = {}
                k = i - 1
                m = re.match(r'^<!-- doctest: (.*) -->$', lines[k].strip()) if k >= 0 else None
                if m:
                    for w in m.group(1).split():
                        key, _, val = w.partition('=')
                        opts[key] = val or True
                it = Item('example', '\n'.join(lines[i + 1:j]), i + 1, opts)
                k = j + 1
                while k < len(lines) and lines[k].strip() == '':
                    k += 1
                if k < len(lines) and lines[k].strip() == '```output':
                    e = k + 1
                    while not lines[e].startswith('```'):
                        e += 1
                    it.expected = '\n'.join(lines[k + 1:e])
                    it.out_span = (k + 1, e)
                    j = e
                items.append(it)
            i = j + 1
            continue
        i += 1
    return items, fixture, lines


def sh(cmd, **kw):
    return subprocess.run(['bash', '-c', cmd], cwd=ROOT, **kw)


def cluster_cmd(body):
    return '. scripts/pg-env.sh; ' + body


def normalise(text):
    text = PREFIX.sub('', text)
    out = [l.rstrip() for l in text.split('\n')]
    while out and out[-1] == '':
        out.pop()
    while out and out[0] == '':
        out.pop(0)
    return '\n'.join(out)


def psql(env, sql, role='postgres', db='postgres', errors_expected=False):
    args = ['psql', '-X', '-q', '-U', role, '-d', db, '-v', 'ON_ERROR_STOP=%d' % (0 if errors_expected else 1)]
    p = subprocess.run(args, input=sql + '\n', env=env, cwd=ROOT, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p.returncode, p.stdout


def free_port():
    p = sh(cluster_cmd('free_port 55460'), stdout=subprocess.PIPE, text=True)
    return int(p.stdout.strip() or 55460)


def run_file(path, port, stats, failures, updates):
    items, fixture, lines = parse(path)
    rel = os.path.relpath(path, ROOT)
    if not any(it.kind == 'example' for it in items) and not rel.endswith('reference.md'):
        return
    work = sh(cluster_cmd('owned_tmpdir docs'), stdout=subprocess.PIPE, text=True).stdout.strip()
    env = dict(os.environ, PGHOST=work, PGPORT=str(port), PGUSER='postgres', PGTZ='UTC',
               PGDATESTYLE='ISO, MDY', LC_ALL='C', LANG='C', PGCLIENTENCODING='UTF8')
    try:
        r = sh(cluster_cmd('start_cluster %s %d' % (shlex.quote(work), port)), env=env)
        if r.returncode:
            failures.append('%s: the cluster did not start (%s/server.log)' % (rel, work))
            return
        setup = "ALTER DATABASE postgres SET dxpriv.test_seed = 1;\n"
        # a long analysis on a loaded machine must not add a progress notice to an output
        setup += "ALTER DATABASE postgres SET dxpriv.progress_interval = 0;\n"
        setup += "SET client_min_messages = warning;\n\\i test/demo/people.sql\n"
        if fixture:
            setup += "CREATE EXTENSION dxpriv;\nCREATE ROLE analyst LOGIN;\n"
        rc, out = psql(env, setup)
        if rc:
            failures.append('%s: fixture failed:\n%s' % (rel, out))
            return
        dbs = {'postgres'}
        for it in items:
            if it.kind == 'setup':
                rc, out = psql(env, it.sql)
                if rc:
                    failures.append('%s:%d: doctest-setup failed:\n%s' % (rel, it.line, out))
                continue
            if 'skip' in it.opts:
                stats['skipped'].setdefault(it.opts['skip'], []).append('%s:%d' % (rel, it.line))
                continue
            db = it.opts.get('db', 'postgres')
            if db not in dbs:
                psql(env, 'CREATE DATABASE %s;' % db)
                dbs.add(db)
            rc, out = psql(env, it.sql, role=it.opts.get('as', 'postgres'), db=db,
                           errors_expected='error' in it.opts)
            stats['executed'] += 1
            actual = normalise(out)
            if rc:
                failures.append('%s:%d: the example failed (exit %d):\n%s' % (rel, it.line, rc, actual))
                continue
            if 'error' in it.opts and 'ERROR:' not in actual:
                failures.append('%s:%d: marked error, but no statement failed:\n%s' % (rel, it.line, actual))
                continue
            if it.expected is None:
                continue
            stats['checked'] += 1
            expected = normalise(it.expected)
            if actual != expected:
                if os.environ.get('DXPRIV_DOCS_UPDATE') == '1':
                    updates.append((path, it.out_span, actual))
                    continue
                diff = '\n'.join(difflib.unified_diff(expected.split('\n'), actual.split('\n'),
                                                      'documented', 'actual', lineterm=''))
                failures.append('%s:%d: output differs:\n%s' % (rel, it.line, diff))
        if rel == os.path.join('doc', 'reference.md'):
            r = subprocess.run([sys.executable, os.path.join(ROOT, 'test', 'docs', 'check_reference.py')],
                               env=env, cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            print(r.stdout.rstrip())
            if r.returncode:
                failures.append('doc/reference.md is incomplete (test/docs/check_reference.py)')
    finally:
        sh(cluster_cmd('stop_cluster %s; rm -rf %s' % (shlex.quote(work), shlex.quote(work))), env=env)


def apply_updates(updates):
    by_file = {}
    for path, span, text in updates:
        by_file.setdefault(path, []).append((span, text))
    for path, edits in by_file.items():
        lines = open(path, encoding='utf-8').read().split('\n')
        for (a, b), text in sorted(edits, reverse=True):
            lines[a:b] = text.split('\n')
        open(path, 'w', encoding='utf-8').write('\n'.join(lines))
        print('updated %d output block(s) in %s' % (len(edits), os.path.relpath(path, ROOT)))


def main():
    port = int(os.environ.get('DXPRIV_DOCS_PORT') or free_port())
    stats = {'executed': 0, 'checked': 0, 'skipped': {}}
    failures, updates = [], []
    for f in doc_files():
        before = stats['executed']
        run_file(f, port, stats, failures, updates)
        print('%-28s %3d examples executed' % (os.path.relpath(f, ROOT), stats['executed'] - before))
    apply_updates(updates)
    skipped = sum(len(v) for v in stats['skipped'].values())
    print('doc examples: %d executed (%d with their output checked), %d not executable here%s'
          % (stats['executed'], stats['checked'], skipped,
             ''.join('; %s: %s' % (k, ', '.join(v)) for k, v in sorted(stats['skipped'].items()))))
    for f in failures:
        print('FAIL ' + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
