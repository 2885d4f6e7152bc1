"""The paper's reported numbers (Tables 2-4), shown beside ours where the setting matches.

Table 2 rows: method -> model -> (AUC, TPR@5, tRec, U, Unsup); dagger marks identical
conditioning under M and M' (chance by construction).
"""

from __future__ import annotations

PAPER_MODELS = {
    "Qwen/Qwen2.5-7B-Instruct": "Qwen2.5-7B",
    "meta-llama/Llama-3.1-8B-Instruct": "Llama-3.1-8B",
    "google/gemma-2-9b-it": "Gemma-2-9B",
}

_T2_PAIRED = """
GenericOnly 0.500 0.050 0.426 0.877 0.044 0.500 0.050 0.429 0.854 0.065 0.500 0.050 0.378 0.882 0.025
RawReadSet 0.842 0.547 0.521 0.775 0.136 0.942 0.688 0.525 0.665 0.271 0.925 0.609 0.490 0.700 0.237
TypedMask 0.500 0.050 0.386 0.846 0.109 0.500 0.050 0.296 0.678 0.233 0.500 0.050 0.309 0.750 0.195
TaskMin 0.832 0.406 0.524 0.772 0.129 0.963 0.719 0.532 0.650 0.229 0.919 0.641 0.468 0.729 0.202
OutputFilter 0.793 0.438 0.517 0.786 0.136 0.885 0.562 0.509 0.666 0.266 0.866 0.469 0.475 0.712 0.238
DP-MemView_(on) 0.490 0.016 0.506 0.877 0.119 0.535 0.031 0.513 0.861 0.135 0.490 0.062 0.508 0.878 0.115
DP-MemView_(pre) 0.476 0.062 0.559 0.877 0.175 0.474 0.016 0.559 0.857 0.174 0.464 0.016 0.571 0.870 0.170
"""
_T2_TRANSFER = """
GenericOnly 0.500 0.050 0.427 0.884 0.045 0.500 0.050 0.372 0.858 0.043 0.500 0.050 0.370 0.880 0.020
RawReadSet 0.730 0.350 0.470 0.727 0.190 0.723 0.425 0.351 0.555 0.339 0.680 0.275 0.393 0.730 0.208
TypedMask 0.500 0.050 0.369 0.815 0.139 0.500 0.050 0.289 0.603 0.270 0.500 0.050 0.304 0.782 0.131
TaskMin 0.751 0.450 0.449 0.752 0.163 0.742 0.475 0.355 0.540 0.352 0.630 0.250 0.371 0.724 0.192
OutputFilter 0.701 0.300 0.448 0.728 0.175 0.669 0.288 0.350 0.550 0.316 0.647 0.237 0.370 0.722 0.201
DP-MemView_(on) 0.562 0.113 0.513 0.883 0.105 0.563 0.100 0.503 0.862 0.114 0.535 0.100 0.507 0.878 0.089
DP-MemView_(pre) 0.523 0.062 0.566 0.878 0.172 0.490 0.113 0.565 0.856 0.179 0.486 0.088 0.573 0.873 0.160
"""


def _parse(block: str) -> dict[str, dict[str, tuple[float, ...]]]:
    out: dict[str, dict[str, tuple[float, ...]]] = {}
    models = list(PAPER_MODELS.values())
    for line in block.strip().splitlines():
        name, *values = line.split()
        numbers = [float(v) for v in values]
        out[name.replace("_", " ")] = {m: tuple(numbers[5 * i:5 * i + 5]) for i, m in enumerate(models)}
    return out


TABLE2 = {"pairedmem": _parse(_T2_PAIRED), "transfer": _parse(_T2_TRANSFER)}
TABLE2_DAGGER = {"GenericOnly", "TypedMask"}

# Table 3 (Qwen2.5-7B, PairedMem, T=16): setting -> (eps, AUC, tRec, Unsup)
TABLE3 = {
    (1, 3): (0.333, 0.541, 0.508, 0.115),
    (2, 3): (0.667, 0.490, 0.506, 0.119),
    (4, 3): (1.333, 0.508, 0.513, 0.113),
    (8, 3): (2.667, 0.608, 0.534, 0.105),
    (2, 2): (1.000, 0.510, 0.487, 0.088),
    (2, 4): (0.500, 0.525, 0.527, 0.129),
}

# Table 4 (Qwen2.5-7B, PairedMem, T=16, B_a=2, K=3): variant -> (violated, bound, AUC, tRec, U, Unsup)
TABLE4 = {
    "DP-MemView (on)": ("-", "2.0 <= B_a", 0.490, 0.506, 0.877, 0.119),
    "IncompleteCharge": ("C2", "4.0 > B_a", 0.554, 0.565, 0.879, 0.160),
    "CappedArgmax": ("C3", "inf", 0.754, 0.597, 0.876, 0.047),
    "NoCap": ("C5", "5.33 > B_a", 0.599, 0.583, 0.876, 0.161),
}
SCORE_CHANNEL_AUC = 0.976

CHANCE = (0.5, 0.05)
