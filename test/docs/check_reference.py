#!/usr/bin/env python3
"""Fails when dxpriv has a function, aggregate, view, table, sequence, setting or error code that
doc/reference.md does not name.

Checked against a running cluster with the extension created (PGHOST/PGPORT/PGUSER, database
postgres), which holds what sql/*.sql really created:
  * every function, aggregate and procedure of schema dx, each overload by its identity arguments:
    the index of SQL objects must hold `dx.name(arguments)` exactly as pg_get_function_identity_arguments
    prints them (a new overload or a changed argument list fails);
  * every table, view and sequence of schema dx: `dx.name`;
  * every setting dxpriv defines (pg_settings 'dxpriv.%', and every DefineCustom*Variable of src/pg,
    hidden ones included): a row of the GUCs table;
and statically: every SQLSTATE that src/ raises (ERRCODE_* in src/pg and src/core, mapped through
PostgreSQL's errcodes.h) or sql/*.sql raises (ERRCODE = '.....') must have a row in the Errors table.
--missing prints the index rows that are missing, ready to paste.
"""
import glob, os, re, subprocess, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def query(sql):
    out = subprocess.run(['psql', '-X', '-q', '-At', '-F', '\t', '-d', 'postgres', '-c', sql],
                         check=True, text=True, stdout=subprocess.PIPE).stdout
    return [l.split('\t') for l in out.split('\n') if l]


def main():
    ref = open(os.path.join(ROOT, 'doc', 'reference.md'), encoding='utf-8').read()
    index = ref.split('## Index of SQL objects', 1)[1] if '## Index of SQL objects' in ref else ''
    errors = re.search(r'^## Errors\n(.*?)(?=^## |\Z)', ref, re.S | re.M)
    errors = errors.group(1) if errors else ''
    missing = []
    funcs = query("""SELECT p.proname, pg_get_function_identity_arguments(p.oid),
                            CASE p.prokind WHEN 'a' THEN 'aggregate' WHEN 'p' THEN 'procedure' ELSE 'function' END,
                            pg_get_function_result(p.oid)
                     FROM pg_proc p WHERE p.pronamespace = 'dx'::regnamespace ORDER BY 1, 2""")
    for name, args, kind, result in funcs:
        if '`dx.%s(%s)`' % (name, args) not in index:
            missing.append(('%s `dx.%s(%s)`' % (kind, name, args), '| `dx.%s(%s)` | %s → %s |  |' % (name, args, kind, result)))
    rels = query("""SELECT c.relname, CASE c.relkind WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence' ELSE 'table' END
                    FROM pg_class c WHERE c.relnamespace = 'dx'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S')
                    ORDER BY 1""")
    for name, kind in rels:
        if '`dx.%s`' % name not in index:
            missing.append(('%s `dx.%s`' % (kind, name), '| `dx.%s` | %s |  |' % (name, kind)))
    gucsec = re.search(r'^## GUCs\n(.*?)(?=^## |\Z)', ref, re.S | re.M)
    gucsec = gucsec.group(1) if gucsec else ''
    names = {r[0] for r in query("SELECT name FROM pg_settings WHERE name LIKE 'dxpriv.%'")}
    for f in glob.glob(os.path.join(ROOT, 'src', 'pg', '**', '*.cpp'), recursive=True):
        names.update(re.findall(r'DefineCustom\w+Variable\(\s*"(dxpriv\.\w+)"', open(f, encoding='utf-8').read()))
    gucs = sorted(names)
    for name in gucs:
        if not re.search(r'^\| `%s` \|' % re.escape(name), gucsec, re.M):
            missing.append(('setting `%s`' % name, '| `%s` | | | |' % name))  # a row of the GUCs table
    # SQLSTATEs raised by the code
    incdir = subprocess.run(['pg_config', '--includedir-server'], check=True, text=True,
                            stdout=subprocess.PIPE).stdout.strip()
    codes = {}
    for m in re.finditer(r"#define (ERRCODE_\w+)\s+MAKE_SQLSTATE\('(.)',\s*'(.)',\s*'(.)',\s*'(.)',\s*'(.)'\)",
                         open(os.path.join(incdir, 'utils', 'errcodes.h')).read()):
        codes[m.group(1)] = ''.join(m.group(i) for i in range(2, 7))
    raised = set()
    for f in glob.glob(os.path.join(ROOT, 'src', '**', '*.[ch]*'), recursive=True):
        for name in re.findall(r'\bERRCODE_[A-Z_]+\b', open(f, encoding='utf-8', errors='replace').read()):
            if name in codes:
                raised.add(codes[name])
    for f in glob.glob(os.path.join(ROOT, 'sql', '[0-9]*.sql')):
        raised.update(re.findall(r"ERRCODE\s*=\s*'([0-9A-Z]{5})'", open(f, encoding='utf-8').read()))
    for code in sorted(raised):
        if not re.search(r'^\| %s \|' % code, errors, re.M):
            missing.append(('error code %s' % code, '| %s | |' % code))
    print('reference check: %d functions/aggregates (overloads), %d tables/views/sequences, %d settings, '
          '%d error codes; %d missing from doc/reference.md' % (len(funcs), len(rels), len(gucs), len(raised), len(missing)))
    for what, row in missing:
        print('  missing: ' + (row if '--missing' in sys.argv else what))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
