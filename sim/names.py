"""Names that look alike: invisible code points, NFKC forms and confusable skeletons (Unicode TR39).

Two unit names that print alike would be two rows a reader cannot tell apart
(and a designer could be shown the wrong unit's numbers), so a roster refuses a
name that *looks like* another one (:func:`lookalike`): the same text once

1. the **default-ignorable** code points are removed (:data:`DEFAULT_IGNORABLE`,
   Unicode's ``Default_Ignorable_Code_Point``: the combining grapheme joiner
   U+034F, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, variation
   selectors, zero-width and direction characters, tags...), which show nothing;
2. it is brought to **NFKC** (``"Ka\\u0301"`` and ``"Ká"``, a fullwidth ``"Ｋ"``
   and ``"K"``, the Kelvin sign and ``"K"``);
3. it is mapped to its **skeleton** in the manner of Unicode TR39 section 4 (NFD,
   then each character replaced by its prototype, then NFD again), with the
   small table :data:`CONFUSABLES`: the Cyrillic and Greek letters that are drawn
   like Latin ones (a Cyrillic ``"А"`` in ``"АFS"``), and the Latin and digit
   pairs TR39 lists as confusable (``l``/``I``/``1``/``|``, ``O``/``0``, ``rn``/``m``).

No maintained Python package computes TR39 skeletons with the whole
``confusables.txt`` here, so the table is a documented subset of that file's
mappings (scripts other than Latin, Cyrillic and Greek are compared by NFKC
only). Case is kept: ``"Knight"`` and ``"KNIGHT"`` print differently.

:func:`visible` (the text without its default-ignorable code points) is also
what the CSV writers test for a formula start (``analysis.report.safe_csv``).
"""

from __future__ import annotations

import unicodedata

__all__ = ["DEFAULT_IGNORABLE", "CONFUSABLES", "is_default_ignorable", "visible", "skeleton", "lookalike"]

#: Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt, Unicode 15.1), inclusive.
DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),    # soft hyphen
    (0x034F, 0x034F),    # combining grapheme joiner
    (0x061C, 0x061C),    # Arabic letter mark
    (0x115F, 0x1160),    # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),    # Khmer inherent vowels
    (0x180B, 0x180F),    # Mongolian free variation selectors and vowel separator
    (0x200B, 0x200F),    # zero width space, joiners, direction marks
    (0x202A, 0x202E),    # direction embeddings and overrides
    (0x2060, 0x206F),    # word joiner, invisible operators, isolates, deprecated format characters
    (0x3164, 0x3164),    # Hangul filler
    (0xFE00, 0xFE0F),    # variation selectors 1-16
    (0xFEFF, 0xFEFF),    # zero width no-break space (byte-order mark)
    (0xFFA0, 0xFFA0),    # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),    # reserved
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE0FFF),  # tags, variation selectors 17-256, reserved
)

#: Prototypes of confusable characters (a subset of Unicode's confusables.txt; see the module docstring).
CONFUSABLES: dict[str, str] = {
    # Cyrillic capitals drawn like Latin ones
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "Х": "X", "У": "Y", "Ү": "Y", "Ѕ": "S", "І": "l", "Ӏ": "l", "Ј": "J", "Ԛ": "Q", "Ԝ": "W", "Ꙅ": "S",
    # Cyrillic small letters
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j",
    "ԛ": "q", "ԝ": "w", "һ": "h", "ԁ": "d", "ӏ": "l", "ү": "y",
    # Greek capitals and small letters
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "l", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v", "ρ": "p", "α": "a", "ι": "i",
    # Latin letters, digits and signs TR39 maps together
    "I": "l", "1": "l", "|": "l", "ǀ": "l", "0": "O", "m": "rn", "ı": "i",
}


def is_default_ignorable(c: str) -> bool:
    """Whether the character ``c`` is Default_Ignorable_Code_Point (it shows nothing where it is not supported)."""
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in DEFAULT_IGNORABLE)


def visible(text: str) -> str:
    """``text`` without its default-ignorable code points."""
    return "".join(c for c in text if not is_default_ignorable(c))


def skeleton(text: str) -> str:
    """The TR39-style skeleton of ``text``: NFKC, default-ignorables removed, NFD, prototypes, NFD again.

    Two names with the same skeleton look alike (see the module docstring).
    """
    folded = unicodedata.normalize("NFD", visible(unicodedata.normalize("NFKC", visible(text))))
    return unicodedata.normalize("NFD", "".join(CONFUSABLES.get(c, c) for c in folded))


def lookalike(a: str, b: str) -> str:
    """Why the different names ``a`` and ``b`` look alike (a few words), or ``""`` when they do not."""
    if a == b:
        return ""
    if visible(a) == visible(b):
        return "they differ only by invisible characters"
    if unicodedata.normalize("NFKC", visible(a)) == unicodedata.normalize("NFKC", visible(b)):
        return "the same text in NFKC form"
    if skeleton(a) == skeleton(b):
        return "confusable letters (the same Unicode TR39 skeleton)"
    return ""
