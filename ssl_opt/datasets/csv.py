"""Reading a delimited text file (CSV, TSV, whitespace-separated) of numeric features and one
label column, without pandas.

Like :func:`ssl_opt.datasets.load_svmlight`, :func:`load_csv` returns the file's contents as a
tuple ``(X, y)``: a dense float64 matrix and the labels as written (numbers or strings; ``-1``
marks an unlabeled row in scikit-learn's semi-supervised convention and is kept as is).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from ssl_opt.datasets.text import existing_file
from ssl_opt.exceptions import InvalidInputError

__all__ = ["load_csv"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_rows(file: Path, delimiter: str | None, comments: str | None):
    """Non-blank, non-comment rows of fields (stripped) and the line number of each."""
    rows, lines = [], []

    def keep(fields: list[str]) -> bool:
        if not fields or (len(fields) == 1 and not fields[0].strip()):
            return False
        return not (comments and fields[0].lstrip().startswith(comments))

    try:
        with open(file, newline="", encoding="utf-8-sig") as handle:
            if delimiter is None:
                for lineno, line in enumerate(handle, 1):
                    fields = line.split()
                    if keep(fields):
                        rows.append(fields)
                        lines.append(lineno)
            else:
                reader = csv.reader(handle, delimiter=delimiter)
                try:
                    for fields in reader:
                        if keep(fields):
                            rows.append([f.strip() for f in fields])
                            lines.append(reader.line_num)
                except csv.Error as exc:
                    raise InvalidInputError(
                        f"{file}, line {reader.line_num}: not a valid delimited row ({exc}); "
                        "fix the quoting on that line.") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{file} is not UTF-8 text ({exc}); convert it to UTF-8 or pass a text file.") from exc
    return rows, lines


def _resolve_label_column(label_column, width: int, names: list[str] | None, file: Path):
    if label_column is None:
        return None
    if isinstance(label_column, str):
        if names is None:
            raise InvalidInputError(
                f"label_column={label_column!r} names a column but {file} has no header line; "
                "pass the column's integer position or header=True.")
        if label_column not in names:
            raise InvalidInputError(
                f"{file} has no column {label_column!r}; pass label_column= from its header "
                f"{names} or an integer position.")
        return names.index(label_column)
    if isinstance(label_column, bool) or not isinstance(label_column, (int, np.integer)):
        raise InvalidInputError(
            f"label_column must be an integer position, a header name or None, got "
            f"{label_column!r}.")
    if not -width <= label_column < width:
        raise InvalidInputError(
            f"label_column={label_column} is outside the {width} columns of {file}; pass a "
            f"position in [{-width}, {width - 1}] (-1 is the last column).")
    return int(label_column) % width


def _bad_feature(values: np.ndarray, lines: list[int], columns: np.ndarray, file: Path):
    """The InvalidInputError for the first feature cell that is not a finite number."""
    for i, row in enumerate(values):
        for j, cell in enumerate(row.tolist()):
            where = f"{file}, line {lines[i]}, column {columns[j] + 1}"
            if not cell:
                return InvalidInputError(
                    f"{where}: empty field (a missing value); fill or impute missing values "
                    "before loading.")
            if not _is_number(cell):
                return InvalidInputError(
                    f"{where}: {cell!r} is not a number; features must be numeric (if it is "
                    "the label or a header, pass label_column= or header=True).")
            if not np.isfinite(float(cell)):
                return InvalidInputError(
                    f"{where}: {cell!r} is not finite; remove or impute NaN / inf entries.")
    return None


def _labels(values: np.ndarray, lines: list[int], file: Path) -> np.ndarray:
    """Numeric labels as int64 (all integral) or float64; otherwise the strings."""
    empty = np.flatnonzero(values == "")
    if empty.size:
        raise InvalidInputError(
            f"{file}, line {lines[empty[0]]}: empty label; give every row a label (-1 marks an "
            "unlabeled row).")
    try:
        numeric = values.astype(np.float64)
    except ValueError:
        return values.astype(str)
    if not np.all(np.isfinite(numeric)):
        return values.astype(str)  # e.g. a class called "nan": keep the text
    if np.all(numeric == np.round(numeric)):
        return numeric.astype(np.int64)
    return numeric


def load_csv(
    path: str | os.PathLike,
    label_column: int | str | None = -1,
    delimiter: str | None = ",",
    header: bool | str = "infer",
    *,
    comments: str | None = "#",
) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a delimited text file of numeric features and one label column.

    Parameters
    ----------
    path : str or Path
        The file (UTF-8; a byte-order mark is ignored).
    label_column : int, str or None
        Position of the label column (negative counts from the end; the default is the last
        column), its name in the header line, or ``None`` when every column is a feature.
    delimiter : str or None
        One-character field separator (``","``, ``";"``, ``"\\t"``; quoted fields are handled by
        the :mod:`csv` module), or ``None`` for runs of whitespace.
    header : bool or "infer"
        Whether the first row is a header of column names. ``"infer"`` treats it as one when
        none of its feature fields is a number (or when ``label_column`` is a name).
    comments : str or None
        Rows starting with this prefix are skipped (as are blank lines); ``None`` keeps them.

    Returns
    -------
    X : ndarray, shape (n, d), float64
        The feature columns in file order (the label column removed).
    y : ndarray, shape (n,), or None
        The labels: int64 when all are integers (e.g. ``-1`` for unlabeled rows), float64 when
        numeric otherwise, and the strings (a ``str`` array) when any label is not a number;
        ``None`` when ``label_column`` is ``None``.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    InvalidInputError
        (a ``ValueError``) When an argument is malformed, the file holds no data row or no
        feature column, a row has a different number of fields than the first (ragged rows), a
        feature is empty, not a number or not finite, or a label is empty; the message names the
        line and the column (1-based).
    """
    file = existing_file(path, "CSV file")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1
                                  or delimiter in "\r\n\"'"):
        raise InvalidInputError(
            f"delimiter must be one character other than a quote or newline (e.g. ',' or '\\t'), "
            f"or None for whitespace, got {delimiter!r}.")
    if not (header == "infer" or isinstance(header, bool)):
        raise InvalidInputError(f'header must be True, False or "infer", got {header!r}.')
    if comments is not None and (not isinstance(comments, str) or not comments):
        raise InvalidInputError(f"comments must be a non-empty prefix string or None, got "
                                f"{comments!r}.")
    if header is False and isinstance(label_column, str):
        raise InvalidInputError(
            f"label_column={label_column!r} is a column name, which needs a header line; pass "
            "header=True or an integer position.")

    rows, lines = _read_rows(file, delimiter, comments)
    if not rows:
        raise InvalidInputError(f"{file} holds no data rows; is it the right file?")
    width = len(rows[0])
    for fields, lineno in zip(rows, lines, strict=True):
        if len(fields) != width:
            raise InvalidInputError(
                f"{file}, line {lineno}: {len(fields)} fields, but line {lines[0]} has {width} "
                f"(ragged rows); fix that row or pass the right delimiter (now {delimiter!r}).")
    if header == "infer" and isinstance(label_column, str):
        header = True
    if header == "infer":
        probe = _resolve_label_column(label_column, width, None, file)
        header = not any(_is_number(f) for j, f in enumerate(rows[0]) if j != probe)
    names = rows[0] if header else None
    label = _resolve_label_column(label_column, width, names, file)
    if header:
        rows, lines = rows[1:], lines[1:]
        if not rows:
            raise InvalidInputError(f"{file} holds a header line but no data rows.")
    columns = np.array([j for j in range(width) if j != label], dtype=np.int64)
    if columns.size == 0:
        raise InvalidInputError(
            f"{file} has no feature column besides the label column; check label_column and "
            f"delimiter (now {delimiter!r}).")

    table = np.array(rows, dtype=str)
    feats = table[:, columns]
    try:
        X = feats.astype(np.float64)
    except ValueError:
        X = None
    if X is None or not np.all(np.isfinite(X)):
        error = _bad_feature(feats, lines, columns, file)
        if error is not None:
            raise error
        X = np.array([[float(cell) for cell in row] for row in feats], dtype=np.float64)
    y = None if label is None else _labels(table[:, label], lines, file)
    return np.ascontiguousarray(X), y
