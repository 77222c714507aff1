"""Small instances of every modelling-layer variant, for ``ssl-opt certify`` (a plugin)."""

from __future__ import annotations

from ssl_opt.examples import Example
from ssl_opt.hookspecs import hookimpl
from ssl_opt.modeling import variants
from ssl_opt.modeling.transductive import transductive_huber_enet


def _at(builder, size: int):
    return lambda: builder(size)


#: Example name → (builder, size, description).
SMALL = {
    "model-lapsvm-tv": (variants.lapsvm_tv, 60,
                        "LapSVM + graph total variation, two moons n=60"),
    "model-laprls-l1": (variants.laprls_l1, 60, "LapRLS + ℓ1 on α, two moons n=60"),
    "model-linear-huber-enet": (variants.linear_huber_enet, 80,
                                "Huber-hinge linear SVM + elastic net, sparse text n=80"),
    "model-linear-logistic-enet": (variants.linear_logistic_enet, 80,
                                   "logistic linear model + elastic net, sparse text n=80"),
    "model-lass-entropy": (variants.lass_entropy, 60, "LASS + entropy, two moons N=60, K=3"),
    "model-lass-l1-graph": (variants.lass_l1_graph, 60,
                            "LASS + ℓ1 graph term, two moons N=60, K=3"),
    "model-ere-group": (variants.ere_group, 40, "robust ERE + ℓ2,1 on W, n=40, c=3"),
    "model-ere-huber": (variants.ere_huber, 40, "ERE with Huber edge terms, n=40, c=3"),
    "model-multiclass-laprls": (variants.multiclass_laprls, 45,
                                "3-class LapRLS with n×c outputs, blobs n=45"),
    "model-multiclass-simplex": (variants.multiclass_simplex, 45,
                                 "3-class kernel scores on the simplex, blobs n=45"),
    "model-multiclass-l21": (variants.multiclass_l21, 45,
                             "3-class LapRLS + row ℓ2,1 on α, blobs n=45"),
    "model-lapsvm-balance": (variants.lapsvm_balance, 60,
                             "LapSVM with the balance constraint on f_u, two moons n=60"),
    "model-lapsvm-box": (variants.lapsvm_box, 60, "LapSVM with −½ ≤ f ≤ ½, two moons n=60"),
    "model-label-propagation": (variants.label_propagation, 60,
                                "label spreading with simplex rows, blobs n=60"),
    "model-transductive-huber-enet": (transductive_huber_enet, 80,
                                      "transductive Huber hinge + elastic net (tsvm-model), "
                                      "sparse text n=80"),
}


def _lapsvm_composition():
    """A LapSVM written as terms, as a user would (a plain Model of the named model's terms):
    it lowers to LapSVM, so the paper's solvers take it."""
    from ssl_opt.modeling.model import Model
    from ssl_opt.problems.manifold.examples import lapsvm_with_loss, moons_instance

    named = moons_instance(lapsvm_with_loss("squared_hinge"))()
    return Model(named.terms, prediction=named.prediction_expression, name="lapsvm-terms")


@hookimpl
def register_examples():
    return [Example(name, "model", description, _at(builder, size))
            for name, (builder, size, description) in SMALL.items()] + [
        Example("model-lapsvm-composition", "model",
                "LapSVM (squared hinge) as a composition of terms, two moons n=120: lowered "
                "to LapSVM for the paper's solvers", _lapsvm_composition)]
