"""The frozen answer sets v3-v9: any edit to their files fails (errata go in their READMEs),
and each keeps its shape. Each was held out until its first run and is a dev set since; from
v7 on the conversations are longer, with more sessions, and a change may be another person's
correction or the group's (:func:`frozen.check_long_conversations`,
:func:`frozen.check_change_ids`)."""

from pathlib import Path

import pytest
from frozen import (
    assert_files_unchanged,
    check_answer_changes,
    check_answer_conversations,
    check_answer_questions,
    check_change_ids,
    check_long_conversations,
)

DATA = Path(__file__).resolve().parents[1] / "data"
#: per set: its files' hashes; the least questions of each type in every conversation, in
#: all and in every conversation; for v3-v6 the least changes in all and in every
#: conversation (``changes``; ``None`` from v7 on)
SETS = {
    "answers_v3": {
        "sha256": {
            "changes.json": "d984e81fb7a34d314cd504352aaaf5cdb286c62688be07dbfaee53720a5b609b",
            "allotment_society.jsonl": (
                "53ef709ce008cfa2d6e297deebfdd8018a5d46f152ea188cfb8bc053e417e6dc"
            ),
            "bakery_staff.jsonl": (
                "982cdb816e6acedeb700d7d743c59889c07d31615a62ac566e4853d34c9b669a"
            ),
            "choir_concert.jsonl": (
                "2cc4f8dcc1eedce3591411a98c26beb89b25f07fae385c7c219e7de5e94ec528"
            ),
            "hiking_trek.jsonl": "60e14a91d86b4226eb2022e21af40ae6b71571db83d5c5bdab22002992bd5a90",
            "oncall_rota.jsonl": "e997493759d4694f6e70138433eb1f560a950f4468dd8a2882927ba945e74539",
            "school_trip.jsonl": "062cf1e5ecd2a2b1666469c3576a15237618280a40dc39d78f12a51ba088a74c",
            "questions.json": "74a60c23777c7ba8fec0cb0006cbdcdaee61dbc17c6e72dc2001b7b87a576498",
        },
        "per_conversation": {
            "current": 2,
            "original": 1,
            "change": 1,
            "per-person": 1,
            "decision": 1,
            "cross-person": 1,
            "date": 2,
            "why": 1,
            "fact": 1,
        },
        "least": 66,
        "least_each": 11,
        "changes": (12, 0),
    },
    "answers_v4": {
        "sha256": {
            "changes.json": "c1d0b3b06af41bb93056b214148e48f44ea2da7a9a01252e7386f215a3f2f22e",
            "book_club.jsonl": "8bfc1fd12222cdf2befc3d6aef0ecc51b19b2072de131c13e2d47dffcf3f9242",
            "five_a_side.jsonl": "a913ea09dd1d1566c5e2346eb5990664c3925f69ee724ee3d4fb507356503a08",
            "flat_share.jsonl": "ed9c3919ec838a3c7997556cfce5e970a828ea1f323f88809e7fb53fec403be4",
            "food_bank.jsonl": "27453fbbe7d805ca75a18b8fd9224b6025df7c9697da63304aedf00b091237f0",
            "indie_studio.jsonl": (
                "a873a09f4d7679837707376e2b2b9b906b023b4189c7b2be9fce8a99571b7e8b"
            ),
            "wedding_family.jsonl": (
                "89dd5be04644ec67a94620745c66bb3c5a96d1a7c0bbcf9ec73f490fcd5912c1"
            ),
            "questions.json": "9141cc9108c266f1e30557218003e3a02973e59fde09ad2f592ef3d599eebae9",
        },
        "per_conversation": {
            "current": 3,
            "original": 1,
            "change": 1,
            "per-person": 1,
            "decision": 1,
            "cross-person": 1,
            "date": 2,
            "why": 1,
            "fact": 1,
        },
        "least": 84,
        "least_each": 14,
        "changes": (18, 0),
    },
    "answers_v5": {
        "sha256": {
            "changes.json": "364ab74d0f4daf04b7ab7c81e242b239515af625ebcf773b5c8af88bdd1d2637",
            "band_tour.jsonl": "66a768917bc0ae856cc4a79e1436fb2e372f3bcca2f2ccc98dc90bbd1e748ee0",
            "dental_practice.jsonl": (
                "2d5b41146c982a9c236785cc4ecfad02986f6eead19d5177e8fee50cd7064e5d"
            ),
            "grandma_80th.jsonl": (
                "5df826e5a72f093e44fdf0b95f81baa9490cbdf1371d6b00194e319270a81a4f"
            ),
            "sailing_club.jsonl": (
                "0d1bbc2e2d52a2e1b9b40d3dcb480f9f8c5b0a828bf0e4c1819d1f7d7dee1c3f"
            ),
            "street_party.jsonl": (
                "1b50b7fedc346248af2249bc8881e23d6bed9770f8023a089e7dee1fb814f4a2"
            ),
            "student_conference.jsonl": (
                "ac9babf4f76bc0a0e85a3fd81e34dfe6731bde84bc0af90dd4fa4ed1b5b1c723"
            ),
            "questions.json": "abac4b2fd159a40b37661c47eed88f1b8891677015ca92eaa7d7c052fe806070",
        },
        "per_conversation": {
            "current": 3,
            "original": 1,
            "change": 1,
            "per-person": 1,
            "decision": 1,
            "cross-person": 1,
            "date": 2,
            "why": 1,
            "fact": 1,
        },
        "least": 84,
        "least_each": 14,
        "changes": (18, 3),
    },
    "answers_v6": {
        "sha256": {
            "changes.json": "bdd6394d96ad5b4a8cb0ccda864cc68dc97b9264347d70ec477441a997dc5ca9",
            "allotment.jsonl": "7c8a9ce088d8465bf1264075112dd86698d7c5e5f53a5b122e9814f23d913829",
            "bakery_staff.jsonl": (
                "7df533c6503960c3be538c6d4b382bbc9e190c30d94cc55ddb60deae1f650681"
            ),
            "hospital_ward.jsonl": (
                "2fed1fa898ffea2755c02a34ce19c73f3f05ba6527c38d5dd89088264bd4d352"
            ),
            "oss_maintainers.jsonl": (
                "5acc9eecce4568a586774d65cd36277ce8447c1ce3859fc0ad872d46975eb246"
            ),
            "translation_team.jsonl": (
                "a9942296b8833ec30641b227f4ffbd64126bec2ed26590695e57f6bf6880523a"
            ),
            "wedding_friends.jsonl": (
                "ce4a1f024275f536c973f41e7185ec1e560975843fd75d0bafd64c6f3b5c6c27"
            ),
            "questions.json": "4d06f6c24eebc9545d2d982dc49fa78cb59c20281a14a12b0b3ee29f2eda0888",
        },
        "per_conversation": {
            "current": 3,
            "original": 1,
            "change": 1,
            "per-person": 1,
            "decision": 1,
            "cross-person": 1,
            "date": 2,
            "why": 1,
            "fact": 1,
        },
        "least": 84,
        "least_each": 14,
        "changes": (18, 3),
    },
    "answers_v7": {
        "sha256": {
            "changes.json": "3d1253ebf1bda942861851e80733dd244150e9e513fbd1715e62383f36818eef",
            "choir_committee.jsonl": (
                "65e1aed27f3f8b85baa7729a23c93c98bb2890a411a98a57cc1d30c9f36caefc"
            ),
            "climbing_trip.jsonl": (
                "8ac721853efee361a2e8ade2c5192265900d7e749363d8bd2b6b7b865b75e3d4"
            ),
            "game_studio.jsonl": "202351b8f77c6cb4dde2bd8e2a28171fcdfaf31867713fe5ffa9cb56a9a1a368",
            "grandad_80th.jsonl": (
                "0ef69c10443034c6e815e0b03e50b851d901d0ed161e370e2ce76b632f3f683a"
            ),
            "pta_summer_fair.jsonl": (
                "26112b94ed9f405394152a55ced3ccae0dc37dc63c7d0103953b60dfb62e1d0f"
            ),
            "restaurant_kitchen.jsonl": (
                "7d35aeac2031b7e0594a97d9cc686d15073f4ae606b5bcf7afd6f5a74b365e0a"
            ),
            "questions.json": "26c4e2b35b11906a05c5d04751cce21cfbe72cf4c4ce14774592a23957cf8a76",
        },
        "per_conversation": {
            "current": 3,
            "original": 1,
            "change": 1,
            "per-person": 1,
            "decision": 1,
            "cross-person": 1,
            "date": 2,
            "why": 1,
            "fact": 1,
        },
        "least": 84,
        "least_each": 14,
        "changes": None,
    },
    "answers_v8": {
        "sha256": {
            "changes.json": "997ef8d83199c2a76c8499f5a65b66bda0be885527efdacf33a1c26a078ca65d",
            "hollybrook_allotments.jsonl": (
                "5bf9704fa2331f66cde68c93384cb0b81baa1949f90daf46c1b794889ab107cd"
            ),
            "kowalski_lab_conference.jsonl": (
                "b3e5f7f2082b81d72f4d874a2b83f81305fe1b7f3f53e9200ef746535ab9a7f3"
            ),
            "larkfield_coop_maintenance.jsonl": (
                "aa2876ecaa854bea1291d82ecb4262b0d784df01a2e12f1f54127526ec428021"
            ),
            "okafor_siblings_wedding.jsonl": (
                "a5b41053688d112acda5fda4ae43928213ffbd43ea34ce815c075fde038a7687"
            ),
            "velvet_moths_tour.jsonl": (
                "39cb9d7578c80dfe830f63ade4f1108b9ebd7638f796d6086a05dce0c3fb8d35"
            ),
            "ward_7b_rota.jsonl": (
                "5a66817878fbb7f1981c65666f0a22a5ce583b1e33b86aed1f704bcc415a88a8"
            ),
            "questions.json": "9fdf7fc760fbaff7147b334e69ecbd9bf3e367a9cbcf243b4e16e4db788794f1",
        },
        "per_conversation": {
            "current": 3,
            "original": 1,
            "change": 1,
            "per-person": 1,
            "decision": 1,
            "cross-person": 2,
            "date": 3,
            "why": 1,
            "fact": 1,
        },
        "least": 93,
        "least_each": 15,
        "changes": None,
    },
    "answers_v9": {
        "sha256": {
            "changes.json": "232cd76892232c0d5edbbf0519678e530ca38f9ce6dbc65b435e9dde4688a296",
            "questions.json": "1ae601c09713dfbe253d6ab92aa4a551bc2c9b7ba305f8480bfaa12946e5aa69",
            "caring_for_dad.jsonl": (
                "d12c8fbece9ef4409c81fc064387d56cf30ce58fb30af13a752dd5914e7c6d82"
            ),
            "crumb_bakery_staff.jsonl": (
                "67db6660151b16fa2f83d7901978d049a399f14ab29f3c206e8b59697b596614"
            ),
            "fivea_side_football.jsonl": (
                "df1f13b0ac808db4a909d42abfdea93ea40153d9e5c524332ef7b0084808f041"
            ),
            "podcast_crew.jsonl": (
                "1e5d3e3cecd3af73a95a0c8529a1816f6b1cda6c248c06bba0cae6422c36051f"
            ),
            "riverside_fm_schedule.jsonl": (
                "836b6ce08cd0d59d5a0bb3ef617350285775b475997b492f9a92c4ae67313403"
            ),
            "skye_climbing_trip.jsonl": (
                "3593b21d7b5a458056b8b23b5dfa1477b5fad269e0047d959cd8094fbbdeece0"
            ),
        },
        "per_conversation": {
            "current": 3,
            "original": 1,
            "change": 2,
            "per-person": 1,
            "decision": 1,
            "cross-person": 2,
            "date": 3,
            "why": 2,
            "fact": 1,
        },
        "least": 100,
        "least_each": 16,
        "changes": None,
    },
}


@pytest.mark.parametrize("name", SETS)
def test_files_unchanged(name):
    assert_files_unchanged(DATA / name, SETS[name]["sha256"], skip=("README.md",))


@pytest.mark.parametrize("name", SETS)
def test_conversations(name):
    if SETS[name]["changes"] is None:
        check_long_conversations(DATA / name)
    else:
        check_answer_conversations(DATA / name)


@pytest.mark.parametrize("name", SETS)
def test_questions(name):
    s = SETS[name]
    check_answer_questions(
        DATA / name, s["per_conversation"], least=s["least"], least_each=s["least_each"]
    )


@pytest.mark.parametrize("name", SETS)
def test_changes(name):
    changes = SETS[name]["changes"]
    if changes is None:
        check_change_ids(DATA / name)
    else:
        least, least_each = changes
        check_answer_changes(DATA / name, least=least, least_each=least_each)
