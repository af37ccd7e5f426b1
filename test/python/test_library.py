"""ein's library of .ein files (share/ein, `from ein.optim import ...`) is
found from the package wherever it lives: the build tree (build/share/ein,
beside build/lib/libein.so) or an installed wheel (ein/share/ein, beside
ein/lib/libein.so). The oracle is numpy's SGD step."""
import numpy as np

import ein

SOURCE = '''from ein.optim import sgd

def step(w: f32["r c"], g: f32["r c"], lr: f64[""]) -> f32["r c"]:
    return sgd(w, g, lr)
'''


def test_optim_library_is_found():
    r = np.random.default_rng(3)
    w = r.standard_normal((3, 4)).astype(np.float32)
    g = r.standard_normal((3, 4)).astype(np.float32)
    module = ein.load_source(SOURCE, "sgd_step.ein")
    got = module.step(w, g, 0.5)
    np.testing.assert_allclose(got, w - np.float32(0.5) * g, rtol=1e-6, atol=1e-6)
