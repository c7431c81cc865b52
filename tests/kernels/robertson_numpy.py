"""The library's Robertson problem in NumPy, for SciPy's references in the kernel tests."""

import numpy as np

from simkit import models

# read once: SciPy calls the rhs tens of thousands of times, and building the model each time
# took 3/4 of its time
K1, K2, K3 = (models.get("robertson").params[k] for k in ("k1", "k2", "k3"))


def robertson_numpy(t, y):
    """``dy/dt`` of Robertson's kinetics (the library's rates), ``(3,)``."""
    return np.array([-K1 * y[0] + K3 * y[1] * y[2], K1 * y[0] - K3 * y[1] * y[2] - K2 * y[1] ** 2,
                     K2 * y[1] ** 2])
