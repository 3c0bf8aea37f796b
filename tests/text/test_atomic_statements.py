"""Atomic statements: sentence splitting, speaker resolution, relative dates, what is worth remembering."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.text.atomic import (
    addressed_to,
    answered_question,
    atomic_statements,
    clauses,
    resolve_speaker,
    restore_subject,
    speaker_name,
    tense,
    worth_remembering,
)
from engram.text.dates import time_mentions, with_absolute_dates
from engram.text.sentences import frame_of, split_sentences

SAID = datetime(2023, 5, 8, 13, 56)


@pytest.mark.parametrize(("sentence", "name", "want"), [
    ("I love my dog.", "Ann", "Ann loves Ann's dog."),
    ("I went to Paris with my sister.", "Ann", "Ann went to Paris with Ann's sister."),
    ("I really enjoy painting.", "Ann", "Ann really enjoys painting."),
    ("I'm a nurse and I've got two kids.", "Ann", "Ann is a nurse and Ann has got two kids."),
    ("Please note I don't eat meat.", "The user", "Please note the user doesn't eat meat."),
    ("I can swim.", "Ann", "Ann can swim."),
    ("I also love gardening.", "Ann", "Ann also loves gardening."),
    ("I still have my old car.", "Ann", "Ann still has Ann's old car."),  # "still" is a verb too
    ("I never eat meat.", "Ann", "Ann never eats meat."),
    ("Tell me about it.", "Ann", "Tell Ann about it."),
    ("I love it.", None, "I love it."),
    # issue 58: "need" is a main verb too
    ("I need to finish the report by Friday.", "The user", "The user needs to finish the report by Friday."),
    ("I am not sure what else I need to do.", "The user", "The user is not sure what else the user needs to do."),
    ("I need not worry about that.", "Ann", "Ann need not worry about that."),
])
def test_first_person_becomes_the_speaker(sentence: str, name: str | None, want: str) -> None:
    assert resolve_speaker(sentence, name) == want


@pytest.mark.parametrize(("sentence", "want"), [
    ("I'm so proud of you!", "Ann is so proud of Tom!"),
    ("I hope you have fun at the concert.", "Ann hopes Tom has fun at the concert."),  # "you" opens a clause
    ("I think you were right about your sister.", "Ann thinks Tom was right about Tom's sister."),
    ("I'll let you know.", "Ann will let Tom know."),  # an object: the verb after it does not agree
    ("You're welcome to visit me.", "Tom is welcome to visit Ann."),
    ("If you love hiking, I can take you to Muir Woods.", "If Tom loves hiking, Ann can take Tom to Muir Woods."),
])
def test_second_person_becomes_the_listener(sentence: str, want: str) -> None:
    assert resolve_speaker(sentence, "Ann", "Tom") == want


def test_without_a_listener_you_stays() -> None:
    assert resolve_speaker("I miss you.", "Ann") == "Ann misses you."
    assert [s.text for s in atomic_statements("I miss you.", "Ann", SAID, "Ann")] == ["Ann misses you."]  # own turn
    assert [s.text for s in atomic_statements("I miss you.", "Ann", SAID, "assistant")] == ["Ann misses you."]
    assert [s.text for s in atomic_statements("I miss you.", "Ann", SAID, "Tom")] == ["Ann misses Tom."]


@pytest.mark.parametrize(("sentence", "keep"), [
    ("I'm a plumber.", True), ("I love tacos!", True), ("I'm from Ohio.", True), ("I teach kindergarten.", True),
    ("I'm so jealous!", False), ("I'm doing great!", False), ("I agree.", False), ("I hope so.", False),
    ("I love it.", False), ("I will!", False), ("Sounds fun.", False),
])
def test_a_short_statement_of_the_speaker_and_a_thing_is_a_fact(sentence: str, keep: bool) -> None:
    assert worth_remembering(sentence) is keep


@pytest.mark.parametrize(("role", "want"), [
    ("Caroline", "Caroline"), ("user", "The user"), ("assistant", None), ("note", None), (None, None), ("  ", None),
])
def test_speaker_name_of_a_role(role: str | None, want: str | None) -> None:
    assert speaker_name(role) == want


@pytest.mark.parametrize(("text", "want"), [
    ("Who won? Dan Campbell. Great.", ["Who won? Dan Campbell.", "Great."]),
    ("Where do you live? I live in Porto.", ["Where do you live?", "I live in Porto."]),
    ("I met Mr. Smith and Anna B. Jones today.", ["I met Mr. Smith and Anna B. Jones today."]),
    ("", []),
])
def test_sentences_keep_abbreviations_and_short_answers(text: str, want: list[str]) -> None:
    assert split_sentences(text) == want


@pytest.mark.parametrize(("sentence", "keep"), [
    ("I adopted a dog named Max.", True),
    ("It was a painting of a sunset over the lake.", False),  # what "it" is, the previous turn said
    ("Caroline painted a sunset over the lake.", True),
    ("That's good to hear.", False),  # a remark about no one
    ("Dogs are great pets.", False),
    ("Regular exercise lowers the risk of heart disease in older adults.", True),  # says enough on its own
    ("I love those games!", False),  # leans on the previous turn
    ("I love the board games my brother makes.", True),
    ("We moved in 2019.", True),  # a number anchors it
    ("What did you paint?", False),
    ("Good to see you!", False),  # about the listener, whom a memory cannot name
    ("Wow, cool!", False),
    ("Who coaches the Lions? Dan Campbell.", True),
    ("I think so too.", False),  # a stance on what was said, stating nothing
    ("I know what you mean!", False),
    ("I'm glad we agree.", False),
    ("I think the museum opens at nine.", True),  # a stance with something in it
])
def test_what_is_worth_remembering(sentence: str, keep: bool) -> None:
    assert worth_remembering(sentence) is keep


def test_relative_dates_are_resolved_against_when_it_was_said() -> None:
    text, about = with_absolute_dates("I went to a support group yesterday.", SAID)
    assert text == "I went to a support group yesterday (7 May 2023)."
    assert about is not None and about.date() == datetime(2023, 5, 7).date()
    assert time_mentions("We may go hiking in March.", SAID) == []  # "may" and a bare month are no dates
    assert time_mentions("I have painted for 7 years.", SAID) == []  # a duration, not a time
    assert [m.moment.date() for m in time_mentions("Two weeks ago I started yoga.", SAID)] == [
        datetime(2023, 4, 24).date()]


def test_last_this_and_next_are_read_as_time_only_beside_a_unit_of_time(monkeypatch) -> None:
    from engram.text import dates

    found = [(m.span, m.moment.date()) for s in ("Last fri we hiked.", "I moved here two days later.",
                                                   "We fly next month.") for m in time_mentions(s, SAID)]
    assert found == [("Last fri", datetime(2023, 5, 5).date()), ("two days later", datetime(2023, 5, 10).date()),
                     ("next month", datetime(2023, 6, 8).date())]

    def no_parser():
        raise AssertionError("dateparser ran")

    monkeypatch.setattr(dates, "_search", no_parser)
    for sentence in ("At last, this is it!", "See you later.", "Next to the lake is the best spot.",
                     "That was the last time I sang.", "In the past I was shy."):
        assert time_mentions(sentence, SAID) == []


def test_a_time_before_a_comma_and_a_clause_is_found_where_it_is_written() -> None:
    # dateparser's search alone finds nothing in the first, and "Thursday, a" in the third
    found = [[(m.span, m.moment.date()) for m in time_mentions(s, SAID)]
             for s in ("Last week, I adopted a dog.", "On May 7, 2023, I ran a marathon.", "On Thursday, a storm came.")]
    assert found == [[("Last week", datetime(2023, 5, 1).date())], [("May 7, 2023", datetime(2023, 5, 7).date())],
                     [("Thursday", datetime(2023, 5, 4).date())]]
    text, about = with_absolute_dates("Last week, I adopted a dog.", SAID)
    assert text == "Last week (1 May 2023), I adopted a dog." and about is not None


def test_an_episode_becomes_its_statements() -> None:
    got = atomic_statements(
        "Hey Mel! Good to see you! I went to a LGBTQ support group yesterday. What about you?", "Caroline", SAID)
    assert [s.text for s in got] == ["Caroline went to a LGBTQ support group yesterday (7 May 2023)."]
    assert got[0].about is not None and got[0].about.day == 7


@pytest.mark.parametrize(("sentence", "want"), [
    ("Caroline lives in Porto.", "present"),
    ("Caroline went to Paris.", "past"),
    ("Who is the president? Joe Biden.", "present"),
    ("Nice!", None),
])
def test_tense(sentence: str, want: str | None) -> None:
    assert tense(sentence) == want


def test_frames_mask_values_but_keep_the_subject() -> None:
    assert frame_of("Caroline lives in Lisbon.") == ("caroline lives ?", frozenset({"lisbon"}))
    assert frame_of("Caroline lives in Porto now.")[0] == frame_of("Caroline lives in Lisbon.")[0]
    assert frame_of("Melanie lives in Porto.")[0] != frame_of("Caroline lives in Porto.")[0]
    assert frame_of("User 1 lives in Lisbon.") == ("user 1 lives ?", frozenset({"lisbon"}))
    assert frame_of("User 2 lives in Porto.")[0] == "user 2 lives ?"
    assert frame_of("June 2020 was hot in Porto.")[1] == frozenset({"2020", "porto"})  # a year stays a value
    assert frame_of("I love green tea.") == (None, frozenset())


@pytest.mark.parametrize(("sentence", "want"), [
    ("My father is in the army and my mom passed away when I was young.",
     ["My father is in the army", "my mom passed away when I was young."]),
    ("I've always wanted a dog, but I can't have one.", ["I've always wanted a dog", "I can't have one."]),
    ("I have a good relationship with my father and my stepmom.",
     ["I have a good relationship with my father and my stepmom."]),  # no second verb: one clause
    ("My father and my mom are teachers.", ["My father and my mom are teachers."]),  # no verb on the left
    ("I went to Paris and Rome last May.", ["I went to Paris and Rome last May."]),
])
def test_independent_clauses_are_separate_statements(sentence: str, want: list[str]) -> None:
    assert clauses(sentence) == want


def test_an_opening_interjection_is_cut() -> None:
    assert [s.text for s in atomic_statements("Yeah, I went hiking with Tom. Oh, wow, I love my new boots!", "Ann", SAID)] == [
        "Ann went hiking with Tom.", "Ann loves Ann's new boots!"]
    assert [s.text for s in atomic_statements("Great news: I got the job at Acme.", "Ann", SAID)] == [
        "Great news: Ann got the job at Acme."]


@pytest.mark.parametrize(("sentence", "want"), [
    ("Went hiking with my kids yesterday.", "I went hiking with my kids yesterday."),
    ("Been really busy with work.", "I've been really busy with work."),
    ("Just got some new shoes!", "I just got some new shoes!"),
    ("Planning a trip there next month.", "I'm planning a trip there next month."),
    ("Exploring the city was awesome.", "Exploring the city was awesome."),  # the gerund is the subject
    ("Sounds like fun.", "Sounds like fun."),  # "it", not the speaker, is dropped
    ("Make sure you rest.", "Make sure you rest."),  # an imperative
])
def test_dropped_first_person_is_restored(sentence: str, want: str) -> None:
    assert restore_subject(sentence) == want


def test_statements_of_a_named_speaker_split_and_restored() -> None:
    got = [s.text for s in atomic_statements(
        "Well, my father is in the army and my mom passed away when I was young. Went to see him last week!",
        "User 1", SAID)]
    assert got[:2] == ["User 1's father is in the army", "User 1's mom passed away when User 1 was young."]
    assert got[2].startswith("User 1 went to see him last week")


@pytest.mark.parametrize("sentence", [
    "We should play sometime.", "Maybe we could go together.", "We'll have to make plans soon.",
    "Let's meet up next week.", "I bet you do!", "I'm sure you'll look great!",
])
def test_proposals_and_stances_on_the_listener_are_not_facts(sentence: str) -> None:
    assert not worth_remembering(sentence)


@pytest.mark.parametrize(("sentence", "keep"), [
    ("I'm sure it'll be a blast.", False), ("I hope she feels better soon.", False),
    ("I think they're one of the best bands out there.", False), ("I can imagine it's rewarding work.", False),
    ("I think my favourite book is Dune.", True),  # a stance on the speaker
    ("I think we're moving to Porto next month.", True),  # "we" holds the speaker
    ("I think the museum opens at nine.", True),  # on a named thing
    ("I believe that hard work pays off in the end.", True),  # "that" opens the clause, it points at nothing
    ("I hope to make it big one day.", True),  # a wish of the speaker's, no clause
    ("I know there's a great hiking trail near my house.", True),  # "there" is, it points at nothing
])
def test_a_stance_on_what_a_pronoun_points_at_is_not_a_fact(sentence: str, keep: bool) -> None:
    assert worth_remembering(sentence) is keep


@pytest.mark.parametrize(("sentence", "keep"), [
    ("I would love to!", False), ("I've always wanted to.", False), ("My sister would be happy to", False),
    ("I would love to visit Porto.", True), ("I moved to Lisbon to be closer to my sister.", True),
])
def test_a_verb_phrase_left_out_after_to_says_nothing(sentence: str, keep: bool) -> None:
    assert worth_remembering(sentence) is keep


@pytest.mark.parametrize("sentence", ["We always have a good team at work.", "We love having all the animals around.",
                                      "I think my sister would love Porto."])
def test_statements_about_us_stay(sentence: str) -> None:
    assert worth_remembering(sentence)


@pytest.mark.parametrize(("question", "name", "want"), [
    ("Where do you live?", "Ann", "Where does Ann live?"),
    ("Are you okay? Have you seen your mom?", "Ann", "Is Ann okay? Has Ann seen Ann's mom?"),
    ("What were you doing?", "The user", "What was the user doing?"),
    ("How's the store going?", "Ann", "How's the store going?"),
])
def test_a_question_is_put_to_the_one_asked(question: str, name: str, want: str) -> None:
    assert addressed_to(question, name) == want


def test_an_answer_that_leans_on_the_question_is_stored_with_it() -> None:
    said = datetime(2023, 5, 21, 14, 0)
    st = answered_question("Congrats on the new team! Which team did you sign with?", "Tim",
                           "The Minnesota Wolves! I can't wait to play with them!", "John", said)
    assert st is not None
    assert st.text == "Which team did John sign with? The Minnesota Wolves! John can't wait to play with them!"
    dated = answered_question("What did you do yesterday?", "Ann", "Hiking with my dog Rex.", "user", said)
    assert dated is not None and dated.text == "What did the user do yesterday? Hiking with the user's dog Rex."


@pytest.mark.parametrize(("question", "asker", "answer", "answerer"), [
    ("That bowl is gorgeous! Did you make it?", "Caroline", "Yes!", "Melanie"),  # too little to stand alone
    ("That sounds great.", "Caroline", "The Minnesota Wolves!", "John"),  # nothing was asked
    ("Which team did you sign with?", "Tim", "What about you?", "John"),  # a question back is no answer
    ("Which team did you sign with?", "Tim", "The Minnesota Wolves!", "assistant"),  # no one to name
])
def test_no_statement_from_an_answer_without_a_question_or_content(question: str, asker: str, answer: str,
                                                                   answerer: str) -> None:
    assert answered_question(question, asker, answer, answerer, datetime(2023, 5, 21)) is None


def test_you_in_an_answer_names_the_one_who_asked() -> None:
    st = answered_question("Where did you meet Rex?", "Tim", "At your birthday party!", "John", SAID)
    assert st is not None and st.text == "Where did John meet Rex? At Tim's birthday party!"


@pytest.mark.parametrize(("sentence", "expected"), [
    # a relative date resolves to the precision it has (issue 45 #7), not to a day it never named
    ("Lena moved to Lisbon last year.", "Lena moved to Lisbon last year (2022)."),
    ("I started a new job this month.", "I started a new job this month (May 2023)."),
    ("We met two years ago.", "We met two years ago (2021)."),
    ("I quit three months ago.", "I quit three months ago (February 2023)."),
    # days keep their day
    ("I went to a support group yesterday.", "I went to a support group yesterday (7 May 2023)."),
])
def test_relative_dates_keep_their_precision(sentence: str, expected: str) -> None:
    assert with_absolute_dates(sentence, SAID)[0] == expected
