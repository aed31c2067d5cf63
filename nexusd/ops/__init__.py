"""Every operation the daemon serves, one module per area. Importing this package registers them all.

Handlers get the daemon's parts through `Ctx.parts` (nexusd/parts.py); the parts themselves are built, started
and stopped by the composition root (nexusd/app.py), not here.
"""

from __future__ import annotations

from . import code, core, history, memory, query

MODULES = [core, code, memory, history, query]
