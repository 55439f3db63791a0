"""The numbers of SP 800-90B the entropy source is built from, computed in Python: the health
tests' cutoffs (§4.4) and the conditioning's input length (§3.1.5.1.2). No Amaranth here.

A raw sample is one bit (the XOR of the sampled ring oscillators). ``H`` is the min-entropy
per raw sample the design *claims*; only an assessment of raw samples from a real board
(NIST's ``ea_non_iid``) can support a value, and the cutoffs and the conditioning length
follow from it. ``alpha`` is the false-positive probability of each health test per
opportunity, 2^-20 to 2^-40 as §4.4 recommends.

Repetition count test (§4.4.1): a run of identical samples of length ``C`` has probability at
most ``2^(-H (C - 1))`` for a source of min-entropy ``H`` per sample, so the smallest run that
is less likely than ``alpha`` is

    C = 1 + ceil(-log2(alpha) / H).

Adaptive proportion test (§4.4.2): in a window of ``W`` samples (1024 for binary samples),
count how often the window's first sample occurs; the most likely value occurs with
probability at most ``p = 2^-H``, so the count is at most binomial ``(W, p)``, and the cutoff is
the smallest ``C`` with

    P(Binomial(W, 2^-H) >= C) <= alpha,

which is the standard's ``C = 1 + CRITBINOM(W, 2^-H, 1 - alpha)`` (CRITBINOM: the smallest
``k`` whose cumulative probability reaches ``1 - alpha``). A count of ``W`` cannot be exceeded,
so an ``H`` so low that ``C > W`` leaves a test that cannot fail: refused.

Start-up (§4.3): both tests run over the first :data:`STARTUP_SAMPLES` samples (one full APT
window, the 1024 the standard asks for at least) before anything is released.
"""

import math
from fractions import Fraction

__all__ = ["APT_WINDOW", "STARTUP_SAMPLES", "ALPHA_RANGE", "BLOCK_BITS", "FULL_ENTROPY_MARGIN",
           "check_alpha", "check_min_entropy", "rct_cutoff", "apt_cutoff", "binomial_tail",
           "output_entropy_deficit", "conditioning_blocks", "rct_failures", "apt_failures"]

#: The APT's window for binary samples (§4.4.2).
APT_WINDOW = 1024
#: Samples tested at start-up before any output (§4.3 asks for at least 1024).
STARTUP_SAMPLES = 1024
#: The false-positive probabilities allowed: 2^-40 to 2^-20 (§4.4).
ALPHA_RANGE = (2.0 ** -40, 2.0 ** -20)
#: The conditioning's block and output size, and its narrowest internal width (AES).
BLOCK_BITS = 128
#: Entropy beyond the output's size that the conditioning's input must carry for the output
#: to count as full entropy (SP 800-90C's rule for a vetted conditioning function:
#: h_in >= n_out + 64).
FULL_ENTROPY_MARGIN = 64


def check_alpha(alpha):
    """``alpha`` as a float if it lies in :data:`ALPHA_RANGE`, else a ValueError naming it."""
    lo, hi = ALPHA_RANGE
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, Fraction)) \
            or not lo <= alpha <= hi:
        raise ValueError(f"alpha: {alpha!r} is out of range; allowed 2**-40 to 2**-20 "
                         f"({lo:.3g} to {hi:.3g})")
    return float(alpha)


def check_min_entropy(h):
    """``h`` (min-entropy per one-bit sample) as an exact Fraction if 0 < h <= 1, else a
    ValueError naming it. A float is read as its decimal text (0.1 is 1/10)."""
    if isinstance(h, bool) or not isinstance(h, (int, float, Fraction, str)):
        raise ValueError(f"min_entropy: {h!r} is not a number")
    value = Fraction(repr(h)) if isinstance(h, float) else Fraction(h)
    if not 0 < value <= 1:
        raise ValueError(f"min_entropy: {h!r} is out of range; allowed above 0 up to 1 bit "
                         "per (one-bit) sample")
    return value


def _neg_log2(alpha):
    """-log2(alpha), exact when alpha is a power of two."""
    m, e = math.frexp(alpha)
    return Fraction(1 - e) if m == 0.5 else Fraction(-math.log2(alpha))


def rct_cutoff(min_entropy, alpha):
    """The repetition count test's cutoff ``C = 1 + ceil(-log2(alpha) / H)``: a run of ``C``
    identical samples is a failure (§4.4.1)."""
    h = check_min_entropy(min_entropy)
    return 1 + math.ceil(_neg_log2(check_alpha(alpha)) / h)


def binomial_tail(n, p, c):
    """P(Binomial(n, p) >= c), summed term by term in logarithms (n up to a few thousand)."""
    if c <= 0:
        return 1.0
    if c > n:
        return 0.0
    if p >= 1:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
             + k * log_p + (n - k) * log_q for k in range(c, n + 1)]
    top = max(terms)
    return math.exp(top) * math.fsum(math.exp(t - top) for t in terms)


def apt_cutoff(min_entropy, alpha, window=APT_WINDOW):
    """The adaptive proportion test's cutoff: the smallest ``C`` with
    ``P(Binomial(window, 2^-H) >= C) <= alpha`` (§4.4.2's ``1 + CRITBINOM(W, 2^-H, 1 - alpha)``);
    a window whose first sample occurs ``C`` times is a failure."""
    h = check_min_entropy(min_entropy)
    alpha = check_alpha(alpha)
    p = 2.0 ** -float(h)
    lo, hi = 1, window + 1          # tail(lo) > alpha >= tail(hi) (tail(W + 1) = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if binomial_tail(window, p, mid) <= alpha:
            hi = mid
        else:
            lo = mid
    if hi > window:
        raise ValueError(f"min_entropy: {min_entropy!r} is too low for a window of {window} "
                         f"samples at alpha {alpha:.3g}: the test could never fail")
    return hi


def output_entropy_deficit(n_in, h_in, n_out=BLOCK_BITS, nw=BLOCK_BITS):
    """``min(n_out, nw) - Output_Entropy(n_in, n_out, nw, h_in)`` of SP 800-90B §3.1.5.1.2 (the
    entropy a vetted conditioning function's output falls short of its size), computed as a
    small number rather than a difference of two large ones:

        P_high = 2^-h_in,  P_low = (1 - P_high) / (2^n_in - 1),  n = min(n_out, nw)
        psi = 2^(n_in - n) P_low + P_high
        omega = (2^(n_in - n) + sqrt(2 n 2^(n_in - n) ln 2)) P_low
        Output_Entropy = -log2(max(psi, omega))
    """
    n = min(n_out, nw)
    if n_in < n:
        raise ValueError(f"n_in: {n_in} bits is below the output's {n}")
    p_high = 2.0 ** -h_in
    tiny = 2.0 ** -n_in
    scale = tiny / (1 - tiny)                        # 1 / (2^n_in - 1)
    # psi 2^n = (1 - P_high) 2^n_in / (2^n_in - 1) + P_high 2^n = 1 + d_psi
    d_psi = scale - p_high * (1 + scale) + p_high * 2.0 ** n
    # omega 2^n = (1 + sqrt(2 n ln 2) 2^-(n_in - n) / 2) (1 - P_high) (1 + scale) = 1 + d_omega
    root = math.sqrt(2 * n * math.log(2)) * 2.0 ** (-(n_in - n) / 2)
    d_omega = (1 + root) * (1 - p_high) * (1 + scale) - 1 if root > 1e-12 else \
        root + scale - p_high
    return math.log1p(max(d_psi, d_omega)) / math.log(2)


def conditioning_blocks(min_entropy, *, margin=FULL_ENTROPY_MARGIN):
    """128-bit blocks of raw samples per conditioned 128-bit output for full entropy at the
    claimed ``H``: the fewest ``k`` with ``128 k H >= 128 + margin`` (SP 800-90C's rule), which
    also leaves §3.1.5.1.2's deficit below ``128 * 2^-32`` (90C's full entropy: each output
    bit short of one by at most 2^-32)."""
    h = check_min_entropy(min_entropy)
    k = math.ceil(Fraction(BLOCK_BITS + margin) / (BLOCK_BITS * h))
    while output_entropy_deficit(BLOCK_BITS * k, float(BLOCK_BITS * k * h)) \
            > BLOCK_BITS * 2.0 ** -32:
        k += 1
    return k


def rct_failures(samples, cutoff):
    """The golden model of :class:`~aes_fpga.entropy.health.RepetitionCountTest`: the indices
    of the samples at which it fails (each the ``cutoff``-th of a run; the run then starts
    again from that sample)."""
    out, last, run = [], None, 0
    for n, s in enumerate(samples):
        if run and s == last:
            run += 1
            if run >= cutoff:
                out.append(n)
                run = 1
        else:
            last, run = s, 1
    return out


def apt_failures(samples, cutoff, window=APT_WINDOW):
    """The golden model of :class:`~aes_fpga.entropy.health.AdaptiveProportionTest`: the
    indices of the samples at which it fails (at most one per window of ``window``)."""
    out = []
    for start in range(0, len(samples), window):
        chunk = samples[start:start + window]
        count = 0
        for n, s in enumerate(chunk):
            count += s == chunk[0]
            if count >= cutoff:
                out.append(start + n)
                break
    return out
