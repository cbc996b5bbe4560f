"""Turn the bytes of a text-like file (plain text, Markdown, HTML) into ``str`` without ever crashing.

People upload whatever their editor saved: UTF-8 with or without a BOM, UTF-16 from Windows tools,
cp1252 or Latin-1 from older systems. The order below goes from the most certain evidence to the
least: a BOM says exactly what the encoding is; UTF-16 without a BOM shows as a regular pattern of
NUL bytes (looked for before UTF-8, because NULs are valid UTF-8 and real UTF-8 text has none);
strict UTF-8 almost never succeeds by accident on other encodings; cp1252 is the usual "ANSI" of
Western Windows, kept whenever the text reads cleanly in it; otherwise a detector may recognise
another legacy encoding (Cyrillic, Chinese, Japanese text saved by older tools was indexed as
mojibake or refused as binary); Latin-1 maps every byte, so it is the final net and cannot fail.

Decoding alone cannot tell text from binary (Latin-1 decodes anything), so :func:`binary_reason`
looks at the decoded characters: NUL bytes that UTF-16 did not explain, or many control
characters, mean the file is not text whatever its name says.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: its little-endian BOM starts with the UTF-16 LE one.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# How much of the file the heuristics look at: enough to be representative, cheap on a 50 MB file.
_SAMPLE_BYTES = 64 * 1024
# Share of NULs in one byte position (odd or even) that marks UTF-16 text in mostly-ASCII scripts.
_UTF16_NUL_SHARE = 0.3
# Share of control characters above which decoded "text" is really binary. Random bytes give about
# 23 %; real text, even with stray form feeds or escape codes, stays far below 1 %.
_MAX_CONTROL_SHARE = 0.05
# A detector's guess is taken when its decoded text has at most this much mess (charset-normalizer's
# "chaos", in percent) and at least this much coherence with one language's letter frequencies (0-1).
_MAX_CHAOS_PERCENT = 10.0
_MIN_COHERENCE = 0.1
# A cp1252 reading this much accented (share of letters, and at least this many) is no Western text.
_MIN_ACCENTED_SHARE = 0.6
_MIN_ACCENTED_LETTERS = 12
_MIN_SPACE_SHARE = 0.05
# C0 and C1 controls except tab, line feed, vertical tab, form feed, carriage return and escape.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class DecodedText:
    text: str
    encoding: str


def decode_text(data: bytes, declared_encoding: str | None = None) -> DecodedText:
    """Decode ``data``; never raises. ``declared_encoding`` (an HTML ``<meta charset>``) is tried
    after a BOM and strict UTF-8 but before the guesses, because a declaration beats a heuristic."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return DecodedText(data[len(bom) :].decode(encoding, errors="replace"), encoding)
    # NUL bytes are valid UTF-8, so ASCII-only UTF-16 would pass the strict UTF-8 check as text full
    # of NULs: look for the UTF-16 pattern first. Real UTF-8 text has no NULs, so this costs nothing.
    utf16 = _guess_utf16(data) if b"\x00" in data[:_SAMPLE_BYTES] else None
    if utf16 is not None:
        return DecodedText(data.decode(utf16, errors="replace"), utf16)
    try:
        return DecodedText(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    if declared_encoding:
        try:
            return DecodedText(data.decode(declared_encoding), declared_encoding)
        except (LookupError, UnicodeDecodeError):
            pass
    detected = _detected_encoding(data[:_SAMPLE_BYTES])
    if detected is not None:
        return DecodedText(data.decode(detected, errors="replace"), detected)
    try:
        return DecodedText(data.decode("cp1252"), "cp1252")
    except UnicodeDecodeError:
        return DecodedText(data.decode("latin-1"), "latin-1")


def _detected_encoding(sample: bytes) -> str | None:
    """A legacy encoding other than Western (KOI8-R, cp1251, Shift-JIS, GBK, ...) when the text does
    not read as cp1252 and a detector (charset-normalizer) finds one that reads as a language. Random
    bytes "decode" without a visible error as Big5 or cp949 too, but match no language's letters.
    Text too short for letter frequencies (a file of short Cyrillic headings) is read as Cyrillic
    (cp1251, else KOI8-R) when its cp1252 reading is nearly all accented letters."""
    from charset_normalizer import from_bytes

    unlike_western = _unlike_western(sample)
    western = from_bytes(sample, cp_isolation=["cp1252"]).best()
    if western is not None and western.percent_chaos <= _MAX_CHAOS_PERCENT and not unlike_western:
        return None
    readable = [match for match in from_bytes(sample) if match.percent_chaos <= _MAX_CHAOS_PERCENT]
    if readable:
        best = readable[0]  # the detector's order: least chaos, then most coherence
        cyrillic = next((match for match in readable if match.encoding == "cp1251"), None)
        if (
            cyrillic is not None
            and best.encoding == "mac_cyrillic"
            and cyrillic.percent_chaos <= best.percent_chaos
        ):
            # They differ in capitals only: cp1251's read as Mac's are dashes and signs ("—реда"), a
            # "coherent" reading of too few words. Windows' is by far the more common, so on a tie it wins.
            best = cyrillic
        if best.coherence >= _MIN_COHERENCE:
            return best.encoding
    if unlike_western and _spaced_like_words(sample):
        return _likeliest_cyrillic(sample)
    return None


def _likeliest_cyrillic(sample: bytes) -> str | None:
    """cp1251 or KOI8-R, whichever reads with words cased as words are ("Журнал", "план"): the two
    swap capitals and small letters, so the wrong one reads "жУРНАЛ". A tie goes to cp1251."""
    best: tuple[int, str] | None = None
    for encoding in ("cp1251", "koi8-r"):
        try:
            text = sample.decode(encoding)
        except UnicodeDecodeError:
            continue
        words = re.findall(r"[^\W\d_]+", text)
        cased = sum(1 for word in words if word.islower() or word.istitle() or word.isupper())
        if best is None or cased > best[0]:
            best = (cased, encoding)
    return best[1] if best is not None else None


def _spaced_like_words(sample: bytes) -> bool:
    """Text has spaces or line breaks between its words; random high bytes have none."""
    return sample.count(b" ") + sample.count(b"\n") >= len(sample) * _MIN_SPACE_SHARE


def _unlike_western(sample: bytes) -> bool:
    """Whether the cp1252 reading of ``sample`` is mostly accented letters: Western languages write
    a few in many plain ones, while Cyrillic or Greek bytes read as cp1252 are nearly all of them."""
    letters = [char for char in sample.decode("cp1252", errors="replace") if char.isalpha()]
    accented = sum(1 for char in letters if ord(char) > 0x7F)
    return accented >= _MIN_ACCENTED_LETTERS and accented >= _MIN_ACCENTED_SHARE * len(letters)


def _guess_utf16(data: bytes) -> str | None:
    """UTF-16 text of Latin-script languages has a NUL in every other byte: at odd offsets for
    little-endian, at even offsets for big-endian. Binary data has NULs, but not in that pattern."""
    sample = data[:_SAMPLE_BYTES]
    if len(sample) < 2:
        return None
    if len(sample) % 2:
        sample = sample[:-1]
    pairs = len(sample) // 2
    even_nuls = sample[0::2].count(0)
    odd_nuls = sample[1::2].count(0)
    if odd_nuls >= _UTF16_NUL_SHARE * pairs and even_nuls <= 0.02 * pairs:
        encoding = "utf-16-le"
    elif even_nuls >= _UTF16_NUL_SHARE * pairs and odd_nuls <= 0.02 * pairs:
        encoding = "utf-16-be"
    else:
        return None
    try:
        sample.decode(encoding)
    except UnicodeDecodeError:
        return None
    return encoding


def binary_reason(text: str) -> str | None:
    """Why decoded ``text`` is really binary content, or None when it reads as text."""
    sample = text[:_SAMPLE_BYTES]
    if "\x00" in sample:
        return "content is binary (contains NUL bytes)"
    if not sample:
        return None
    controls = len(_CONTROL_CHARS.findall(sample))
    if controls > _MAX_CONTROL_SHARE * len(sample):
        return f"content is binary ({controls * 100 // len(sample)}% control characters)"
    return None
