"""A trained model as plain JSON that ioazd evaluates in pure Python: no scikit-learn, no numpy.

Why: a storage server should not need scikit-learn (and skops, which Debian 12 does not package)
to follow a model, and importing them costs ioazd seconds and tens of MB. Every family
`ioaz-lab train` fits is a few trees or a linear map, so `ioaz-lab train` writes each model
twice: the skops file (the estimator itself, for the lab) and this form (what ioazd runs).

    doc = export(estimator, output, X)     # at training; needs scikit-learn, checks itself on X
    Portable.from_doc(doc).scores(vector)   # in ioazd: one score per label, in label order

`export` refuses an estimator it does not know, and any whose scores it does not reproduce on
the training samples to within 1e-9, so a portable file never predicts other than its model.

The forms (`combine`):
  constant  a DummyClassifier's fixed probabilities
  vote      trees' leaf values, each normalised to probabilities, averaged (tree, forest)
  mean      trees' leaf values averaged, one per output (a share forest)
  boost     per output, baseline + rate x the sum of one tree per stage, then a link:
            softmax (multiclass), sigmoid (two classes) or none (a share regressor)
  linear    standardise, then coef . x + intercept, then softmax or sigmoid (logistic)
A tree is parallel lists: feature, threshold, left, right (-1 at a leaf), value (a leaf's list).
Trees compare features as float32, as scikit-learn's trees do.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

KIND = "ioaz-portable-model"
FORMAT = 1
TOLERANCE = 1e-9


class PortableError(ValueError):
    """The estimator cannot be written portably, or a portable document is malformed."""


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _leaf(tree: dict[str, list], x32: list[float]) -> list[float]:
    left, right, feature, threshold = tree["left"], tree["right"], tree["feature"], \
        tree["threshold"]
    node = 0
    while left[node] != -1:
        node = left[node] if x32[feature[node]] <= threshold[node] else right[node]
    return tree["value"][node]


def _softmax(raw: list[float]) -> list[float]:
    top = max(raw)
    e = [math.exp(r - top) for r in raw]
    s = sum(e)
    return [v / s for v in e]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _link(raw: list[float], link: str) -> list[float]:
    if link == "softmax":
        return _softmax(raw)
    if link == "sigmoid":            # one raw score for two classes: the second's
        p = _sigmoid(raw[0])
        return [1.0 - p, p]
    return raw


@dataclass(frozen=True)
class Portable:
    doc: dict[str, Any]

    @classmethod
    def from_doc(cls, doc: Any, where: str = "portable model") -> Portable:
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise PortableError(f"{where}: not an ioaz portable model (kind {KIND})")
        if doc.get("format") != FORMAT:
            raise PortableError(f"{where}: portable format {doc.get('format')!r}, this ioaz "
                                f"reads {FORMAT}: retrain with ioaz-lab train")
        if doc.get("combine") not in ("constant", "vote", "mean", "boost", "linear"):
            raise PortableError(f"{where}: unknown combine {doc.get('combine')!r}")
        return cls(doc)

    @property
    def n_features(self) -> int:
        return int(self.doc["n_features"])

    def scores(self, vec: list[float]) -> list[float]:
        """One score per label, in the document's label order."""
        d = self.doc
        if len(vec) != self.n_features:
            raise PortableError(f"portable model: {len(vec)} features, it was trained on "
                                f"{self.n_features}")
        how = d["combine"]
        if how == "constant":
            return list(d["scores"])
        if how == "linear":
            z = [(v - m) / s for v, m, s in zip(vec, d["mean"], d["scale"], strict=True)]
            raw = [b + sum(c * x for c, x in zip(row, z, strict=True))
                   for row, b in zip(d["coef"], d["intercept"], strict=True)]
            return _link(raw, d["link"])
        x32 = [_f32(v) for v in vec]
        if how == "boost":
            raw = []
            for out in d["outputs"]:
                raw.append(out["baseline"] + out["rate"]
                           * sum(_leaf(t, x32)[0] for t in out["trees"]))
            return _link(raw, d["link"])
        per_tree = [_leaf(t, x32) for t in d["trees"]]
        if how == "vote":
            norm = []
            for v in per_tree:
                s = sum(v)
                norm.append([x / s for x in v] if s > 0 else v)
            per_tree = norm
        n = len(per_tree)
        return [sum(v[k] for v in per_tree) / n for k in range(len(per_tree[0]))]


# Writing (at training: scikit-learn and numpy are there)

def _tree(t: Any, column: int | None = None) -> dict[str, list]:
    """A fitted sklearn tree's nodes. `column`: one output of a regressor's value, else every
    output (regressor) or every class (classifier)."""
    tr = t.tree_
    v = tr.value                                     # (nodes, outputs, classes)
    if column is not None:
        value = [[float(x)] for x in v[:, column, 0]]
    elif v.shape[1] == 1:                            # a classifier: the classes
        value = [[float(x) for x in row] for row in v[:, 0, :]]
    else:                                            # a multi-output regressor: the outputs
        value = [[float(x) for x in row] for row in v[:, :, 0]]
    return {"feature": [int(f) for f in tr.feature], "threshold": [float(x) for x in tr.threshold],
            "left": [int(c) for c in tr.children_left],
            "right": [int(c) for c in tr.children_right], "value": value}


def _boost_output(gbm: Any, trees: list[Any], X: Any, raw: Any) -> dict[str, Any]:
    """baseline: the model's raw score minus its trees' part, on the first sample (the
    baseline is a constant, and the check over every sample proves it)."""
    rate = float(gbm.learning_rate)
    part = sum(float(t.predict(X[:1].astype("float32"))[0]) for t in trees)
    return {"baseline": float(raw) - rate * part, "rate": rate,
            "trees": [_tree(t) for t in trees]}


def _describe(est: Any, output: str, X: Any) -> dict[str, Any]:
    from sklearn.dummy import DummyClassifier
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    if output == "share":
        if isinstance(est, RandomForestRegressor):
            return {"combine": "mean", "trees": [_tree(t) for t in est.estimators_]}
        if isinstance(est, MultiOutputRegressor) and all(
                isinstance(g, GradientBoostingRegressor) for g in est.estimators_):
            outs = [_boost_output(g, [s[0] for s in g.estimators_], X, g.predict(X[:1])[0])
                    for g in est.estimators_]
            return {"combine": "boost", "link": "none", "outputs": outs}
    elif isinstance(est, DummyClassifier):
        return {"combine": "constant",
                "scores": [float(p) for p in est.predict_proba(X[:1])[0]]}
    elif isinstance(est, DecisionTreeClassifier):
        return {"combine": "vote", "trees": [_tree(est)]}
    elif isinstance(est, RandomForestClassifier):
        return {"combine": "vote", "trees": [_tree(t) for t in est.estimators_]}
    elif isinstance(est, GradientBoostingClassifier):
        raw = est.decision_function(X[:1])
        stages = est.estimators_                     # (stages, 1 or classes)
        if stages.shape[1] == 1:
            outs = [_boost_output(est, list(stages[:, 0]), X, raw[0])]
            return {"combine": "boost", "link": "sigmoid", "outputs": outs}
        outs = [_boost_output(est, list(stages[:, k]), X, raw[0][k])
                for k in range(stages.shape[1])]
        return {"combine": "boost", "link": "softmax", "outputs": outs}
    elif isinstance(est, Pipeline) and len(est.steps) == 2 and \
            isinstance(est.steps[0][1], StandardScaler) and \
            isinstance(est.steps[1][1], LogisticRegression):
        sc, lr = est.steps[0][1], est.steps[1][1]
        n = X.shape[1]
        mean = [float(m) for m in sc.mean_] if sc.mean_ is not None else [0.0] * n
        scale = [float(s) for s in sc.scale_] if sc.scale_ is not None else [1.0] * n
        return {"combine": "linear", "mean": mean, "scale": scale,
                "coef": [[float(c) for c in row] for row in lr.coef_],
                "intercept": [float(b) for b in lr.intercept_],
                "link": "sigmoid" if len(lr.coef_) == 1 else "softmax"}
    raise PortableError(f"cannot write a {type(est).__name__} portably (output {output}): "
                        "ioaz knows its own families only")


def export(est: Any, output: str, X: Any) -> dict[str, Any]:
    """The portable document of a fitted estimator whose output is 'proba' (a classifier) or
    'share' (a regressor of each label's share), checked on the samples X."""
    import numpy as np
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or len(X) == 0:
        raise PortableError("export needs the training samples to check itself on")
    doc = {"kind": KIND, "format": FORMAT, "output": output, "n_features": int(X.shape[1]),
           **_describe(est, output, X)}
    p = Portable.from_doc(doc)
    want = np.asarray(est.predict(X) if output == "share" else est.predict_proba(X), dtype=float)
    want = want.reshape(len(X), -1)
    worst = max(abs(a - b) for row, x in zip(want, X, strict=True)
                for a, b in zip(row, p.scores([float(v) for v in x]), strict=True))
    if worst > TOLERANCE:
        raise PortableError(f"the portable form of a {type(est).__name__} differs from it by "
                            f"{worst:.3g} on its training samples; not written")
    return doc
