#!/usr/bin/env python3
"""Minimal runner for the end-to-end tests: imports test_*.py, runs every test_* function.

Each test gets a fresh database (created from template0 with dxpriv installed) through the
`db` fixture helpers in e2e_common.py. Prints one line per test and closes with
'N passed, M failed'. Exit status 1 when any test failed. DXPRIV_E2E_ONLY, when set, is a regular
expression: only tests whose 'file.function' name it matches (re.search) run.
"""
import importlib.util
import os
import pathlib
import re
import sys
import time
import traceback


def main(folder: str) -> int:
    sys.path.insert(0, folder)
    passed = failed = 0
    only = re.compile(os.environ.get("DXPRIV_E2E_ONLY", ""))
    for path in sorted(pathlib.Path(folder).glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in sorted(n for n in dir(module) if n.startswith("test_")):
            if not only.search(f"{path.stem}.{name}"):
                continue
            start = time.time()
            try:
                getattr(module, name)()
                passed += 1
                print(f"ok   {path.stem}.{name} ({time.time() - start:.1f}s)", flush=True)
            except Exception:  # report and continue with the next test
                failed += 1
                print(f"FAIL {path.stem}.{name}", flush=True)
                traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
