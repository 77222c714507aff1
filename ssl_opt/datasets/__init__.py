"""Data sets, all returned as one type, :class:`Dataset` (:mod:`.base`): synthetic
semi-supervised sets and G50C (:mod:`.synthetic`), sparse text and PCMAC (:mod:`.text`), and
labeled clusters with pairwise constraints for NPKL (:mod:`.clusters`). The file readers
:func:`load_svmlight` (a tuple, as scikit-learn's) and :func:`load_mat` (a dict) return the
files' contents, as does :func:`load_csv` (a tuple, from a delimited text file). The public
data files are read from a folder given by the caller or ``$SSL_OPT_DATA``."""

from ssl_opt.datasets.base import ClusterData, Dataset, SSLData, shared_data_dir
from ssl_opt.datasets.clusters import (
    chessboard,
    double_spiral,
    load_iris_data,
    load_wine_data,
    pairwise_constraints,
    paper_constraint_count,
)
from ssl_opt.datasets.csv import load_csv
from ssl_opt.datasets.synthetic import g50c_like, gaussian_blobs, load_g50c, two_moons
from ssl_opt.datasets.text import load_mat, load_pcmac, load_svmlight
from ssl_opt.datasets.text_generator import synthetic_text

__all__ = [
    "ClusterData", "Dataset", "SSLData", "chessboard", "double_spiral", "g50c_like",
    "gaussian_blobs", "load_csv", "load_g50c", "load_iris_data", "load_mat", "load_pcmac",
    "load_svmlight", "load_wine_data", "pairwise_constraints", "paper_constraint_count",
    "shared_data_dir", "synthetic_text", "two_moons",
]
