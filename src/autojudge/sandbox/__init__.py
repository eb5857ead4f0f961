"""A sandbox for model-written Python: separate processes, resource limits, namespaces (see runner).

Imports errors only.
"""

from autojudge.sandbox.limits import NOBODY_UID, SandboxLimits
from autojudge.sandbox.pool import SandboxPool
from autojudge.sandbox.runner import RunResult, Sandbox, SandboxError, SandboxJob, same_output

__all__ = [
    "NOBODY_UID",
    "RunResult",
    "Sandbox",
    "SandboxError",
    "SandboxJob",
    "SandboxLimits",
    "SandboxPool",
    "same_output",
]
