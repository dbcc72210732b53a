"""Schemathesis hooks for scripts/schemathesis.sh: every call sees the simulator's demo state.

Before each call the simulator is reset (POST /__sim/reset), so a delete or prune drawn
earlier cannot change what a later operation answers: the run's answers depend only on the
seed, not on the order the operations ran in.
"""

import os
import urllib.request

import schemathesis

_RESET = os.environ["ARCANE_SIM_ORIGIN"] + "/__sim/reset"


@schemathesis.hook
def before_call(context, case, kwargs):
    req = urllib.request.Request(_RESET, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()
