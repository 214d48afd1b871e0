"""The topic share of a list or count's bar (rag/search/topical.py): groups, scaffold words, rarity weights."""

from rag.text import tokenize
from rag.search.topical import coverage, idf, topic_groups


def test_question_words_about_papers_are_not_topic_and_alternatives_form_one_group():
    assert topic_groups("How many papers are about speculative decoding?") == [
        frozenset({"specul"}), frozenset({"decod"})]
    assert topic_groups("Which papers attack or build watermarks?") == [
        frozenset({"attack", "build"}), frozenset({"watermark"})]
    assert topic_groups("papers on agents that navigate websites or GUIs")[-1] == frozenset({"websit", "gui"})
    assert topic_groups("List work on test-time adaptation.") == [
        frozenset({"test"}), frozenset({"time"}), frozenset({"adapt"})]
    assert topic_groups("Which papers?") == []


def test_coverage_weighs_rare_terms_more_and_counts_an_alternative_once():
    df, n = {"crystal": 5, "generat": 600, "model": 1500, "attack": 100, "build": 300}, 2000
    groups = topic_groups("generate crystal models")
    has = lambda text: set(tokenize([text])[0])  # noqa: E731
    assert coverage(groups, has("crystal structures"), df, n) > 0.7  # the rare word carries the topic
    assert coverage(groups, has("we generate with generative models"), df, n) < 0.3
    assert coverage(groups, has("generate crystal models"), df, n) == 1.0
    either = topic_groups("attack or build")
    assert coverage(either, has("an attack"), df, n) == coverage(either, has("we build"), df, n) == 1.0
    # A word no paper contains cannot tell papers apart; nothing weighed means nothing to miss.
    assert idf(0, n) == 0.0 and coverage(topic_groups("zzzqx"), has("anything"), {}, n) == 1.0
