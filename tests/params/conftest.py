"""``rejected``: load a params.yaml of the given text and expect one clear error naming the file and key."""

from __future__ import annotations

import pytest

from autojudge.errors import InputError
from autojudge.params import load_params


@pytest.fixture
def rejected(tmp_path):
    def check(text: str, message: str) -> None:
        path = tmp_path / "params.yaml"
        path.write_text(text)
        with pytest.raises(InputError, match=message) as error:
            load_params(path)
        assert "params.yaml" in str(error.value)

    return check
