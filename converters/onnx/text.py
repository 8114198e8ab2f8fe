"""String ops: StringConcat, RegexFullMatch, StringSplit, StringNormalizer, and
TfIdfVectorizer."""

from __future__ import annotations

from .table import converter


@converter("StringConcat", 20)
def StringConcat(ctx, x, y):
    return ctx.call("strings.concat", x, y)


@converter("RegexFullMatch", 20)
def RegexFullMatch(ctx, x, *, pattern):
    return ctx.call("strings.regex_full_match", x, pattern=pattern)


@converter("StringSplit", 20)
def StringSplit(ctx, x, *, delimiter=None, maxsplit=None):
    out = ctx.call("strings.split", x, delimiter=delimiter or None, maxsplit=maxsplit)
    return [ctx.item(out, 0), ctx.item(out, 1)]


@converter("StringNormalizer", 10)
def StringNormalizer(
    ctx, x, *, case_change_action="NONE", is_case_sensitive=0, locale="", stopwords=None
):
    return ctx.call(
        "strings.normalize",
        x,
        case_change_action=case_change_action,
        is_case_sensitive=bool(is_case_sensitive),
        stopwords=tuple(stopwords or ()),
    )


@converter("TfIdfVectorizer", 9)
def TfIdfVectorizer(
    ctx,
    x,
    *,
    max_gram_length,
    max_skip_count,
    min_gram_length,
    mode,
    ngram_counts,
    ngram_indexes,
    pool_int64s=None,
    pool_strings=None,
    weights=None,
):
    return ctx.call(
        "tfidf_vectorizer",
        x,
        mode=mode,
        min_gram_length=min_gram_length,
        max_gram_length=max_gram_length,
        max_skip_count=max_skip_count,
        ngram_counts=tuple(ngram_counts),
        ngram_indexes=tuple(ngram_indexes),
        pool_int64s=tuple(pool_int64s or ()),
        pool_strings=tuple(pool_strings or ()),
        weights=tuple(weights or ()),
    )
