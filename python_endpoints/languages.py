"""Language codes: a two-letter ISO 639-1 code (Whisper's, a subtitle file's ``talk.en.srt``)
as the three-letter ISO 639-2/T code MP4 and Matroska tracks carry (``eng``).

Pure, standard library only: the languages Whisper transcribes, which are those a subtitle
file made here or beside a video is likely to be in.
"""

from __future__ import annotations

_PAIRS = (
    "af afr am amh ar ara as asm az aze ba bak be bel bg bul bn ben bo bod br bre bs bos "
    "ca cat cs ces cy cym da dan de deu el ell en eng es spa et est eu eus fa fas fi fin "
    "fo fao fr fra ga gle gl glg gu guj ha hau he heb hi hin hr hrv ht hat hu hun hy hye "
    "id ind is isl it ita ja jpn jw jav ka kat kk kaz km khm kn kan ko kor la lat lb ltz "
    "ln lin lo lao lt lit lv lav mg mlg mk mkd ml mal mn mon mr mar ms msa mt mlt my mya "
    "ne nep nl nld nn nno no nor oc oci pa pan pl pol ps pus pt por ro ron ru rus sa san "
    "sd snd si sin sk slk sl slv sn sna so som sq sqi sr srp su sun sv swe sw swa ta tam "
    "te tel tg tgk th tha tk tuk tl tgl tr tur tt tat uk ukr ur urd uz uzb vi vie xh xho "
    "yi yid yo yor zh zho zu zul"
).split()

#: ISO 639-1 → ISO 639-2/T.
THREE_LETTER: dict[str, str] = dict(zip(_PAIRS[::2], _PAIRS[1::2], strict=True))


def three_letter(code: str | None) -> str:
    """``code`` (two or three letters, any case) as a track's language; ``und`` when it is
    none or not known."""
    if not code:
        return "und"
    code = code.lower()
    if len(code) == 3 and code.isalpha() and code.isascii():
        return code
    return THREE_LETTER.get(code, "und")
