"""Which licence texts are free: an allow-list matched against normalised text.

Commons describes a file's licence in several structured fields (``extmetadata``: ``LicenseShortName`` such as
"CC BY-SA 4.0", ``License`` such as "cc-by-sa-4.0", ``UsageTerms`` such as "Creative Commons Attribution-Share
Alike 4.0", and ``NonFree``). A file is kept only when Commons does not mark it ``NonFree``, at least one licence
field is present, and *every* field present is recognised as a free licence: a field that names anything else
(an NC or ND licence however it is spelled, fair use, a custom text, a free name with a qualifier added)
leaves the file out with that field as the reason.

Matching is on :func:`normalise`\\ d text (Unicode NFKC, so full-width letters and digits are the ASCII ones;
case-folded; every run of characters other than letters and digits one space) and each free form must match the
*whole* text, so "CC BY-SA 4.0 (non-commercial)", "CCBYNC" or "CC BY 4.0 NC" are not recognised. The free forms:
CC0; public domain (marks, dedications, Commons' ``pd-*`` templates); CC BY and CC BY-SA in any version, port
and wording ("Creative Commons Attribution-ShareAlike 4.0 International"); GFDL; Free Art Licence; GPL / LGPL;
the Open Government Licence; Commons' "Attribution" and "Copyrighted free use".
"""

from __future__ import annotations

import re
import unicodedata

_VERSION = r"(?: v(?:ersion)?)?(?: ?\d+)*"
_PORT = r"(?: (?!(?:nc|nd|sa)\b)[a-z]{2}| igo| scotland)?(?: migrated)?(?: with disclaimers)?"
_SCOPE = r"(?: international| unported| generic| universal)?(?: licen[cs]e)?(?: deed)?"
_CC = r"(?:creative commons |cc )?"
_PD_WORDS = ("old|us|usgov|gov|self|author|art|textlogo|shape|ineligible|expired|auto|anon|anonymous|mark|simple|user|"
             "nasa|uk|eu|release|released|published|unknown|100|70|1923")
#: The free licences, each matched against the whole normalised text.
FREE_FORMS = [re.compile(f"^{form}$") for form in (
    rf"(?:creative commons )?(?:cc0|cc zero|cc 0|creative commons zero){_VERSION}{_SCOPE}"
    r"(?: public domain (?:dedication|declaration))?",
    rf"public domain(?: mark| dedication| declaration)?{_VERSION}",
    rf"pd(?: (?:\d+|{_PD_WORDS}))*",  # Commons' pd-* template codes: pd-old-70, pd-us-expired, pd-self, ...
    rf"{_CC}by(?: sa)?{_VERSION}{_PORT}{_SCOPE}",
    rf"{_CC}attribution(?: share ?alike)?{_VERSION}{_PORT}{_SCOPE}",
    rf"(?:gfdl|gnu free documentation licen[cs]e){_VERSION}(?: or later| only)?(?: with disclaimers)?",
    rf"(?:fal|lal|free art licen[cs]e|licence art libre){_VERSION}",
    rf"(?:l?gpl(?:v\d+)?|gnu (?:lesser )?general public licen[cs]e){_VERSION}(?: or later| only)?",
    rf"(?:ogl|open government licen[cs]e){_VERSION}(?: uk)?",
    r"copyrighted free use",
)]
#: Words that say a licence is not free: only to word the reason (the decision is the allow-list's).
_NOT_FREE_WORDS = re.compile(r"\b(?:nc|nd)\b|commercial|deriv|fair use|non ?free|rights reserved")


def normalise(text: str) -> str:
    """``text`` as the rules match it: NFKC, case-folded, each run of non-alphanumerics (and ``_``) one space."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


def is_free(text: str) -> bool:
    """Whether the whole of ``text`` names a free licence (one of :data:`FREE_FORMS`)."""
    plain = normalise(text)
    return any(form.match(plain) for form in FREE_FORMS)


def licence_problem(fields: dict[str, str | None], non_free: bool) -> str | None:
    """Why a file whose licence fields (name -> text, None when absent) are ``fields`` is not free, or None.

    Not free: ``non_free`` (Commons' NonFree mark), no field present, or any present field not recognised by
    :func:`is_free`; the reason names the first such field and its text."""
    present = {name: text for name, text in fields.items() if text and text.strip()}
    first = next(iter(present.values()), None)
    if non_free:
        return f"non-free (Commons marks it NonFree{': ' + first if first else ''})"
    if not present:
        return "no licence in its Commons metadata"
    for name, text in present.items():
        if not is_free(text):
            kind = "non-free licence" if _NOT_FREE_WORDS.search(normalise(text)) else "licence not known to be free"
            return f"{kind} ({text}{'' if text == first else f'; its {name} field'})"
    return None
