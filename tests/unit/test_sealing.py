"""The Hub's secrets at rest: sealed under the KEK, opened only with it and only under their own name."""

from __future__ import annotations

from pathlib import Path

import pytest

from agen.errors import InvalidError
from agen.hub.sealing import is_sealed, kek_from_env, seal, unseal

KEK = b"a-long-random-key-encryption-key-0123456789"


def test_a_sealed_value_opens_with_its_kek_and_name_only() -> None:
    box = seal("ca_key", "-----BEGIN PRIVATE KEY-----", KEK)
    assert is_sealed(box) and "PRIVATE" not in box
    assert unseal("ca_key", box, KEK) == "-----BEGIN PRIVATE KEY-----"
    with pytest.raises(InvalidError, match="sealed with another key"):
        unseal("ca_key", box, KEK + b"!")
    with pytest.raises(InvalidError, match="sealed with another key"):
        unseal("webhook_secret", box, KEK)  # copied under another name: does not open
    with pytest.raises(InvalidError, match="AGEN_HUB_KEK"):
        unseal("ca_key", box, None)


def test_without_a_kek_values_stay_plain() -> None:
    assert seal("ca_key", "plain", None) == "plain"
    assert unseal("ca_key", "plain", KEK) == "plain"


def test_a_short_kek_is_refused_and_a_kek_file_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", "short")
    with pytest.raises(InvalidError, match="at least 32"):
        kek_from_env()
    monkeypatch.delenv("AGEN_HUB_KEK")
    path = tmp_path / "kek"
    path.write_text(KEK.decode() + "\n")
    monkeypatch.setenv("AGEN_HUB_KEK_FILE", str(path))
    assert kek_from_env() == KEK
