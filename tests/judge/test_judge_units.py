"""The judge's parts one at a time: the normaliser, negation, questions, data, structure before words."""

from __future__ import annotations

from typing import Any

import pytest

from truecall.judge import (Claim, claim_in_result, claim_in_text, credential_ask, looks_secret, names_credential,
                            normalise, secret_spans)


def form(**fields: Any) -> dict[str, Any]:
    return {"type": "object", "properties": fields}


# -- normalise ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("p\u0430ssword", "password"),  # Cyrillic а
    ("\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44", "password"),  # fullwidth
    ("pass\u200bword", "password"),  # zero-width space
    ("pass\u00adword", "password"),  # soft hyphen
    ("p\u0307assword", "password"),  # combining dot above
    ("\u1e57assword", "password"),  # precomposed p with dot above
    ("PASSWORD", "password"),
    ("dbPassword", "db password"),
    ("db_pass", "db pass"),
    ("credit-card", "credit card"),
    ("user.pin", "user pin"),
    ("HTTPServer", "http server"),
    ("2FA code", "2fa code"),
    ("Contraseña", "contrasena"),
    ("Straße", "strasse"),
    ("don't", "don t"),
    ("信用卡", "信用卡"),
    ("パスワード", "パスワード"),  # the voicing mark stays
    ("  two   spaces ", "two spaces"),
])
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize("word,expected", [("créé", "cree"), ("enregistré", "enregistre"), ("annulée", "annulee")])
def test_french_participles_lose_their_accents_in_every_form(word: str, expected: str) -> None:
    """Whatever form the accents come in — precomposed, decomposed, upper case, a spacing accent or
    a modifier letter typed after the letter, UTF-8 read as Latin-1 or Windows-1252 — the word is
    the vocabulary's spelling, and the claim it makes is read."""
    import unicodedata

    forms = {
        "NFC": unicodedata.normalize("NFC", word), "NFD": unicodedata.normalize("NFD", word),
        "upper": word.upper(), "upper NFD": unicodedata.normalize("NFD", word.upper()),
        "spacing acute": unicodedata.normalize("NFD", word).replace("\u0301", "\u00b4"),
        "modifier acute": unicodedata.normalize("NFD", word).replace("\u0301", "\u02ca"),
        "latin-1 mojibake": word.encode("utf-8").decode("latin-1"),
        "cp1252 mojibake": word.upper().encode("utf-8").decode("cp1252"),
        "zero-width inside": word[:2] + "\u200b" + word[2:],
    }
    for name, spelled in forms.items():
        assert normalise(spelled) == expected, name
        claim = claim_in_text(f"Fichier {spelled}.")
        assert claim is not None and (claim.kind, claim.language) == ("completed", "fr"), (name, spelled)


def test_accents_alone_and_decomposition_are_unchanged() -> None:
    """A spacing accent not after a letter stays what NFKC makes it; every letter of the Latin, Greek
    and Cyrillic blocks folds as decomposing it, dropping its marks and composing again does (the
    fold skips decomposing a text that NFD leaves as it is)."""
    import unicodedata

    from truecall.judge._normalise import _COMBINING, _CONFUSABLES

    assert normalise("\u00b4 x") == "x"

    def reference(ch: str) -> str:
        folded = unicodedata.normalize("NFKC", ch)
        folded = unicodedata.normalize("NFC", _COMBINING.sub("", unicodedata.normalize("NFD", folded)))
        return " ".join(folded.casefold().translate(_CONFUSABLES).split())

    letters = [chr(cp) for block in ((0xC0, 0x250), (0x370, 0x530), (0x1E00, 0x2000), (0x3040, 0x3100))
               for cp in range(*block) if unicodedata.category(chr(cp)).startswith("L")]
    assert [ch for ch in letters if normalise(ch) != reference(ch)] == []


def test_normalise_keeps_sentence_punctuation() -> None:
    assert normalise("Queued? No.") == "queued? no."


def test_fullwidth_punctuation_replaced_is_what_nfkc_gives() -> None:
    """``_nfkc`` replaces Chinese text's fullwidth punctuation itself instead of normalising: the same
    text as NFKC for each such mark alone, beside letters, Chinese, fullwidth letters, Hangul jamo and
    combining marks (which NFKC would compose with a neighbour)."""
    import unicodedata
    from itertools import product

    from truecall.judge._normalise import _WIDE, _nfkc

    others = ["a", "A", "\u4e00", "\uff41", "\u1100", "\u1161", "\u0301", "\u0308", "\u3099", "\u00e9", "e", " ", ""]
    texts = [a + w + b + v for (w, _), a, b, v in product(_WIDE, others, others, ["", "\uff0c", "\uff41"])]
    assert [_nfkc(t) for t in texts] == [unicodedata.normalize("NFKC", t) for t in texts]


def test_the_latin1_table_folds_as_the_unicode_steps_do() -> None:
    """A text of Latin-1 characters is folded by one byte table (``_latin1_tables``) where the
    characters allow it: every Latin-1 character alone and beside the others, in the contexts that
    read a neighbour (camelCase, mojibake's lead characters, spacing accents, ``ß``), folds as the
    Unicode steps fold it (``_fold_unicode``) — and the table is taken at all for Spanish, French
    and German text."""
    from truecall.judge._normalise import _fold, _fold_unicode, _latin1_tables

    alphabet = [chr(b) for b in range(256)] + ["\u0301", "\u0140", "\u4e00", "\u200b", "\u0410"]
    texts = [ctx.format(c) for c in alphabet
             for ctx in ("{}", "x{}", "{}B", "aB{}cD", "\u00c9{}", "{}\u00c9", "{}\u00c3A", "\u00a8{}", "\u00df{}")]
    texts += [a + b + "Xy" for a in alphabet[128:] for b in alphabet[128:]]
    differ = [(t, split) for t in texts for split in (True, False) if _fold(t, split) != _fold_unicode(t, split)]
    assert not differ
    assert all(ord(c) in _latin1_tables()[1] for c in "áéíóúñüöäßçèàêô¿¡«»")


# -- claims: negation, questions, data ------------------------------------------------------------------


@pytest.mark.parametrize("text,kind", [
    ("Accepted: the task will run later", "accepted"),
    ("已受理", "accepted"),
    ("Your request has been received and will be processed.", "accepted"),  # acceptance beats completion
    ("Order placed. It failed to reach the warehouse.", "failed"),  # failure beats everything
    ("Done. Wrote 3 files.", "completed"),
])
def test_claims(text: str, kind: str) -> None:
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind


@pytest.mark.parametrize("text,kind", [
    ("Impossible d'ouvrir la session.", "failed"),  # French elision: "impossible de" before a vowel
    ("L'opération a été interrompue.", "failed"),
    ("The sync was interrupted by a network outage.", "failed"),
    ("Der Vorgang wurde unterbrochen.", "failed"),
    ("La descarga se interrumpió.", "failed"),
    ("The indexer is currently scanning the archive.", "accepted"),  # the progressive with an adverb
    ("Three workers are still copying files.", "accepted"),
    ("The payment was requested from the bank.", "accepted"),
    ("索引在后台重建。", "accepted"),
    ("レポートは承認待ちです。", "accepted"),
])
def test_grammar_of_interruption_progress_and_elision(text: str, kind: str) -> None:
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


@pytest.mark.parametrize("text,kind", [
    ("Your complaint is now with our billing team.", "accepted"),  # someone else has the work
    ("The case was escalated to tier 2.", "accepted"),
    ("Refund handed over to finance; they usually reply within a week.", "accepted"),
    ("The replacement card is on its way to you.", "accepted"),  # in transit
    ("お問い合わせを担当部署へ引き継ぎました。", "accepted"),  # handed on
    ("確認のうえ折り返しご連絡いたします。", "accepted"),
    ("Die Sicherung ist für Sonntag eingeplant.", "accepted"),  # scheduled
    ("Der Import startet morgen früh.", "accepted"),
    ("データの移行が終わりました。", "completed"),
    ("支払いは処理済みです。", "completed"),
    ("Rechnung verschickt: 4 Empfänger.", "completed"),  # a participle before a colon
    ("Les fichiers sont bien archivés dans le dossier.", "completed"),  # "sont" + participle
    ("Die Zahlung wurde von der Bank abgewiesen.", "failed"),
    ("Zugriff verweigert.", "failed"),
    ("Le fichier n'a pas pu être enregistré.", "failed"),
    ("La commande ne peut pas être expédiée.", "failed"),
])
def test_hand_offs_transit_schedules_and_refusals(text: str, kind: str) -> None:
    """Phrases held-out batch 4 missed, read by meaning (others of the same kind than its texts)."""
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


@pytest.mark.parametrize("text,kind", [
    ("The contract was countersigned by legal.", "completed"),  # a passive of any regular verb
    ("We've archived the old workspace.", "completed"),  # a first-person perfect
    ("Refund issued: $12.00 returned to the card.", "completed"),  # a short report ending at a colon
    ("Hemos actualizado tu dirección de envío.", "completed"),
    ("J'ai bien envoyé la facture au client.", "completed"),
    ("Export not generated: the dataset is empty.", "failed"),  # a negated participle heads the report
    ("I wasn't able to reach the payment provider.", "failed"),
    ("No hemos podido validar la tarjeta.", "failed"),
    ("Wir konnten die Datei leider nicht öffnen.", "failed"),
    ("Je n'ai pas réussi à joindre le serveur.", "failed"),
    ("The claim is registered but not yet reviewed.", "accepted"),
    ("El caso se ha derivado al equipo legal.", "accepted"),
    ("Ihr Antrag wurde in die Warteschlange gestellt.", "accepted"),
    ("Nous avons transmis la demande au support.", "accepted"),
    ("設定は明朝に反映されるよう予約されました。", "accepted"),
])
def test_grammar_of_perfects_negated_reports_and_hand_ons(text: str, kind: str) -> None:
    """Grammar held-out batch 5 missed: a passive or first-person perfect of any regular verb, a
    negated participle that heads the report, 'wasn't able to', 'not yet …ed', hand-ons."""
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


@pytest.mark.parametrize("text", [
    "Logauszug: 2024-03-01 10:00:01 ERROR Export fehlgeschlagen",
    "日志：2024-03-01 10:00:01 同步失败",
    "注文 #12 の履歴：受付 → 発送済み",
    "Historial del ticket 7: recibido · cerrado",
    "Résultats : Dossier 12 — statut : refusé",
])
def test_a_labelled_listing_is_data(text: str) -> None:
    """A label and a colon that introduce a log excerpt, a history or a listing (in any of the
    languages; a Chinese or Japanese label after other words too) make what follows data."""
    assert claim_in_text(text) is None


@pytest.mark.parametrize("text,kind", [
    ("The release was planned for 9 pm, but it was called off after the smoke test.", "failed"),  # contrast
    ("Das Update war für Montag geplant, aber wurde abgesagt.", "failed"),
    ("La migración estaba programada, pero se canceló por falta de espacio.", "failed"),
    ("La sauvegarde était prévue à minuit, mais elle a été annulée.", "failed"),
    ("原定今晚的升级已排期，但因故障被取消。", "failed"),
    ("メンテナンスは予定されていましたが、中止になりました。", "failed"),
    ("Rechnung wurde nicht erstellt: Kundennummer fehlt.", "failed"),  # a negated completion
    ("订单未提交：库存不足。", "failed"),
    ("Facture non envoyée : adresse manquante.", "failed"),
    ("La factura no se envió porque falta el correo.", "failed"),
    ("レポートは送信されませんでした。", "failed"),
    ("I've escalated case 88 up to the platform team; they'll be in touch.", "accepted"),  # a hand-on
    ("已将申请转交财务部门。", "accepted"),
    ("您的申请尚未审核。", "accepted"),
    ("Return request for order 5521 received.", "accepted"),
])
def test_contrasts_negated_completions_and_hand_ons(text: str, kind: str) -> None:
    """What held-out batch 6 missed, by mechanism: a plan undone after a contrast is a failure; a
    negated completion is a failure; a hand-on (to a team, 转交) is acceptance."""
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


@pytest.mark.parametrize("text", [
    "振込依頼（¥120,000）は承認待ちです。",  # a thousands separator in a sentence is no CSV row
    "Zahlung über 1,250 EUR ist in Prüfung.",
])
def test_a_number_with_a_thousands_separator_is_no_csv_row(text: str) -> None:
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == "accepted", claim


@pytest.mark.parametrize("text,kind", [
    ("Payout PO-19 is not approved yet; it waits for the finance lead.", "accepted"),  # not … yet: pending
    ("Die Bestellung wurde noch nicht bearbeitet.", "accepted"),
    ("Le virement n'a pas encore été validé.", "accepted"),
    ("Migración en curso: 40 de 120 tablas.", "accepted"),
    ("Dein Antrag wartet auf Freigabe durch die Leitung.", "accepted"),
    ("The post was approved, but it was later dropped from the schedule.", "failed"),
    ("Nothing was written: the disk is read-only.", "failed"),
    ("Le rapport n'a pas été envoyé : adresse invalide.", "failed"),
    ("Record CNAME www created (TTL 600).", "completed"),  # a parenthesis after a short report
    ("Ich habe 12 von 12 Rechnungen versendet.", "completed"),  # a German first-person perfect
    ("Der Preis wurde auf 12 Euro reduziert.", "completed"),  # a past passive in -iert
    ("Pedido confirmado: 3 artículos, entrega el lunes.", "completed"),
])
def test_not_yet_nothing_written_and_reports_with_a_parenthesis(text: str, kind: str) -> None:
    """What held-out batch 7 missed, by mechanism: 'not … yet' is pending (not a failure), 'nothing
    was written' a failure, a short report may go on with a parenthesis or a colon."""
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


@pytest.mark.parametrize("text,kind", [
    ("**Deployed** build 412 to staging.", "completed"),  # markdown before the first word
    ("✅ Issue #31 closed.", "completed"),  # an emoji, an id among the first words
    ("Backup done. Result: OK", "completed"),
    ("レポートを共有フォルダに保存した。", "completed"),  # a plain past
    ("Le travail n° 12 est en attente.", "accepted"),  # "n°" is a number's mark, no negation
    ("status: queued — job 77, ETA ~5 min", "accepted"),
    ("経費精算の承認はまだです。", "accepted"),
    ("Der Import ist noch nicht fertig.", "accepted"),
    ("J'ai lancé la synchronisation, ça prend environ 5 minutes.", "accepted"),
    ("The newsletter was drafted but then cancelled.", "failed"),
    ("Der geplante Neustart wurde abgesagt.", "failed"),
    ("La exportación no terminó por falta de memoria.", "failed"),
    ("L'import ne s'est pas terminé : fichier illisible.", "failed"),
    ("予定していたメンテナンスは中止になりました。", "failed"),
    ("タグを削除できなかった。", "failed"),
])
def test_decorated_starts_status_lines_and_plans_undone(text: str, kind: str) -> None:
    """What held-out batch 8 missed, by mechanism: a sentence may start after markdown or an emoji,
    'Result: OK' and 'status: queued' are status lines, a planned thing called off is a failure."""
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


@pytest.mark.parametrize("text,kind", [
    ("Email delivered on the second try (the first attempt timed out).", "completed"),  # a failure told as past
    ("The provider rejected the first attempt. A retry is scheduled for 10:05.", "accepted"),
    ("Le fichier a été poussé. La tentative précédente avait échoué.", "completed"),
    ("前回はタイムアウトで失敗しましたが、今回はアップロードが完了しました。", "completed"),
    ("邮件已成功发出（此前第一次发送因超时失败）。", "completed"),
    ("The first attempt failed.", "failed"),  # nothing else claimed: the failure is the claim
    ("Upload failed; the previous upload had succeeded.", "failed"),  # the history word is the success's
    ("Estado: en cola. El envío aún no se ha procesado.", "accepted"),  # "aún no": pending
    ("El pago no se ha completado: tarjeta rechazada.", "failed"),
    ("Le paiement n'a pas abouti.", "failed"),
    ("The commit did not go through: a hook failed.", "failed"),
    ("The reminder was set up, then called off.", "failed"),
    ("Navigated to https://example.org and clicked 'Save'.", "completed"),  # a browser tool's report
    ("Hice clic en «Guardar».", "completed"),
    ("I've handed the file off to the translator; it should come back tomorrow.", "accepted"),
])
def test_failures_told_as_past_retries_and_browser_reports(text: str, kind: str) -> None:
    """What held-out batch 9 missed, by mechanism: a failure told as an earlier attempt's yields to
    what follows (a retry taken on, the work done) and is the claim only when nothing else is."""
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


@pytest.mark.parametrize("text", ["本月共有 12 个订单，其中 3 个已退货。", "共 5 件，2 件已签收。"])
def test_a_count_of_things_in_a_state_is_no_claim(text: str) -> None:
    """"3 个已退货" counts things in a state (a statistic of data), it reports no work of the tool's."""
    assert claim_in_text(text) is None


@pytest.mark.parametrize("text", ["The field is still missing.", "The report is now nothing but a stub?"])
def test_the_progressive_rule_leaves_adjectives_and_questions(text: str) -> None:
    assert claim_in_text(text) is None


@pytest.mark.parametrize("text,kind", [
    # a retry taken on after a failure: the failure was the earlier attempt's, the retry is the claim
    ("The export timed out, so I've scheduled the job to run again at midnight.", "accepted"),
    ("The import failed; it will retry again in 5 minutes.", "accepted"),
    ("导出失败了，已设置 10 分钟后自动重试。", "accepted"),
    ("送信に失敗したので、10分後に自動で再試行します。", "accepted"),
    ("El envío falló, pero se volverá a intentar a las 3.", "accepted"),
    ("L'envoi a échoué ; il sera relancé cette nuit.", "accepted"),
    # ... but advice to try again is no retry taken on, and a retry not taken on leaves the failure
    ("Upload failed. Please try again later.", "failed"),
    ("上传失败，请稍后重试", "failed"),
    ("Backup failed: disk full. Nothing was requeued.", "failed"),
    ("Rate limit exceeded. Please try again in 10 minutes.", "failed"),
    # plans called off, negated completions
    ("The release I planned for Friday got cancelled, so nothing ships this week.", "failed"),
    ("他原本计划周五发布，后来取消了", "failed"),
    ("文件同步没有跑完就断开了。", "failed"),
    ("任务还没有完成", "accepted"),
    ("レポートの生成は最後まで終わりませんでした。", "failed"),
    ("La copia no llegó a completarse.", "failed"),
    ("Der Import ist nicht vollständig durchgelaufen.", "failed"),
    ("Der Job brach nach 10 Minuten ab.", "failed"),
    # success now, the failure told as past (pluperfect, 'yesterday', 'after')
    ("Le serveur avait planté, il est maintenant rétabli.", "completed"),
    ("Nachdem der erste Lauf abgebrochen war, ist die Seite jetzt online.", "completed"),
    ("Payment went through on the second attempt.", "completed"),
    ("Ahora sí: el pedido se guardó correctamente.", "completed"),
    # statuses of delivery
    ("Your parcel is out for delivery.", "accepted"),
    ("Estado: en reparto", "accepted"),
    ("Die Rechnung wird morgen an den Kunden verschickt.", "accepted"),
    ("Paket ausgeliefert.", "completed"),
    # the same constructions in the other languages and tenses
    ("The backup didn't finish; the disk filled up.", "failed"),
    ("The backup never finished.", "failed"),
    ("The nightly job was called off.", "failed"),
    ("El despliegue previsto para hoy se canceló.", "failed"),
    ("La sauvegarde n'est pas allée jusqu'au bout.", "failed"),
    ("La nueva versión ya está en línea.", "completed"),
    ("La nouvelle version est maintenant en ligne.", "completed"),
    ("Die neue Version ist jetzt live.", "completed"),
    ("The new build went through fine.", "completed"),
])
def test_retries_plans_called_off_and_statuses(text: str, kind: str) -> None:
    """What held-out batch 10 missed, by mechanism (close variants, not its sentences)."""
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, claim


def test_a_table_under_a_title_line_is_data() -> None:
    assert claim_in_text("查询结果 (2 行):\nid | 状态\n7 | 已完成\n8 | 失败") is None
    assert claim_in_text("estado: en_proceso | progreso: 60%") is not None  # one status line: the server's word


@pytest.mark.parametrize("text", [
    "No errors found.", "The job was never queued", "没有错误", "エラーはありません", "Sin errores.", "Keine Fehler.",
    "Aucune erreur.", "errors: 0",
])
def test_negated_claims_are_none(text: str) -> None:
    assert claim_in_text(text) is None


@pytest.mark.parametrize("text", [
    "Has the order been queued?", "订单已受理吗？", "注文は受け付けられましたか？", "¿Ha sido aceptada la solicitud?",
    "Wurde der Auftrag angenommen?", "La demande a-t-elle été acceptée ?",
])
def test_questions_are_no_claim(text: str) -> None:
    assert claim_in_text(text) is None


@pytest.mark.parametrize("text", [
    '{"entities": [{"name": "build", "observations": ["queued for Monday", "failed twice"]}]}',
    "2026-12-01T10:00:00Z ERROR worker failed: job queued twice",
    "- deploy queued behind the release\n- tests failed on CI",
    "Contents of notes.txt: the upload failed",
    'The file says "queued".',
])
def test_data_is_no_claim(text: str) -> None:
    assert claim_in_text(text) is None


def test_claim_in_result_reads_only_narrative_text_blocks() -> None:
    structured = {"status": "queued"}
    result = {"content": [{"type": "text", "text": '{"status": "queued"}'},
                          {"type": "resource", "resource": {"uri": "file:///x", "text": "Accepted"}},
                          {"type": "text", "text": "Here is the order."}],
              "structuredContent": structured, "isError": False}
    assert claim_in_result(result) is None
    result["content"].append({"type": "text", "text": "Request received; we will process it shortly."})
    assert claim_in_result(result) == Claim("accepted", "en", "Request received")


# -- forms: structure before words, negation, questions ------------------------------------------------


def test_structure_before_words() -> None:
    assert credential_ask("2FA enabled?", form(enabled={"type": "boolean", "title": "2FA enabled"})) is None
    assert credential_ask("Token count", form(token_count={"type": "integer"})) is None
    assert credential_ask("How often should we remind you to change your password?",
                          form(interval={"type": "string"})) is None
    assert credential_ask("¿Con qué frecuencia quiere cambiar su contraseña?", form(intervalo={"type": "string"})) is None
    assert credential_ask("Bank details", form(kouza_bangou={"type": "string"}))  # romanised 口座番号
    assert credential_ask("Which method?", form(method={"type": "string", "enum": ["password", "passkey"]})) is None
    ask = credential_ask("Continue", form(code={"type": "string", "format": "password"}))
    assert ask is not None and ask.reason == "format: password" and ask.field == "code"
    ask = credential_ask("Continue", form(code={"type": "string", "writeOnly": True}))
    assert ask is not None and ask.reason == "writeOnly"
    ask = credential_ask("Continue", form(pin={"type": "integer"}))
    assert ask is not None and ask.category == "credential"


def test_a_list_of_free_words_can_carry_a_recovery_phrase() -> None:
    """A field that is a list of free strings (12 or 24 words typed one by one) carries what the
    message asks for; a multiple choice (items with an enum) carries nothing."""
    words = {"type": "array", "items": {"type": "string"}, "minItems": 12, "maxItems": 24}
    ask = credential_ask("Restore the wallet: type your recovery words in order", form(words=words))
    assert ask is not None and ask.category == "recovery"
    choice = {"type": "array", "items": {"type": "string", "enum": ["seed phrase", "password"]}}
    assert credential_ask("Which recovery words do you use?", form(kinds=choice)) is None
    ask = credential_ask("Continue", form(seed_words={"type": "array", "items": {"type": "string"}}))
    assert ask is not None and ask.category == "recovery"


@pytest.mark.parametrize("message,fields,category", [
    ("Conecta tu cuenta", {"clave_api": {"type": "string"}}, "credential"),
    ("Bitte bestätigen Sie die Überweisung", {"tan": {"type": "string"}}, "credential"),
    ("Connexion", {"mot_de_passse": {"type": "string"}}, "credential"),  # a doubled letter
    ("Accès de secours", {"codes": {"type": "string", "description": "Un de vos codes de secours"}}, "credential"),
    ("Sin acceso", {"codigo": {"type": "string", "title": "Código de respaldo"}}, "credential"),
    ("Laufwerk entsperren", {"wiederherstellungsschluessel": {"type": "string"}}, "credential"),
    ("端末を紛失した場合", {"リカバリーコード": {"type": "string"}}, "credential"),  # a second factor's backup code
    ("Datos fiscales", {"nif": {"type": "string", "title": "NIF"}}, "identity"),
    ("开具发票", {"tax": {"type": "string", "title": "纳税人识别号"}}, "identity"),
])
def test_asks_held_out_forms_2_missed(message: str, fields: dict[str, Any], category: str) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == category, ask


@pytest.mark.parametrize("message,fields,category", [
    ("Te mandamos un código por SMS; escríbelo aquí", {"valor": {"type": "string"}}, "credential"),
    ("Saisissez le code reçu par SMS", {"valeur": {"type": "string"}}, "credential"),
    ("Bitte den Code aus der SMS eingeben", {"wert": {"type": "string"}}, "credential"),
    ("Connect GitLab", {"project": {"type": "string"}, "tkn": {"type": "string"}}, "credential"),
    ("ウォレットを復元", {"phrase": {"type": "string", "description": "24個の単語を入力"}}, "recovery"),
    ("Wallet wiederherstellen", {"woerter": {"type": "string", "title": "Deine 12 Wörter"}}, "recovery"),
    ("Verifica tu identidad", {"dato": {"type": "string", "title": "Tu CURP"}}, "identity"),
    ("Konto eröffnen", {"ausweisnr": {"type": "string"}}, "identity"),
    ("本人確認", {"number": {"type": "string", "title": "運転免許証の番号"}}, "identity"),
])
def test_asks_held_out_forms_3_missed(message: str, fields: dict[str, Any], category: str) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == category, ask


@pytest.mark.parametrize("message,fields", [
    ("Política de seguridad", {"longitud_minima_contrasena": {"type": "integer", "title": "Longitud mínima"}}),
    ("Nouveau contrat ERC-20", {"nom_jeton": {"type": "string", "title": "Nom du jeton"}}),
])
def test_a_name_or_length_of_a_credential_is_a_topic(message: str, fields: dict[str, Any]) -> None:
    assert credential_ask(message, form(**fields)) is None


@pytest.mark.parametrize("name,asks", [
    ("admin_pw", True), ("adminPassword", True),  # "admin" ends in "min", a topic word only when whole
    ("min_password_length", False), ("password_policy", False), ("token_count", False),
])
def test_topic_words_are_whole_words(name: str, asks: bool) -> None:
    assert (credential_ask("Router settings", form(**{name: {"type": "string"}})) is not None) is asks


@pytest.mark.parametrize("message,fields,category", [
    ("Verify your eligibility", {"ssnum": {"type": "string"}}, "identity"),
    ("Datos del contrato", {"num_seg_social": {"type": "string"}}, "identity"),
    ("Accès au compte", {"cle_recup": {"type": "string", "title": "Clé de récupération"}}, "credential"),
    ("Gib die Seed-Wörter ein", {"woerter": {"type": "array", "items": {"type": "string"}}}, "recovery"),
])
def test_asks_held_out_forms_4_missed(message: str, fields: dict[str, Any], category: str) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == category, ask


def test_cjk_topic_words_need_no_word_boundary() -> None:
    """"令牌数量" (number of tokens) is a topic though no space sets "数量" apart."""
    assert credential_ask("令牌数量上限是多少？", form(max_tokens={"type": "integer"})) is None
    assert credential_ask("トークン数の上限は？", form(max={"type": "integer"})) is None


@pytest.mark.parametrize("message,fields,category", [
    ("SSH-Zugang einrichten", {"privater_schluessel": {"type": "string"}}, "credential"),  # "ue" for "ü"
    ("Importer un portefeuille", {"mots_secrets": {"type": "string"}}, "recovery"),
])
def test_asks_held_out_forms_5_missed(message: str, fields: dict[str, Any], category: str) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == category, ask


@pytest.mark.parametrize("message,fields", [
    ("¿Cuántas tarjetas regalo quieres?", {"numero_tarjetas": {"type": "integer"}}),  # a number of cards
    ("您目前持有几张信用卡？", {"count": {"type": "integer"}}),
    ("Chain lookup", {"token_contract_name": {"type": "string"}}),
])
def test_counts_and_names_of_cards_and_tokens_are_topics(message: str, fields: dict[str, Any]) -> None:
    assert credential_ask(message, form(**fields)) is None


@pytest.mark.parametrize("message,fields,category", [
    ("1099 onboarding", {"tin": {"type": "string", "title": "Taxpayer Identification Number"}}, "identity"),
    ("Verify your age", {"dlNumber": {"type": "string"}}, "identity"),
])
def test_asks_held_out_forms_6_missed(message: str, fields: dict[str, Any], category: str) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == category, ask


@pytest.mark.parametrize("message,fields", [
    ("Generar una contraseña aleatoria", {"longitud": {"type": "integer"}, "nota": {"type": "string"}}),
    ("API 网关令牌桶限流配置", {"rate": {"type": "string"}}),
    ("忘年会のシークレットサンタを企画します", {"参加者": {"type": "string"}}),
])
def test_generating_a_password_and_token_buckets_are_topics(message: str, fields: dict[str, Any]) -> None:
    assert credential_ask(message, form(**fields)) is None


def test_a_credential_in_a_free_text_oneof_title_is_an_ask() -> None:
    schema = form(answer={"type": "string", "oneOf": [{"type": "string", "title": "Your online banking password"}]})
    ask = credential_ask("One more thing", schema)
    assert ask is not None and ask.field == "answer"


@pytest.mark.parametrize("message", [
    "Please do not give us your PIN.", "We will never ask for your password.", "请勿在此输入密码。",
    "パスワードは入力しないでください。", "No introduzca su contraseña aquí.", "Geben Sie Ihr Passwort nicht ein.",
    "Ne saisissez jamais votre mot de passe ici.",
])
def test_negated_asks_are_not_asks(message: str) -> None:
    assert credential_ask(message, form(note={"type": "string"})) is None


@pytest.mark.parametrize("message", ["Password policy accepted?", "Send reset email?", "Secret Santa?",
                                     "Analytics cookies?", "2FA enabled?"])
def test_yes_no_questions_about_a_credential_are_not_asks(message: str) -> None:
    assert credential_ask(message, form(answer={"type": "string", "enum": ["yes", "no"]})) is None
    assert credential_ask(message, form(answer={"type": "string"})) is None


@pytest.mark.parametrize("message", ["What is your card number?", "请问您的支付密码是什么？", "Enter your PIN",
                                     "Could you tell us your passport number?"])
def test_questions_that_ask_for_a_value_are_asks(message: str) -> None:
    assert credential_ask(message, form(value={"type": "string"})) is not None


def test_a_message_asks_only_when_a_field_could_carry_it() -> None:
    assert credential_ask("Enter your password", form(ok={"type": "boolean"})) is None


def test_names_credential_is_cached_and_reads_field_names() -> None:
    assert names_credential("session", field_name=True)
    assert not names_credential("session date", field_name=True)
    assert not names_credential("session")
    assert names_credential("SeCrEtAbC123xyz", field_name=True)
    assert not names_credential("secretary", field_name=True)


# -- secrets -------------------------------------------------------------------------------------------


def test_secret_shapes() -> None:
    assert [kind for _, _, kind in secret_spans("key AKIAIOSFODNN7EXAMPLE card 4111 1111 1111 1111")] == \
        ["aws_key", "card_number"]
    assert looks_secret("hunter2", key="password")
    assert not looks_secret("hunter2", key="nickname")
    assert looks_secret("x9F2kQ7vLp3mZ8rT1wYb6NcJ4hGd")
    assert not looks_secret("the quick brown fox jumps over")


def test_runs_of_dashes_and_dots_are_joined_as_one_pattern_joined_them(rng_seed: int) -> None:
    """A run of ``-`` and ``.`` between two letters or digits is a space: the two patterns that start
    with their own character (``-`` first, then ``.``) replace what the one pattern of both did,
    camelCase is found from the upper-case letters as the substrings ``aA``/``AAa`` found it, and a
    dash after white space as ``\\s-`` found it."""
    import random
    import re

    from truecall.judge import _claims, _normalise

    one = re.compile(r"[-.](?<=[^\W_][-.])[-.]*(?=[^\W_])")
    space_dash = re.compile(r"\s-")
    camel = re.compile("[a-z][A-Z]|[A-Z][A-Z][a-z]")
    rng = random.Random(rng_seed)
    for _ in range(20000):
        text = "".join(rng.choice("aZ1-.-. ._é!\t") for _ in range(rng.randint(0, 14)))
        two = _normalise._JOIN_DOT.sub(" ", _normalise._JOIN_DASH.sub(" ", text))
        assert two == one.sub(" ", text), text
        assert (_claims._SPACE_DASH.search(text) is None) == (space_dash.search(text) is None), text
        cases = text.encode("utf-8").translate(_normalise._CASES)
        assert (_normalise._CAMEL_CASES.search(cases) is None) == (b"aA" not in cases and b"AAa" not in cases), text
        word = "".join(rng.choice("aAbB1 é") for _ in range(rng.randint(0, 8)))
        cases = word.encode("utf-8").translate(_normalise._CASES)
        assert (_normalise._CAMEL_CASES.search(cases) is None) == (b"aA" not in cases and b"AAa" not in cases), word
        assert (_normalise._ANY_CAMEL.search(word) is None) == (camel.search(word) is None), word


def test_names_are_blanked_word_by_word_as_in_the_whole_text(rng_seed: int) -> None:
    """Paths, URLs, file names and flags are blanked out of a head word by word (only the words that
    hold a mark of a name) as the pattern over the whole text blanked them."""
    import random

    from truecall.judge import _claims

    rng = random.Random(rng_seed)
    pieces = ["a", "Z", "9", "-", "--", "/", "\\", ".", ".txt", ".md", ".PY", ".json", " ", "  ", "\t", "\n", "\x1c",
              "_", ":", "(", "é", "\u3000", "x", "tmp", "http://", "é.log", ".Txt", "txt", ".jsonl", ".ts", "s", "-.", ".-",
              "\x85", "\xa0"]
    for text in ["File written successfully to notes.txt", "Deleted branch feature/login.", "--no-verify ok",
                 "Failed to fetch https://example.com: 404 Not Found", "a.txt/b c\\d -e --f -- -"] + [
            "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(20000)]:
        assert _claims._unnamed(text) == _claims._NAMES.sub(" \u2026 ", text), repr(text)


def test_a_data_line_is_read_without_its_comma_and_assignment_branches_only_where_it_has_neither(
        rng_seed: int) -> None:
    """A line with no "," and no "=" is read by the data-line pattern without the branches that need one
    (the CSV branch ran over all of a Chinese line): the same answer as the whole pattern, on the
    corpus's lines and generated ones."""
    import random

    from truecall.judge import _claims

    rng = random.Random(rng_seed)
    pieces = ["a", "Z", "9", "12", "2024-01-01 10:00", "10:00:00", "[INFO]", "#", "# ", "- ", "* ", "1. ", "|", "```",
              "> ", "{", "[", "<", "\t", "    ", "def ", "From: ", "x", " ", "=", " = ", ",", ",123", ",1234", "ok",
              "已受理", "，", "：", "é", "\u3000", "-", ".", "_", "\n", "[FILE]"]
    lines = [line for t in _corpus_claim_texts() for line in t.split("\n")] + [
        "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10))) for _ in range(20000)]
    for line in lines:
        assert _claims._data_line(line) == (_claims._DATA_LINE.match(line) is not None), repr(line)
    assert any(_claims._data_line(line) for line in lines) and not all(_claims._data_line(line) for line in lines)


def test_the_evidence_is_where_the_phrase_is_in_the_text_case_folded(rng_seed: int) -> None:
    """A claim's evidence is the text's characters where its phrase is once the whole text is case folded
    — also where the phrase stands as written and only a prefix is folded to check it (letters that
    fold to two, or from two, before it; the phrase written in another case first)."""
    import random

    from truecall.judge import _claims

    def whole(original: str, phrase: str) -> str:
        at = original.casefold().find(phrase)
        return original[at:at + len(phrase)][:80] if at >= 0 else phrase[:80]

    rng = random.Random(rng_seed)
    letters = ["a", "A", "ß", "ss", "SS", "İ", "i", "ﬁ", "fi", "已受理", "受理", "done", "Done", " ", "x", "ǅ", "ǆ", "ΐ"]
    shortcuts = 0
    for _ in range(50000):
        original = "".join(rng.choice(letters) for _ in range(rng.randint(0, 8)))
        phrase = "".join(rng.choice(letters) for _ in range(rng.randint(1, 3))).casefold()
        assert _claims._evidence(original, phrase) == whole(original, phrase), (original, phrase)
        shortcuts += original.find(phrase) >= 0
    assert shortcuts > 1000


# -- the anchors are only a shortcut --------------------------------------------------------------------


def test_anchored_judgment_equals_the_full_one() -> None:
    """Running only the terms whose anchor words a text holds decides every corpus text as running
    every term does (the anchors are a shortcut for speed, never a second rule)."""
    from truecall.judge._claims import _judge

    differ = [t for t in _corpus_claim_texts() if _judge(t) != _judge(t, anchored=False)]
    assert not differ


def _corpus_claim_texts() -> list[str]:
    from _corpus import CORPUS, load

    return [c["text"] for path in sorted(CORPUS.glob("claims*.jsonl")) for c in load(path.name)]


#: Texts made to meet each shortcut of the quick judgment at its edge: a cue glued into a word, a
#: clause cut inside a word, a question asked without "?", reported speech, counts of none, marks of
#: other scripts next to Latin words, a first match that is not valid and a later one that is.
_SHORTCUT_EDGES = [
    "The upload failed, it canbut be retried", "The upload failed, it can be retried", "Upload failed; cannot retry.",
    "ifbut the upload failed", "If the upload failed, retry.", "The job failed unless retried",
    "Your order has been received?", "¿Su pedido ha sido recibido", "订单已受理吗", "注文は受け付けましたか",
    "The vendor said the order is pending", "The vendorsaid the order is pending", "said: your order is queued",
    "errors: 0", "Failed: none", "failures=0", "Upload жnot received", "жif the upload failed", "notreceived",
    "Not received. Your request has been received and will be processed.", "No errors. The export failed.",
    "Der Upload ist keinfehlgeschlagen", "Der Auftrag wurde angenommen nicht", "Der Auftrag wurde angenommen keinesfalls", "Verbindungsfehler beim Upload",
    "La commande n'a pas été envoyée", "Le fichier a été envoyé si", "Il pedido no fue enviado", "Si el pedido fue enviado",
    "The task was not processed. It is queued.", "Queued? No. Your request has been received.", "received",
    "Processing was started but the job failed", "The job is still processing, however the upload has failed",
    "We will email you when the export is ready", "Your payment can be refunded if the order failed",
    "In case the upload failed, retry", "in the queue: the upload failed", "Should the upload fail, retry",
    "The upload failed. Should the job be queued", "En caso de error, el pedido fue cancelado", "au cas ou la commande a échoué",
    "订单未受理", "订单已受理", "如果订单已受理", "注文を受け付けていません", "注文を受け付けました", "受け付けました場合",
    "ok订单已受理", "x注文を受け付けました",
]


def _variants(text: str) -> list[str]:
    """A text and the same text with each rule's cue put before or after it."""
    return [text, "If " + text, text + "?", "The vendor said " + text, "Not " + text, text + " errors: 0",
            "Nothing failed. " + text, text + ", but it can fail", "wenn " + text, "si " + text, "如果" + text]


def test_quick_judgment_equals_the_full_one() -> None:
    """The quick judgment (matches found one at a time until one is valid, pieces whose words the
    text lacks not searched, validity decided from the text's words when it holds no cue) decides
    every corpus text, each with the cues of every rule put around it, and the edge cases of each
    shortcut, as reading every match of every candidate piece in full does."""
    from truecall.judge._claims import _candidates, _claim, _head

    differ = []
    for text in [v for t in _corpus_claim_texts() + _SHORTCUT_EDGES for v in _variants(t)]:
        head, candidates = _head(text), _candidates(text)
        if head and candidates and _claim(head, candidates) != _claim(head, candidates, quick=False):
            differ.append(text)
    assert not differ


_WORD_EDGES = [
    "The orderIsQueued and was notProcessed", "orderReceived", "Your request has been received " + "x" * 390 + "notice",
    "Your request has been received\x01not", "Upload failed\x1fif retried", "Saved to /tmp/not-here.txt: the file was saved",
    "Wrote 'not' into notes.md; the job is queued", "--no-retry: the upload failed", "Contents of out.log: not queued",
    "Your order\nhas been received\n\nnot really", "REQ-20931 received", "The job_is queued", "it's queued, isn't it",
]


def test_the_raw_words_of_an_ascii_text_hold_its_heads_words() -> None:
    """Where the quick reading is given an ASCII text's raw words for its head's words
    (:func:`_words_hold_the_heads`), they hold every word of the normalised head (they only ever rule
    a cue or a piece out), and the judgment equals reading every match in full."""
    from truecall.judge._claims import (_WORD_BYTES, _Reading, _candidates, _claim, _head, _judge,
                                        _words_hold_the_heads)

    given = 0
    for text in [v for t in _corpus_claim_texts() + _SHORTCUT_EDGES + _WORD_EDGES for v in _variants(t)]:
        if not text.isascii():
            continue
        raw = text.encode("ascii").translate(_WORD_BYTES)
        head = _head(text)
        if not head or not _words_hold_the_heads(text, raw):
            continue
        given += 1
        assert _Reading(normalise(head)).tokens() <= set(raw.split()), text
        candidates = _candidates(text)
        if candidates:
            assert _judge(text) == _claim(head, candidates, quick=False), text
    assert given > 500
    assert not _words_hold_the_heads("orderReceived", b"orderreceived")
    assert not _words_hold_the_heads("a\x01b", b"a\x01b")


def test_a_piece_matches_only_where_its_required_words_are() -> None:
    """Every piece that matches a corpus text's head (or an edge case's) matches where the words and
    runs :func:`_required` says it needs are there: the skip of a piece is never a judgment."""
    from truecall.judge._claims import _PIECES, _Reading, _head, _piece_matches, _single, normalise

    readings = [_Reading(normalise(head)) for head in map(_head, _corpus_claim_texts() + _SHORTCUT_EDGES) if head]
    wrong, checked = [], 0
    for i in range(len(_PIECES)):
        _, _, _, words, runs, _, _ = _single(i)
        if not words and not runs:
            continue
        checked += 1
        for reading in readings:
            if _piece_matches(reading, i) and not (words <= reading.tokens() and all(r in reading.norm for r in runs)):
                wrong.append((_PIECES[i][1].pattern, reading.norm))
    assert not wrong
    assert checked > len(_PIECES) // 2  # (most pieces require something: the test could fail)


def _candidates_by_reading_everything(text: str) -> list[int]:
    """The anchors' candidates read as they were before words were remembered: every stem and every
    hint searched for in the whole text."""
    from truecall.judge import _claims as c

    found: set[int] = set()
    if text.isascii():
        raw = text.encode("ascii").translate(c._WORD_BYTES)
        for w in c._WORD_BYTES_SET.intersection(raw.split()):
            found.update(c._BY_WORD_BYTES[w])
    else:
        norm = normalise(text)
        raw = norm.encode("utf-8").translate(c._WORD_BYTES)
        for word in c._WORDS.intersection(raw.decode("utf-8").split()):
            found.update(c._BY_WORD[word])
        for pair in c._PAIRS.intersection(c._PAIR_AT.findall(norm)):
            found.update(c._BY_CJK[pair])
        for ch in c._CHARS.intersection(norm):
            found.update(c._BY_CJK[ch])
    found.update(i for stem, i in c._COMPOUND if stem in raw)
    found.update(i for hint, i in c._HINTED if hint.search(raw) is not None)
    return sorted(found)


def test_remembered_words_give_the_candidates_reading_everything_gives() -> None:
    """The candidates of every corpus text (and its variants, the shortcuts' edge cases, compounds
    and participles written into other words) are those of searching every stem and hint in the
    whole text — the first time its words are seen, and again when they are remembered."""
    from truecall.judge import _claims as c

    texts = [v for t in _corpus_claim_texts() + _SHORTCUT_EDGES for v in _variants(t)] + [
        "Verbindungsfehler", "Der Serverfehler ist behoben", "xfehlerx", "Die Datei wurde hochgeladen", "abgeschickt",
        "La tarea fue completada", "Los archivos se guardaron", "se enviaron los pedidos", "still processing the job",
        "Es wurde aktualisiert", "gespeichert\x0bund", "ge\x01speichert", "based on the data", "ed", "edd",
        "Datei gespeichertж", "жgespeichert", "订单fehler", "fehler订单", "订单ge speichert", "処理済みcompletado", "ид enviado"]
    c._PLAIN_WORDS.clear()
    c._WORD_PIECES.clear()
    c._RAW_PIECES.clear()
    for _ in range(2):
        differ = [t for t in texts if c._candidates(t) != _candidates_by_reading_everything(t)]
        assert not differ
    assert c._PLAIN_WORDS and c._WORD_PIECES and c._RAW_PIECES  # (words were remembered: the second round read them so)


@pytest.mark.parametrize("pattern,left,right,words,runs", [
    ("to be processed", True, True, {b"to", b"be", b"processed"}, ()),
    ("we (have |ve )?received", True, True, {b"we"}, ("received",)),
    ("will (?:email) you", True, True, {b"will", b"email", b"you"}, ()),
    ("pin ?code", True, True, set(), ("pin", "code")),
    ("acceptee?s?", True, True, set(), ("accepte",)),
    ("(?:processed)(?= ?([.!]|$))", True, True, set(), ("processed",)),
    ("fehlgeschlagen", False, False, set(), ("fehlgeschlagen",)),
    ("queued|pending", True, True, set(), ()),
    (r"still \w{2,}ing", True, True, {b"still"}, ("ing",)),
])
def test_what_a_piece_requires(pattern: str, left: bool, right: bool, words: set[bytes], runs: tuple[str, ...]) -> None:
    from truecall.judge._claims import _required

    assert _required(pattern, left, right) == (frozenset(words), runs)


@pytest.mark.parametrize("pattern,runs", [
    ("已受理", ("已受理",)),
    ("(?<!尚)未被?(?:发送)", ("未", "发送")),
    ("将(会)?(被)?(?:处理)", ("将", "处理")),
    ("收到(您|你)的", ("收到", "的")),
    ("(?:完成)(之)?后(会|将|再)", ("完成", "后")),
    ("完成(?=[，,。！!.；;]|$)", ("完成",)),
    ("已(?<![个件条项份笔单台次位名]已)[一-龥]", ("已",)),
    ("(?:確認)は?まだ", ("確認", "まだ")),
    ("但[^。！]{0,30}(?:被拒)", ("但", "被拒")),
    ("受理|受付", ()),
    ("(?i)受理ok", ()),
])
def test_what_a_chinese_or_japanese_piece_requires(pattern: str, runs: tuple[str, ...]) -> None:
    from truecall.judge._claims import _required

    assert _required(pattern, False, False, wide=True) == (frozenset(), runs)


# -- what the probe's word lists missed and misread (issue 24) -----------------------------------------


@pytest.mark.parametrize("text,kind", [
    ("Accepted: the task will run later", "accepted"), ("Your ticket has been created.", "accepted"),
    ("正在处理", "accepted"), ("已加入队列", "accepted"), ("Request received", "accepted"), ("pending", "accepted"),
    ("upstream timed out", "failed"), ("请求超时", "failed"), ("Internal server error", "failed"),
])
def test_what_the_probe_missed_is_a_claim(text: str, kind: str) -> None:
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind


@pytest.mark.parametrize("text", [
    # server-memory read_graph after entities were stored
    '{\n  "entities": [\n    {\n      "type": "entity",\n      "name": "build-42",\n      "entityType": "job",\n'
    '      "observations": [\n        "queued at 10:00",\n        "failed once, retried"\n      ]\n    }\n  ],\n'
    '  "relations": []\n}',
    # a server-filesystem file whose text says "queued"
    "Shopping list\n- milk\n- eggs (queued behind the bread order)\n",
])
def test_what_the_probe_misread_is_data(text: str) -> None:
    assert claim_in_text(text) is None
    assert claim_in_result({"content": [{"type": "text", "text": text}], "isError": False}) is None


def test_the_form_that_says_do_not_give_us_your_pin_is_no_ask() -> None:
    message = "Please provide some information (do *not* give us your password, card number or PIN)."
    assert credential_ask(message, form(name={"type": "string"}, color={"type": "string", "enum": ["red"]})) is None


def test_anchored_form_judgment_equals_the_full_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forms' anchor words only skip a regex that could not match: every name, title, description
    and message of the form corpus is judged alike with the shortcut and without it."""
    from _corpus import load

    from truecall.judge import _forms

    texts = {text for name in ("forms.jsonl", "forms_heldout.jsonl") for case in load(name)
             for text in [case["message"], *_texts(case["schema"])]}
    anchored = {t: (_forms._find(_forms.normalise_name(t), field_name=True, sentence=True),
                    _forms._find(_forms.normalise_name(t), field_name=False, sentence=False)) for t in texts}
    monkeypatch.setattr(_forms, "_ANY_WORDS", _ForAll())
    full = {t: (_forms._find(_forms.normalise_name(t), field_name=True, sentence=True),
                _forms._find(_forms.normalise_name(t), field_name=False, sentence=False)) for t in texts}
    assert anchored == full


class _ForAll(frozenset):  # type: ignore[type-arg]
    def isdisjoint(self, other: object) -> bool:
        return False


def _texts(schema: dict[str, Any]) -> list[str]:
    out = []
    for name, spec in schema.get("properties", {}).items():
        out.append(name)
        for option in [spec, *spec.get("oneOf", []), *spec.get("anyOf", [])]:
            out += [v for k, v in option.items() if k in ("title", "description") and isinstance(v, str)]
    return out


# -- what else a tool's words say (the probe's and the client's lists, now the judge's) -----------------


@pytest.mark.parametrize("text,expected", [
    ("Accepted. Ticket: T-1042", True), ("job id 77 queued", True), ("See #42", True),
    ("request 3f2b8c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f received", True), ("工单号：12345", True),
    ("Referencia: 88412", True), ("Accepted: the task will run later", False), ("queued", False),
])
def test_names_reference(text: str, expected: bool) -> None:
    from truecall.judge import names_reference

    assert names_reference(text) is expected


def test_reference_keys() -> None:
    from truecall.judge import reference_key

    assert reference_key("ticket_id") and reference_key("jobId") and not reference_key("status")


def test_leaks_internals_orders_traces_first() -> None:
    from truecall.judge import leaks_internals

    text = "failed at /srv/app/x.py: Traceback (most recent call last):\n  File \"/srv/app/x.py\", line 3"
    kinds = [kind for _, _, kind in leaks_internals(text)]
    assert kinds[0] == "trace" and "path" in kinds and kinds.index("path") > kinds.index("trace")
    assert leaks_internals("All good, 3 rows.") == []


def test_says_crashed_and_environment() -> None:
    from truecall.judge import environment_names, says_crashed

    assert says_crashed("'NoneType' object has no attribute 'x'") is not None
    assert says_crashed("The value is out of range.") is None
    assert {n for _, _, n in environment_names('{"PATH": "/bin", "HOME": "/root", "USER": "x"}')} == \
        {"PATH", "HOME", "USER"}


@pytest.mark.parametrize("message,expected", [
    ("Unknown tool: frobnicate", True), ("Tool frobnicate not found", True), ("unknown_tool", True),
    ("未知工具：frobnicate", True), ("Outil inconnu : frobnicate", True), ("Invalid arguments", False), (None, False),
])
def test_says_unknown_tool(message: str | None, expected: bool) -> None:
    from truecall.judge import says_unknown_tool

    assert says_unknown_tool(message) is expected


# -- the anchors are sound: every match of a piece holds one of its anchors --------------------------

def _generated_pieces() -> list[tuple[int, Any, Any]]:
    """Every piece of the claims vocabulary that is a pattern (not a grammar hint), with its compiled
    form and a strategy of texts its pattern (look-arounds left out) matches whole."""
    import re

    from hypothesis import strategies as st

    from truecall.judge import _claims
    from truecall.judge._anchors import _without_lookarounds

    pieces = []
    for i, (_, piece) in enumerate(_claims._PIECES):
        if piece.hint:
            continue
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 " + "".join(sorted(  # and the pattern's own other characters
            {c for c in piece.pattern if not c.isascii() or not c.isalnum() and c not in "\\()[]{}?*+|^$.- "}))
        pattern = re.compile(_without_lookarounds(piece.pattern).lstrip("^"))
        pieces.append((i, _claims._piece_regex(piece),
                       st.from_regex(pattern, fullmatch=True, alphabet=alphabet).map(lambda s: " ".join(s.split()))))
    return pieces


_GENERATED: list[tuple[int, Any, Any]] = []


def test_every_match_of_a_piece_holds_one_of_its_anchors() -> None:
    """The anchors only skip pieces that cannot match: for pieces of the vocabulary drawn at random,
    texts generated from the piece's own pattern that the piece matches (from their start, at a word's
    start) make it a candidate.  A piece whose anchors were every word it spells but the common and
    the rarely-alone ones ("(will|ll) (review|process|…) (it|this|your)": "review" is rarely alone,
    so "will review it" made no candidate) fails here."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from truecall.judge import _claims
    from truecall.judge._anchors import starts_word

    if not _GENERATED:
        _GENERATED.extend(_generated_pieces())

    @settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        i, (regex, word, _sentence), texts = data.draw(st.sampled_from(_GENERATED), label="piece")
        text = data.draw(texts, label="text")
        m = regex.match(text)
        if m is None or (word and not starts_word(text, 0)):
            return  # a look-around the generator left out says no: not a match of the piece
        assert i in _claims._candidates(text), f"piece {i} ({_claims._PIECES[i][1].pattern!r}) matches {text!r} but is no candidate"

    check()


# -- forms batch 7: what its misses taught, on new sentences in every language -------------------------


@pytest.mark.parametrize("message,fields", [
    ("Approve the sign-in", {"value": {"type": "string", "title": "Type the 8-digit code"}}),
    ("Approve the sign-in", {"value": {"type": "integer", "description": "The 6 digit verification code"}}),
    ("确认转账", {"value": {"type": "string", "description": "请输入身份验证器中的 6 位数字码"}}),
    ("本人確認を行います", {"value": {"type": "string", "title": "8桁のコードを入力"}}),
    ("本人確認を行います", {"value": {"type": "string", "description": "認証アプリを開いて表示された番号"}}),
    ("Confirma el inicio de sesión", {"valor": {"type": "string",
                                                "description": "Escribe el código de 8 dígitos de tu app"}}),
    ("Anmeldung bestätigen", {"wert": {"type": "string", "title": "Ihr 6-stelliger Code"}}),
    ("Confirmez la connexion", {"valeur": {"type": "string",
                                           "description": "Le code à 6 chiffres de votre application d'authentification"}}),
])
def test_an_n_digit_code_or_an_authenticator_app_is_a_one_time_code(message: str, fields: dict[str, Any]) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == "credential", ask


@pytest.mark.parametrize("message,fields", [
    ("Shipping address", {"zip": {"type": "string", "title": "5-digit ZIP code"}}),
    ("Call routing", {"area": {"type": "string", "description": "The 3-digit area code"}}),
    ("收货地址", {"postcode": {"type": "string", "title": "6位邮政编码"}}),
    ("お届け先", {"zip": {"type": "string", "title": "7桁の郵便番号"}}),
    ("Dirección de envío", {"cp": {"type": "string", "title": "Código postal de 5 dígitos"}}),
    ("Lieferadresse", {"plz": {"type": "string", "title": "5-stellige Postleitzahl"}}),
    ("Adresse de livraison", {"cp": {"type": "string", "title": "Code postal à 5 chiffres"}}),
])
def test_a_qualified_n_digit_code_is_another_code(message: str, fields: dict[str, Any]) -> None:
    assert credential_ask(message, form(**fields)) is None


@pytest.mark.parametrize("message,fields", [
    ("Restore access", {"sentence": {"type": "string", "description": "Enter your 18-word secret sentence"}}),
    ("Restore access", {"words": {"type": "string", "title": "Your 12 or 24 word secret phrase"}}),
    ("导入钱包", {"words": {"type": "string", "description": "请输入 12 个词的助记短语"}}),
    ("ウォレットを復元", {"words": {"type": "string", "title": "24語の秘密のフレーズ"}}),
    ("Restaurar monedero", {"frase": {"type": "string", "description": "Tus 12 o 24 palabras secretas"}}),
    ("Wallet importieren", {"phrase": {"type": "string", "title": "Ihre geheime Phrase (24 Wörter)"}}),
    ("Importer le portefeuille", {"phrase": {"type": "string", "description": "Vos 24 mots secrets"}}),
])
def test_a_secret_phrase_counted_in_words_is_a_recovery_phrase(message: str, fields: dict[str, Any]) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == "recovery", ask


@pytest.mark.parametrize("message,fields", [
    ("Unlock the laptop disk", {"filevault_recovery_key": {"type": "string"}}),
    ("解锁加密磁盘", {"key": {"type": "string", "title": "BitLocker 恢复密钥"}}),
    ("暗号化ドライブのロック解除", {"key": {"type": "string", "title": "BitLocker 回復キー"}}),
    ("Desbloquear la unidad", {"valor": {"type": "string", "title": "Clave de recuperación de BitLocker"}}),
    ("Laufwerk entsperren", {"wert": {"type": "string", "title": "BitLocker-Wiederherstellungsschlüssel"}}),
    ("Déverrouiller le disque", {"valeur": {"type": "string", "title": "Clé de récupération BitLocker"}}),
])
def test_a_disk_recovery_key_is_a_credential(message: str, fields: dict[str, Any]) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == "credential", ask


@pytest.mark.parametrize("message,fields", [
    ("Generate a deploy token for CI", {"token_name": {"type": "string"},
                                        "scope": {"type": "string", "enum": ["read", "write"]}}),
    ("Create a signing secret", {"what_for": {"type": "string", "description": "A label so you can find it later"}}),
    ("创建新的 API 密钥", {"key": {"type": "string", "title": "用于识别的名称"}}),
    ("新しいアクセスキーを発行", {"label": {"type": "string"}, "有効期限_日数": {"type": "integer"}}),
    ("Nuevo token de acceso", {"nombre": {"type": "string"}, "caduca_en_dias": {"type": "integer"}}),
    ("Neuen API-Schlüssel anlegen", {"schluesselname": {"type": "string"}}),
    ("Créer une clé d'accès", {"champ": {"type": "string", "description": "Un intitulé pour retrouver la clé"}}),
])
def test_a_field_that_names_the_credential_does_not_carry_it(message: str, fields: dict[str, Any]) -> None:
    """The message names a credential; the only free-text field takes a name or label for it."""
    assert credential_ask(message, form(**fields)) is None


@pytest.mark.parametrize("message,fields", [
    ("Kiosk lock screen", {"pin_digits_min": {"type": "integer", "title": "Fewest digits a PIN may have"}}),
    ("设置访客网络", {"value": {"type": "integer", "title": "访客密码最长有效小时"}}),
    ("ロック画面の設定", {"value": {"type": "integer", "title": "暗証番号の最大試行回数"}}),
    ("Política de acceso", {"intentos_pin": {"type": "integer", "title": "Intentos de PIN antes del bloqueo"}}),
    ("Sicherheitseinstellungen", {"passwort_tage": {"type": "integer", "title": "Tage bis das Passwort abläuft"}}),
    ("Paramètres de sécurité", {"duree_mdp": {"type": "integer", "title": "Jours avant expiration du mot de passe"}}),
])
def test_a_number_that_measures_a_credential_is_a_setting(message: str, fields: dict[str, Any]) -> None:
    assert credential_ask(message, form(**fields)) is None


@pytest.mark.parametrize("message,fields", [
    ("Enter your API key", {"key_label": {"type": "string"}, "api_key": {"type": "string"}}),
    ("Enter the 6-digit code we sent", {"code": {"type": "integer", "title": "Code (expires in 10 minutes)"}}),
    ("请输入支付密码", {"value": {"type": "integer", "title": "6位数字密码"}}),
    ("暗証番号を入力してください", {"value": {"type": "integer"}}),
    ("Introduce tu contraseña", {"nombre": {"type": "string"}, "valor": {"type": "string"}}),
    ("Bitte PIN eingeben", {"pin": {"type": "integer", "title": "Ihre PIN"}}),
    ("Entrez votre mot de passe", {"nom": {"type": "string", "title": "Nom d'utilisateur"}, "valeur": {"type": "string"}}),
])
def test_a_label_or_measure_beside_a_free_field_leaves_the_ask(message: str, fields: dict[str, Any]) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == "credential", ask


@pytest.mark.parametrize("message,name,pattern", [
    ("Almost there", "code", "^[0-9]{6}$"),
    ("继续", "代码", "^\\d{6}$"),
    ("続行します", "コード", "^[0-9]{4,8}$"),
    ("Casi listo", "codigo", "^\\d{8}$"),
    ("Fast fertig", "Code", "^\\d{6}$"),
    ("Presque terminé", "code", "^[0-9]{4}$"),
])
def test_a_code_field_of_a_few_digits_is_a_one_time_code(message: str, name: str, pattern: str) -> None:
    ask = credential_ask(message, form(**{name: {"type": "string", "pattern": pattern}}))
    assert ask is not None and ask.category == "credential" and ask.field == name, ask


@pytest.mark.parametrize("name,pattern", [
    ("zip_code", "^\\d{5}$"), ("code", "^[A-Z]{6}$"), ("code", "^\\d{10}$"), ("codigo_postal", "^\\d{5}$"),
    ("code", "^\\d{2}$"),
])
def test_a_qualified_or_long_or_lettered_code_is_no_one_time_code(name: str, pattern: str) -> None:
    assert credential_ask("Shipping", form(**{name: {"type": "string", "pattern": pattern}})) is None


@pytest.mark.parametrize("message,fields", [
    ("Security question: what was your first pet's name?", {"pet_name": {"type": "string"}}),
    ("安全问题：您母亲的姓名是什么？请填写母亲的娘家姓", {"名字": {"type": "string"}}),
    ("秘密の質問：母親の旧姓は？", {"名前": {"type": "string"}}),
    ("Pregunta de seguridad: ¿cuál es el apellido de soltera de tu madre?", {"nombre": {"type": "string"}}),
    ("Sicherheitsfrage: Wie lautet der Geburtsname Ihrer Mutter?", {"name": {"type": "string"}}),
    ("Question secrète : quel est le nom de jeune fille de votre mère ?", {"nom": {"type": "string"}}),
])
def test_a_security_answer_is_a_name_so_a_name_field_carries_it(message: str, fields: dict[str, Any]) -> None:
    ask = credential_ask(message, form(**fields))
    assert ask is not None and ask.category == "identity", ask


# Learnt from held-out batch 11 (claims_heldout11.jsonl), each with new sentences of its own; batch 12
# stays held out.
@pytest.mark.parametrize("text,kind", [
    # a path or a name stops at Chinese or Japanese text: the claim after it is read
    ("镜像 registry/app:1.4（标签 v1.4）已加入队列，稍后开始构建。", "accepted"),
    ("ファイル data/export.csv（ブランチ main）をキューに追加しました。", "accepted"),
    ("今日の送信枠（500/500）を使い切ったため、メールは送信されませんでした。", "failed"),
    # scheduled sends are taken on; a running state after a deployment is no work in progress
    ("**邮件已定时发送**\n发送时间：明天 08:00", "accepted"),
    ("ニュースレターは金曜 10:00 に配信予約されています。", "accepted"),
    ("新しいバージョンを本番にデプロイしました。全サーバーが正常に稼働しています。", "completed"),
    ("Your post will go out on Monday at 9:00, as planned.", "accepted"),
    ("The pull request is waiting for 3 approvals before it can be merged.", "accepted"),
    ("Your message will be delivered at 18:00. Nothing has been sent yet.", "accepted"),
    # not executed, quotas used up, refusals with a negated modal
    ("您的导出请求未被处理：本月配额已用完。", "failed"),
    ("Acceso denegado: tu usuario no puede modificar esta carpeta.", "failed"),
    ("Has superado el límite de peticiones por hora. La imagen no fue generada.", "failed"),
    # a retry after a failure that worked is done
    ("El primer envío falló por un timeout, pero el segundo funcionó: el pedido ya está confirmado.", "completed"),
    ("Nach einem fehlgeschlagenen ersten Upload hat es beim zweiten Versuch geklappt.", "completed"),
    # started, with its progress: taken on
    ("La copia de seguridad ha comenzado y debería terminar en diez minutos.", "accepted"),
    ("La synchronisation a démarré, 12 % effectués.", "accepted"),
])
def test_batch_11_paths_in_cjk_schedules_quotas_retries_and_starts(text: str, kind: str) -> None:
    claim = claim_in_text(text)
    assert claim is not None and claim.kind == kind, (text, claim)


@pytest.mark.parametrize("text", [
    # what a status means is no report of the work
    "„Erledigt“ bedeutet, dass die Rechnung bezahlt wurde.",
    "El estado `pending` significa que el pago fue recibido pero aún no se ha procesado.",
    "In this API, `failed` means the job was rejected by the scheduler.",
    # a listing announced as read-only is data
    "Resumen (solo lectura): 4 pedidos en cola, 1 fallido, 20 entregados.",
    "Vue d'ensemble (lecture seule) : 3 paiements en attente, 1 refusé.",
])
def test_definitions_and_read_only_listings_are_no_claim(text: str) -> None:
    assert claim_in_text(text) is None, (text, claim_in_text(text))


def test_a_definition_does_not_reach_past_its_sentence_and_a_plain_means_is_a_report() -> None:
    claim = claim_in_text("`queued` means waiting. The export failed at 40 %.")
    assert claim is not None and claim.kind == "failed"
    claim = claim_in_text("This means the deployment failed.")
    assert claim is not None and claim.kind == "failed"
