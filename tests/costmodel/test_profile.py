"""A profile file is a typed, frozen pydantic model: every preset loads, and a bad key, a wrong
type or a negative rate is one line naming the file and the key path, with exit 2 through the
CLI (the same line as a scenario's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli import main
from bench.costmodel.profile import ProfileError, ProfileSpec, from_mapping, load_profile, presets

LINKS = "links:\n  intra: {alpha_s: 1.0e-6, beta_bytes_per_s: 4.5e+11}\n"


def test_every_preset_loads_and_round_trips() -> None:
    assert len(presets()) >= 10
    for name in presets():
        prof = load_profile(name)
        assert prof.name == name and prof.links
        again = from_mapping(prof.as_yaml(), prof.path)
        assert again == prof  # as_yaml writes back what was read


@pytest.mark.parametrize(("text", "says"), [
    (LINKS + "overhead: 1.0e-6\n", "overhead: unknown key (did you mean overhead_s?)"),
    (LINKS + "  intre: {alpha_s: 1.0e-6, beta_bytes_per_s: 1.0e+9}\n",
     "links.intre: unknown key (did you mean intra?)"),
    (LINKS + "device: {flops_per_sec: 1.0e+15}\n",
     "device.flops_per_sec: unknown key (did you mean flops_per_s?)"),
    (LINKS + "nics_per_node: eight\n", "nics_per_node: Input should be a valid integer"),
    (LINKS + "gamma_s_per_byte: [1]\n", "gamma_s_per_byte: Input should be a valid number"),
    (LINKS + "device: {overlaps_communication: 1}\n",
     "device.overlaps_communication: Input should be a valid boolean"),
    (LINKS.replace("4.5e+11", "-4.5e+11"),
     "links.intra.beta_bytes_per_s: Input should be greater than 0"),
    (LINKS + "mpi: {eager_limit_bytes: -1}\n",
     "mpi.eager_limit_bytes: Input should be greater than or equal to 0"),
    (LINKS + "slow: [{node: 1, factor: 0.5}]\n",
     "slow.0.factor: Input should be greater than or equal to 1"),
    (LINKS + "slow: [{link: [1, 1], factor: 2}]\n", "slow.0: link: expected two different ranks >= 0"),
    ("links: {}\n", "links: expected a mapping of link classes (intra, inter, spine)"),
    # a misspelt required key: its misspelling named, not "alpha_s: Field required"
    (LINKS.replace("alpha_s", "alpha"), "links.intra.alpha: unknown key (did you mean alpha_s?)"),
])
def test_a_bad_profile_is_one_line_exit_2(tmp_path: Path, capsys, text: str, says: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as e:
        load_profile(path)
    assert str(e.value) == f"{path}: {says}"
    assert main(["predict", "--profile", str(path), "--topology", "1x2", "--sizes", "1MiB",
                 "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"commbench: predict: {path}: {says}"


def test_the_model_is_frozen() -> None:
    spec = ProfileSpec.model_validate({"links": {"intra": {"alpha_s": 0, "beta_bytes_per_s": 1}}})
    with pytest.raises(ValueError, match="frozen"):
        spec.source = "x"  # type: ignore[misc]
