"""Files a crafted ecosystem folder names are read by this host only when they are
regular files of the folder: a probe part, a module or an image support file that is a
symlink out of the folder, or a path out of it, is refused in one line, and the bytes
behind it reach nothing (environments/ecosystems/files.py)."""

import shutil
from pathlib import Path

import pytest

INVENTORY = Path(__file__).parents[1] / "fixtures" / "ecosystems" / "inventory"


@pytest.mark.parametrize("spec_change,needle", [
    ("probe: \"@files\"", "field 'probe'"),
    ("samplers: {module: samplers.py}", "field 'samplers.module'"),
])
def test_a_file_the_spec_names_must_be_a_regular_file_of_the_folder(tmp_path, spec_change,
                                                                    needle):
    """A probe part or a module that is a symlink out of the folder (here to a canary of
    the host) is refused in one line; its bytes reach nothing."""
    from environments.ecosystems import EcosystemError, load_ecosystem

    folder = tmp_path / "eco"
    shutil.copytree(INVENTORY, folder)
    (tmp_path / "canary.py").write_text("SECRET = 'host secret'\n")
    (folder / "link.py").symlink_to(tmp_path / "canary.py")
    spec = folder / "ecosystem.yaml"
    replacement = ("probe: link.py" if "probe" in spec_change
                   else "samplers: {module: link.py}")
    spec.write_text(spec.read_text().replace(spec_change, replacement))
    with pytest.raises(EcosystemError) as caught:
        load_ecosystem(str(folder))
    assert needle in str(caught.value) and "symlink" in str(caught.value)
    assert "host secret" not in str(caught.value)


def test_support_files_must_be_inside_the_folder(tmp_path):
    from environments.ecosystems import EcosystemError, load_ecosystem

    folder = tmp_path / "eco"
    shutil.copytree(INVENTORY, folder)
    (tmp_path / "canary.txt").write_text("host secret\n")
    spec = folder / "ecosystem.yaml"
    for support in ("../canary.txt", str(tmp_path / "canary.txt")):
        spec.write_text((INVENTORY / "ecosystem.yaml").read_text()
                        + f"image: {{support: [{support!r}]}}\n")
        with pytest.raises(EcosystemError, match="field 'image.support'"):
            load_ecosystem(str(folder))
