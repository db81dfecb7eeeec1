"""The portable form of a model (ioaz.model.portable): every family `ioaz-lab train` fits scores,
in pure Python, what scikit-learn scores, on samples it was not fitted or checked on; ioazd
loads it without scikit-learn; a changed or malformed one is refused with its file named."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ioaz.model import file as model_file
from ioaz.model.features import FEATURE_SCHEMA
from ioaz.model.portable import Portable, PortableError, export

np = pytest.importorskip("numpy")
pytest.importorskip("sklearn", reason="scikit-learn not installed (make venv installs it)")

REPO = Path(__file__).resolve().parents[2]
N = len(FEATURE_SCHEMA)


def data(classes: int, n: int = 120, seed: int = 1):
    """Samples in the features' ranges (log-scaled rates, shares in [0, 1], -1 for missing),
    labelled by rules on a few of them, so the trees have something to split."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 12, size=(n, N))
    X[:, 3:5] = rng.uniform(0, 1, size=(n, 2))              # read_ratio, seq_ratio
    y = np.where(X[:, 4] > 0.6, 0, np.where(X[:, 0] > 5, 1, 2)) % classes
    shares = np.stack([1 - 0.4 * (X[:, 4] < 0.5), 0.5 + 0.5 * (X[:, 4] < 0.5),
                       np.clip(X[:, 0] / 12, 0, 1)], axis=1)
    return X, np.array(["stream", "bfq", "mq-deadline"])[y], shares


def fitted(family: str, classes: int):
    from ioaz.learn.trainer import families
    X, y, shares = data(classes)
    est = families()[family]()
    if family.startswith("share"):
        est.fit(X, shares)
        return est, "share", X
    w = np.ones(len(y))
    if hasattr(est, "steps"):
        est.fit(X, y, **{f"{est.steps[-1][0]}__sample_weight": w})
    else:
        est.fit(X, y, sample_weight=w)
    return est, "proba", X


def trees_of(est) -> list:
    if hasattr(est, "tree_"):
        return [est]
    inner = getattr(est, "estimators_", [])
    if not len(inner):
        return []
    return [tree for member in np.asarray(inner, dtype=object).ravel()
            for tree in trees_of(member)]


@pytest.mark.parametrize("family,classes", [
    ("tree", 3), ("forest", 3), ("boosting", 3), ("boosting", 2), ("logistic", 3),
    ("logistic", 2), ("share-forest", 3), ("share-boosting", 3)])
def test_every_family_scores_as_scikit_learn_does_on_unseen_samples(family, classes):
    est, output, X = fitted(family, classes)
    p = Portable.from_doc(json.loads(json.dumps(export(est, output, X))))   # through JSON
    unseen, _, _ = data(classes, n=200, seed=7)
    # and exactly at the trees' thresholds, where comparing in float64 rather than float32 as
    # scikit-learn does would send a sample the other way
    at = []
    for t in trees_of(est)[:5]:
        for f, th in zip(t.tree_.feature, t.tree_.threshold, strict=True):
            if f >= 0:
                x = unseen[len(at) % len(unseen)].copy()
                x[f] = th
                at.append(x)
    unseen = np.vstack([unseen, *at]) if at else unseen
    want = est.predict(unseen) if output == "share" else est.predict_proba(unseen)
    got = np.asarray([p.scores([float(v) for v in x]) for x in unseen])
    assert got.shape == np.asarray(want).reshape(len(unseen), -1).shape
    assert np.max(np.abs(got - np.asarray(want).reshape(len(unseen), -1))) < 1e-9


def test_a_constant_model_and_an_unknown_estimator():
    from sklearn.dummy import DummyClassifier
    from sklearn.neighbors import KNeighborsClassifier
    X, y, _ = data(3)
    d = DummyClassifier(strategy="most_frequent").fit(X, y)
    assert Portable.from_doc(export(d, "proba", X)).scores(list(X[0])) == \
        list(d.predict_proba(X[:1])[0])
    with pytest.raises(PortableError, match="cannot write a KNeighborsClassifier portably"):
        export(KNeighborsClassifier().fit(X, y), "proba", X)
    with pytest.raises(PortableError, match="13 features|trained on"):
        Portable.from_doc(export(d, "proba", X)).scores([0.0] * (N - 1))


@pytest.fixture()
def saved(tmp_path):
    est, output, X = fitted("boosting", 3)
    path = model_file.save(tmp_path / "m.model.json", est, samples=X, goal="mean",
                           family="boosting", policy_of={c: c for c in est.classes_},
                           trained_on={"rows": len(X)})
    return path, est, X


def test_the_manifest_names_the_portable_form_and_load_uses_it(saved):
    path, est, X = saved
    man = json.loads(path.read_text())
    assert man["portable"] == "m.model.portable.json" and len(man["portable_sha256"]) == 64
    m = model_file.load(path)
    assert isinstance(m.estimator, Portable) and m.notes == []
    for x in X[:10]:
        want = dict(zip(est.classes_, est.predict_proba([x])[0], strict=True))
        for policy, score in m.predict_proba([float(v) for v in x]):
            assert abs(score - want[policy]) < 1e-9


def test_a_changed_or_malformed_portable_form_is_refused(saved):
    path, _, _ = saved
    man = json.loads(path.read_text())
    portable = path.parent / man["portable"]
    doc = json.loads(portable.read_text())
    doc["outputs"][0]["rate"] *= 2
    portable.write_text(json.dumps(doc))
    with pytest.raises(model_file.ModelError, match=r"m\.model\.portable\.json: sha256 differs"):
        model_file.load(path)
    doc["outputs"] = doc["outputs"][:2]          # two outputs for three labels
    portable.write_text(json.dumps(doc))
    man["portable_sha256"] = model_file._sha(portable)
    path.write_text(json.dumps(man))
    with pytest.raises(model_file.ModelError, match="2 scores for the manifest's 3 labels"):
        model_file.load(path)
    portable.write_text("{not json")
    man["portable_sha256"] = model_file._sha(portable)
    path.write_text(json.dumps(man))
    with pytest.raises(model_file.ModelError, match=r"portable\.json:1: not a portable model"):
        model_file.load(path)
    man["portable"] = "../elsewhere.json"
    path.write_text(json.dumps(man))
    with pytest.raises(model_file.ModelError, match="must sit next to the manifest"):
        model_file.load(path)


def test_ioazd_follows_a_model_without_importing_scikit_learn_or_numpy(saved, tmp_path):
    """What a server without scikit-learn (Debian 12 packages no skops) needs: the manifest and
    its portable form. The skops file is not even read."""
    path, _, _ = saved
    (path.parent / json.loads(path.read_text())["skops"]).unlink()
    code = ("import sys; from ioaz.model.file import load; "
            f"m = load(sys.argv[1]); print(m.predict_proba([0.5] * {N})[0][0]); "
            "print(sorted(k for k in ('sklearn', 'skops', 'numpy') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True, cwd=REPO).stdout.split("\n")
    assert out[0] in ("stream", "bfq", "mq-deadline") and out[1] == "[]"
