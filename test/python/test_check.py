"""ein.check and `python -m ein check`: the static shape check of Python
source from Python, against einc check (the same library: the text must be
the same) and against the code run under einops (the independent oracle: a
file ein.check refuses fails when run, one it passes runs)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ein

# The build tree: build/python/ein/_ein*.so beside build/bin/einc.
EINC = pathlib.Path(ein._ein.__file__).resolve().parents[2] / "bin" / "einc"

CLEAN = '''import numpy as np
from einops import rearrange, reduce
from jaxtyping import Float


def split_heads(x: Float[np.ndarray, "b s hd"], h: int) -> Float[np.ndarray, "b h s d"]:
    return rearrange(x, "b s (h d) -> b h s d", h=h)


def pool(x: Float[np.ndarray, "b s c"]) -> Float[np.ndarray, "b c"]:
    return reduce(x, "b s c -> b c", "mean")
'''

# One bug: the pooled axis is the channels, not the sequence.
BUGGY = CLEAN.replace('reduce(x, "b s c -> b c", "mean")',
                      'reduce(x, "b s c -> b s", "mean")')


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def run_module(path):
    """The file run on data with jaxtyping's run-time checks (beartype): the
    oracle, independent of ein."""
    jaxtyping = pytest.importorskip("jaxtyping")
    beartype = pytest.importorskip("beartype")
    scope = {}
    exec(compile(pathlib.Path(path).read_text(), str(path), "exec"), scope)
    checked = {name: jaxtyping.jaxtyped(typechecker=beartype.beartype)(scope[name])
               for name in ("split_heads", "pool")}
    x = np.zeros((2, 5, 12), np.float32)
    checked["split_heads"](x, h=3)
    return checked["pool"](x)


def test_clean_file_checks_and_runs(tmp_path):
    path = write(tmp_path, "clean.py", CLEAN)
    result = ein.check(path)
    assert result.ok and bool(result) and result.errors == 0
    assert result.diagnostics == ""
    summary = result.summary
    assert summary["einops_checked"] == 2
    assert [f["status"] for f in summary["functions"]] == ["full", "full"]
    assert summary["entry_checks"] == [{"function": "split_heads", "check": "hd % h == 0"}]
    assert run_module(path).shape == (2, 12)


def test_buggy_file_is_refused_at_its_line_and_fails_when_run(tmp_path):
    path = write(tmp_path, "buggy.py", BUGGY)
    result = ein.check(path)
    assert not result.ok and result.errors == 1
    line = BUGGY.splitlines().index('    return reduce(x, "b s c -> b s", "mean")') + 1
    assert result.diagnostics.startswith(f"{path}:{line}:")
    assert "^" in result.diagnostics
    jaxtyping = pytest.importorskip("jaxtyping")
    with pytest.raises(jaxtyping.TypeCheckError):
        run_module(path)


def test_same_text_as_einc(tmp_path):
    if not EINC.exists():
        pytest.skip("einc is not built beside the package")
    path = write(tmp_path, "buggy.py", BUGGY)
    result = ein.check(path)
    einc = subprocess.run([str(EINC), "check", str(path)], capture_output=True,
                          text=True)
    assert einc.returncode == 1
    assert einc.stdout == result.report
    assert result.diagnostics in einc.stderr


def test_source_text_and_syntax_error():
    result = ein.check(source="def f(:\n    pass\n", path="bad.py")
    assert not result.ok
    assert result.diagnostics.startswith("bad.py:1:")
    assert result.report == "" and result.summary is None


def test_missing_file_raises():
    with pytest.raises(ein.Error, match="no-such-file.py"):
        ein.check("/no/such/dir/no-such-file.py")


def test_no_path_or_source():
    with pytest.raises(TypeError):
        ein.check()


def test_python_m_ein_check(tmp_path):
    clean = write(tmp_path, "clean.py", CLEAN)
    buggy = write(tmp_path, "buggy.py", BUGGY)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    ok = subprocess.run([sys.executable, "-m", "ein", "check", str(clean)],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "2 fully checked" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "ein", "check", str(clean), str(buggy)],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 1
    assert f"{buggy}:" in bad.stderr and "error:" in bad.stderr
    usage = subprocess.run([sys.executable, "-m", "ein", "lint", str(clean)],
                           capture_output=True, text=True, env=env)
    assert usage.returncode == 2 and "usage:" in usage.stderr
