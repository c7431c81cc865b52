"""Coefficients of simkit's fused solvers, each with its source.

Explicit Runge–Kutta tableaus are checked when built (row sums equal ``c``, weights
sum to 1, the embedded error weights sum to 0, the interpolant reproduces the step at
``theta = 1``), as diffrax checks its Butcher tableaus; tests also check the observed
order and compare with diffrax's copies of the same tableaus.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class ExplicitTableau:
    """An FSAL explicit RK pair with a polynomial dense output.

    ``a`` (s x s, strictly lower), ``b`` (s,), ``e = b - b_hat`` (s,), ``c`` (s,); the
    interpolant is ``y(t + theta h) = y + h * sum_i b_i(theta) k_i`` with
    ``b_i(theta) = sum_j dense[i, j] theta**(j+1)`` (rows: stages, columns: powers).
    """

    name: str
    order: int
    error_order: int
    a: np.ndarray
    b: np.ndarray
    e: np.ndarray
    c: np.ndarray
    dense: np.ndarray
    source: str

    def __post_init__(self) -> None:
        s = len(self.b)
        if self.a.shape != (s, s) or self.c.shape != (s,) or self.e.shape != (s,):
            raise ValueError(f"{self.name}: inconsistent tableau shapes")
        if np.any(np.triu(self.a) != 0):
            raise ValueError(f"{self.name}: a must be strictly lower triangular (explicit)")
        if not np.allclose(self.a.sum(axis=1), self.c, atol=1e-14):
            raise ValueError(f"{self.name}: rows of a do not sum to c")
        if not np.isclose(self.b.sum(), 1.0, atol=1e-14) or not np.isclose(self.e.sum(), 0.0, atol=1e-14):
            raise ValueError(f"{self.name}: weights must sum to 1 and error weights to 0")
        if not np.allclose(self.a[-1], self.b) or self.c[-1] != 1.0:
            raise ValueError(f"{self.name}: not first-same-as-last")
        if not np.allclose(self.dense.sum(axis=1), self.b, atol=1e-13):
            raise ValueError(f"{self.name}: the interpolant does not reproduce the step at theta=1")


def _lower(rows: list[list[float]], s: int) -> np.ndarray:
    a = np.zeros((s, s))
    for i, row in enumerate(rows, start=1):
        a[i, : len(row)] = [float(x) for x in row]
    return a


def _dopri5() -> ExplicitTableau:
    rows = [
        [F(1, 5)],
        [F(3, 40), F(9, 40)],
        [F(44, 45), F(-56, 15), F(32, 9)],
        [F(19372, 6561), F(-25360, 2187), F(64448, 6561), F(-212, 729)],
        [F(9017, 3168), F(-355, 33), F(46732, 5247), F(49, 176), F(-5103, 18656)],
        [F(35, 384), 0, F(500, 1113), F(125, 192), F(-2187, 6784), F(11, 84)],
    ]
    a = _lower(rows, 7)
    b = a[-1].copy()
    e = np.array([float(x) for x in (F(71, 57600), 0, F(-71, 16695), F(71, 1920),
                                     F(-17253, 339200), F(22, 525), F(-1, 40))])
    c = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
    # Shampine's continuous extension as in Hairer's DOPRI5 (CONTD5):
    # y(theta) = y0 + theta*(dy + (1-theta)*(h k1 - dy + theta*(dy - h k7 - (h k1 - dy)
    #            + (1-theta)*h*sum d_i k_i))),  dy = h * sum b_i k_i; expanded into powers.
    d = np.array([-12715105075 / 11282082432, 0, 87487479700 / 32700410799,
                  -10690763975 / 1880347072, 701980252875 / 199316789632,
                  -1453857185 / 822651844, 69997945 / 29380423])
    unit1 = np.eye(7)[0]
    unit7 = np.eye(7)[6]
    # In units of h*k: dy = b, bspl = e1 - b, r4 = b - e7 - bspl, r5 = d.
    # theta*(b + (1-theta)*(bspl + theta*(r4 + (1-theta)*r5)))
    bspl = unit1 - b
    r4 = b - unit7 - bspl
    # powers: theta^1: b + bspl; theta^2: -bspl + r4 + r5; theta^3: -r4 - 2 r5; theta^4: r5
    dense = np.stack([b + bspl, -bspl + r4 + d, -r4 - 2 * d, d], axis=1)
    return ExplicitTableau(
        "DOPRI5", 5, 4, a, b, e, c, dense,
        "J. R. Dormand & P. J. Prince (1980), J. Comput. Appl. Math. 6:19-26; dense output of "
        "L. F. Shampine (1986), Math. Comp. 46:135-150, as in E. Hairer, S. P. Nørsett & "
        "G. Wanner, Solving ODEs I, §II.6 (code DOPRI5).",
    )


def _tsit5() -> ExplicitTableau:
    rows = [
        [0.161],
        [-0.008480655492356989, 0.335480655492357],
        [2.897153057105493, -6.359448489975075, 4.3622954328695815],
        [5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525],
        [5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401,
         -0.028269050394068383],
        [0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742,
         -3.290069515436081, 2.324710524099774],
    ]
    a = _lower(rows, 7)
    b = a[-1].copy()
    e = -np.array([0.00178001105222577714, 0.0008164344596567469, -0.007880878010261995,
                   0.1447110071732629, -0.5823571654525552, 0.45808210592918697,
                   -0.015151515151515152])
    e[-1] -= e.sum()  # exact zero sum (the printed digits leave ~1e-17)
    c = np.array([0.0, 0.161, 0.327, 0.9, 0.9800255409045097, 1.0, 1.0])
    # b_i(theta) = sum_j r_ij theta^j (Tsitouras 2011, §3, continuous extension)
    dense = np.array([
        [1.0, -2.763706197274826, 2.9132554618219126, -1.0530884977290216],
        [0.0, 0.13169999999999998, -0.2234, 0.1017],
        [0.0, 3.9302962368947516, -5.941033872131505, 2.490627285651253],
        [0.0, -12.411077166933676, 30.33818863028232, -16.548102889244902],
        [0.0, 37.50931341651104, -88.1789048947664, 47.37952196281928],
        [0.0, -27.896526289197286, 65.09189467479366, -34.87065786149661],
        [0.0, 1.5, -4.0, 2.5],
    ])
    return ExplicitTableau(
        "Tsit5", 5, 4, a, b, e, c, dense,
        "Ch. Tsitouras (2011), Runge-Kutta pairs of order 5(4) satisfying only the first "
        "column simplifying assumption, Comput. Math. Appl. 62:770-775 (tableau and "
        "continuous extension).",
    )


DOPRI5 = _dopri5()
TSIT5 = _tsit5()


def _rooted_trees(order: int) -> list[tuple]:
    """All rooted trees with ``order`` nodes, each a sorted tuple of its subtrees."""
    if order == 1:
        return [()]
    found = set()

    def forests(nodes, largest):  # multisets of trees with ``nodes`` nodes, in order
        if nodes == 0:
            yield ()
            return
        for k in range(1, nodes + 1):
            for t in _rooted_trees(k):
                if largest is not None and (k, t) > largest:
                    continue
                for rest in forests(nodes - k, (k, t)):
                    yield (t,) + rest

    for children in forests(order - 1, None):
        found.add(tuple(sorted(children)))
    return sorted(found)


def _tree_density(t: tuple) -> int:
    def size(u):
        return 1 + sum(size(c) for c in u)

    out = size(t)
    for child in t:
        out *= _tree_density(child)
    return out


def _rosenbrock_order_defect(alpha: np.ndarray, g: np.ndarray, weights: np.ndarray, order: int,
                             theta: float = 1.0) -> float:
    """Largest ``|sum_i w_i Phi_i(t) - theta**|t| / gamma(t)|`` over the rooted trees of up to
    ``order`` nodes: the order conditions of a Rosenbrock method in its original form
    (``alpha_ij``, ``gamma_ij`` with the diagonal, weights of the original increments;
    Hairer & Wanner, Solving ODEs II, §IV.7), by the B-series of a stage
    ``k_i = h f(y0 + sum_j alpha_ij k_j) + h J sum_j gamma_ij k_j``."""
    memo: dict = {}

    def phi(t):
        if t not in memo:
            v = np.ones(len(weights))
            for child in t:
                v = v * (alpha @ phi(child))
            if len(t) == 1:  # J times one subtree
                v = v + g @ phi(t[0])
            memo[t] = v
        return memo[t]

    worst = 0.0
    for n in range(1, order + 1):
        for t in _rooted_trees(n):
            worst = max(worst, abs(float(weights @ phi(t)) - theta**n / _tree_density(t)))
    return worst


@dataclasses.dataclass(frozen=True, eq=False)
class RosenbrockTableau:
    """A Rosenbrock method in Hairer's form (increments ``k_i``, ``W = I/(h gamma) - J``).

    Stage i: ``W k_i = f(t + alpha_i h, y + sum_j a_ij k_j) + h d_i f_t + sum_j (c_ij/h) k_j``.
    ``y1 = y + sum_i m_i k_i``; error ``= k_s`` (stiffly accurate: the last two stages);
    dense output ``y(theta) = (1-theta) y0 + theta (y1 + (1-theta)(h_1 + theta (h_2 +
    theta (... + theta h_r))))`` with ``h_j = sum_i dense[j, i] k_i`` (``r`` rows).

    Checked when built, in the method's original form (``Gamma = (I/gamma - c)^-1``,
    ``alpha_ij = (a Gamma)_ij``, weights ``m Gamma``): rows of ``alpha_ij`` sum to ``alpha``
    and rows of ``Gamma`` to ``d``; the step and the embedded solution ``y1 - k_s`` are the
    last two stages (stiffly accurate); the order conditions (every rooted tree) hold to
    ``order`` for the step, ``order - 1`` for the embedded solution and ``dense_order``
    for the dense output.
    """

    name: str
    order: int
    dense_order: int
    gamma: float
    alpha: np.ndarray
    a: np.ndarray
    c: np.ndarray
    d: np.ndarray
    m: np.ndarray
    dense: np.ndarray
    source: str

    def __post_init__(self) -> None:
        s = len(self.m)
        if (self.a.shape != (s, s) or self.c.shape != (s, s) or self.alpha.shape != (s,)
                or self.d.shape != (s,) or self.dense.ndim != 2 or self.dense.shape[1] != s):
            raise ValueError(f"{self.name}: inconsistent tableau shapes")
        if np.any(np.triu(self.a) != 0) or np.any(np.triu(self.c) != 0):
            raise ValueError(f"{self.name}: a and c must be strictly lower triangular")
        g = np.linalg.inv(np.eye(s) / self.gamma - self.c)
        alpha_ij = self.a @ g
        if not np.allclose(alpha_ij.sum(axis=1), self.alpha, rtol=0, atol=1e-12):
            raise ValueError(f"{self.name}: rows of a do not sum to alpha")
        if not np.allclose(g.sum(axis=1), self.d, rtol=0, atol=1e-12):
            raise ValueError(f"{self.name}: rows of gamma_ij do not sum to d")
        b = self.m @ g
        b_hat = (self.m - np.eye(s)[-1]) @ g
        beta = alpha_ij + g
        close = lambda u, v: np.allclose(u, v, rtol=0, atol=1e-12)  # noqa: E731
        if not (close(b, beta[-1]) and close(b_hat, beta[-2]) and self.alpha[-1] == self.alpha[-2] == 1.0):
            raise ValueError(f"{self.name}: the step and its error estimate are not stiffly accurate")
        if _rosenbrock_order_defect(alpha_ij, g, b, self.order) > 1e-12:
            raise ValueError(f"{self.name}: the step does not satisfy the order-{self.order} conditions")
        if _rosenbrock_order_defect(alpha_ij, g, b_hat, self.order - 1) > 1e-12:
            raise ValueError(f"{self.name}: the embedded solution is not of order {self.order - 1}")
        for theta in (0.3, 0.7):
            inner = self.dense[-1]
            for row in self.dense[-2::-1]:
                inner = row + theta * inner
            w = (theta * self.m + theta * (1.0 - theta) * inner) @ g
            if _rosenbrock_order_defect(alpha_ij, g, w, self.dense_order, theta) > 1e-12:
                raise ValueError(f"{self.name}: the dense output is not of order {self.dense_order}")


def _rodas4() -> RosenbrockTableau:
    a = _lower([
        [1.544],
        [0.9466785280815826, 0.2557011698983284],
        [3.314825187068521, 2.896124015972201, 0.9986419139977817],
        [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950],
        [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 1.0],
    ], 6)
    c = _lower([
        [-5.6688],
        [-2.430093356833875, -0.2063599157091915],
        [-0.1073529058151375, -9.594562251023355, -20.47028614809616],
        [7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160],
        [8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136,
         -6.058818238834054],
    ], 6)
    return RosenbrockTableau(
        "Rodas4", 4, 3, 0.25,
        alpha=np.array([0.0, 0.386, 0.21, 0.63, 1.0, 1.0]),
        a=a, c=c,
        d=np.array([0.25, -0.1043, 0.1035, -0.0362, 0.0, 0.0]),
        m=np.array([1.221224509226641, 6.019134481288629, 12.53708332932087,
                    -0.6878860361058950, 1.0, 1.0]),
        dense=np.array([[10.12623508344586, -7.487995877610167, -34.80091861555747,
                         -7.992771707568823, 1.025137723295662, 0.0],
                        [-0.6762803392801253, 6.087714651680015, 16.43084320892478,
                         24.76722511418386, -6.594389125716872, 0.0]]),
        source="E. Hairer & G. Wanner (1996), Solving ODEs II, §IV.7, method RODAS (order 4(3), "
        "L-stable, stiffly accurate) with its dense output; coefficients of Hairer's code "
        "rodas.f (ROCOE, METH=1).",
    )


RODAS4 = _rodas4()


def _rodas5p() -> RosenbrockTableau:
    last = [-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256,
            0.030198172008377946]  # stage 6's row; stages 7, 8 and the step add 1's (stiffly accurate)
    a = _lower([
        [3.0],
        [2.849394379747939, 0.45842242204463923],
        [-6.954028509809101, 2.489845061869568, -10.358996098473584],
        [2.8029986275628964, 0.5072464736228206, -0.3988312541770524, -0.04721187230404641],
        last,
        last + [1.0],
        last + [1.0, 1.0],
    ], 8)
    c = _lower([
        [-14.155112264123755],
        [-17.97296035885952, -2.859693295451294],
        [147.12150275711716, -1.41221402718213, 71.68940251302358],
        [165.43517024871676, -0.4592823456491126, 42.90938336958603, -5.961986721573306],
        [24.854864614690072, -3.0009227002832186, 47.4931110020768, 5.5814197821558125,
         -0.6610691825249471],
        [30.91273214028599, -3.1208243349937974, 77.79954646070892, 34.28646028294783,
         -19.097331116725623, -28.087943162872662],
        [37.80277123390563, -3.2571969029072276, 112.26918849496327, 66.9347231244047,
         -40.06618937091002, -54.66780262877968, -9.48861652309627],
    ], 8)
    return RosenbrockTableau(
        "Rodas5P", 5, 4, 0.21193756319429014,
        alpha=np.array([0.0, 0.6358126895828704, 0.4095798393397535, 0.9769306725060716,
                        0.4288403609558664, 1.0, 1.0, 1.0]),
        a=a, c=c,
        d=np.array([0.21193756319429014, -0.42387512638858027, -0.3384627126235924,
                    1.8046452872882734, 2.325825639765069, 0.0, 0.0, 0.0]),
        m=np.array(last + [1.0, 1.0, 1.0]),
        dense=np.array([
            [25.948786856663858, -2.5579724845846235, 10.433815404888879, -2.3679251022685204,
             0.524948541321073, 1.1241088310450404, 0.4272876194431874, -0.17202221070155493],
            [-9.91568850695171, -0.9689944594115154, 3.0438037242978453, -24.495224566215796,
             20.176138334709044, 15.98066361424651, -6.789040303419874, -6.710236069923372],
            [11.419903575922262, 2.8879645146136994, 72.92137995996029, 80.12511834622643,
             -52.072871366152654, -59.78993625266729, -0.15582684282751913, 4.883087185713722],
        ]),
        source="G. Steinebach (2023), Construction of Rosenbrock-Wanner method Rodas5P and numerical "
        "benchmarks within the Julia Differential Equations package, BIT Numer. Math. 63:27 "
        "(order 5(4), 8 stages, stiffly accurate, L-stable, 4th-order dense output); coefficients "
        "as transcribed by the author into OrdinaryDiffEq.jl (Rodas5PTableau: A, C, c, d, H, "
        "already in Hairer's form: a = A, c = C, alpha = c, m = (A[8, 1:7], 1), dense = H).",
    )


RODAS5P = _rodas5p()


@dataclasses.dataclass(frozen=True, eq=False)
class DOP853Tableau:
    """Hairer's DOP853: 12 stages of order 8, error estimators of order 5 and 3, and a
    7th-order dense output that needs ``f(t+h, y1)`` and three more stages (14-16).

    Stage arrays are indexed from 0 (stage 1 -> index 0); ``a`` has 16 rows (stages 1-12,
    13 = f(t+h, y1), 14-16 for the dense output)."""

    name: str
    order: int
    error_order: int
    c: np.ndarray
    a: np.ndarray
    b: np.ndarray
    er: np.ndarray
    bhh: np.ndarray
    d: np.ndarray  # (4, 16): coefficients of the dense-output polynomials 5..8
    source: str

    def __post_init__(self) -> None:
        stages = self.a[:12]
        if not np.allclose(stages.sum(axis=1), self.c[:12], atol=1e-13):
            raise ValueError("DOP853: rows of a do not sum to c")
        if not np.isclose(self.b.sum(), 1.0, atol=1e-13) or not np.isclose(self.er.sum(), 0.0, atol=1e-13):
            raise ValueError("DOP853: weights must sum to 1 and error weights to 0")
        if not np.allclose(self.a[13:].sum(axis=1), self.c[13:], atol=1e-13):
            raise ValueError("DOP853: dense-output stage rows do not sum to c")


def _dop853() -> DOP853Tableau:
    c = np.zeros(16)
    c[1:12] = [0.526001519587677318785587544488e-01, 0.789002279381515978178381316732e-01,
               0.118350341907227396726757197510, 0.281649658092772603273242802490,
               0.333333333333333333333333333333, 0.25, 0.307692307692307692307692307692,
               0.651282051282051282051282051282, 0.6, 0.857142857142857142857142857142, 1.0]
    c[12] = 1.0
    c[13:] = [0.1, 0.2, 0.777777777777777777777777777778]
    a = np.zeros((16, 16))
    entries = {
        (2, 1): 5.26001519587677318785587544488e-02,
        (3, 1): 1.97250569845378994544595329183e-02, (3, 2): 5.91751709536136983633785987549e-02,
        (4, 1): 2.95875854768068491816892993775e-02, (4, 3): 8.87627564304205475450678981324e-02,
        (5, 1): 2.41365134159266685502369798665e-01, (5, 3): -8.84549479328286085344864962717e-01,
        (5, 4): 9.24834003261792003115737966543e-01,
        (6, 1): 3.7037037037037037037037037037e-02, (6, 4): 1.70828608729473871279604482173e-01,
        (6, 5): 1.25467687566822425016691814123e-01,
        (7, 1): 3.7109375e-02, (7, 4): 1.70252211019544039314978060272e-01,
        (7, 5): 6.02165389804559606850219397283e-02, (7, 6): -1.7578125e-02,
        (8, 1): 3.70920001185047927108779319836e-02, (8, 4): 1.70383925712239993810214054705e-01,
        (8, 5): 1.07262030446373284651809199168e-01, (8, 6): -1.53194377486244017527936158236e-02,
        (8, 7): 8.27378916381402288758473766002e-03,
        (9, 1): 6.24110958716075717114429577812e-01, (9, 4): -3.36089262944694129406857109825,
        (9, 5): -8.68219346841726006818189891453e-01, (9, 6): 2.75920996994467083049415600797e+01,
        (9, 7): 2.01540675504778934086186788979e+01, (9, 8): -4.34898841810699588477366255144e+01,
        (10, 1): 4.77662536438264365890433908527e-01, (10, 4): -2.48811461997166764192642586468,
        (10, 5): -5.90290826836842996371446475743e-01, (10, 6): 2.12300514481811942347288949897e+01,
        (10, 7): 1.52792336328824235832596922938e+01, (10, 8): -3.32882109689848629194453265587e+01,
        (10, 9): -2.03312017085086261358222928593e-02,
        (11, 1): -9.3714243008598732571704021658e-01, (11, 4): 5.18637242884406370830023853209,
        (11, 5): 1.09143734899672957818500254654, (11, 6): -8.14978701074692612513997267357,
        (11, 7): -1.85200656599969598641566180701e+01, (11, 8): 2.27394870993505042818970056734e+01,
        (11, 9): 2.49360555267965238987089396762, (11, 10): -3.0467644718982195003823669022,
        (12, 1): 2.27331014751653820792359768449, (12, 4): -1.05344954667372501984066689879e+01,
        (12, 5): -2.00087205822486249909675718444, (12, 6): -1.79589318631187989172765950534e+01,
        (12, 7): 2.79488845294199600508499808837e+01, (12, 8): -2.85899827713502369474065508674,
        (12, 9): -8.87285693353062954433549289258, (12, 10): 1.23605671757943030647266201528e+01,
        (12, 11): 6.43392746015763530355970484046e-01,
        (14, 1): 5.61675022830479523392909219681e-02, (14, 7): 2.53500210216624811088794765333e-01,
        (14, 8): -2.46239037470802489917441475441e-01, (14, 9): -1.24191423263816360469010140626e-01,
        (14, 10): 1.5329179827876569731206322685e-01, (14, 11): 8.20105229563468988491666602057e-03,
        (14, 12): 7.56789766054569976138603589584e-03, (14, 13): -8.298e-03,
        (15, 1): 3.18346481635021405060768473261e-02, (15, 6): 2.83009096723667755288322961402e-02,
        (15, 7): 5.35419883074385676223797384372e-02, (15, 8): -5.49237485713909884646569340306e-02,
        (15, 11): -1.08347328697249322858509316994e-04, (15, 12): 3.82571090835658412954920192323e-04,
        (15, 13): -3.40465008687404560802977114492e-04, (15, 14): 1.41312443674632500278074618366e-01,
        (16, 1): -4.28896301583791923408573538692e-01, (16, 6): -4.69762141536116384314449447206,
        (16, 7): 7.68342119606259904184240953878, (16, 8): 4.06898981839711007970213554331,
        (16, 9): 3.56727187455281109270669543021e-01, (16, 13): -1.39902416515901462129418009734e-03,
        (16, 14): 2.9475147891527723389556272149, (16, 15): -9.15095847217987001081870187138,
    }
    for (i, j), v in entries.items():
        a[i - 1, j - 1] = v
    b = np.zeros(12)
    b[[0, 5, 6, 7, 8, 9, 10, 11]] = [
        5.42937341165687622380535766363e-02, 4.45031289275240888144113950566,
        1.89151789931450038304281599044, -5.8012039600105847814672114227,
        3.1116436695781989440891606237e-01, -1.52160949662516078556178806805e-01,
        2.01365400804030348374776537501e-01, 4.47106157277725905176885569043e-02]
    a[12, :12] = b  # stage 13 is f(t + h, y1)
    er = np.zeros(12)
    er[[0, 5, 6, 7, 8, 9, 10, 11]] = [
        0.1312004499419488073250102996e-01, -0.1225156446376204440720569753e+01,
        -0.4957589496572501915214079952, 0.1664377182454986536961530415e+01,
        -0.3503288487499736816886487290, 0.3341791187130174790297318841,
        0.8192320648511571246570742613e-01, -0.2235530786388629525884427845e-01]
    bhh = np.zeros(12)
    bhh[[0, 8, 11]] = [0.244094488188976377952755905512, 0.733846688281611857341361741547,
                       0.220588235294117647058823529412e-01]
    idx = [0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
    d = np.zeros((4, 16))
    d[0, idx] = [-0.84289382761090128651353491142e+01, 0.56671495351937776962531783590,
                 -0.30689499459498916912797304727e+01, 0.23846676565120698287728149680e+01,
                 0.21170345824450282767155149946e+01, -0.87139158377797299206789907490,
                 0.22404374302607882758541771650e+01, 0.63157877876946881815570249290,
                 -0.88990336451333310820698117400e-01, 0.18148505520854727256656404962e+02,
                 -0.91946323924783554000451984436e+01, -0.44360363875948939664310572000e+01]
    d[1, idx] = [0.10427508642579134603413151009e+02, 0.24228349177525818288430175319e+03,
                 0.16520045171727028198505394887e+03, -0.37454675472269020279518312152e+03,
                 -0.22113666853125306036270938578e+02, 0.77334326684722638389603898808e+01,
                 -0.30674084731089398182061213626e+02, -0.93321305264302278729567221706e+01,
                 0.15697238121770843886131091075e+02, -0.31139403219565177677282850411e+02,
                 -0.93529243588444783865713862664e+01, 0.35816841486394083752465898540e+02]
    d[2, idx] = [0.19985053242002433820987653617e+02, -0.38703730874935176555105901742e+03,
                 -0.18917813819516756882830838328e+03, 0.52780815920542364900561016686e+03,
                 -0.11573902539959630126141871134e+02, 0.68812326946963000169666922661e+01,
                 -0.10006050966910838403183860980e+01, 0.77771377980534432092869265740,
                 -0.27782057523535084065932004339e+01, -0.60196695231264120758267380846e+02,
                 0.84320405506677161018159903784e+02, 0.11992291136182789328035130030e+02]
    d[3, idx] = [-0.25693933462703749003312586129e+02, -0.15418974869023643374053993627e+03,
                 -0.23152937917604549567536039109e+03, 0.35763911791061412378285349910e+03,
                 0.93405324183624310003907691704e+02, -0.37458323136451633156875139351e+02,
                 0.10409964950896230045147246184e+03, 0.29840293426660503123344363579e+02,
                 -0.43533456590011143754432175058e+02, 0.96324553959188282948394950600e+02,
                 -0.39177261675615439165231486172e+02, -0.14972683625798562581422125276e+03]
    return DOP853Tableau(
        "DOP853", 8, 7, c, a, b, er, bhh, d,
        "E. Hairer, S. P. Nørsett & G. Wanner, Solving ODEs I, 2nd ed., §II.10 (method of "
        "Dormand & Prince, order 8 with 5th- and 3rd-order error estimators and 7th-order "
        "dense output); coefficients of Hairer's code dop853.f.",
    )


DOP853 = _dop853()
