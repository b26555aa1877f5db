"""Words of every Unicode script: the analysis, recall in each script, hostile text, migration.

Decisions: docs/spec/memory-retrieval.md, "Words in every script".
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from memory_kit import manifest_text

from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest
from engram.memory import (
    MemoryEngine,
    OteSpec,
    RecordInput,
    open_engine,
    parse_manifest,
    recall,
    record,
    record_many,
)
from engram.memory.internals import INDEX_VERSION, MAX_WORD, cache_sizes, local_vector, terms, words
from engram.store import Store, open_store

EngramShell = Callable[..., "subprocess.CompletedProcess[str]"]

# One memory per script, and a query made of some of its own words (not the whole sentence).
SCRIPTS: dict[str, tuple[str, str]] = {
    "german": ("Grüße aus München: die Brücke über die Isar ist gesperrt", "brücke isar"),
    "vietnamese": ("Tiếng Việt: chợ Bến Thành mở cửa lúc sáu giờ sáng", "chợ bến thành"),
    "russian": ("Мы встретились в Москве у Большого театра в пятницу", "большой театр москва"),
    "greek": ("Το πλοίο για τη Νάξο φεύγει από τον Πειραιά στις εννέα", "πλοίο νάξο"),
    "arabic": ("اجتماع المدرسة يوم الخميس في المكتبة الكبيرة", "المكتبة الخميس"),
    "hebrew": ("הפגישה עם רופא השיניים נדחתה ליום ראשון", "רופא השיניים"),
    "hindi": ("मेरी बहन अगले महीने दिल्ली में नई नौकरी शुरू करेगी", "दिल्ली नौकरी"),
    "chinese": ("我们下周三在北京的办公室讨论新的预算", "北京办公室预算"),
    "japanese": ("来週の火曜日に東京駅で田中さんと会います", "東京駅で田中さん"),
    "korean": ("다음 주 금요일에 서울역에서 친구를 만나기로 했어요", "서울역 친구"),
    "thai": ("พรุ่งนี้เราจะไปตลาดน้ำกับคุณยายตอนเช้า", "ตลาดน้ำ คุณยาย"),
    "lao": ("ພວກເຮົາຈະໄປຫຼວງພະບາງໃນເດືອນໜ້າ", "ຫຼວງພະບາງ"),
    "khmer": ("យើងនឹងទៅអង្គរវត្តនៅខែក្រោយ", "អង្គរវត្ត"),
    "myanmar": ("ကျွန်ုပ်တို့ ရွှေတိဂုံဘုရား သွားမယ်", "ရွှေတိဂုံ"),
}


@pytest.fixture
def seat(tmp_path: Path) -> OteSpec:
    return parse_manifest(manifest_text(), str(tmp_path / "ote.toml"), tmp_path)


@pytest.fixture
def sqlite_engine(sqlite_store: Store, seat: OteSpec) -> MemoryEngine:
    return open_engine(sqlite_store, seat, FixedClock())


@pytest.mark.req("engram.memory.words-every-script")
def test_ascii_text_keeps_the_original_analysis() -> None:
    rng = random.Random(30)
    alphabet = "abcXYZ019 '_-.,:;!?\"\t\n"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert words(text) == re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))


@pytest.mark.req("engram.memory.words-every-script")
@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Grüße", "grusse"),  # ü -> u, ß -> ss (case folding)
        ("GRÜSSE", "grüße"),
        ("école", "ecole"),
        ("e\u0301cole", "école"),  # a combining accent meets the precomposed letter
        ("Tiếng Việt", "tieng viet"),
        ("Ёлка", "елка"),
        ("Άθήνα", "αθηνα"),
        ("ﬁnal", "final"),  # NFKC: the ligature is two letters
        ("２０２４", "2024"),  # full-width digits
        ("٢٠٢٤", "2024"),  # Arabic-Indic digits
        ("Øresund Łódź", "oresund lodz"),
        ("שָׁלוֹם", "שלום"),  # Hebrew points
        ("الْكِتَاب", "الكتاب"),  # Arabic harakat
        ("don\u02bct", "don't"),  # the modifier-letter apostrophe vanishes like "'"
        ("in\u200bvisible\u200d", "invisible"),  # zero-width space and joiner vanish
        ("\u200fright\u200e to left", "right to left"),  # direction marks vanish
    ],
)
def test_spellings_users_consider_the_same_give_the_same_words(one: str, other: str) -> None:
    assert words(one) == words(other)
    assert terms(one) == terms(other)


@pytest.mark.req("engram.memory.words-every-script")
def test_letters_of_every_script_are_words_and_scripts_without_spaces_are_bigrams() -> None:
    assert words("Москва и Київ") == ["москва", "и", "киів"]
    assert words("मेरी किताबें") == ["मेरी", "किताबें"]  # vowel signs stay in the word
    assert words("北京市") == ["北京", "京市"]
    assert words("東京に行く") == ["東京", "京に", "に行", "行く"]  # kanji and kana: one run
    assert words("서울에서") == ["서울", "울에", "에서"]
    assert words("猫") == ["猫"]  # a lone letter stays a word
    assert words("iPhone很好") == ["iphone", "很好"]  # a change of script ends a word
    assert words("が") != words("か")  # voicing marks are not diacritics
    assert words("が") == ["が"]
    assert words("hello 👋🏽 world") == ["hello", "world"]  # an emoji is not a word
    assert words("James’s") == ["james", "s"]  # the typographic apostrophe separates, as before


@pytest.mark.req("engram.memory.words-every-script")
def test_thai_bigrams_keep_each_vowel_and_tone_mark_with_its_letter() -> None:
    grams = words("ข้าวผัด")
    assert grams == ["ข้า", "าว", "วผั", "ผัด"]
    assert all(unicodedata.category(g[0])[0] != "M" for g in grams)  # no gram starts on a mark


@pytest.mark.req("engram.memory.words-every-script")
@pytest.mark.parametrize("script", list(SCRIPTS))
def test_a_memory_in_each_script_is_found_by_its_own_words(
    sqlite_engine: MemoryEngine, script: str
) -> None:
    for other, (text, _) in SCRIPTS.items():
        record(sqlite_engine, text, "fact", "M2")
        assert terms(text), other  # every script yields index terms
    record(sqlite_engine, "The billing service moved to Rust last spring", "fact", "M2")
    text, query = SCRIPTS[script]
    hits = recall(sqlite_engine, query, k=3).hits
    assert hits[0].memory.text == text
    assert recall(sqlite_engine, text, k=1).hits[0].memory.text == text


@pytest.mark.req("engram.memory.words-every-script")
def test_the_recall_command_finds_a_memory_by_words_in_its_own_script(
    engram_shell: EngramShell, tmp_path: Path
) -> None:
    ote = tmp_path / "ote.toml"
    ote.write_text(manifest_text())
    seat = ["--ote", str(ote), "--database", f"sqlite://{tmp_path / 'engram.db'}"]
    chosen = ("chinese", "russian", "thai", "arabic")
    for script in chosen:
        done = engram_shell("record", SCRIPTS[script][0], "--kind", "fact", "--ring", "M2", *seat)
        assert done.returncode == 0, done.stderr
    for script in chosen:
        text, query = SCRIPTS[script]
        done = engram_shell("recall", query, "--k", "1", "--json", *seat)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hits"][0]["memory"]["text"] == text


@pytest.mark.req("engram.memory.words-hostile-text")
@pytest.mark.parametrize(
    "text",
    [
        "🎉🎉 launch party 🎉 at 🍕 place",
        "family: 👨\u200d👩\u200d👧\u200d👦 and 🏳️\u200d🌈",
        "\u202eevil\u202c \u200fשלום\u200e mixed \u2067direction\u2069",
        "Z" + "\u0301\u0302\u0303\u0304\u0308" * 400 + "algo text",
        "a" * 100_000,
        "".join(chr(0x4E00 + i) for i in range(10_000)),
        "\ufeff\u00ad\u200b\u2060",  # nothing but invisible characters
        "🎉",  # nothing but an emoji
    ],
    ids=["emoji", "zwj", "bidi", "combining", "100k-of-a", "cjk-10k", "invisible", "lone-emoji"],
)
def test_hostile_text_is_recorded_and_recalled_by_its_own_text(
    sqlite_store: Store, tmp_path: Path, text: str
) -> None:
    # M2 gets 30 % of 100,000 tokens: room for a 100,000-character memory (25,000 tokens).
    roomy = parse_manifest(manifest_text(budget=100_000), str(tmp_path / "ote.toml"), tmp_path)
    engine = open_engine(sqlite_store, roomy, FixedClock())
    record(engine, "an unrelated memory about gardening", "fact", "M2")
    stored = record(engine, text, "fact", "M2").memory
    assert all(len(w) <= MAX_WORD for w in words(text))
    hits = recall(engine, text, k=2).hits
    if terms(text):
        assert hits[0].memory.id == stored.id
    else:  # no word at all: nothing to match, and recall answers without error
        assert hits == ()


@pytest.mark.req("engram.memory.words-hostile-text")
def test_a_megabyte_of_one_character_is_refused_with_a_clear_error(
    sqlite_engine: MemoryEngine,
) -> None:
    for char in ("a", "中", "🎉", "\u0301"):
        with pytest.raises(InvalidRequest, match=r"100000|100,000"):
            record(sqlite_engine, char * 1_000_000, "fact", "M2")
        short = record(sqlite_engine, char * 3 + " and a short memory", "fact", "M2").memory
        # A query is not refused: a megabyte of one letter is pieces of one term.
        hits = recall(sqlite_engine, char * 1_000_000, k=1).hits
        if words(char):
            assert [h.memory.id for h in hits] == [short.id]
        else:  # a lone combining accent is no word: nothing matches
            assert hits == ()


@pytest.mark.req("engram.memory.words-hostile-text")
def test_the_analysis_is_the_same_in_every_process() -> None:
    text = "Grüße 👨\u200d👩\u200d👧 Москва 北京市 ข้าวผัด \u202eevil"
    code = (
        "import json,sys; from engram.memory.internals import terms, local_vector;"
        "t=sys.argv[1]; print(json.dumps([terms(t), local_vector(t).tolist()]))"
    )
    seen = []
    for seed in ("0", "1", "random"):
        done = subprocess.run(
            [sys.executable, "-c", code, text],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert done.returncode == 0, done.stderr
        seen.append(json.loads(done.stdout))
    assert seen == [[terms(text), local_vector(text).tolist()]] * 3


@pytest.mark.req("engram.memory.index-version-rebuilt")
def test_an_index_of_another_version_is_rebuilt_once_and_never_appended_to(
    tmp_path: Path, seat: OteSpec
) -> None:
    db = tmp_path / "engram.db"
    folder = db.with_name("engram.db.index")
    store = open_store(f"sqlite://{db}")
    engine = open_engine(store, seat, FixedClock())
    record(engine, SCRIPTS["chinese"][0], "fact", "M2")
    record(engine, "budget meeting in the office", "fact", "M2")
    recall(engine, "budget")
    store.close()
    # What the previous release left: the same files, its own version in the meta (version 2
    # indexed only [a-z0-9] words, so its terms cannot be trusted for this analysis).
    old = folder / (folder / "CURRENT").read_text().strip()
    meta = json.loads((old / "meta.json").read_text())
    assert meta["version"] == INDEX_VERSION
    (old / "meta.json").write_text(dumps_text({**meta, "version": 2}))
    store = open_store(f"sqlite://{db}")
    engine = open_engine(store, seat, FixedClock())
    record(engine, SCRIPTS["russian"][0], "fact", "M2")  # a delta the old index must not take
    for script in ("chinese", "russian"):
        hits = recall(engine, SCRIPTS[script][1]).hits
        assert hits[0].memory.text == SCRIPTS[script][0]
        assert hits[0].components["lexical"] > 0
    assert engine.index.rebuilds == 1
    new = folder / (folder / "CURRENT").read_text().strip()
    assert new != old
    rebuilt = json.loads((new / "meta.json").read_text())
    assert (rebuilt["version"], rebuilt["docs"]) == (INDEX_VERSION, 3)  # all rows, loaded anew
    assert not old.exists()  # the old generation was replaced, never appended to
    again = open_engine(store, seat, FixedClock())
    recall(again, "budget")
    assert again.index.rebuilds == 0  # once only
    store.close()


@pytest.mark.req("engram.memory.recall-authors")
def test_an_author_with_diacritics_is_named_by_the_same_words_without_them(
    sqlite_engine: MemoryEngine,
) -> None:
    team = {
        "José García": "the team meeting moved to Thursday",
        "Zoë Brontë": "the team meeting is on Friday",
    }
    record_many(
        sqlite_engine,
        [RecordInput(t, "fact", "M2", provenance={"author": who}) for who, t in team.items()],
    )
    for who, spelled in (("José García", "jose garcia"), ("Zoë Brontë", "ZOE BRONTE")):
        # Both memories match "team meeting"; only the named author's gains the author boost.
        hits = recall(sqlite_engine, f"team meeting according to {spelled}", k=2).hits
        assert hits[0].memory.author == who
        assert hits[0].components["entity"] > 0  # the author boost (reported as "entity")


@pytest.mark.req("engram.memory.words-hostile-text")
def test_text_walking_the_code_space_leaves_the_caches_bounded() -> None:
    everything = "".join(chr(cp) for cp in range(0x20, 0x30000) if not 0xD800 <= cp <= 0xDFFF)
    for start in range(0, len(everything), 90_000):
        assert isinstance(words(everything[start : start + 90_000]), list)
    folds, groups, limit = cache_sizes()
    assert folds <= limit
    assert groups <= limit
    assert words("Grüße 北京市") == ["grusse", "北京", "京市"]  # uncached characters still fold
