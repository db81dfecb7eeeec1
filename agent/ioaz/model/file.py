"""Saving and loading a trained model safely: a JSON manifest, its portable form and a skops file.

Never a pickle: skops rebuilds only types it knows, and beyond its own defaults we trust
exactly the types in TRUSTED (what our model families are made of). A file asking for any other
type is refused, whatever the manifest says. The manifest carries the goal, the feature schema
(ioaz.model.features; a mismatch is refused before scikit-learn is even imported), the labels
and the policy each stands for, the versions it was trained with, the skops file's sha256, and
the evaluation report.

Saving also writes the model's portable form (ioaz.model.portable: its trees or linear map as
JSON, checked to score as the estimator does), and the manifest names it with its sha256. Loading
takes the portable form when the manifest has one: ioazd then needs neither scikit-learn nor
skops nor numpy. A manifest without one (written before it existed) loads through skops.

    model = load("hp72-mean.model.json")        # ModelError with a clear message on any problem
    model.predict_proba(vector) -> [(policy, score)], best first

A model's output is `proba` (a classifier: the probability that each policy is the best) or
`share` (a regressor of each candidate's share of the per-workload best, ioaz.learn.trainer's
ShareModel: the skops file holds the scikit-learn regressor, the manifest its candidate order).
"""
from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..classify.types import WindowFeatures
from .features import (
    FEATURE_SCHEMA,
    Schema,
    schema_differences,
    schema_doc,
    schema_of,
    vector,
    vector_from_dict,
)
from .portable import Portable, PortableError, export

FORMAT = 1
KIND = "ioaz-model"
# Beyond skops' defaults (scikit-learn estimators, numpy arrays): the tree structure of the
# tree, forest and boosting families.
TRUSTED = frozenset({"sklearn.tree._tree.Tree"})


class ModelError(ValueError):
    """The model file cannot be used; str() says which file and why."""


def versions() -> dict[str, str]:
    import numpy
    import sklearn
    import skops
    try:
        from importlib.metadata import version
        ioaz_v = version("ioaz")
    except Exception:
        ioaz_v = "unknown"
    return {"python": platform.python_version(), "scikit-learn": sklearn.__version__,
            "skops": skops.__version__, "numpy": numpy.__version__, "ioaz": ioaz_v}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _beside(mpath: Path, suffix: str) -> Path:
    return mpath.with_suffix(suffix) if mpath.suffix == ".json" else \
        mpath.with_name(mpath.name + suffix)


def save(manifest_path: str | Path, estimator: Any, *, samples: Any, goal: str, family: str,
         policy_of: dict[str, str], trained_on: dict[str, Any],
         evaluation: dict[str, Any] | None = None) -> Path:
    """`samples`: the feature vectors it was trained on, which its portable form is checked on."""
    import skops.io as sio
    output = "proba"
    classes = [str(c) for c in estimator.classes_]
    if not hasattr(estimator, "predict_proba"):      # a trainer.ShareModel
        output, estimator = "share", estimator.estimator
    mpath = Path(manifest_path)
    try:
        portable = export(estimator, output, samples)
    except PortableError as e:
        raise ModelError(f"{mpath}: {e}") from e
    ppath = _beside(mpath, ".portable.json")
    ppath.write_text(json.dumps(portable, separators=(",", ":")) + "\n")
    spath = _beside(mpath, ".skops")
    sio.dump(estimator, spath)
    untrusted = set(sio.get_untrusted_types(file=spath)) - TRUSTED
    if untrusted:   # our own families never need more: refuse to write what we would refuse
        spath.unlink()
        raise ModelError(f"{spath}: the estimator needs types outside the trusted set: "
                         f"{', '.join(sorted(untrusted))}")
    doc = {"kind": KIND, "format": FORMAT, "goal": goal, "family": family, "output": output,
           "skops": spath.name, "sha256": _sha(spath),
           "portable": ppath.name, "portable_sha256": _sha(ppath), "feature_schema": schema_doc(),
           "classes": classes, "policy_of": {c: policy_of.get(c, c) for c in classes},
           "trained_on": trained_on, "versions": versions(),
           "evaluation": evaluation or {}}
    mpath.write_text(json.dumps(doc, indent=1) + "\n")
    return mpath


@dataclass
class Model:
    path: str
    goal: str
    family: str
    classes: list[str]
    policy_of: dict[str, str]
    estimator: Any
    manifest: dict[str, Any]
    notes: list[str]
    output: str = "proba"           # proba | share (see the module's docstring)
    schema: Schema = FEATURE_SCHEMA   # the features it was trained on, in their order

    def vector(self, w: WindowFeatures) -> list[float]:
        """A window as this model reads it."""
        return vector(w, self.schema)

    def vector_of(self, f: dict[str, Any]) -> list[float]:
        """A window's features (a log's, a dataset's) as this model reads them."""
        return vector_from_dict(f, self.schema)

    @property
    def name(self) -> str:
        return f"{Path(self.path).name} ({self.family})"

    def predict_proba(self, vec: list[float]) -> list[tuple[str, float]]:
        """(policy, score), best first: probabilities (labels of one policy summed), or
        predicted shares of the best (a policy's best label counts)."""
        out: dict[str, float] = {}
        for c, v in zip(self.classes, self._scores(vec), strict=True):
            pol = self.policy_of.get(c, c)
            if self.output == "share":
                out[pol] = max(out.get(pol, 0.0), min(1.0, max(0.0, v)))
            else:
                out[pol] = out.get(pol, 0.0) + v
        return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))

    def _scores(self, vec: list[float]) -> list[float]:
        """One score per label, in `classes` order."""
        if isinstance(self.estimator, Portable):
            return self.estimator.scores(vec)
        import numpy as np
        x = np.asarray([vec], dtype=float)
        if self.output == "share":
            return [float(v) for v in np.asarray(self.estimator.predict(x)).reshape(-1)]
        return [float(v) for v in self.estimator.predict_proba(x)[0]]


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest, checked: kind, format, feature schema. No scikit-learn needed."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except OSError as e:
        raise ModelError(f"{p}: cannot read the model manifest: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ModelError(f"{p}:{e.lineno}: not a model manifest (bad JSON: {e.msg})") from e
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise ModelError(f"{p}: not an ioaz model manifest (expected kind: {KIND}, written by "
                         "ioaz-lab train)")
    if doc.get("format") != FORMAT:
        raise ModelError(f"{p}: model format {doc.get('format')!r}, this ioaz reads format "
                         f"{FORMAT}: retrain with ioaz-lab train")
    diff = schema_differences(doc.get("feature_schema"))
    if diff:
        raise ModelError(f"{p}: the model's feature schema does not match this ioaz's: "
                         f"{'; '.join(diff)}. Retrain it with `ioaz-lab train` on a dataset "
                         "from this version")
    for key in ("goal", "skops", "sha256", "classes", "policy_of"):
        if key not in doc:
            raise ModelError(f"{p}: model manifest without {key!r}")
    return doc


def load(path: str | Path, policies: tuple[str, ...] | None = None) -> Model:
    p = Path(path)
    doc = read_manifest(p)
    if policies is not None:
        unknown = sorted(set(doc["policy_of"].values()) - set(policies))
        if unknown:
            raise ModelError(f"{p}: the model predicts policies the policy table does not "
                             f"have: {', '.join(unknown)}")
    if doc.get("portable"):
        return _load_portable(p, doc)
    spath = _checked(p, doc, "skops", "sha256")
    import skops.io as sio
    try:
        wanted = set(sio.get_untrusted_types(file=spath))
        bad = wanted - TRUSTED
        if bad:
            raise ModelError(f"{spath}: refusing to load types outside the trusted set: "
                             f"{', '.join(sorted(bad))}")
        est = sio.load(spath, trusted=sorted(wanted))
    except ModelError:
        raise
    except Exception as e:
        raise ModelError(f"{spath}: cannot load the model: {e}") from e
    notes = []
    have = versions()
    for k in ("scikit-learn", "skops", "numpy"):
        was = doc.get("versions", {}).get(k)
        if was and was != have[k]:
            notes.append(f"trained with {k} {was}, running {have[k]}")
    output = doc.get("output", "proba")
    if output == "share":
        classes = [str(c) for c in doc["classes"]]
        outputs = getattr(est, "n_outputs_", None) or len(getattr(est, "estimators_", []))
        if not hasattr(est, "predict") or outputs != len(classes):
            raise ModelError(f"{spath}: not a regressor with one output per label of the "
                             f"manifest ({len(classes)})")
    elif output == "proba":
        classes = [str(c) for c in est.classes_]
        if classes != doc["classes"]:
            raise ModelError(f"{spath}: its labels {classes} differ from the manifest's "
                             f"{doc['classes']}")
    else:
        raise ModelError(f"{p}: unknown model output {output!r} (expected proba or share)")
    return Model(str(p), doc["goal"], doc.get("family", "?"), classes, doc["policy_of"], est,
                 doc, notes, output, schema_of(doc["feature_schema"]))


def _checked(p: Path, doc: dict[str, Any], key: str, sha_key: str) -> Path:
    """The file the manifest names under `key`, next to it and as it was written."""
    name = doc[key]
    if not isinstance(name, str) or Path(name).name != name:
        raise ModelError(f"{p}: the {key} file must sit next to the manifest, got {name!r}")
    path = p.parent / name
    try:
        digest = _sha(path)
    except OSError as e:
        raise ModelError(f"{path}: cannot read the model: {e.strerror}") from e
    if digest != doc.get(sha_key):
        raise ModelError(f"{path}: sha256 differs from the manifest's: the file changed "
                         "after training; refusing it")
    return path


def _load_portable(p: Path, doc: dict[str, Any]) -> Model:
    path = _checked(p, doc, "portable", "portable_sha256")
    try:
        est = Portable.from_doc(json.loads(path.read_text()), str(path))
    except json.JSONDecodeError as e:
        raise ModelError(f"{path}:{e.lineno}: not a portable model (bad JSON: {e.msg})") from e
    except PortableError as e:
        raise ModelError(str(e)) from e
    output = doc.get("output", "proba")
    if output not in ("proba", "share"):
        raise ModelError(f"{p}: unknown model output {output!r} (expected proba or share)")
    if est.doc.get("output") != output:
        raise ModelError(f"{path}: its output {est.doc.get('output')!r} differs from the "
                         f"manifest's {output!r}")
    classes = [str(c) for c in doc["classes"]]
    n = len(doc["feature_schema"]["features"])
    try:
        width = len(est.scores([0.0] * n))
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as e:
        raise ModelError(f"{path}: a malformed portable model ({type(e).__name__}: {e})") from e
    if width != len(classes):
        raise ModelError(f"{path}: {width} scores for the manifest's {len(classes)} labels")
    return Model(str(p), doc["goal"], doc.get("family", "?"), classes, doc["policy_of"], est,
                 doc, [], output, schema_of(doc["feature_schema"]))
