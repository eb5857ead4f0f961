"""Errors the user can act on: each names the input that is wrong."""


class AutoJudgeError(Exception):
    """Base class of every error meant for the user, printed without a traceback by the CLI."""


class InputError(AutoJudgeError):
    """A file, row or parameter given to the project is missing or malformed."""


class ModelPairError(AutoJudgeError):
    """A draft/target pair cannot be used together."""


class TrackingError(AutoJudgeError):
    """MLflow failed for a reason other than a missing model, version or alias (its server cannot be
    reached, a permission is missing): carries MLflow's message."""
