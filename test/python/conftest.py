"""pytest set-up for the Python package's tests: the einops corpus's table
(test/einops/einops_agreement.py) importable, torch optional."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "einops"))
