"""The judge's vocabulary, as data: every entry says what it means, in which language, and why.

Patterns are regular-expression fragments over *normalised* text (see ``_normalise``: case folded,
accents and dots removed, ``camelCase``/``snake_case`` split into words), so they are written in
lower case without accents (``recu``, not ``reçu``; ``schlussel``, not ``Schlüssel``).  A pattern of
Latin letters matches whole words (an optional plural ``s`` allowed); Chinese and Japanese ones match
where they stand.  ``compound`` entries also match at the end of a word written together (German compounds,
``accesstoken``, ``clientsecret``; not ``secretary`` or ``tokenizer``).  ``PASTE`` and ``DESTRUCTIVE`` (the form lint's
other red lines) are plain patterns that say their own word boundaries.  Nothing else in truecall keeps a word list: the rules in ``_claims`` and ``_forms``
read these tables.  The terms (``CLAIMS``, ``FORMS``, ``PASTE``, ``DESTRUCTIVE``) say their language
and reason one by one; the cue tables (negation, topic words, reported speech, data intros, how an
ask begins) are kept by language, their reason said once above each table.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["Term", "every", "CLAIMS", "FORMS", "NEGATIONS", "ASK_STARTS", "ABOUT_AFTER", "ABOUT_BEFORE",
           "CLAIM_ABOUT_AFTER", "REPORTED_SPEECH", "CONTRASTS", "NONE_COUNTS", "AFTER_NEGATIONS", "ASK_NEGATIONS_BEFORE",
           "ASK_NEGATIONS_AFTER", "ASK_NEGATIONS_IN_CLAUSE", "ASK_NEGATION_IDIOMS", "WH_WORDS", "YES_NO_MARKS", "ABOUT_EXCEPTIONS",
           "PASTE", "DESTRUCTIVE", "DATA_INTROS", "CREDENTIAL_FORMATS", "FormCategory", "PASSWORD_SPELLINGS", "REFERENCE_WORDS",
           "REFERENCE_KEYS", "INTERNALS", "CRASHES", "ENVIRONMENT_VARIABLES", "UNKNOWN_TOOL", "ADVICE_INTROS",
           "GENERIC_MODALS", "CONDITIONALS", "CONDITIONALS_AFTER", "HISTORY", "HOW_OFTEN",
           "LABEL_WORDS", "LABEL_ENDINGS", "QUANTITY_WORDS", "CODE_NAMES"]


def every(table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The words of a table kept by language, all languages together (a word once)."""
    return tuple(dict.fromkeys(word for words in table.values() for word in words))


#: What a form term asks for (``judge._forms.Category``): here, where ``CREDENTIAL_FORMATS`` is typed by it.
FormCategory = Literal["credential", "payment", "recovery", "identity"]


class Term(NamedTuple):
    pattern: str  # regex fragment over normalised text
    kind: str  # claims: accepted | completed | failed; forms: credential | payment | recovery | identity
    language: str  # en zh ja es de fr
    reason: str
    scope: str = "any"  # forms: "any", or "name": only as a field's own name / a key (never in a sentence)
    numeric: bool = False  # forms: a number field may carry it (a PIN, a card number)
    compound: bool = False  # also matched as the end of a word written together
    hint: str = ""  # claims read by grammar (a participle by its ending): a pattern over the text's lower-case
    #                 words that every text the term matches holds (it has no anchor word of its own); written to
    #                 start with letters of its own, so that looking for it costs one fast scan
    retry: bool = False  # claims: a retry taken on; a failure before it in the text is told as past (the earlier
    #                     attempt's), the retry is the claim (``_claims._historical``)


def _t(pattern: str, kind: str, language: str, reason: str, **flags: bool | str) -> Term:
    return Term(pattern, kind, language, reason, **flags)  # type: ignore[arg-type]  # each flag is its field's type


A, C, F = "accepted", "completed", "failed"

#: Participles that report an effect (English, regular and irregular; those of acceptance — queued,
#: submitted, scheduled, started — are acceptance's own terms, and failure's are failure's).
_EN_DONE = (
    "created|saved|sent|deleted|updated|added|written|wrote|stored|uploaded|downloaded|deployed|merged|renamed|moved|"
    "copied|removed|booked|placed|paid|charged|refunded|archived|unarchived|restored|installed|uninstalled|"
    "committed|pushed|closed|reopened|resolved|approved|registered|imported|exported|generated|executed|processed|"
    "delivered|confirmed|transferred|published|unpublished|cleared|shipped|cancell?ed|enabled|disabled|activated|"
    "deactivated|configured|connected|disconnected|synced|synchroni[sz]ed|restarted|stopped|paused|resumed|"
    "verified|validated|assigned|unassigned|invited|joined|linked|unlinked|attached|detached|tagged|label?led|"
    "posted|replied|forwarded|fetched|retrieved|loaded|rebuilt|built|compiled|released|reverted|migrated|backed up|"
    "subscribed|unsubscribed|renewed|extended|upgraded|downgraded|granted|revoked|rotated|issued|indexed|purged|"
    "emptied|flushed|truncated|printed|shared|marked|starred|pinned|unpinned|muted|acknowledged|dismissed|"
    "snoozed|cloned|passed|applied|changed|set up|signed out|logged out|reset|recorded|noted|logged|added")
_ES_DONE = (
    "anadid|agregad|fusionad|subid|descargad|importad|exportad|publicad|modificad|actualizad|validad|confirmad|cancelad|"
    "vaciad|borrad|copiad|movid|renombrad|archivad|restaurad|instalad|desplegad|pagad|reembolsad|reservad|"
    "registrad|generad|cread|eliminad|enviad|guardad|completad|aplicad|asignad|activad|desactivad|configurad|"
    "conectad|sincronizad|compartid|aprobad|verificad|cerrad|resuelt|escrit|hech|renovad|entregad|tramitad")
_DE_DONE = (
    "hinzugefugt|hochgeladen|heruntergeladen|importiert|exportiert|veroffentlicht|geandert|aktualisiert|bestatigt|"
    "storniert|geleert|kopiert|verschoben|umbenannt|archiviert|wiederhergestellt|installiert|bereitgestellt|"
    "zusammengefuhrt|bezahlt|erstattet|gebucht|reserviert|registriert|generiert|erstellt|geloscht|gesendet|"
    "verschickt|versendet|gespeichert|angelegt|aktiviert|deaktiviert|konfiguriert|verbunden|synchronisiert|"
    "freigegeben|geteilt|zugewiesen|eingeladen|genehmigt|verifiziert|entfernt|geschlossen|erledigt|ubertragen|"
    "durchgefuhrt|ausgefuhrt|angewendet|eingetragen|hinterlegt|abgeschickt|zugestellt|korrigiert|angepasst|"
    "abgeschlossen|gemergt|behoben|ausgeliefert|verlangert|erneuert")
_FR_DONE = (
    "ajoutee?s?|televersee?s?|telechargee?s?|importee?s?|exportee?s?|publiee?s?|modifiee?s?|mise?s? a jour|"
    "validee?s?|confirmee?s?|annulee?s?|traitee?s?|videe?s?|effacee?s?|copiee?s?|deplacee?s?|renommee?s?|"
    "archivee?s?|restauree?s?|installee?s?|deployee?s?|fusionnee?s?|payee?s?|remboursee?s?|reservee?s?|"
    "enregistree?s?|sauvegardee?s?|generee?s?|creee?s?|supprimee?s?|envoyee?s?|terminee?s?|activee?s?|"
    "desactivee?s?|configuree?s?|connectee?s?|synchronisee?s?|partagee?s?|attribuee?s?|approuvee?s?|"
    "verifiee?s?|fermee?s?|resolue?s?|ecrite?s?|faite?s?|poussee?s?|livree?s?|resiliee?s?|reglee?s?|expediee?s?|"
    "renouvelee?s?|retablie?s?|reinitialisee?s?|redemarree?s?|appliquee?s?|deverrouillee?s?|verrouillee?s?")

#: Words that end like a past participle and are none (the grammar rules below read a participle by
#: its ending): adjectives and nouns.  (Those rules also take no negation among the words before the
#: participle: negation is otherwise read only before a match.)
_NOT_PARTICIPLES: dict[str, tuple[str, ...]] = {
    "en": ("hundred", "sacred", "naked", "wicked", "kindred", "ragged", "rugged", "crooked", "wretched", "beloved",
           "unlimited", "limited", "detailed", "advanced", "related", "based", "united", "interested", "red",
           "supposed", "used", "expected", "needed", "required", "concerned", "involved", "located", "called", "named",
           "titled", "entitled", "dated", "priced", "rated", "sized", "tired", "scared", "worried", "pleased",
           "excited", "surprised", "married", "attached", "blocked", "locked", "disabled", "limited"),
    "es": ("nada", "cada", "vida", "salida", "entrada", "partida", "comida", "medida", "pedido", "pedidos", "estado",
           "estados", "lado", "mercado", "dado", "cuidado", "sentido", "contenido", "apellido", "periodo", "todo",
           "ciudad", "unidad", "unidades", "seguridad", "cantidad", "ayuda", "llegada", "bebida", "ruido"),
    "de": ("morgen", "gegen", "gebiet", "gesicht", "geschichte", "gelegenheit", "gerat", "gesetz", "gewicht",
           "ergebnis", "eigentum", "tagen", "fragen", "wagen", "lagen", "folgen"),
}

#: "failed requests", "queued invoices", "pending ones": a participle used as an adjective before a
#: plural noun names things, it does not report the work.
_NOT_ATTRIBUTIVE = r"(?! (?!this |its |his |was |is |has |as |us |yes |process |access |success )[a-z]+s\b)"

# =================================================================================================
# Claims a tool result's narrative makes about the work it was asked to do
# =================================================================================================

CLAIMS: tuple[Term, ...] = (
    # -- English: accepted (taken on, nothing says it ran) ------------------------------------------
    _t(r"accepted", A, "en", "accepted: the server took the work on; nothing says it ran"),
    _t(r"(queued|enqueued)" + _NOT_ATTRIBUTIVE + r"|in (the )?queue|added (\w+ )?to (the )?queue|placed in (the )?queue",
       A, "en", "queued: waiting to run"),
    _t(r"pending" + _NOT_ATTRIBUTIVE + r"|awaiting (approval|review|processing|confirmation|execution)", A, "en", "pending: not done yet"),
    _t(r"(request|order|submission|message|payment|job|task|application|report|instruction|it) "
       r"(has been |have been |was |is )?received|(request|order|submission|application|claim) (\S+ ){1,5}received(?= ?[.!;]|$)|received (your|the|it|this)|we (have |ve )?received",
       A, "en", "received: it arrived, nothing says it ran"),
    _t(r"submitted", A, "en", "submitted: handed on, nothing says it ran"),
    _t(r"scheduled|will run|will go (out|live)|will (be )?(processed|handled|executed|run|completed|done|reviewed|applied|"
       r"delivered|published|sent|started|retried|dispatched|picked up)|to be processed",
       A, "en", "future tense: the work is promised, not done"),
    _t(r"(is|are) (being |still )?(processed|processing|handled)|in progress|processing|being processed|"
       r"under (review|way)|in the background|underway", A, "en", "in progress: started, not finished"),
    _t(r"ticket (number |no |id |#)?(\S+ )?(has been |was |is )?(created|opened|filed|raised|logged)|"
       r"(created|opened|filed|raised|logged) (a |the |your )?ticket",
       A, "en", "a ticket is a promise that someone will do the work later"),
    _t(r"(we|they|someone|an agent|the team)('ll| will| ll) (get back|follow up|process|look into|handle|notify|let you know|"
       r"email|contact|reach out|be in touch|send|ship|deliver|publish|forward|retry|run)|"
       r"(you will|you ll|you'll) (be notified|receive|get) ", A, "en", "a promise of later work"),
    _t(r"(started|initiated|kicked off|triggered|dispatched)", A, "en",
       "started: the work began, nothing says it ended"),
    _t(r"(is|are) (now )?being \w+ed|being (prepared|built|shipped|reviewed|sent|generated|created|handled|"
       r"processed|checked|investigated|uploaded|copied|indexed)|on hold|queued up|in the works|"
       r"waiting (for|on) ((\d+|two|three|more|final|an?|the|its|your) )?(approvals?|reviews?|confirmation|reviewers?|"
       r"an operator|the operator|processing)",
       A, "en", "in progress: being done, not done"),
    _t(r"((is|are) )?still (?!(missing|nothing|something|everything|anything|pending|failing)\b)\w{2,}ing(?![a-z0-9])",
       A, "en", "grammar: the progressive with 'still' ('is still running', 'still copying'): the work goes on, it "
       "has not ended", hint=r"still [a-z]{2,}ing(?![a-z0-9])"),
    _t(r"((is|are) )?currently (?!(missing|nothing|something|everything|anything|pending|failing)\b)\w{4,}(?<=ing)",
       A, "en", "grammar: the progressive with 'currently' ('is currently scanning'): the work goes on (anchored by "
       "'currently'; the look-behind keeps 'ing' out of its anchors)"),
    _t(r"(has been|have been|was|were) requested", A, "en",
       "'export has been requested': a request was made, nothing says it was carried out"),
    _t(r"(we ve|we have|we) got your|got your (request|message|order|report)|"
       r"(may|can|might|could) take (up to |about |around )?\d|should (be (ready|done|complete|completed|processed)|"
       r"arrive|complete|finish)|expected to (complete|finish|arrive|be ready)|will (notify|email|contact|update) you|"
       r"(will|ll) (review|process|handle|look at|get to) (it|this|your)", A, "en",
       "a promise about later: the work is not done yet"),
    _t(r"(is|are) (now )?with (our|the) (\w+ ){0,2}(team|department|desk|staff|specialists?)|"
       r"(handed|passed|forwarded|referred|escalated) (over |on )?to|(handed|passed|escalated|referred) (\S+ ){1,4}(over|on|up|off) to|they (usually|normally|typically) (answer|reply|respond)",
       A, "en", "with our team / handed over to / escalated to: someone else has the work now; nothing says it was done"),
    _t(r"(state|status) ?: ?(running|queued|pending|in progress|scheduled|waiting|processing)|eta ~?\d", A, "en",
       "'status: queued', 'ETA ~5 min': a status line of work under way"),
    _t(r"not yet (been )?\w{2,}(ed|en)|not (been )?\w{2,}ed yet", A, "en",
       "'acknowledged but not yet processed': taken on, the work still to come",
       hint=r"yet(?![a-z0-9])"),
    _t(r"on (its|their|the) way|should (reach|arrive|land|appear|show up) (in|at|on|by|the|your)|in transit|"
       r"out for delivery|(expected|estimated) (arrival|delivery)", A, "en",
       "on its way / in transit / out for delivery / expected arrival: sent on, not arrived"),
    # -- retries taken on: a failure before one is told as past, the retry is the claim ------------
    _t(r"(set|scheduled|configured|queued|told) (\S+ ){0,5}to (try|run|retry)( it| this| that)? again|"
       r"will (try|retry|rerun|re run)( it| this| that)? (again|later|tonight|tomorrow|in)|"
       r"(retry|re try|another attempt|new attempt|next attempt|second attempt) (is |has been |was )?(scheduled|queued|planned|set for|booked)|"
       r"(scheduled|queued|planned|set up|booked) (a |another |one more )?(retry|re try|new attempt|second attempt)|"
       r"rescheduled|re scheduled|requeued|re queued", A, "en",
       "a retry taken on ('I've set the job to try again in 10 minutes', 'retry scheduled'): the work is to "
       "come, the failure before it was the earlier attempt's", retry=True),
    _t(r"(分钟|小时|秒钟?)后(自动|再次|重新)(重试|再试|执行|推送|上传|运行|尝试)|自动重试|将重试|将会重试|"
       r"(安排|设置|设定)了?(一次)?(自动)?(重试|重新执行)|重新(加入|放入|进入)队列", A, "zh",
       "自动重试/…分钟后自动重试 (a retry taken on, not '请稍后重试', advice): the work is to come", retry=True),
    _t(r"分後に(自動で|自動的に)?(再試行|リトライ|もう一|再実行|再送)|時間後に(自動で|自動的に)?(再試行|リトライ|もう一|再実行|再送)|"
       r"自動で(再試行|リトライ|再実行)|自動的に(再試行|リトライ|再実行)|"
       r"(再試行|リトライ|再実行)[^。]{0,12}(予約|設定|スケジュール|予定)", A, "ja",
       "…分後にもう一回/自動で再試行: a retry taken on, the work is to come", retry=True),
    _t(r"(reintento|nuevo intento|otro intento|segundo intento) (\S+ ){0,3}(programad[oa]|previst[oa]|agendad[oa])|"
       r"(programad[oa]|reprogramad[oa]|previst[oa]|agendad[oa]) (\S+ ){0,3}(reintento|nuevo intento|otro intento)|"
       r"se (reintentara|volvera a (intentar|ejecutar|lanzar))|volvere a intentar|volveremos a intentar|reprogramad[oa]s?", A, "es",
       "reintento programado / se volverá a intentar: a retry taken on, the work is to come", retry=True),
    _t(r"(neuer|erneuter|weiterer|zweiter) versuch (\S+ ){0,4}(eingeplant|geplant|terminiert|angesetzt|vorgesehen)|"
       r"(wird|werden) (\S+ ){0,4}(erneut|nochmal|nochmals|wieder) (versucht|gestartet|ausgefuhrt|angestossen)|"
       r"(erneut|neu) (eingeplant|angesetzt|terminiert)", A, "de",
       "ein neuer Versuch ist eingeplant / wird erneut versucht: a retry taken on, the work is to come", retry=True),
    _t(r"reprogrammee?s?|replanifiee?s?|(nouvelle tentative|nouvel essai) (\S+ ){0,3}(prevue?|programmee?|planifiee?)|"
       r"(sera|seront) (\S+ ){0,2}(relancee?s?|retentee?s?|reessayee?s?)", A, "fr",
       "reprogrammée / nouvelle tentative prévue: a retry taken on, the work is to come", retry=True),
    # -- English: completed -----------------------------------------------------------------------
    _t(r"done|completed|complete(?! (the|your|this|a|an|all|following)\b)|finished|succeeded|"
       r"successful|successfully|success", C, "en", "says the work is done"),
    _t(r"(has been|have been|was|were|is now|are now|has|have|ve|successfully) (" + _EN_DONE + r"|set)",
       C, "en", "a perfect or passive: the effect is said to exist"),
    _t(r"^([#\w]+ ){1,3}(" + _EN_DONE + r")(?= ?([.!\u2014\u2013]|$))", C, "en",
       "'Cache cleared.', 'Shipment 1Z… delivered — left at …': a short report of the effect"),
    _t(r"^(created|saved|sent|deleted|updated|added|wrote|written|stored|uploaded|deployed|merged|renamed|moved|"
       r"copied|removed|booked|placed|paid|charged|refunded|archived|installed|committed|pushed|closed|resolved|"
       r"approved|registered|imported|exported|generated|executed|processed|delivered|confirmed|transferred)\b",
       C, "en", "a sentence that starts with the participle reports the effect"),
    _t(r"(created|saved|sent|deleted|updated|added|written|stored|uploaded|deployed|merged|removed|booked|placed|"
       r"paid|charged|refunded|archived|installed|committed|pushed|closed|resolved|approved|registered|imported|"
       r"exported|executed|processed|delivered|confirmed|transferred|passed)(?= ?([.!:(]|$| successfully))",
       C, "en", "'X created.' reports the effect"),
    _t(r"^(navigated to|clicked (on )?|typed |filled (in )?|selected |scrolled )|(i |we )(navigated to|clicked|opened|went to)",
       C, "en", "a browser tool's report of what it did: 'Navigated to …', 'Clicked …'"),
    _t(r"(is|are) now live|(is|are|went) live(?! (stream|streams|streaming|data|feed|preview|chat|view|demo|event))|"
       r"(worked|succeeded|went through|passed) (on|at) the (second|third|next|last) (try|attempt|run)|"
       r"(second|third|next|new|retried) (\w+ ){0,3}went through|went through (fine|successfully|this time|now)|"
       r"(is|are) now in production", C, "en",
       "'build 1193 is now live', 'went through on the second try': the effect exists"),
    _t(r"all set|good to go|(result|status|outcome) ?: ?(ok|success|succeeded|done)(?![a-z0-9])", C, "en",
       "idiom for done; 'Result: OK' as a status line"),
    _t(r"((has|have) been|was|were|is now|are now|(i|we) (ve|have|had)( just| now| already| successfully)?) "
       r"(?!(" + "|".join(_NOT_PARTICIPLES["en"]) + r")\b)\w{2,}([^e\W]ed|ied)(?![a-z0-9])", C, "en",
       "grammar: a passive or a first-person perfect of any regular verb ('was emailed to', 'I've renamed the "
       "branch') reports the effect", hint=r"ed(?![a-z0-9])"),
    _t(r"^((?!(not|no|never|nothing|none) )\w+ ){1,3}(?!(" + "|".join(_NOT_PARTICIPLES["en"]) + r")\b)\w{2,}([^e\W]ed|ied)(?= ?([.!:]|$)| (to|into|for|"
       r"on|in|at|from|with|by|as|under|successfully)\b)", C, "en",
       "grammar: a short sentence that ends with (or goes on from) a regular past participle reports the effect "
       "('Cache cleared.', 'Link emailed to the user'), whatever the verb", hint=r"ed(?![a-z0-9])"),
    _t(r"^([#\w]+ ){1,3}(" + _EN_DONE + r")(?= (to|into|for|on|in|at|from|with|by|as|under|successfully)\b)|"
       r"^([#\w]+ ){1,3}set (for|to)", C, "en",
       "'Email sent to …', 'Repository cloned into …': a short report of the effect"),
    # -- English: failed --------------------------------------------------------------------------
    _t(r"failed" + _NOT_ATTRIBUTIVE + r"|failure|fails|failing|^fatal", F, "en", "says the work failed"),
    _t(r"^([#\w]+ ){1,3}not (" + _EN_DONE + r")(?= ?([.!:;,]|$)| (because|as|since|due))|"
       r"(but|however) (\w+ ){0,3}(was|were|has been|got|had to be) (then |later |subsequently )?(cancell?ed|called off|aborted|"
       r"scrapped|dropped)|(but|then) (then |later )?(was |got )?(cancell?ed|called off|aborted|scrapped|dropped)|"
       r"(did not|didn t) go through|"
       r"(scheduled|planned|booked) (\S+ ){0,6}(was|were|has been|got) (cancell?ed|called off|scrapped|dropped)|"
       r"got (cancell?ed|called off|scrapped|axed|shelved)|(was|were|has been|have been) (called off|scrapped|shelved|axed)|"
       r"(wasn|weren|isn|aren|hasn|haven) t (been )?able to|(was|were) not possible", F, "en",
       "'Meeting not created: …', 'I wasn't able to update it': the work did not happen"),
    _t(r"(rate limit|quota|usage limit|request limit|limit) (\w+ )?(exceeded|reached|hit)|too many requests", F, "en",
       "'rate limit exceeded', 'quota exceeded': the request was refused, nothing was done"),
    _t(r"broke (on|at|during|in|down|again)(?![a-z0-9])|(build|pipeline|deploy|deployment|tests?|job|release) (is |was |got )?broken",
       F, "en", "'the build broke on step 4', 'the pipeline is broken': the work failed"),
    _t(r"interrupted|(stopped|ended|quit) (halfway|partway|midway|unexpectedly|prematurely)", F, "en",
       "interrupted: the work broke off before its end"),
    _t(r"error|errors|exception|traceback|panic", F, "en", "an error report"),
    _t(r"timed out|(timeout|time out)(?! (of|is|set|after|value|in|=|:))|timeout (error|exceeded|expired)|deadline exceeded",
       F, "en", "a timeout: the caller does not know the work was done"),
    _t(r"could not|couldn t|unable to|cannot|can t|not able to|did not (complete|succeed|finish|run|work)|"
       r"didn t (complete|succeed|finish|run|work|go through)|never (finished|completed|ran|arrived|went through|made it)|"
       r"(was|were|has|have|is|are) not (been )?(accepted|completed|processed|saved|created|sent|delivered|"
       r"applied|executed|found|possible|allowed)(?! yet)|not completed(?! yet)|nothing (was|has been|got) (written|sent|saved|"
       r"changed|created|deleted|done|applied|imported|exported|uploaded)(?! yet)", F, "en",
       "says the work did not happen (not 'not processed yet': pending)"),
    _t(r"denied|refused|rejected|forbidden|unauthori[sz]ed|not found|no such|does not exist|unavailable|"
       r"aborted|crashed|declined|went wrong|bad gateway|bad request|invalid|http 5\d\d|status 5\d\d|5\d\d (error|bad)",
       F, "en", "a refusal or fault"),
    _t(r"(user|you) (cancell?ed|dismissed|closed|aborted|exited) (the |this |that )?(elicitation|dialog|dialogue|form|prompt|"
       r"input)|(elicitation|dialog|dialogue|form|prompt) (was )?(cancell?ed|dismissed) by (the )?user",
       F, "en", "the user cancelled the form the work needed: the input was not given, so the work was not done "
       "(as 'user declined to provide' is)"),
    # -- Chinese ----------------------------------------------------------------------------------
    _t(r"已受理|受理|已提交|提交成功|已接收|已收到|收到(您|你)的|排队|队列中|加入队列|稍后(处理|执行|完成)|正在(处理|执行|进行)|处理中|"
       r"等待(处理|审核|执行)|待处理|审核中|进行中|将(会)?(被)?(处理|执行|发送)|已安排|已创建工单|工单已(创建|生成|提交)|已登记|已开始|开始(执行|处理)|正在|进入队列|将在|将于|"
       r"请耐心等待|预计|稍后|收悉|(预约|定时)(发送|执行|推送|发布|上线|提交)|安排在|安排于|定于|將於|將在|將會|處理中|辦理中|转交|轉交|移交|转给|排定|排期|排程|待审核|待審核|待审批|待确认|尚未(处理|審核|审核|执行|開始|开始|到账)|还没(?=有?(处理|审核|审批|执行|开始|到账|批准|受理|生效|完成|结束|跑完))|还未(?=处理|审核|审批|执行|开始|到账|批准|受理|生效|完成|结束)|暂时不会|[一-龥]{2}中(?=[，。！,.!…]|$)|后台|(完成|处理|结束)(之)?后(会|将|再)",
       A, "zh", "受理/排队/处理中/预约发送 (booked to be sent later, where 已预约 alone — a room booked — is done): the "
       "work was taken on, not done"),
    _t(r"已完成|完成了|办结|已办理|成功|已创建|已保存|已发送|已删除|已更新|已添加|已写入|已上传|已部署|已取消|已支付|已退款|已关闭|"
       r"已解决|完毕|搞定|已生效|已执行|已预订|已预约|已预定|完成(?=[，,。！!.；;]|$)|已(?<![个件条项份笔单台次位名]已)[一-龥]|已经[一-龥]",
       C, "zh", "已…/成功: the effect is said to exist (not after a counter: '3 个已退货' counts things, it reports no work)"),
    _t(r"失败|错误|出错|报错|超时|异常|无法|不能|未能|未成功|没有成功|未完成|被拒绝|拒绝|不可用|找不到|未找到|不存在|崩溃|已过期|已失效",
       F, "zh", "失败/错误/超时: the work failed"),
    _t(r"(?<!尚)未被?(创建|建立|保存|发送|删除|更新|添加|提交|生成|执行|处理|上传|部署)|(额度|配额|限额)(已)?(用完|用尽|耗尽)|"
       r"超出(额度|配额|限额)|但[^。！]{0,30}(被取消|取消了|已取消|中止|被拒)", F, "zh",
       "未创建/未被执行 (not created, not executed), 额度已用完 (the quota is used up), 但…被取消 (but … was "
       "cancelled): the work did not happen"),
    _t(r"中断|返回 ?5\d\d|状态码 ?5\d\d", F, "zh", "中断 (broke off), a 5xx status returned: the work failed"),
    _t(r"(?<![还尚])没有跑完|(?<![还尚])没跑完|(?<![还尚])没有做完|(?<![还尚])没做完|(?<![还尚])没有执行完|(?<![还尚])没执行完|(?<![还尚])没有传完|"
       r"(?<![还尚])没传完|(?<![还尚])没有同步完|(?<![还尚])没同步完|(?<![还尚])没有备份完|(?<![还尚])没备份完|(?<![还尚])没有处理完|(?<![还尚])没处理完|"
       r"(?<![还尚])没有完成(?!了?吗)|(?<![还尚])没完成(?!了?吗)|没能完成|卡在|断开了|"
       r"(原本|原定|本来|原计划|计划)[^。！]{0,40}(被取消|取消了|已取消|中止|作废)|(这次|本次|因此|所以)不会(?=执行|进行|发送|运行|生效)",
       F, "zh", "没有跑完 (did not run to its end; not 还没…, pending), 卡在 (stuck at), 原本…已经取消了 (planned, then "
       "called off), 不会执行 (will not run): the work did not happen"),
    _t(r"(用户|您)(已)?(取消|关闭)了?(对话框|表单|输入|填写)", F, "zh",
       "用户取消了对话框: the input was not given, so the work was not done"),
    # -- Japanese ---------------------------------------------------------------------------------
    _t(r"受け付け|受付|受理|キューに(追加|登録|入|投入)|処理中|保留中|待機中|処理待ち|順番待ち|後ほど|実行予定|審査中|処理されます|"
       r"実行されます|進行中|対応中|送信されます|開始しました|スケジュール|チケット(を|が)?(作成|発行)|(?<!稼働)(?<!稼動)(?<!動作)(?<!運用)(?<!運転)しています|しております|"
       r"(送信|配信|実行|公開|投稿|発送)予約|"
       r"[一-龥]{2}中です|準備中|確認中|予定です|お待ちください|順次|承り|[一-龥]{2}待ち|次第|バックグラウンド|"
       r"引き継|引継ぎ|折り返し|ご連絡いたします|よう(に)?(予約|設定|スケジュール)|まだ(処理|対応|実行|確認|反映)|"
       r"(承認|処理|対応|確認|返信|審査)は?まだ|キュー待ち|キューに入",
       A, "ja", "受付/処理中/保留中/承りました/…待ち/…次第/引き継ぎ/折り返しご連絡/送信予約: taken on (or handed on, or "
       "booked to run later), not done; not 稼働しています (a system's running state, said after its deployment)"),
    _t(r"完了|成功|作成しました|保存しました|送信しました|削除しました|更新しました|登録しました|追加しました|終了しました|"
       r"書き込みました|実行しました|予約しました|(作成|保存|送信|削除|更新|登録|追加|予約)されました|しました|"
       r"されました|終わりました|終わった|終えました|済みです|済んだ|[一-龥]{2}した(?=[。！!.]|$)|(?<=[一-龥][一-龥])された(?=[。！!.]|$)|"
       r"(?<!ませ)できました|クリックした|に移動した", C, "ja",
       "完了/成功/…しました/終わりました/済みです: the effect is said to exist"),
    _t(r"失敗|エラー|タイムアウト|できませんでした|できなかった|できません|例外|中止になりました|中止されました|拒否|見つかりません|利用できません|異常|中断されました|権限がありません|めません",
       F, "ja", "失敗/エラー/タイムアウト: the work failed"),
    _t(r"終わりませんでした|終わらなかった|完了しませんでした|完了しなかった|終了しませんでした|終了しなかった|"
       r"止まってい|止まってしま|止まりました|止まった|中止になった|中止された|中止した|取りやめになった|取りやめました|"
       r"取りやめた|見送りました|見送られました|見送った|見送られた", F, "ja",
       "終わりませんでした (did not finish), 止まっています (has stopped), 中止になった (was called off, plain): the "
       "work did not happen"),
    _t(r"されませんでした|できていません|が、[^。]{0,30}(中止|キャンセル|取り消)", F, "ja",
       "…されませんでした (was not …), …が、…中止 (but … was called off): the work did not happen"),
    _t(r"ユーザーが(入力を)?(キャンセル|拒否)|(ダイアログ|フォーム|入力)(が|は)?キャンセルされました", F, "ja",
       "ユーザーがキャンセル: the input was not given, so the work was not done"),
    # -- Spanish ----------------------------------------------------------------------------------
    _t(r"aceptad[oa]|recibid[oa]|en cola|encolad[oa]|pendiente|se procesara|sera (procesad[oa]|enviad[oa]|"
       r"ejecutad[oa]|revisad[oa])|en proceso|en curso|procesando|(aun|todavia) no se ha (procesado|enviado|completado|realizado)|(hemos )?programado un reintento|reintento programado|programad[oa]|en tramite|en espera|ticket (creado|abierto|registrado)|"
       r"(estamos|estan|esta) (\w+ )?\w+(ando|iendo)|sera (\w+ )?\w+(ad|id)[oa]s?|se (enviara|procesara|realizara|"
       r"ejecutara|completara|publicara|entregara|revisara|aplicara|actualizara|enviaran|procesaran)|"
       r"en (breve|cuanto)|en (revision|transito|reparto|camino)|aun no (\w+ ){0,2}(ha|han|hemos|he) (sido )?\w{2,}(ad|id)[oa]s?|todavia no (\w+ ){0,2}(ha|han|hemos|he) (sido )?\w{2,}(ad|id)[oa]s?|"
       r"(derivad[oa]|remitid[oa]|trasladad[oa]|escalad[oa]|reenviad[oa])s? (\S+ ){0,4}(a|al)|"
       r"(ha|han) (comenzado|empezado|arrancado)|(se )?(ha|han) iniciado|(comenzo|empezo|arranco)(?! a (fallar|dar))|"
       r"deberia (terminar|estar list[oa]|completarse|finalizar)", A, "es",
       "aceptado/en cola/pendiente/ha comenzado/debería terminar: taken on (started), not done"),
    _t(r"(esta|estan) (ya |ahora )?(en linea|en produccion)|completad[oa]|terminad[oa]|finalizad[oa]|con exito|exitosamente|correctamente|hecho|listo|"
       r"(ha sido|fue|han sido|fueron) (cread[oa]|guardad[oa]|enviad[oa]|eliminad[oa]|actualizad[oa]|borrad[oa]|"
       r"registrad[oa]|pagad[oa]|procesad[oa]|aplicad[oa]|reservad[oa])s?|"
       r"(cread[oa]|guardad[oa]|enviad[oa]|eliminad[oa]|actualizad[oa]|reservad[oa])(?= ?([.!]|$))|"
       r"^([#\w]+ ){1,3}(cread[oa]|guardad[oa]|enviad[oa]|eliminad[oa]|actualizad[oa]|reservad[oa])s? (a|en|para|de)\b|"
       r"se (actualizo|actualizaron|guardo|guardaron|elimino|eliminaron|envio|enviaron|creo|crearon|completo|"
       r"completaron|registro|registraron)|(ha sido|han sido|fue|fueron|se ha|se han) (" + _ES_DONE + r")[oa]s?|"
       r"^([#\w]+ ){1,3}(" + _ES_DONE + r")[oa]s?(?= ?([.!:(]|$)| (a|al|en|de|para|con|correctamente)\b)",
       C, "es", "completado/con éxito: the effect is said to exist"),
    _t(r"^((?!(no|nunca|sin|ningun|ninguna|ninguno) )\w+ ){1,3}(?!(" + "|".join(_NOT_PARTICIPLES["es"]) + r")\b)\w{3,}(ad|id)[oa]s?(?= ?([.!]|$)| (a|al|en|para|"
       r"con|correctamente)\b)", C, "es",
       "grammar: a short sentence that ends with a past participle (-ado/-ido) reports the effect "
       "('Contraseña restablecida.'), whatever the verb", hint=r"d[oa](?<=[ai]d[oa])s?(?![a-z0-9])"),
    _t(r"^se \w{2,}(aron|ieron|io)(?= )", C, "es",
       "grammar: 'se' and a preterite (-aron/-ieron/-ió) at a sentence's start reports what was done "
       "('Se movieron 3 archivos')", hint=r"se (?<![a-z0-9]se )[a-z]{2,}(aron|ieron|io)(?![a-z0-9])"),
    _t(r"hice clic|navegue a|he hecho clic", C, "es", "a browser tool's first-person report: 'hice clic', 'navegué a'"),
    _t(r"(he|hemos) (ya )?\w{2,}(ad|id)[oa]s?(?![a-z0-9])", C, "es",
       "grammar: a first-person perfect ('He guardado los cambios', 'hemos enviado') reports the effect",
       hint=r"d[oa](?<=[ai]d[oa])s?(?![a-z0-9])"),
    _t(r"error|errores|fallo|fallid[oa]|ha fallado|fallo al|no se pudo|no fue posible|no es posible|"
       r"tiempo de espera (agotado|excedido)|se agoto el tiempo|excepcion|rechazad[oa]|denegad[oa]|no disponible|"
       r"no se (encontro|pudieron|puede|ha podido)|error al|no (he|hemos|ha|han) podido|no (pude|pudimos|pudo)|"
       r"no se (realizo|creo|guardo|envio|completo|actualizo|elimino|registro|proceso)|no (termino|finalizo|concluyo|se completo)|"
       r"no(?<!aun no)(?<!todavia no) se ha (completado|realizado|procesado|enviado|guardado)|rechazo (el|la|los|las|tu|su)|"
       r"(prevista|previsto|programada|programado) (\S+ ){0,6}((fue|ha sido|se ha) (cancelad[oa]|anulad[oa]|suspendid[oa])|"
       r"se (cancelo|anulo|suspendio))|"
       r"pero (\w+ ){0,3}(se cancelo|se suspendio|se anulo|fue cancelad[oa]|fue anulad[oa]|cancelo|anulo|suspendio|"
       r"cancelaron|anularon|suspendieron)|no (llego|llegaron|alcanzo|alcanzaron) a (completarse|terminarse|ejecutarse|enviarse|guardarse|procesarse|"
       r"realizarse|finalizarse|completar|terminar|finalizar|ejecutar|enviar)|"
       r"se quedo sin (espacio|memoria|conexion|saldo)|(habia|habian) fallado|"
       r"no encontrad[oa]", F, "es", "error/falló/no se pudo: the work failed"),
    _t(r"(cuota|limite) (de \w+ )?(excedid[oa]|superad[oa]|agotad[oa])|demasiadas solicitudes|"
       r"(superado|excedido|agotado|alcanzado) (la|el) (\w+ ){0,2}(cuota|limite)", F, "es",
       "cuota excedida / límite superado / se ha superado la cuota: the request was refused, nothing was done"),
    _t(r"(?<!aun )(?<!todavia )no (fue|fueron) \w{3,}(ad|id)[oa]s?(?![a-z0-9])", F, "es",
       "'El documento no fue traducido': the work was not done (a preterite, where 'aún no ha sido' is pending)"),
    _t(r"(funciono|funcionaron|ha funcionado|han funcionado|salio bien|salieron bien)(?! (mal|a medias))", C, "es",
       "'el segundo intento funcionó', 'salió bien': the work went through"),
    _t(r"interrumpid[oa]s?|se interrumpio", F, "es", "interrumpido: the work broke off before its end"),
    _t(r"el usuario (cancelo|cerro|rechazo)|(dialogo|formulario) cancelado", F, "es",
       "el usuario canceló: the input was not given, so the work was not done"),
    # -- German -----------------------------------------------------------------------------------
    _t(r"angenommen|entgegengenommen|eingegangen|erhalten|in der warteschlange|eingereiht|ausstehend|"
       r"wird (\w+ ){0,3}(bearbeitet|verarbeitet|ausgefuhrt|gepruft|gesendet)|in bearbeitung|geplant|vorgemerkt|"
       r"lauft|im hintergrund|ticket (erstellt|angelegt|eroffnet)|wird (\w+ ){0,6}(ge\w+(t|en)|\w+iert)|"
       r"werden (\w+ ){0,6}(ge\w+(t|en)|\w+iert)|erneuter versuch|(wurde|wurden|ist|sind) (\w+ ){0,3}(veranlasst|eingeleitet|"
       r"angestossen|gestartet|beauftragt|eingereicht|ubermittelt|eingegangen)|"
       r"zur (prufung|bearbeitung|freigabe|genehmigung|kontrolle)|in prufung|noch nicht (\w+ ){0,2}(ge\w+t|\w+iert|verarbeitet|"
       r"bearbeitet|erledigt|freigegeben|fertig|abgeschlossen|durch)|dauert (noch|etwa|ca|ungefahr)|angestossen|wartet auf (\w+ )?(freigabe|genehmigung|prufung|bestatigung)|eingeplant|terminiert|warteschlange gestellt|"
       r"an (\w+ ){0,3}weitergeleitet|ans \w+ weitergeleitet|weitergeleitet an|"
       r"startet (heute|morgen|gleich|bald|in|um|am|nachts|nach)|in zustellung|unterwegs|"
       r"(wird|werden) ((?!nicht |nie |kein |keine )\S+ ){0,9}(" + _DE_DONE + r")(?= ?([.!;,:]|$))",
       A, "de", "angenommen/in der Warteschlange/eingeplant/startet heute: taken on, not done"),
    _t(r"abgeschlossen|erledigt|erfolgreich|fertig|(wurde|wurden|ist|sind) (\w+ ){0,3}(erstellt|gespeichert|"
       r"gesendet|geloscht|aktualisiert|durchgefuhrt|ausgefuhrt|angelegt|hinzugefugt|bezahlt|storniert|gebucht|"
       r"reserviert|bestatigt|versendet|verschickt|hochgeladen|ubertragen)|(wurde|wurden|ist|sind|wurde erfolgreich) "
       r"(\w+ ){0,4}(" + _DE_DONE + r")|(" + _DE_DONE + r")(?= ?([.!:(]|$))|(ist|sind) (jetzt|nun) (\S+ ){0,4}\w*ge\w{2,}t(?= ?([.!;,:(]|$))|"
       r"(ich habe|ich hab|wir haben|habe ich|haben wir) (\w+ ){0,6}(" + _DE_DONE + r")(?= ?([.!;,:]|$))|"
       r"(ist|sind) ((?!nicht |kein |noch )\S+ ){0,3}(online|live)(?![a-z0-9])|"
       r"(lief|liefen|ging|gingen) ((?!nicht |kein )\S+ ){0,4}durch(?![a-z0-9])|"
       r"(ist|sind) ((?!nicht |kein )\S+ ){0,2}durchgelaufen",
       C, "de", "abgeschlossen/erfolgreich: the effect is said to exist"),
    _t(r"^((?!(nicht|kein|keine|keinen|keiner|nie|ohne) )\w+ ){1,3}(?!(" + "|".join(_NOT_PARTICIPLES["de"]) + r")\b)"
       r"\w*ge\w{2,}(t|en)(?= ?([.!]|$))", C, "de",
       "grammar: a short sentence that ends with a past participle (ge…t, ge…en) reports the effect "
       "('Passwort zurückgesetzt.'), whatever the verb", hint=r"ge[a-z]{2,}(t|en)(?![a-z0-9])"),
    _t(r"^((?!(nicht|kein|keine|keinen|keiner|nie|ohne) )\w+ ){1,3}\w{3,}iert(?= ?([.!]|$))", C, "de",
       "grammar: a short sentence that ends with a participle in -iert reports the effect ('Konto aktualisiert.')",
       hint=r"iert(?![a-z0-9])"),
    _t(r"(wurde|wurden) (?!(nicht|noch|nie|kein|keine)\b)(\w+ ){0,5}\w*ge\w{2,}(t|en)(?= ?([.!;,:(]|$))", C, "de",
       "grammar: a past passive with a participle in ge…t / ge…en ('wurde in main gemergt') reports the effect",
       hint=r"ge[a-z]{2,}(t|en)(?![a-z0-9])"),
    _t(r"(wurde|wurden) (?!(nicht|noch|nie|kein|keine)\b)(\w+ ){0,5}\w{3,}iert(?= ?([.!;,:(]|$))", C, "de",
       "grammar: a past passive with a participle in -iert ('wurde auf 320 Stück korrigiert') reports the effect",
       hint=r"iert(?![a-z0-9])"),
    _t(r"(ist|wurde|wurden|sind|war|waren) (\w+ ){0,2}(abgebrochen|unterbrochen)|unterbrochen|abgebrochen (war|waren|ist)|"
       r"(brach|brachen) (\w+ ){0,3}ab(?![a-z0-9])|nicht (\w+ ){0,2}(durchgelaufen|durchgekommen|fertig geworden)|abgesturzt", F, "de",
       "abgebrochen/unterbrochen: the work broke off before its end"),
    _t(r"fehlgeschlagen|fehler|gescheitert|zeituberschreitung|konnten? (\w+ ){0,4}nicht|nicht moglich|abgelehnt|"
       r"ausnahme|nicht verfugbar|nicht gefunden|interner serverfehler", F, "de",
       "fehlgeschlagen/Fehler: the work failed", compound=True),
    _t(r"(wurde|wurden|ist|sind) (\w+ ){0,3}nicht (" + _DE_DONE + r")|aber (\w+ ){0,6}(abgesagt|storniert|abgebrochen|gestrichen)|"
       r"geplanter? (\S+ ){0,5}(wurde|wurden|ist|sind) (abgesagt|gestrichen|storniert|verschoben)",
       F, "de", "'Ticket wurde nicht erstellt', '… wurde aber abgesagt': the work did not happen"),
    _t(r"(kontingent|limit|quote|ratenlimit) (\w+ )?(uberschritten|erreicht|ausgeschopft)|zu viele anfragen", F, "de",
       "Kontingent überschritten / zu viele Anfragen: the request was refused, nothing was done"),
    _t(r"abgewiesen|zuruckgewiesen|verweigert", F, "de", "abgewiesen/verweigert: the request was refused, nothing was done"),
    _t(r"(hat|haben) (es )?((?!nicht |nie |kein )\S+ ){0,4}(geklappt|funktioniert)(?![a-z0-9])|"
       r"^((?!(nicht|kein|nie) )\w+ ){0,2}geklappt(?= ?([.!:;,]|$))", C, "de",
       "'hat es beim zweiten Mal geklappt', 'hat funktioniert': the work went through"),
    _t(r"(benutzer|nutzer) hat (den dialog |das formular |die eingabe )?(abgebrochen|abgelehnt|geschlossen)|"
       r"(dialog|formular|eingabe) (wurde )?(vom (benutzer|nutzer) )?abgebrochen", F, "de",
       "der Benutzer hat abgebrochen: the input was not given, so the work was not done"),
    # -- French -----------------------------------------------------------------------------------
    _t(r"acceptee?s?|recue?s?|en file d attente|en attente|mise? en file|sera (traitee?|executee?|envoyee?)|"
       r"en cours( de traitement)?|programmee?|planifiee?|prise? en (compte|charge)|ticket (cree|ouvert|enregistre)|"
       r"sera (bien |rapidement )?\w+ee?s?|seront (bien )?\w+ee?s?|en (route|chemin|transit)|en cours d acheminement|"
       r"file d attente|(j ai|nous avons|on a|a ete|ont ete|est|sont) (bien )?(lancee?s?|demarree?s?)|(a|ont) (demarre|commence)|ca prend (environ|a peu pres)|"
       r"transmise?s? (\S+ ){0,8}(a|au|aux)|nouvelle tentative (est )?(prevue|programmee|planifiee)|pas encore (\w+ )?\w+ee?s?|(n a|n est|n ont|ne sont) pas encore (ete )?\w+ee?s?|"
       r"attend (la|le|les|une|un|votre|ta) (validation|confirmation|approbation|signature)",
       A, "fr",
       "acceptée/en file d'attente: taken on, not done"),
    _t(r"(est|sont) (maintenant |desormais |bien )?(en ligne|en production)|terminee?s?|effectuee?s?|reussie?|avec succes|c est fait|(a ete|ont ete|est|sont) (creee?|enregistree?|"
       r"envoyee?|supprimee?|mise? a jour|payee?|annulee?|reservee?)s?|(creee?|enregistree?|envoyee?|supprimee?|"
       r"reservee?)s?(?= ?([.!]|$))|mise?s? a jour|^([#\w]+ ){1,3}(creee?|enregistree?|envoyee?|supprimee?)s? (a|dans|pour|en)\b|"
       r"(j ai|nous avons|on a) clique|je suis allee? sur|(a|ont|a bien|ont bien) ete (" + _FR_DONE + r")|(j ai|nous avons|on a|je l ai|nous l avons) (bien )?(" + _FR_DONE + r")|(est|sont) (bien |maintenant |desormais |enfin )?(" + _FR_DONE + r")|^([#\w]+ ){1,3}(" + _FR_DONE + r")(?= ?([.!:\u2014\u2013]|$)| (a|au|aux|dans|avec|"
       r"pour|en|sur|de|vers|depuis|par)\b)",
       C, "fr", "terminée/avec succès: the effect is said to exist"),
    _t(r"interrompue?s?", F, "fr", "interrompu: the work broke off before its end"),
    _t(r"(quota|limite) (\w+ )?(depassee?|atteinte?)|trop de requetes", F, "fr",
       "quota dépassé / trop de requêtes: the request was refused, nothing was done"),
    _t(r"(n est|ne sont|n a|n ont|n ai|n avons) pas (\S+ ){0,2}jusqu au bout|(a|ont|avait|avaient) plante(?! (un|une|des|les|le|la)\b)|echec|echoue|erreur|impossible de|delai (d attente )?(depasse|expire)|a expire|exception|refusee?|"
       r"rejetee?|indisponible|introuvable|erreur interne du serveur", F, "fr", "échec/erreur: the work failed"),
    _t(r"non (" + _FR_DONE + r")|(n a|n ont) pas ete (" + _FR_DONE + r")|(n a|n ont) pas abouti|puis (a ete )?annulee?s?|ne s est pas (terminee?|effectuee?|deroulee?)|"
       r"ne se sont pas (terminee?s|effectuee?s)|(prevue?s?|planifiee?s?|programmee?s?) (\S+ ){0,6}(a|ont) ete (annulee?s?|abandonnee?s?)|mais (\w+ ){0,4}(annulee?s?|supprimee?s?|abandonnee?s?)|"
       r"(n a|n ont|n avons|n ai) pas (pu|reussi)|(n est|ne sont) pas partie?s?|(ne peut|ne peuvent|ne pouvait|ne pouvaient|ne pourra) pas etre", F, "fr",
       "n'a pas pu / ne peut pas être: the work could not be done"),
    _t(r"l utilisateur a (annule|refuse|ferme)|(dialogue|formulaire|saisie) annulee?s? par l utilisateur", F, "fr",
       "l'utilisateur a annulé: the input was not given, so the work was not done"),
)

#: After a claim word, a word that makes it a topic, not a claim ("error rate: 0.1%"); whole words
#: (Chinese and Japanese ones right after it).
CLAIM_ABOUT_AFTER: dict[str, tuple[str, ...]] = {
    "en": ("rate", "rates", "budget", "count", "counts", "handling", "handler", "handlers", "threshold", "thresholds",
           "metric", "metrics", "tracking", "page", "pages", "codes", "message template", "policy", "queue length",
           "column", "field", "state machine", "states", "list", "lists", "criteria", "date", "time"),
    "zh": ("率", "次数", "数量", "统计", "日志"),
    "ja": ("率", "件数", "ログ"),
}

#: What reports someone else's words: a claim after it is what they said, not what the server did.
REPORTED_SPEECH: dict[str, tuple[str, ...]] = {
    "en": ("says", "said", "say", "reports", "reported", "claims", "claimed", "wrote", "writes", "according to",
           "mentioned"),
    "zh": ("说", "表示", "称", "据说", "根据"),
    "ja": ("と言って", "によると"),
    "es": ("dice", "dijo", "segun"),
    "de": ("sagt", "sagte", "laut"),
    "fr": ("dit", "selon"),
}

# =================================================================================================
# What a form may not ask for
# =================================================================================================

CR: FormCategory = "credential"
PA: FormCategory = "payment"
RE: FormCategory = "recovery"
ID: FormCategory = "identity"

FORMS: tuple[Term, ...] = (
    # -- English: credentials ---------------------------------------------------------------------
    _t(r"password|passwd|passphrase|pass phrase|passcode|pass code|pass word|passwort", CR, "en",
       "a password or passphrase", compound=True),
    _t(r"pwd|pw", CR, "en", "the usual abbreviations of password"),
    _t(r"pass", CR, "en", "a field called 'pass' holds a password", scope="name"),
    _t(r"(db|user|admin|root|login|account|wifi|ftp|smtp|mail|email|sudo|vpn|ssh|database|app) pass", CR, "en",
       "'db pass': a password"),
    _t(r"pin|pin ?code|pin number", CR, "en", "a PIN", numeric=True),
    _t(r"otp|totp|hotp|mfa|2fa|tfa|one time (password|passcode|code|pin|token|key)|onetime (password|code|pin)",
       CR, "en", "a one-time or second-factor code", numeric=True),
    _t(r"(verification|authenticator|authentication|security|sms|login|access|auth|confirmation|2fa|mfa|otp|"
       r"recovery|backup|reset|activation|sign in|signin) codes?", CR, "en", "a code that proves who you are",
       numeric=True),
    _t(r"code (we |that we |i )?(just )?(sent|texted|emailed)|(sent|texted|emailed) (to )?(you|your phone) "
       r"(a |the )?(\d+ digit )?code|(the )?code (from|in) (your )?(sms|text message|authenticator|email)",
       CR, "en", "the code sent to you is a second factor", numeric=True),
    _t(r"two (factor|step)|2 step|authenticator app", CR, "en", "a second factor"),
    _t(r"secret", CR, "en", "a secret", compound=True),
    _t(r"token", CR, "en", "a token", compound=True),
    _t(r"bearer|jwt|auth|apikey|api key|api ?(ky|kee|kye)|credentials?|login details|sign in details|log in details", CR, "en",
       "an API key, bearer token or credential"),
    _t(r"(access|private|secret|signing|ssh|encryption|decryption|license|licence|master|gpg|pgp|session|client|"
       r"app|application|product|activation|wifi|wi fi|wlan|wpa2?|wireless|network|router) keys?", CR, "en",
       "a key that unlocks something"),
    _t(r"(recovery|bitlocker|filevault|unlock|luks) keys?", CR, "en",
       "a device's or a disk's recovery key (BitLocker, FileVault) unlocks it like a password (a wallet's recovery "
       "phrase is 'recovery')"),
    _t(r"\d+ digit (one time |verification |security |login |sign in |sms |confirmation |access |authentication )?codes?",
       CR, "en", "'the 6-digit code': a code of a few digits typed back is a one-time code (a qualifier between "
       "them — zip, postal, area — makes it another code: 'the 5-digit zip code' does not match)", numeric=True),
    _t(r"(wifi|wi fi|wlan|wpa2?|wireless|network|router) (password|passphrase|pass)", CR, "en",
       "a Wi-Fi key"),
    _t(r"tkn|tok", CR, "en", "as a field's own name: the usual abbreviations of token", scope="name"),
    _t(r"cookie|session (id|token|cookie)|sessionid|session token", CR, "en", "a session cookie or id",
       compound=True),
    _t(r"session|authorization|authorisation|signature|sig", CR, "en",
       "as a field's own name: a session id, an Authorization header value, a signature", scope="name"),
    # -- English: payment -------------------------------------------------------------------------
    _t(r"(credit|debit|bank|payment|visa|mastercard|amex) ?cards?( (number|no|num|nr|details|info|data))?|"
       r"creditcard|card (number|no|num|nr|details|pan)|cardnumber|primary account number", PA, "en",
       "a payment card", numeric=True),
    _t(r"cc (number|num|no|nr|exp|expiry|cvv)", PA, "en", "a payment card"),
    _t(r"cc|pan|ccn", PA, "en", "as a field's own name: a card number", scope="name", numeric=True),
    _t(r"cvv2?|cvc2?|csc|cid|card (security|verification) (code|value)|security digits", PA, "en",
       "a card's security code", numeric=True),
    _t(r"(card|cc) (expiry|expiration|exp)( (date|month|year))?|expiry (date )?\(?mm ?/? ?yy|"
       r"(expiry|expiration) (date|month|year) \(?(of|on) (your|the) card|exp (month|year)", PA, "en",
       "a card's expiry date", numeric=True),
    _t(r"iban|routing (number|no|num)|aba (number|routing)|sort code|bsb|(bank )?account (number|no|num|nr)|"
       r"bank account|swift code|bic", PA, "en", "bank account details", numeric=True),
    # -- English: recovery ------------------------------------------------------------------------
    _t(r"seed (phrase|words?)|seedphrase|recovery (phrase|seed|words?|sentence)|backup (phrase|seed|words)|"
       r"mnemonic|wallet (seed|phrase|words|key)|\d\d word (phrase|seed)|secret recovery|(12|15|18|21|24) words", RE, "en",
       "a wallet's recovery phrase is the wallet"),
    _t(r"(12|15|18|21|24) (or (12|15|18|21|24) )?word (secret |recovery |seed |backup |mnemonic )?(phrase|list|sentence)",
       RE, "en", "'your 12 or 24 word secret phrase': a phrase counted in a wallet's word counts is its recovery "
       "phrase (more specific than the 'secret' it holds)"),
    # -- English: identity ------------------------------------------------------------------------
    _t(r"passport( (number|no|num|nr|id))?|ssn|ssnum|ss (num|number|no)|social security( number)?|social insurance number|sin number|"
       r"national (id|identity|insurance) (number|no)|(driver s|drivers|driving) licen[cs]e (number|no)|"
       r"tax (id|identification number)|tin number|taxpayer identification number|dl (number|no|num)", ID, "en", "an identity document number", numeric=True),
    _t(r"security (question|answer)s?|secret (question|answer)|answer to (your|the) (security|secret) question|"
       r"(mother s|mothers|mother) maiden name|maiden name|first pet s name|name of your first pet",
       ID, "en", "a security-question answer opens the account like a password"),
    # -- Chinese ----------------------------------------------------------------------------------
    _t(r"密码|口令|验证码|校验码|动态码|认证码|授权码|令牌|密钥|秘钥|凭据|凭证|两步验证|双重验证|双因素|二次验证|一次性(代)?码|"
       r"一次性密码|会话 ?(id|标识|令牌|cookie)|pin ?码|登录信息|访问码|安全密钥|无线网络密码|wifi 密码",
       CR, "zh", "密码/验证码/令牌/密钥: a credential", numeric=True),
    _t(r"卡号|信用卡|银行卡|储蓄卡|借记卡|安全码|cvv|卡.{0,4}有效期|有效期.{0,3}(mm|月)|银行账号|银行账户|账户号码|开户账号",
       PA, "zh", "卡号/信用卡/安全码: payment data", numeric=True),
    _t(r"助记词|恢复短语|种子短语|恢复词|私钥|钱包短语|(12|15|18|24) ?个(单词|英文单词)", RE, "zh", "助记词/私钥: a wallet's recovery secret"),
    _t(r"yinhang ?ka( ?hao)?|ka ?hao|yinhang ?zhang ?hao", PA, "zh",
       "as a field's own name: 银行卡号/卡号 in pinyin ('yinhangka_hao'), a card or bank account number",
       scope="name", numeric=True),
    _t(r"\d+ ?位(数字)?(代码|码|口令)|身份验证器|验证器|认证器|身份验证(应用|app)|认证(应用|app)", CR, "zh",
       "6 位代码 (an N-digit code), 身份验证器/认证应用 (an authenticator app): a one-time code (not 6 位邮政编码: "
       "a qualifier between them makes it another code)", numeric=True),
    _t(r"(12|15|18|21|24) ?(个)?(词|单词)(的)?(助记|恢复|秘密|密语|短语)", RE, "zh",
       "12 个词的恢复短语: a phrase counted in a wallet's word counts is its recovery phrase"),
    _t(r"备用码|恢复码|恢复密钥", CR, "zh", "备用码/恢复码: a second factor's backup code signs in like a password"),
    _t(r"身份证|护照号|护照号码|纳税人识别号|安全问题|密保问题|密保答案|社会保障号|社保号|母亲的(娘家)?姓", ID, "zh",
       "身份证/护照号/安全问题答案: an identity secret", numeric=True),
    # -- Japanese ---------------------------------------------------------------------------------
    _t(r"パスワード|暗証番号|認証コード|確認コード|ワンタイム|トークン|秘密鍵|apiキー|アクセスキー|シークレット|資格情報|"
       r"ログイン情報|セッション ?id|pinコード|二段階認証|パスフレーズ|ネットワークキー|wi ?fiのパスワード",
       CR, "ja", "パスワード/暗証番号/認証コード: a credential", numeric=True),
    _t(r"カード番号|クレジットカード|デビットカード|セキュリティコード|カードの有効期限|有効期限 ?\(?mm|口座番号|キャッシュカード",
       PA, "ja", "カード番号/セキュリティコード: payment data", numeric=True),
    _t(r"kou?za( ban?gou?)?|ginkou? kou?za|kou?za no ban?gou?", PA, "ja",
       "as a field's own name: 口座番号 romanised (kōza bangō, 'kouza_bangou'), a bank account number",
       scope="name", numeric=True),
    _t(r"\d+ ?桁の?(コード|数字コード|認証番号|確認番号|ワンタイム)|認証アプリ|認証用アプリ|オーセンティケーター|authenticatorアプリ",
       CR, "ja", "6桁のコード (an N-digit code), 認証アプリ (an authenticator app): a one-time code (not 7桁の郵便番号)",
       numeric=True),
    _t(r"(12|15|18|21|24) ?(語|単語|個の単語)(の)?(秘密|シード|リカバリー|復元|回復)", RE, "ja",
       "12語の秘密のフレーズ: a phrase counted in a wallet's word counts is its recovery phrase"),
    _t(r"リカバリーコード|バックアップコード|回復キー|回復コード", CR, "ja",
       "リカバリーコード: a second factor's backup code signs in like a password"),
    _t(r"リカバリーフレーズ|シードフレーズ|ニーモニック|復元フレーズ|(12|15|18|24) ?(個の)?(単語|英単語)", RE, "ja",
       "シードフレーズ: a wallet's recovery secret"),
    _t(r"パスポート番号|旅券番号|免許証の番号|免許証番号|マイナンバー|個人番号|秘密の質問|母親の旧姓|社会保障番号|運転免許証番号", ID, "ja",
       "パスポート番号/秘密の質問: an identity secret", numeric=True),
    # -- Spanish ----------------------------------------------------------------------------------
    _t(r"contrasena|clave de (la )?(acceso|api|seguridad|wifi|wi fi|red|usuario)|(su|tu) clave|codigo (de )?(verificacion|"
       r"seguridad|acceso|confirmacion|autenticacion|un solo uso)|codigo pin|token de (acceso|api)|credenciales|"
       r"clave secreta|clave privada|llave privada|clave api|codigos? de (respaldo|recuperacion)|"
       r"codigo (\w+ ){0,2}(por sms|por correo|que te (enviamos|hemos enviado|mandamos))|(enviamos|mandamos|enviado) un codigo",
       CR, "es", "contraseña/código de verificación: a credential",
       numeric=True),
    _t(r"clave", CR, "es", "as a field's own name: a password", scope="name"),
    _t(r"codigo (numerico )?de \d+ (digitos|cifras|numeros)|(aplicacion|app) (de )?(autenticacion|autenticador)|"
       r"clave de (recuperacion|bitlocker|desbloqueo|cifrado)", CR, "es",
       "el código de 6 dígitos (an N-digit code), la app de autenticación: a one-time code; una clave de recuperación "
       "(a disk's recovery key) unlocks like a password", numeric=True),
    _t(r"(12|15|18|21|24) (o (12|15|18|21|24) )?palabras? (secretas?|de (recuperacion|respaldo|la semilla))", RE, "es",
       "12 palabras secretas: a phrase counted in a wallet's word counts is its recovery phrase"),
    _t(r"numero (de )?(la )?tarjeta(?!s)|tarjeta de (credito|debito)|(fecha de )?(caducidad|vencimiento|expiracion) de "
       r"(la |su |tu )?tarjeta|codigo de seguridad de (la |su |tu )?tarjeta|numero de cuenta( bancaria)?|"
       r"cuenta bancaria|clabe|numero de ruta", PA, "es", "tarjeta/cuenta: payment data", numeric=True),
    _t(r"frase (semilla|de recuperacion|secreta)|semilla|palabras de recuperacion|mnemonica|(12|15|18|24) palabras", RE, "es",
       "frase semilla: a wallet's recovery secret"),
    _t(r"(numero de )?pasaporte|pregunta (de seguridad|secreta)|respuesta (secreta|de seguridad)|"
       r"apellido de soltera|numero de (la )?seguridad social|(num|nro|numero) (de )?seg(uridad)? social|dni|numero de identificacion|nif|"
       r"numero de identificacion fiscal|rfc|curp", ID, "es",
       "pasaporte/pregunta de seguridad: an identity secret", numeric=True),
    # -- German -----------------------------------------------------------------------------------
    _t(r"passwort|kennwort|geheimzahl|zugangsdaten|zugangscode|bestatigungscode|sicherheitscode|einmalcode|"
       r"einmalpasswort|verifizierungscode|anmeldedaten|privater schlu?e?ssel|geheimer schlu?e?ssel|api schlu?e?ssel|"
       r"wlan schlussel|netzwerkschlussel|zugangsschlussel|sitzungs id|wiederherstellungs(schlu?e?ssel|code)|"
       r"tan (nummer|code)|mtan|smstan|sms tan|pushtan|code (per|via|aus der) sms", CR, "de",
       "Passwort/Kennwort/Bestätigungscode: a credential", compound=True, numeric=True),
    _t(r"kartennummer|kreditkarte|debitkarte|prufnummer|prufziffer|ablaufdatum der karte|gultig bis|kontonummer|"
       r"bankleitzahl|bankverbindung", PA, "de", "Kartennummer/Kreditkarte: payment data", compound=True,
       numeric=True),
    _t(r"wiederherstellungsphrase|wiederherstellungssatz|seed phrase|seed wo?e?rter|mnemonik|wiederherstellungsworter|sicherungsphrase|"
       r"(12|15|18|24) worter",
       RE, "de", "Wiederherstellungsphrase: a wallet's recovery secret", compound=True),
    _t(r"\d+ stellige[nrs]? (code|zahlencode|bestatigungscode|sicherheitscode)|code (mit|aus) \d+ ziffern|"
       r"authentifizierungs ?app|authentifikator app", CR, "de",
       "ein 6-stelliger Code (an N-digit code), die Authenticator-App: a one-time code (not 5-stellige "
       "Postleitzahl)", numeric=True),
    _t(r"(12|15|18|21|24) (oder (12|15|18|21|24) )?(wort|worter|woerter) (geheim)?(phrase|satz|liste)|"
       r"geheime (wiederherstellungs)?phrase", RE, "de",
       "die 24-Wort-Phrase, die geheime Phrase: a phrase counted in a wallet's word counts is its recovery phrase"),
    _t(r"tan", CR, "de", "as a field's own name: a TAN (a bank's one-time transaction number)", scope="name",
       numeric=True),
    _t(r"reisepassnummer|passnummer|personalausweisnummer|ausweisnummer|ausweisnr|ausweis nr|sicherheitsfrage|geburtsname (der|ihrer) "
       r"mutter|sozialversicherungsnummer|steuer id|steueridentifikationsnummer", ID, "de",
       "Reisepassnummer/Sicherheitsfrage: an identity secret", compound=True, numeric=True),
    # -- French -----------------------------------------------------------------------------------
    _t(r"mot de pas{1,3}e|mdp|codes? de (secours|recuperation)|code (\w+ ){0,2}(recu|envoye) (par|sur|a)|code (\w+ )?par sms|"
       r"code (pin|secret|de verification|de confirmation|de securite|d acces|confidentiel|"
       r"a usage unique)|cle (api|privee|secrete|d acces|wifi|wi fi|de securite|de recuperation|recup)|jeton( d acces)?|identifiants",
       CR, "fr", "mot de passe/code de vérification: a credential", numeric=True),
    _t(r"code (a |de )?\d+ chiffres|(application|appli|app) d authentification|authentificateur", CR, "fr",
       "le code à 6 chiffres (an N-digit code), l'application d'authentification: a one-time code", numeric=True),
    _t(r"numero (de )?(la |votre )?carte|carte (bancaire|de credit|de paiement)|cryptogramme|date d expiration de "
       r"(la |votre )?carte|rib|numero de compte|coordonnees bancaires", PA, "fr",
       "carte bancaire/cryptogramme: payment data", numeric=True),
    _t(r"phrase (de recuperation|secrete|mnemonique)|mnemonique|phrase de recuperation|(12|15|18|24) mots|mots secrets|"
       r"mots de recuperation", RE, "fr",
       "phrase de récupération: a wallet's recovery secret"),
    _t(r"(numero de )?passeport|question (secrete|de securite)|reponse (secrete|a la question)|"
       r"nom de jeune fille|numero de securite sociale|numero fiscal", ID, "fr",
       "passeport/question secrète: an identity secret", numeric=True),
)

#: Spellings of "password" (and its siblings) that a one-letter slip makes; matched by edit distance.
PASSWORD_SPELLINGS: tuple[str, ...] = ("password", "passwort", "passphrase", "passcode", "contrasena", "kennwort")

#: ``format`` values that announce a credential, and what kind.
CREDENTIAL_FORMATS: dict[str, FormCategory] = {
    "password": CR, "otp": CR, "pin": CR, "token": CR, "secret": CR, "one-time-code": CR, "current-password": CR,
    "new-password": CR, "credit-card": PA, "card": PA, "cc": PA, "cc-number": PA, "cvv": PA, "cc-csc": PA,
    "cc-exp": PA, "iban": PA,
}

#: After a credential word, a word that makes the text *about* the credential, not an ask for it
#: ("password policy", "token count", "API key label", "OTP channel", "Secret Santa").
ABOUT_AFTER: dict[str, tuple[str, ...]] = {
    "en": ("policy", "policies", "rules", "rule", "requirements", "requirement", "strength", "length", "complexity",
           "reset", "resets", "change", "rotation", "expiry", "expiration", "expires", "age", "history", "manager",
           "count", "counts", "limit", "limits", "usage", "budget", "label", "labels", "name", "names", "nickname",
           "description", "type", "types", "format", "channel", "channels", "method", "methods", "provider",
           "providers", "contract", "symbol", "enabled", "disabled", "enforcement", "settings", "setting", "preference", "preferences",
           "consent", "banner", "santa", "field", "prompt", "scope", "scopes", "permissions", "owner", "holder",
           "holders", "issuer", "brand", "network", "last four", "last 4", "ending", "hint", "status", "lifetime",
           "ttl", "timeout", "duration", "window", "size", "storage", "support", "login", "option", "options",
           "recovery email", "reminder", "reuse", "sharing", "training", "audit", "revocation", "revoked", "issued",
           "created", "updated", "attempts", "attempt", "be named", "be called", "named"),
    "zh": ("桶", "策略", "规则", "强度", "长度", "数量", "设置", "渠道", "方式", "提示", "过期", "有效期", "是否", "已启用", "开启",
           "命名", "名称", "账单"),
    "ja": ("ポリシー", "設定", "の長さ", "有効", "方法", "数", "の変更", "サンタ"),
    "de": ("richtlinie", "lange", "regeln", "anforderungen", "anzahl", "anderung"),
}
#: Before a credential word, words that make it a topic ("number of tokens", "analytics cookies").
ABOUT_BEFORE: dict[str, tuple[str, ...]] = {
    "en": ("number of", "analytics", "marketing", "tracking", "advertising", "third party", "functional",
           "performance", "how many", "max", "maximum", "min", "minimum", "secret santa", "forgot", "forgotten",
           "reset", "strong", "weak", "accept", "allow", "block", "essential", "necessary", "preference", "name this",
           "name the", "name your", "rename", "rename the", "rename this"),
    "es": ("generar una", "generar", "politica de", "requisitos de", "longitud de", "cantidad de", "numero de tokens", "longitud minima",
           "longitud maxima", "nombre", "nombre del", "nombre de la"),
    "fr": ("politique de", "longueur du", "longueur de", "nombre de", "exigences de", "nom", "nom du", "nom de la",
           "longueur minimale", "longueur maximale"),
    "de": ("anzahl der", "lange des", "lange der"),
    "zh": ("几张", "多少张", "几个", "多少个"), "ja": ("何枚の", "何個の"),
}

#: A question of how often or at what interval ("À quelle fréquence voulez-vous changer votre mot de
#: passe ?", "How often should we remind you to rotate your API key?"): a credential word after it, in
#: its clause, is the topic of a schedule, not the value asked for.
HOW_OFTEN: dict[str, tuple[str, ...]] = {
    "en": ("how often", "how frequently", "at what interval", "how many days", "how many times"),
    "fr": ("a quelle frequence", "tous les combien", "a quel intervalle", "combien de fois"),
    "es": ("con que frecuencia", "cada cuanto", "cada cuantos", "cuantas veces"),
    "de": ("wie oft", "wie haufig", "in welchem abstand", "in welchen abstanden"),
    "zh": ("多久", "多长时间", "频率", "隔几天", "几天一次"), "ja": ("頻度", "どのくらいの間隔", "何日ごと", "何日おき"),
}

#: What names, labels or describes a thing: a free-text field whose own name holds one ("key_label",
#: "nombre_clave", "libelle", "Schlüsselname") or whose title or description begins with one ("A name to
#: help you recognise this key", "Nom du jeton"; Chinese and Japanese: begins or ends with one,
#: "密钥名称") takes a name for the credential the message speaks of, never the credential: the
#: message does not ask through it.  (German compounds end with theirs: ``LABEL_ENDINGS``.)
LABEL_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("name", "label", "nickname", "alias", "title", "description", "display name"),
    "es": ("nombre", "etiqueta", "alias", "apodo", "titulo", "descripcion"),
    "fr": ("nom", "libelle", "etiquette", "intitule", "titre", "description", "surnom"),
    "de": ("name", "bezeichnung", "beschreibung", "titel", "etikett", "anzeigename"),
    "zh": ("名称", "名字", "标签", "别名", "昵称", "描述", "备注名", "标题"),
    "ja": ("名前", "名称", "ラベル", "表示名", "説明", "ニックネーム", "タイトル", "別名"),
}
LABEL_ENDINGS: dict[str, tuple[str, ...]] = {"de": ("name", "bezeichnung", "beschreibung")}
#: What a number measures: a number field whose own name holds one ("min_length",
#: "caducidad_contrasena_dias", "tage_bis_ablauf"), or whose title names a credential and one of these
#: (密码最短长度, "Días hasta que caduque la contraseña"), is a setting *about* a credential (its length,
#: its lifetime, how many tries), not a credential typed as digits (a PIN).  (Not "digits": "6位数字密码",
#: "a 6-digit PIN" are the PIN.)
QUANTITY_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("length", "min", "max", "minimum", "maximum", "days", "hours", "minutes", "seconds", "weeks", "count",
           "characters", "chars", "attempts", "retries", "limit", "size", "age", "interval", "ttl", "timeout"),
    "es": ("longitud", "minimo", "minima", "maximo", "maxima", "dias", "horas", "minutos", "segundos", "semanas",
           "caracteres", "intentos", "limite", "cantidad", "duracion"),
    "fr": ("longueur", "minimum", "maximum", "minimale", "maximale", "jours", "heures", "minutes", "secondes",
           "semaines", "caracteres", "tentatives", "limite", "nombre", "duree"),
    "de": ("lange", "mindestlange", "maximallange", "mindest", "maximal", "minimal", "tage", "tagen", "stunden",
           "minuten", "sekunden", "wochen", "zeichen", "versuche", "anzahl", "dauer"),
    "zh": ("长度", "最短", "最长", "最少", "最多", "天数", "小时", "分钟", "次数", "字符", "上限", "下限", "个数",
           "数量"),
    "ja": ("長さ", "最短", "最長", "最小", "最大", "日数", "時間", "分間", "回数", "文字数", "上限", "下限"),
}

#: A field's own name that says only "code": with a ``pattern`` of 4 to 8 digits and nothing else
#: ("^[0-9]{6}$") it takes a one-time code (a zip or area code has its qualifier in the name:
#: "zip_code" is not the word alone).
CODE_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("code",), "fr": ("code",), "de": ("code",), "es": ("codigo", "cod"), "zh": ("码", "代码", "验证码"),
    "ja": ("コード",),
}

#: Negation cues, by language; ``before``: within the clause before the word; ``after``: just after
#: it (Japanese and the German ``nicht`` that ends a clause).
NEGATIONS: dict[str, tuple[str, ...]] = {
    "en": ("not", "no", "never", "without", "none", "nothing", "zero", "0", "neither", "nor", "don t", "do not",
           "dont", "doesn t", "didn t", "won t", "isn t", "wasn t", "aren t", "weren t", "haven t", "hasn t",
           "shouldn t", "must not", "mustn t", "will never", "no need"),
    "zh": ("不", "没", "没有", "未", "无", "别", "勿", "请勿", "切勿", "绝不", "从不", "不要", "无需", "不会"),
    "ja": ("ない", "ません", "なし", "不要", "しないで", "しません", "禁止"),
    "es": ("no", "nunca", "sin", "ningun", "ninguna", "ninguno", "ni", "jamas"),
    "de": ("nicht", "kein", "keine", "keinen", "keiner", "nie", "niemals", "ohne"),
    "fr": ("ne", "n", "pas", "jamais", "aucun", "aucune", "sans"),
}

#: How a sentence that asks for a value begins (an ask, even with a question mark: "What is your PIN?").
ASK_STARTS: dict[str, tuple[str, ...]] = {
    "en": ("what", "which", "enter", "type", "provide", "please", "give", "tell", "share", "send", "input", "paste",
           "fill", "supply", "submit", "confirm your", "could you", "can you", "would you", "may we", "may i",
           "we need", "i need", "your", "add", "insert"),
    "zh": ("请输入", "请提供", "请填写", "输入", "提供", "填写", "请告诉", "请问", "什么", "多少", "请"),
    "ja": ("入力", "教えて", "ご入力", "ください", "何"),
    "es": ("introduzca", "introduce", "ingrese", "ingresa", "escriba", "escribe", "proporcione", "indique", "cual",
           "cual es"),
    "de": ("geben sie", "gib", "bitte", "wie lautet", "welche", "welches", "was ist", "tragen sie"),
    "fr": ("entrez", "saisissez", "saisir", "indiquez", "fournissez", "quel", "quelle", "veuillez"),
}
#: Words that end a clause: a negation or a claim before them does not reach past them.
CONTRASTS: dict[str, tuple[str, ...]] = {
    "en": ("but", "however"), "es": ("pero",), "de": ("aber",), "fr": ("mais",), "zh": ("但",), "ja": ("が、", "けど", "けれど"),
}
#: Before a failure word in its sentence, what tells it as an earlier attempt's ("the first attempt
#: timed out", "the first upload failed", "nach einem fehlgeschlagenen ersten Versuch", "前回は失敗しましたが"):
#: then the text's claim is what follows (a retry taken on, the work done), and the failure only when
#: nothing else is claimed.
HISTORY: dict[str, tuple[str, ...]] = {
    "en": ("first attempt", "first try", "previous", "previously", "earlier", "last time", "initially", "at first",
           "prior attempt", "the first time", "the first"),
    "de": ("erste versuch", "ersten versuch", "erster versuch", "vorherige", "vorherigen", "fruhere", "zuvor",
           "beim ersten", "letzte mal", "letztes mal", "nachdem", "nach einem", "nach dem", "der erste", "die erste",
           "das erste"),
    "fr": ("premiere tentative", "precedente", "precedent", "precedemment", "la derniere fois", "auparavant",
           "la premiere fois", "avait", "avaient", "hier", "le premier", "la premiere"),
    "es": ("primer intento", "anterior", "anteriormente", "la vez pasada", "la primera vez", "intento previo", "ayer",
           "habia", "habian", "el primer", "la primera"),
    "zh": ("此前", "之前", "先前", "第一次", "上次", "首次"),
    "ja": ("前回", "最初", "以前", "初回"),
}
#: After a word, what says there were none of it ("errors: 0"): a count, not a claim.
NONE_COUNTS: dict[str, tuple[str, ...]] = {
    "en": ("0", "none", "no"), "de": ("keine",), "fr": ("aucun", "aucune"), "es": ("ninguno",), "zh": ("无",),
    "ja": ("なし",),
}
#: Japanese negation follows the word it negates ("エラーはありません"); these, within a few characters
#: after a claim word, negate it.
AFTER_NEGATIONS: dict[str, tuple[str, ...]] = {
    "ja": ("ありません", "ないです", "ない", "なし", "ません"),
}
#: What tells the user *not* to give something ("do not give us your PIN", "请勿输入密码",
#: "パスワードは入力しないで", "geben Sie Ihre PIN nicht ein", "ne saisissez jamais"): before the
#: credential word in its clause, after it, or anywhere in the clause (German and French put it after
#: the verb).  Latin-script cues before the word are the NEGATIONS words.
ASK_NEGATIONS_BEFORE: dict[str, tuple[str, ...]] = {
    "zh": ("不要", "请勿", "切勿", "勿", "别", "绝不", "从不", "不会", "无需", "不必"), "ja": ("決して",),
}
ASK_NEGATIONS_AFTER: dict[str, tuple[str, ...]] = {
    "ja": ("しないで", "入力しないで", "教えないで", "伝えないで", "不要", "ません", "ないでください"),
}
ASK_NEGATIONS_IN_CLAUSE: dict[str, tuple[str, ...]] = {"de": ("nicht", "niemals", "nie"), "fr": ("jamais", "pas")}
#: ... except where the negation is an idiom that asks ("n'oubliez pas votre PIN": don't forget it).
ASK_NEGATION_IDIOMS: dict[str, tuple[str, ...]] = {
    "de": ("nicht vergessen",), "fr": ("n oubliez pas",), "en": ("don t forget", "do not forget"),
}
#: Question words: a question that holds one asks for a value ("What is your PIN?"), it is no yes/no
#: question about a credential.
WH_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("what", "which", "who", "whose", "where", "when", "how"),
    "es": ("cual", "que"), "fr": ("quel", "quelle"), "de": ("welche", "welcher", "welches", "welchem", "welchen",
                                                          "was", "wie", "wo"),
    "zh": ("什么", "多少", "哪", "几"), "ja": ("何", "どの", "いくつ", "どれ"),
}
#: How Chinese and Japanese mark a yes/no question (a question mark alone does not).
YES_NO_MARKS: dict[str, tuple[str, ...]] = {
    "zh": ("吗", "是否", "有没有", "要不要", "能否", "可否"), "ja": ("ますか", "ですか", "でしょうか"),
}
#: After a topic word, phrases that make it an ask again ("name of your first pet" is a security
#: question, though "name" after a credential word is a topic).
ABOUT_EXCEPTIONS: dict[str, tuple[str, ...]] = {"en": ("name of your", "names of")}

#: What introduces data rather than a claim ("Contents of notes.txt:", "Observations:").
DATA_INTROS: dict[str, tuple[str, ...]] = {
    "en": ("contents of", "content of", "content", "contents", "here is", "here are", "observations", "observation",
           "entities", "relations", "file", "notes", "found", "search results", "matches", "stdout", "stderr", "log",
           "logs", "body", "response body", "page", "excerpt", "quote", "text of", "stored", "memory", "graph",
           "echo", "usage", "note", "history", "search result", "query result", "query results", "task list", "tasks",
           "documentation", "docs", "status history", "read only", "read-only"),
    "zh": ("内容", "文件内容", "笔记", "日志", "查询结果", "搜索结果", "历史", "备忘", "列表", "一览", "文档", "只读"),
    "ja": ("ファイルの内容", "内容", "メモ", "履歴", "検索結果", "ログ", "一覧", "ドキュメント", "読み取り専用"),
    "es": ("contenido", "historial", "resultados", "extracto", "nota", "tareas", "documentación", "documentacion",
           "solo lectura"),
    "de": ("inhalt", "notiz", "logauszug", "protokoll", "verlauf", "aufgabenliste", "suchergebnisse", "auszug",
           "aufgaben", "dokumentation", "nur lesen", "schreibgeschützt"),
    "fr": ("contenu", "journal", "extrait", "historique", "résultats", "resultats", "tâches", "taches",
           "lecture seule"),
}

#: What introduces advice ("Tip: failed uploads can be retried"): what follows is a general hint, not
#: a report of the work; cut off like a data intro.
ADVICE_INTROS: dict[str, tuple[str, ...]] = {
    "en": ("tip", "tips", "hint", "pro tip", "faq", "how to", "troubleshooting"),
    "zh": ("小贴士", "常见问题"), "ja": ("ヒント", "よくある質問"),
    "es": ("consejo", "sugerencia"), "de": ("tipp",), "fr": ("astuce", "conseil"),
}
#: In the clause of a failure word, a modal of possibility makes it a general statement about what
#: can be done ("failed uploads can be retried", "失败的任务可以重试"), not a report that the work failed.
GENERIC_MODALS: dict[str, tuple[str, ...]] = {
    "en": ("can be", "can", "may be", "could be"), "zh": ("可以", "可在"), "ja": ("できます", "できる", "可能です"),
    "es": ("puede", "pueden", "se pueden"), "de": ("kann", "konnen", "lasst sich", "lassen sich"),
    "fr": ("peut", "peuvent", "pouvez"),
}
#: Right after a quoted word (a status's name: "`queued` means …", "„Ausstehend“ bedeutet …"), a verb
#: that defines it: the sentence explains what the status means, it reports no work.  (Only after a
#: quotation: "this means the deployment failed" is a report.)
DEFINITIONS: dict[str, tuple[str, ...]] = {
    "en": ("means", "stands for", "is used when", "indicates"), "de": ("bedeutet", "heisst", "steht fur", "zeigt an"),
    "fr": ("signifie", "veut dire", "indique"), "es": ("significa", "quiere decir", "indica"),
    "zh": ("表示", "意味着", "是指", "指的是", "的意思是"), "ja": ("とは", "は意味します", "という意味"),
}
#: Before a claim word in its clause, a condition makes it hypothetical ("if the upload fails, …",
#: "wenn der Auftrag fehlschlägt"): no report of the work.  (Japanese puts it after: ``CONDITIONALS_AFTER``.)
CONDITIONALS: dict[str, tuple[str, ...]] = {
    "en": ("if", "unless", "in case", "whenever", "should the"), "zh": ("如果", "若", "一旦", "假如"),
    "ja": ("もし",), "es": ("en caso de", "si"), "de": ("wenn", "falls", "sofern"), "fr": ("si", "lorsque", "au cas ou"),
}
CONDITIONALS_AFTER: dict[str, tuple[str, ...]] = {"ja": ("場合", "たら", "なら")}

# =================================================================================================
# The form lint's other red lines: an invitation to paste anything, a destructive action
# =================================================================================================

PASTE: tuple[Term, ...] = (
    _t(r"\bpaste\b|\bhtml\b|page\s+source|entire\s+(page|file|document)|full\s+(page|file|document)", "paste", "en",
       "a form asks for the parameters a task needs, never for a whole page or file pasted in"),
    _t(r"粘贴|完整.{0,4}(html|页面|网页|文件)|页面源码|网页源码", "paste", "zh", "粘贴/完整页面: paste-anything"),
)

#: Matched on text case folded but not split (``dropOffPoint`` is no "drop"), as the lint always did.
DESTRUCTIVE: tuple[Term, ...] = (
    _t(r"\bdelete\b|\bdestroy\b|\bdrop\b|\bwipe\b|\berase\b|\bpurge\b|remove\s+all", "destructive", "en",
       "an action that cannot be undone is confirmed with ctx.confirm(), not typed text"),
    _t(r"删除|销毁|清空|抹掉|格式化", "destructive", "zh", "删除/清空: an action that cannot be undone"),
)

# =================================================================================================
# What else a tool's words say: a reference to check the work by, the server's insides, a crash, the
# process environment, an unknown tool (read by the probe and the client through ``_signs``)
# =================================================================================================

#: Words that introduce a reference the caller can check the work by ("ticket: T-1042", "job id 77",
#: "工单号：12345"), followed in the text by an id that holds a digit.  A reference is what makes
#: "accepted" honest: the caller has something to ask about later.
REFERENCE_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("id", "ticket", "reference", "ref", "job", "task"),
    "es": ("referencia", "solicitud", "pedido"),
    "de": ("referenz", "vorgang", "vorgangsnummer", "auftrag", "auftragsnummer"),
    "fr": ("reference", "référence", "demande", "commande"),
    "zh": ("工单号", "单号", "编号", "订单号", "受理号"),
    "ja": ("受付番号", "チケット番号", "問い合わせ番号"),
}
#: Keys of ``structuredContent`` that hold such a reference (compared without ``_`` and case).
REFERENCE_KEYS: frozenset[str] = frozenset({
    "id", "taskid", "ticket", "ticketid", "reference", "ref", "jobid", "requestid", "trackingid", "tracking", "task",
    "job", "receipt", "operationid"})

#: What only a program's insides print, read on the raw text (exception names are shapes of case):
#: ``kind`` is "trace" (a traceback, a stack frame, an exception's name), "install" (where the
#: server's code is installed) or "path" (a system path: internal unless the caller supplied it or
#: the server advertises it — the probe decides that).
INTERNALS: tuple[Term, ...] = (
    _t(r"Traceback \(most recent call last\)", "trace", "en", "a Python traceback: the server's insides"),
    _t(r"File \"[^\"]+\", line \d+", "trace", "en", "a Python stack frame"),
    _t(r"\bat [\w.$<>]+ \(?[\w./:-]+:\d+:\d+\)?", "trace", "en", "a JavaScript stack frame"),
    _t(r"\bat [\w.$]+\([\w.]+:\d+\)", "trace", "en", "a Java stack frame"),
    _t(r"\b(?:[A-Z][a-z]+)+(?:Error|Exception)\b(?=:)", "trace", "en", "an exception's class name before its message"),
    _t(r"[A-Za-z]:\\\\?[\w\\. -]+\.py|site-packages|\bnode_modules/", "install", "en",
       "where the server's code is installed"),
    _t(r"(?<![\w/.])/(?:home|usr|opt|var|srv|tmp|root|etc|app|Users|private|mnt|data)(?:/[\w.@+-]+)+", "path", "en",
       "a path of the server's machine"),
)
#: An exception's own words: a tool that answers with these crashed (it did not refuse in words the
#: model can act on).  Raw text.
CRASHES: tuple[Term, ...] = (
    _t(r"Traceback \(most recent call last\)", "crash", "en", "a Python traceback"),
    _t(r"\b(?:Attribute|Type|Key|Index|Name|Value|Reference|Range|Syntax|ZeroDivision|Assertion|Runtime|UnboundLocal|"
       r"NotImplemented)Error\b", "crash", "en", "a built-in exception's name (Python, JavaScript)"),
    _t(r"object has no attribute|is not a function|Cannot read propert(?:y|ies) of (?:undefined|null)|is not defined\b",
       "crash", "en", "the message of a programming error (Python, JavaScript)"),
)
#: Variables every process environment has: three of them listed as keys is a dump of the
#: environment (which holds the server's credentials), not a mention.
ENVIRONMENT_VARIABLES: tuple[str, ...] = (
    "PATH", "HOME", "USER", "SHELL", "PWD", "HOSTNAME", "LANG", "TERM", "LOGNAME", "TMPDIR", "OLDPWD", "SHLVL",
    "NODE_ENV", "VIRTUAL_ENV", "PYTHONPATH")
#: What an error says when the tool named does not exist (a protocol error: nothing ran), over
#: normalised text.
UNKNOWN_TOOL: tuple[Term, ...] = (
    _t(r"unknown tool|tool .*not found|no such tool|tool not found", "unknown_tool", "en", "the tool does not exist"),
    _t(r"未知工具|工具不存在|找不到工具|未找到工具", "unknown_tool", "zh", "未知工具: the tool does not exist"),
    _t(r"不明なツール|ツールが見つかりません|存在しないツール", "unknown_tool", "ja", "不明なツール: the tool does not exist"),
    _t(r"herramienta (desconocida|no encontrada|inexistente)", "unknown_tool", "es", "the tool does not exist"),
    _t(r"unbekannte(s)? (werkzeug|tool)|(werkzeug|tool) .*nicht gefunden", "unknown_tool", "de",
       "the tool does not exist"),
    _t(r"outil (inconnu|introuvable|inexistant)", "unknown_tool", "fr", "the tool does not exist"),
)
