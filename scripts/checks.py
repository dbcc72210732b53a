"""The report of a script's checks, shared by `check_manifests.py` and `test_dist.py`: each
function decorated with `@Checks.check(name)` runs at once and prints an `ok:` or `FAILED:`
line (a failed check is reported, the others still run); `summary()` prints the last line,
`N passed, N failed`.
"""

from __future__ import annotations

import traceback


class Checks:
    def __init__(self, tracebacks: bool = False):
        # test_dist.py prints where a check failed: its checks drive installers and servers.
        self.tracebacks = tracebacks
        self.results: list[tuple[str, str | None]] = []

    def check(self, name):
        def wrap(fn):
            try:
                fn()
                self.results.append((name, None))
                print(f"ok: {name}", flush=True)
            except Exception as e:
                self.results.append((name, str(e)))
                print(f"FAILED: {name}: {e}", flush=True)
                if self.tracebacks:
                    traceback.print_exc()
            return fn

        return wrap

    def summary(self) -> bool:
        """Prints a blank line and the counts; whether any check failed."""
        print()
        failed = [n for n, e in self.results if e]
        print(f"{len(self.results) - len(failed)} passed, {len(failed)} failed")
        return bool(failed)
