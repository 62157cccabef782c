"""The examples that end every subcommand's ``--help``.

Each one runs as written on the demo's data: ``bosaris-dask demo`` writes ``bosaris-demo/``
(``key.zarr`` and ``system-1.zarr`` ... ``system-3.zarr``; speaker embeddings ``enrol.npz``,
``test.npz``, ``cohort.npz``, their key ``embeddings-key.zarr`` and its ``id class`` tables
``enrol.classes``, ``test.classes``; the condition tables ``models.tsv``, ``segments.tsv``:
each id's speaker and gender, each segment's source) in the current directory. Run in the order of
:data:`EXAMPLES` (``demo`` first), later examples may use what earlier ones wrote (``apply``
uses the models that ``calibrate`` and ``fuse`` saved, ``fuse`` the scores that ``score``
wrote); ``tests/test_cli_consistency.py`` runs every one of them in that order.
"""

from __future__ import annotations

_K = "--key bosaris-demo/key.zarr"
_S1, _S2, _S3 = (f"bosaris-demo/system-{k}.zarr" for k in (1, 2, 3))
_EK = "--key bosaris-demo/embeddings-key.zarr"
_E = "--enrol bosaris-demo/enrol.npz --test bosaris-demo/test.npz"

#: Example command lines per subcommand, in the order they can be run one after the other.
EXAMPLES: dict[str, list[str]] = {
    "demo": [
        "bosaris-dask demo",
        "bosaris-dask demo --n-models 100 --n-segments 300 --seed 1 --out-dir demo-small",
    ],
    "convert": [
        f"bosaris-dask convert {_S1} sys1.scores",
        "bosaris-dask convert bosaris-demo/key.zarr trials.h5",
        "bosaris-dask convert sys1.scores sys1.zarr",
    ],
    "info": [
        "bosaris-dask info bosaris-demo/key.zarr",
        f"bosaris-dask info {_S1} {_K}",
        f"bosaris-dask info bosaris-demo/models.tsv {_K}",
    ],
    "simulate": [
        "bosaris-dask simulate --n-models 200 --n-segments 500 --out-dir sim",
        "bosaris-dask simulate --n-models 100 --n-segments 400 --systems 2 --dtype float64 "
        "--target-rate 0.01 --out-dir sim64",
    ],
    "evaluate": [
        f"bosaris-dask evaluate {_K} --scores {_S1} --scores {_S2} --prior 0.1 --prior 0.01 "
        "--json results.json",
        f"bosaris-dask evaluate {_K} --scores {_S1} --scores {_S2} --prior 0.01 "
        "--conditions bosaris-demo/models.tsv --conditions bosaris-demo/segments.tsv "
        "--by model.gender --by segment.source --equalize "
        "--bootstrap 200 --resample model.speaker --resample segment.speaker --seed 1 --compare "
        "--json ci.json",
        f"bosaris-dask evaluate {_EK} {_E} --norm s --cohort bosaris-demo/cohort.npz",
    ],
    "score": [
        f"bosaris-dask score {_E} {_EK} --out emb.zarr",
        f"bosaris-dask score {_E} --center bosaris-demo/cohort.npz --norm as "
        "--cohort bosaris-demo/cohort.npz --top-n 10 --out emb-as.zarr "
        "--quality-out emb-quality.zarr",
    ],
    "plot": [
        f"bosaris-dask plot det {_K} --scores {_S1} --scores {_S2} --fmr 1e-3 --fmr 1e-2 "
        "--out det.png",
        f"bosaris-dask plot nbe {_K} --scores {_S1} --prior 0.01 --out nbe.pdf",
        f"bosaris-dask plot tippett {_K} --scores {_S3} --out tippett.png",
    ],
    "calibrate": [
        f"bosaris-dask calibrate {_K} --scores {_S2} --train-prior 0.1 --model-out cal.json",
        f"bosaris-dask calibrate --method pav {_K} --scores {_S3} --model-out pav.json "
        f"--apply {_S3} --out pav3.zarr",
        f"bosaris-dask calibrate {_EK} {_E} --model-out emb-cal.json",
    ],
    "fuse": [
        f"bosaris-dask fuse {_K} --scores {_S1} --scores {_S2} --scores {_S3} "
        "--model-out fusion.json",
        f"bosaris-dask fuse {_K} --scores {_S1} --scores {_S2} --model-out fusion12.json "
        f"--apply {_S1} --apply {_S2} --out fused12.zarr",
        f"bosaris-dask fuse {_EK} --scores emb.zarr {_E} --norm s "
        "--cohort bosaris-demo/cohort.npz --model-out emb-fusion.json",
    ],
    "apply": [
        f"bosaris-dask apply --model cal.json --scores {_S2} --out cal2.zarr",
        f"bosaris-dask apply --model fusion.json --scores {_S1} --scores {_S2} --scores {_S3} "
        "--out fused.zarr",
        f"bosaris-dask apply --model emb-cal.json {_E} --out emb-cal.zarr",
    ],
    "spoof": [
        "bosaris-dask spoof cm --key bosaris-demo/asvspoof5/cm_key.tsv "
        "--scores bosaris-demo/asvspoof5/cm_scores.tsv",
        "bosaris-dask spoof sasv --key bosaris-demo/asvspoof5/sasv_key.tsv "
        "--scores bosaris-demo/asvspoof5/sasv_scores.tsv --asv-rates given --json sasv.json",
        "bosaris-dask spoof sasv --key bosaris-demo/asvspoof5/sasv_key.tsv "
        "--scores bosaris-demo/asvspoof5/sasv_scores.tsv --out-dir sasv-set",
    ],
}

#: The data a command's examples run on, where it is not the demo's alone.
DATA = {
    "fuse": "the data that 'bosaris-dask demo' writes; the third fuses the scores that "
    "'score' writes in its first example",
    "apply": "the data that 'bosaris-dask demo' writes and the models that the examples of "
    "'calibrate' and 'fuse' save",
}


def epilog(command: str) -> str:
    """The ``examples:`` block that ends ``bosaris-dask COMMAND --help``.

    Examples
    --------
    >>> print(epilog("info"))  # doctest: +NORMALIZE_WHITESPACE
    examples (on the data that 'bosaris-dask demo' writes):
      bosaris-dask info bosaris-demo/key.zarr
      bosaris-dask info bosaris-demo/system-1.zarr --key bosaris-demo/key.zarr
      bosaris-dask info bosaris-demo/models.tsv --key bosaris-demo/key.zarr
    """
    lines = "\n".join(f"  {line}" for line in EXAMPLES[command])
    data = DATA.get(command, "the data that 'bosaris-dask demo' writes")
    return f"examples (on {data}):\n{lines}"
