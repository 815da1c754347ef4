/* truecall.judge._speedups: the claim judgment of a text (_claims._judge), its quick path in one C call.
 *
 * Why: a client judges every tool result it gets ("does this narrative claim acceptance?"), and the
 * Python judgment of a new 200-character result cost ~20 us, of which ~8 us were the C-level steps
 * (translate, split, set look-ups, regex searches) and the rest the interpreter between them.  This
 * is _claims._judge written out in C — _judge_ascii_python for an ASCII text; for a Latin one (Spanish,
 * French, German, English with a curly apostrophe, a dash or a euro sign) the steps of _judge_unicode,
 * the text normalised here too (latin_normalised) — on the same vocabulary and the same compiled
 * patterns (bind() hands them over).  It makes no judgment of its own.  What it does not do itself it
 * hands to the Python function that does it: normalise() for a text beyond those characters, and
 * _judge_unicode when its normalised form is not one read here (Chinese, Japanese); _head for a text
 * with a quotation, a name, a path or JSON; _valid for a Chinese or Japanese term; _claim for a
 * failure told as past where another claim may stand; _word_pieces for a
 * new word with a stem or an in-word hint in it; _evidence where "ß" folds to two letters.  Each
 * piece is searched only where a match can start (its words and runs, and what its pattern bounds:
 * _claims._bounds), and the rules' alternations of words (_claims._ALTERNATIONS) are searched here.
 * So the Python module stays the one definition and this is a shortcut through it;
 * tests/judge/test_speedups.py checks that the two give the same claim on the corpus, its variants
 * and generated texts.
 *
 * What it keeps of its own: each raw word's pieces (a pure function of the word: a table keyed by its
 * bytes, so that a text's words are looked up without making a Python object of each), each piece's
 * required words and runs, and each language's plain-reading cues, in C form.
 *
 * Optional: a build without a C compiler leaves it out and _claims runs its Python path.
 */
#define _GNU_SOURCE  /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* -- what bind() hands over ------------------------------------------------------------------- */

static PyObject *BY_WORD_BYTES;       /* dict[bytes, list[int]]: a word's anchor pieces */
static PyObject *any_in_word_search;  /* _ANY_IN_WORD.search */
static PyObject *word_pieces;         /* _word_pieces(w) -> tuple[int, ...] */
static PyObject *any_across_search;   /* _ANY_ACROSS.search */
static PyObject *across_pieces;       /* _across_pieces(raw) -> list[int] */
static PyObject *head_py;             /* _head(text) -> str */
static PyObject *data_line_match;     /* _DATA_LINE.match */
static PyObject *intro_match;         /* _INTRO.match */
static PyObject *normalise_ascii;     /* normalise_uncamelled_ascii(head) -> str */
static PyObject *claim_py;            /* _claim(head, candidates, norm, *, tokens=) -> Claim | None */
static PyObject *SINGLE;              /* list: _SINGLE */
static PyObject *single;              /* _single(i) -> tuple */
static PyObject *PIECE_KIND;          /* list[str] */
static PyObject *PIECE_LANGUAGE;      /* list[str] */
static PyObject *PLAIN_CUES;          /* dict[(lang, failed), tuple] */
static PyObject *plain_cues;          /* _plain_cues(key) -> tuple */
static PyObject *judge_unicode;       /* _judge_unicode(text) -> Claim | None */
static PyObject *judge_read;          /* _judge_read(text, norm, candidates, tokens) -> Claim | None */
static PyObject *about_after_match;   /* _ABOUT_AFTER.match */
static PyObject *normalise_py;        /* normalise(text) -> str */
static PyObject *evidence_py;         /* _evidence(original, phrase) -> str */
static PyObject *neg_after_match;     /* _NEG_AFTER.match */
static PyObject *reading_type;        /* _Reading */
static PyObject *valid_py;            /* _valid(reading, term, m) -> bool */
static PyObject *historical_py;       /* _historical(reading, start, term, candidates) -> bool */
static PyObject *PIECE_TERM;          /* list[Term]: each piece's term (CLAIMS[_PIECES[i][0]]) */
static PyObject *claim_type;          /* Claim */
static PyObject *empty_tuple;
static Py_ssize_t WORDS_KEPT, LONGEST_KEPT;
static PyObject *str_zh;
static PyObject *str_span, *str_tokens, *str_failed, *str_de, *str_kind, *str_language, *str_evidence;
static int bound = 0;

static unsigned char word_table[256];  /* _WORD_BYTES */
static int extension_count;
static char extension_text[64][8];     /* _EXTENSIONS */
static int extension_len[64];
static int de_count;                   /* _DE_NEGATION_AFTER */
static char de_text[8][16];
static int de_len[8];
static unsigned char sentence_mark[256];  /* _SENTENCE_MARKS (their ASCII characters) */
static unsigned char decoration[256];     /* _DECORATION_MARKS (ASCII): 1 begins a decoration, 2 goes on one */
static int mail_count;                 /* _MAIL_HEADERS */
static char mail_text[16][16];
static int mail_len[16];
static int code_count;                 /* _CODE_WORDS */
static char code_text[32][16];
static int code_len[32];
static int about_count;                /* _ABOUT_AFTER_LATIN (its ASCII words) */
static char about_text[64][32];
static int about_len[64];
static int across_count;               /* _ACROSS_LITERALS (0: search every text) */
static char across_text[8][32];
static int across_len[8];
static Py_ssize_t piece_count;

/* -- characters ------------------------------------------------------------------------------- */

static inline int is_bytes_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  /* bytes.split() */
static inline int is_str_space(unsigned char c) {  /* str.strip() and \s, in Latin-1 */
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0;
}
static inline int is_token(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static inline int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static inline int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
static inline int is_word(unsigned char c) { return is_token(c) || is_upper(c) || c == '_'; }  /* \w */
static inline unsigned char lower(unsigned char c) { return is_upper(c) ? c + 32 : c; }

/* A word's hash (for the tables here only): eight bytes at a time, mixed. */
static inline uint64_t hash_of(const unsigned char *s, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        v |= (uint64_t)s[i] << (8 * i);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static const unsigned char *find(const unsigned char *s, Py_ssize_t n, const unsigned char *p, Py_ssize_t m) {
    return memmem(s, n, p, m);
}

/* -- calling Python ----------------------------------------------------------------------------- */

static PyObject *call1(PyObject *fn, PyObject *a) {
    PyObject *args[2] = {NULL, a};
    return PyObject_Vectorcall(fn, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static PyObject *call2(PyObject *fn, PyObject *a, PyObject *b) {
    PyObject *args[3] = {NULL, a, b};
    return PyObject_Vectorcall(fn, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static PyObject *call3(PyObject *fn, PyObject *a, PyObject *b, PyObject *c) {
    PyObject *args[4] = {NULL, a, b, c};
    return PyObject_Vectorcall(fn, args + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* fn(text, pos): a bound pattern method */
static PyObject *call_at(PyObject *fn, PyObject *text, Py_ssize_t pos) {
    PyObject *at = PyLong_FromSsize_t(pos);
    if (at == NULL)
        return NULL;
    PyObject *args[3] = {NULL, text, at};
    PyObject *found = PyObject_Vectorcall(fn, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(at);
    return found;
}

/* m.span() as two indexes; -1 on an error */
static int span_of(PyObject *m, Py_ssize_t *start, Py_ssize_t *end) {
    PyObject *args[1] = {m};
    PyObject *span = PyObject_VectorcallMethod(str_span, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (span == NULL)
        return -1;
    if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 2) {
        Py_DECREF(span);
        PyErr_SetString(PyExc_TypeError, "a match's span is no pair");
        return -1;
    }
    *start = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0));
    *end = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
    Py_DECREF(span);
    return PyErr_Occurred() ? -1 : 0;
}

/* -- a set of byte strings (C) ------------------------------------------------------------------- */

typedef struct {
    uint64_t hash;
    const unsigned char *text;  /* not owned (a span of a text, or kept elsewhere) */
    Py_ssize_t len;
} Key;

typedef struct {
    Key *slots;
    Py_ssize_t mask, used;
} KeySet;

static int keyset_init(KeySet *set, Py_ssize_t expected, Key *stack, Py_ssize_t stack_slots) {
    Py_ssize_t size = 16;
    while (size < expected * 2)
        size *= 2;
    set->slots = stack != NULL && size <= stack_slots ? stack : PyMem_Calloc(size, sizeof(Key));
    if (set->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (stack != NULL && set->slots == stack)
        memset(stack, 0, size * sizeof(Key));
    set->mask = size - 1;
    set->used = 0;
    return 0;
}

static void keyset_free(KeySet *set, Key *stack) {
    if (set->slots != NULL && set->slots != stack)
        PyMem_Free(set->slots);
    set->slots = NULL;
}

/* adds (no growing: the caller sized it) */
static void keyset_add(KeySet *set, const unsigned char *text, Py_ssize_t len, uint64_t hash) {
    Py_ssize_t i = (Py_ssize_t)(hash & set->mask);
    while (set->slots[i].text != NULL) {
        Key *k = &set->slots[i];
        if (k->hash == hash && k->len == len && memcmp(k->text, text, len) == 0)
            return;
        i = (i + 1) & set->mask;
    }
    set->slots[i].hash = hash;
    set->slots[i].text = text;
    set->slots[i].len = len;
    set->used++;
}

static int keyset_has(const KeySet *set, const unsigned char *text, Py_ssize_t len, uint64_t hash) {
    Py_ssize_t i = (Py_ssize_t)(hash & set->mask);
    while (set->slots[i].text != NULL) {
        const Key *k = &set->slots[i];
        if (k->hash == hash && k->len == len && memcmp(k->text, text, len) == 0)
            return 1;
        i = (i + 1) & set->mask;
    }
    return 0;
}

/* -- each raw word's pieces (a pure function of the word, kept like _RAW_PIECES / _PLAIN_WORDS) -- */

#define INLINE_WORD 24

typedef struct {
    uint64_t hash;
    int32_t len;          /* 0: an empty slot */
    int32_t count;        /* its pieces (0: a plain word) */
    int *pieces;          /* owned */
    uint64_t added;       /* the judgment that last added its pieces to a text's candidates (judge_text's serial) */
    union {
        unsigned char text[INLINE_WORD];  /* a word of at most INLINE_WORD bytes (most): one cache line */
        unsigned char *longer;            /* owned */
    } at;
} Word;

typedef struct {
    Word *slots;
    Py_ssize_t mask, used, limit;
} Words;

/* Every anchor word's pieces (_BY_WORD_BYTES, made at bind: constant), and the pieces of the words that
 * hold a stem or an in-word hint's literal (read by _ANY_IN_WORD, kept up to WORDS_KEPT). */
static Words anchors, kept_words;

static inline const unsigned char *word_text(const Word *w) {
    return w->len <= INLINE_WORD ? w->at.text : w->at.longer;
}

static Word *word_lookup(const Words *table, const unsigned char *text, Py_ssize_t len, uint64_t hash) {
    if (table->slots == NULL)
        return NULL;
    Py_ssize_t i = (Py_ssize_t)(hash & table->mask);
    while (table->slots[i].len != 0) {
        Word *w = &table->slots[i];
        if (w->hash == hash && w->len == len && memcmp(word_text(w), text, len) == 0)
            return w;
        i = (i + 1) & table->mask;
    }
    return NULL;
}

/* Keeps a word's pieces (taking `pieces`) unless the table is full or the word longer than
 * LONGEST_KEPT (then it is read again next time).  NULL when not kept (`pieces` still the caller's). */
static Word *word_keep(Words *table, const unsigned char *text, Py_ssize_t len, uint64_t hash, int count, int *pieces) {
    if (len > LONGEST_KEPT || table->used >= table->limit || len == 0)
        return NULL;
    if (table->slots == NULL) {
        Py_ssize_t size = 1024;
        while (size < table->limit * 2)
            size *= 2;
        table->slots = PyMem_Calloc(size, sizeof(Word));
        if (table->slots == NULL)
            return NULL;
        table->mask = size - 1;
    }
    unsigned char *longer = NULL;
    if (len > INLINE_WORD && (longer = PyMem_Malloc(len)) == NULL)
        return NULL;
    Py_ssize_t i = (Py_ssize_t)(hash & table->mask);
    while (table->slots[i].len != 0)
        i = (i + 1) & table->mask;
    Word *w = &table->slots[i];
    w->hash = hash;
    w->len = (int32_t)len;
    w->count = count;
    w->pieces = pieces;
    if (longer != NULL) {
        memcpy(longer, text, len);
        w->at.longer = longer;
    } else {
        memcpy(w->at.text, text, len);
    }
    table->used++;
    return w;
}

/* A sequence of ints as a C array (NULL with *count 0 for an empty one); -1 on an error. */
static int ints_of(PyObject *seq, int **out, int *count) {
    PyObject *fast = PySequence_Fast(seq, "pieces: a sequence of ints");
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int *ints = NULL;
    if (n > 0) {
        ints = PyMem_Malloc(n * sizeof(int));
        if (ints == NULL) {
            Py_DECREF(fast);
            PyErr_NoMemory();
            return -1;
        }
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, k));
        if ((v == -1 && PyErr_Occurred()) || v < 0 || v >= piece_count) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_IndexError, "a piece out of range");
            PyMem_Free(ints);
            Py_DECREF(fast);
            return -1;
        }
        ints[k] = (int)v;
    }
    Py_DECREF(fast);
    *out = ints;
    *count = (int)n;
    return 0;
}

/* -- a text's candidates ----------------------------------------------------------------------- */

typedef struct {
    int *items;
    Py_ssize_t count, size;
    int stack[256];
} Ints;

static int ints_add(Ints *ints, const int *items, Py_ssize_t n) {
    if (ints->count + n > ints->size) {
        Py_ssize_t size = ints->size * 2;
        while (size < ints->count + n)
            size *= 2;
        int *grown = PyMem_Malloc(size * sizeof(int));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(grown, ints->items, ints->count * sizeof(int));
        if (ints->items != ints->stack)
            PyMem_Free(ints->items);
        ints->items = grown;
        ints->size = size;
    }
    memcpy(ints->items + ints->count, items, n * sizeof(int));
    ints->count += n;
    return 0;
}

static int compare_ints(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int compare_ssize(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

static void ints_sort_unique(Ints *ints) {
    if (ints->count < 2)
        return;
    int *a = ints->items;
    if (ints->count > 64) {
        qsort(a, ints->count, sizeof(int), compare_ints);
    } else {  /* (a text's few dozen: insertion, where qsort's calls cost more) */
        for (Py_ssize_t k = 1; k < ints->count; k++) {
            int v = a[k];
            Py_ssize_t j = k;
            while (j > 0 && a[j - 1] > v) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = v;
        }
    }
    Py_ssize_t w = 1;
    for (Py_ssize_t k = 1; k < ints->count; k++)
        if (a[k] != a[w - 1])
            a[w++] = a[k];
    ints->count = w;
}

/* Whether a word holds one of _IN_WORD_LITERALS (what every match of a stem or an in-word hint holds). */
static int literal_count;
static char literal_text[64][32];
static int literal_len[64];
static signed char literal_by_first[256][8];  /* the literals that start with each byte (-1 ends) */

static int holds_literal(const unsigned char *text, Py_ssize_t len) {
    if (literal_count == 0)
        return 1;  /* (a hint whose start is unknown: every word is searched) */
    for (Py_ssize_t i = 0; i < len; i++) {
        const signed char *which = literal_by_first[text[i]];
        for (int j = 0; j < 8 && which[j] >= 0; j++) {
            int k = which[j];
            if (i + literal_len[k] <= len && memcmp(text + i, literal_text[k], literal_len[k]) == 0)
                return 1;
        }
    }
    return 0;
}

/* Adds a table word's pieces to `found` unless this judgment (`serial`) added them already: a text says a
 * word again and again (a megabyte of one anchor word added its 25 pieces 160,000 times, 37 MB to sort
 * where _raw_candidates reads the set of the words), and its pieces are the same each time. */
static int add_once(Word *w, uint64_t serial, Ints *found) {
    if (w->count == 0 || w->added == serial)
        return 0;
    w->added = serial;
    return ints_add(found, w->pieces, w->count);
}

/* Adds a raw word's pieces to `found`: its anchor pieces and, where it holds a stem or an in-word
 * hint's literal, what _ANY_IN_WORD and _word_pieces find (kept). */
static int add_word_pieces(const unsigned char *text, Py_ssize_t len, uint64_t hash, uint64_t serial, Ints *found) {
    Word *anchor = word_lookup(&anchors, text, len, hash);
    if (!holds_literal(text, len))
        return anchor != NULL ? add_once(anchor, serial, found) : 0;
    Word *known = word_lookup(&kept_words, text, len, hash);
    if (known != NULL)
        return add_once(known, serial, found);
    PyObject *w = PyBytes_FromStringAndSize((const char *)text, len);
    if (w == NULL)
        return -1;
    PyObject *hit = call1(any_in_word_search, w);
    int *ints = NULL, count = 0;
    if (hit == NULL) {
        Py_DECREF(w);
        return -1;
    }
    if (hit == Py_None) {  /* its anchor pieces alone */
        Py_DECREF(hit);
        Py_DECREF(w);
        if (anchor != NULL && anchor->count) {
            if ((ints = PyMem_Malloc(anchor->count * sizeof(int))) == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            memcpy(ints, anchor->pieces, anchor->count * sizeof(int));
            count = anchor->count;
        }
    } else {
        Py_DECREF(hit);
        PyObject *pieces = call1(word_pieces, w);
        Py_DECREF(w);
        if (pieces == NULL)
            return -1;
        int status = ints_of(pieces, &ints, &count);
        Py_DECREF(pieces);
        if (status < 0)
            return -1;
    }
    int status = count ? ints_add(found, ints, count) : 0;
    Word *kept = word_keep(&kept_words, text, len, hash, count, ints);
    if (kept == NULL)
        PyMem_Free(ints);
    else
        kept->added = serial;
    return status;
}

/* -- a piece, in C form ------------------------------------------------------------------------- */

typedef struct {
    int ready;
    int word, sentence, failed, german;
    PyObject *search, *match;  /* the piece's regex's bound methods */
    PyObject *kind, *language;
    int n_words, n_runs;
    Py_ssize_t width, spaces;  /* the most characters, and spaces, a match spans (-1: no bound) */
    Key *words;                /* required words (their text in `store`) */
    Key *runs;                 /* required runs */
    unsigned char *store;
    PyObject *wide_runs;       /* owned: a Chinese or Japanese piece's runs (a tuple of str; NULL: none) */
} Piece;

static Piece *pieces_table;

static int piece_ready(Py_ssize_t i) {
    Piece *p = &pieces_table[i];
    if (p->ready)
        return 0;
    PyObject *compiled = PyList_GET_ITEM(SINGLE, i);
    if (compiled == Py_None) {
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL)
            return -1;
        compiled = call1(single, index);
        Py_DECREF(index);
    } else {
        Py_INCREF(compiled);
    }
    if (compiled == NULL)
        return -1;
    if (p->ready) {  /* (_single ran Python: another thread may have made this piece meanwhile) */
        Py_DECREF(compiled);
        return 0;
    }
    int status = -1;
    PyObject *words_list = NULL;
    if (!PyTuple_Check(compiled) || PyTuple_GET_SIZE(compiled) != 7 || !PyTuple_Check(PyTuple_GET_ITEM(compiled, 4))) {
        PyErr_SetString(PyExc_TypeError, "_SINGLE: a tuple of seven");
        goto done;
    }
    Py_ssize_t width = PyLong_AsSsize_t(PyTuple_GET_ITEM(compiled, 5));
    Py_ssize_t spaces = width == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(PyTuple_GET_ITEM(compiled, 6));
    if (PyErr_Occurred())
        goto done;
    PyObject *regex = PyTuple_GET_ITEM(compiled, 0);
    int word = PyObject_IsTrue(PyTuple_GET_ITEM(compiled, 1));
    int sentence = PyObject_IsTrue(PyTuple_GET_ITEM(compiled, 2));
    if (word < 0 || sentence < 0)
        goto done;
    words_list = PySequence_List(PyTuple_GET_ITEM(compiled, 3));
    if (words_list == NULL)
        goto done;
    PyObject *runs = PyTuple_GET_ITEM(compiled, 4);
    Py_ssize_t nw = PyList_GET_SIZE(words_list), nr = PyTuple_GET_SIZE(runs), total = 0;
    PyObject *wide_runs = NULL;
    for (Py_ssize_t k = 0; k < nr; k++) {  /* (a Chinese or Japanese piece's runs: looked for in the str, no bounds) */
        PyObject *r = PyTuple_GET_ITEM(runs, k);
        if (PyUnicode_Check(r) && !PyUnicode_IS_ASCII(r)) {
            wide_runs = runs;
            nr = 0;
            width = spaces = -1;
        }
    }
    for (Py_ssize_t k = 0; k < nw; k++) {
        PyObject *w = PyList_GET_ITEM(words_list, k);
        if (!PyBytes_Check(w)) {
            PyErr_SetString(PyExc_TypeError, "a piece's words: bytes");
            goto done;
        }
        total += PyBytes_GET_SIZE(w);
    }
    for (Py_ssize_t k = 0; k < nr; k++) {
        PyObject *r = PyTuple_GET_ITEM(runs, k);
        if (!PyUnicode_Check(r) || !PyUnicode_IS_ASCII(r)) {
            PyErr_SetString(PyExc_TypeError, "a piece's runs: ASCII str");
            goto done;
        }
        total += PyUnicode_GET_LENGTH(r);
    }
    Key *keys = PyMem_Calloc(nw + nr + 1, sizeof(Key));
    unsigned char *store = PyMem_Malloc(total + 1);
    PyObject *search = PyObject_GetAttrString(regex, "search");
    PyObject *match = PyObject_GetAttrString(regex, "match");
    if (keys == NULL || store == NULL || search == NULL || match == NULL) {
        PyMem_Free(keys);
        PyMem_Free(store);
        Py_XDECREF(search);
        Py_XDECREF(match);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    unsigned char *at = store;
    for (Py_ssize_t k = 0; k < nw + nr; k++) {
        const char *text;
        Py_ssize_t len;
        if (k < nw) {
            PyObject *w = PyList_GET_ITEM(words_list, k);
            text = PyBytes_AS_STRING(w);
            len = PyBytes_GET_SIZE(w);
        } else {
            PyObject *r = PyTuple_GET_ITEM(runs, k - nw);
            text = (const char *)PyUnicode_1BYTE_DATA(r);
            len = PyUnicode_GET_LENGTH(r);
        }
        memcpy(at, text, len);
        keys[k].text = at;
        keys[k].len = len;
        keys[k].hash = hash_of(at, len);
        at += len;
    }
    PyObject *kind = PyList_GET_ITEM(PIECE_KIND, i), *language = PyList_GET_ITEM(PIECE_LANGUAGE, i);
    p->word = word;
    p->sentence = sentence;
    p->failed = PyUnicode_Check(kind) && PyUnicode_Compare(kind, str_failed) == 0;
    p->german = PyUnicode_Check(language) && PyUnicode_Compare(language, str_de) == 0;
    p->search = search;
    p->match = match;
    p->kind = Py_NewRef(kind);
    p->language = Py_NewRef(language);
    p->n_words = (int)nw;
    p->n_runs = (int)nr;
    p->width = width < 0 ? -1 : width;
    p->spaces = spaces < 0 ? -1 : spaces;
    p->words = keys;
    p->runs = keys + nw;
    p->store = store;
    p->wide_runs = Py_XNewRef(wide_runs);
    p->ready = 1;
    status = 0;
done:
    Py_XDECREF(words_list);
    Py_DECREF(compiled);
    return status;
}

/* -- a language's plain-reading cues, in C form --------------------------------------------------- */

typedef struct {
    PyObject *language;  /* owned */
    int failed;
    PyObject *cues;      /* owned: the tuple, which owns the texts below */
    KeySet words;        /* cue words */
    Key *word_keys;
    int n_phrases;
    int *phrase_len;     /* each phrase's words: a run of `phrase_keys` */
    Key *phrase_keys;
    int n_texts;
    Key *texts;          /* the ASCII cue texts */
    PyObject *all_texts; /* every cue text (a tuple, which `cues` owns): what a text beyond ASCII is read for */
} Cues;

static Cues cues_table[32];
static int cues_count;

static int key_of_bytes(PyObject *w, Key *k) {
    if (!PyBytes_Check(w)) {
        PyErr_SetString(PyExc_TypeError, "a cue word: bytes");
        return -1;
    }
    k->text = (const unsigned char *)PyBytes_AS_STRING(w);
    k->len = PyBytes_GET_SIZE(w);
    k->hash = hash_of(k->text, k->len);
    return 0;
}

static Cues *cues_for(PyObject *language, int failed) {
    for (int k = 0; k < cues_count; k++)
        if (cues_table[k].failed == failed
            && (cues_table[k].language == language || PyUnicode_Compare(cues_table[k].language, language) == 0))
            return &cues_table[k];
    if (cues_count == 32) {
        PyErr_SetString(PyExc_RuntimeError, "more than 32 languages' cues");
        return NULL;
    }
    PyObject *key = PyTuple_Pack(2, language, failed ? Py_True : Py_False);
    if (key == NULL)
        return NULL;
    PyObject *cues = PyDict_GetItemWithError(PLAIN_CUES, key);
    if (cues != NULL)
        Py_INCREF(cues);
    else if (!PyErr_Occurred())
        cues = call1(plain_cues, key);
    Py_DECREF(key);
    if (cues == NULL)
        return NULL;
    for (int k = 0; k < cues_count; k++)  /* (_plain_cues ran Python: another thread may have kept these meanwhile) */
        if (cues_table[k].failed == failed && cues_table[k].language == language) {
            Py_DECREF(cues);
            return &cues_table[k];
        }
    if (cues_count == 32) {
        Py_DECREF(cues);
        PyErr_SetString(PyExc_RuntimeError, "more than 32 languages' cues");
        return NULL;
    }
    Cues *c = &cues_table[cues_count];
    memset(c, 0, sizeof(*c));
    PyObject *words = NULL, *phrases, *texts;
    if (!PyTuple_Check(cues) || PyTuple_GET_SIZE(cues) != 6 || !PyTuple_Check(PyTuple_GET_ITEM(cues, 1))
        || !PyTuple_Check(PyTuple_GET_ITEM(cues, 4))) {
        PyErr_SetString(PyExc_TypeError, "_PLAIN_CUES: a tuple of six");
        goto fail;
    }
    words = PySequence_List(PyTuple_GET_ITEM(cues, 0));  /* (the frozenset owns its words) */
    if (words == NULL)
        goto fail;
    phrases = PyTuple_GET_ITEM(cues, 1);
    texts = PyTuple_GET_ITEM(cues, 4);
    c->all_texts = PyTuple_GET_ITEM(cues, 5);
    Py_ssize_t nw = PyList_GET_SIZE(words), np = PyTuple_GET_SIZE(phrases), nt = PyTuple_GET_SIZE(texts), nk = 0;
    PyObject **phrase_lists = PyMem_Calloc(np + 1, sizeof(PyObject *));
    if (phrase_lists == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < np; k++) {
        phrase_lists[k] = PySequence_List(PyTuple_GET_ITEM(phrases, k));
        if (phrase_lists[k] == NULL)
            goto fail_phrases;
        nk += PyList_GET_SIZE(phrase_lists[k]);
    }
    c->word_keys = PyMem_Calloc(nw + 1, sizeof(Key));
    c->phrase_len = PyMem_Calloc(np + 1, sizeof(int));
    c->phrase_keys = PyMem_Calloc(nk + 1, sizeof(Key));
    c->texts = PyMem_Calloc(nt + 1, sizeof(Key));
    if (c->word_keys == NULL || c->phrase_len == NULL || c->phrase_keys == NULL || c->texts == NULL
        || keyset_init(&c->words, nw, NULL, 0) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto fail_phrases;
    }
    for (Py_ssize_t k = 0; k < nw; k++) {
        if (key_of_bytes(PyList_GET_ITEM(words, k), &c->word_keys[k]) < 0)
            goto fail_phrases;
        keyset_add(&c->words, c->word_keys[k].text, c->word_keys[k].len, c->word_keys[k].hash);
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < np; k++) {
        Py_ssize_t n = PyList_GET_SIZE(phrase_lists[k]);
        c->phrase_len[k] = (int)n;
        for (Py_ssize_t j = 0; j < n; j++)
            if (key_of_bytes(PyList_GET_ITEM(phrase_lists[k], j), &c->phrase_keys[at++]) < 0)
                goto fail_phrases;
    }
    for (Py_ssize_t k = 0; k < nt; k++) {
        PyObject *t = PyTuple_GET_ITEM(texts, k);
        if (!PyUnicode_Check(t) || !PyUnicode_IS_ASCII(t)) {
            PyErr_SetString(PyExc_TypeError, "an ASCII cue text: str");
            goto fail_phrases;
        }
        c->texts[k].text = PyUnicode_1BYTE_DATA(t);
        c->texts[k].len = PyUnicode_GET_LENGTH(t);
    }
    c->n_phrases = (int)np;
    c->n_texts = (int)nt;
    for (Py_ssize_t k = 0; k < np; k++)
        Py_DECREF(phrase_lists[k]);  /* (the frozensets in the tuple own the words) */
    PyMem_Free(phrase_lists);
    Py_DECREF(words);
    c->language = Py_NewRef(language);
    c->failed = failed;
    c->cues = cues;
    cues_count++;
    return c;
fail_phrases:
    for (Py_ssize_t k = 0; k < np; k++)
        Py_XDECREF(phrase_lists[k]);
    PyMem_Free(phrase_lists);
fail:
    Py_XDECREF(words);
    PyMem_Free(c->word_keys);
    PyMem_Free(c->phrase_len);
    PyMem_Free(c->phrase_keys);
    PyMem_Free(c->texts);
    keyset_free(&c->words, NULL);
    memset(c, 0, sizeof(*c));
    Py_DECREF(cues);
    return NULL;
}

/* -- the head: _head's one-line case ------------------------------------------------------------ */

/* Whether a "." at s[i] starts a file name's extension (_EXTENSION). */
static int extension_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t i) {
    for (int k = 0; k < extension_count; k++) {
        Py_ssize_t len = extension_len[k], j = 0;
        if (i + 1 + len > n)
            continue;
        while (j < len && lower(s[i + 1 + j]) == (unsigned char)extension_text[k][j])
            j++;
        if (j == len && (i + 1 + len == n || !is_word(s[i + 1 + len])))
            return 1;
    }
    return 0;
}

/* _DATA_LINE.match(line) of a line (no line break in it) that starts with a letter and holds no character
 * beyond ASCII: every branch that starts with a mark, a digit or white space is ruled out, and of the
 * others a mail header (one of _MAIL_HEADERS, a colon, white space), a line of code (one of _CODE_WORDS,
 * white space, a word character) and a config assignment (a run of [\w.-], an optional space, "=", an
 * optional space, a character that is no space) are read here; a comma-separated line has no white
 * space.  -1: any other line (the pattern decides). */
static int data_line(const unsigned char *s, Py_ssize_t n) {
    if (n == 0 || !(is_lower(s[0]) || is_upper(s[0])))
        return -1;
    int spaced = 0, colon = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] >= 0x80)
            return -1;
        spaced |= is_str_space(s[i]);
        colon |= s[i] == ':';
    }
    for (int k = 0; colon && k < mail_count; k++) {
        Py_ssize_t len = mail_len[k];
        if (len + 1 < n && memcmp(s, mail_text[k], len) == 0 && s[len] == ':' && is_str_space(s[len + 1]))
            return 1;
    }
    if (!spaced)
        return -1;
    for (int k = 0; k < code_count; k++) {
        Py_ssize_t len = code_len[k];
        if (len < n && memcmp(s, code_text[k], len) == 0 && is_str_space(s[len])) {
            Py_ssize_t j = len;
            while (j < n && is_str_space(s[j]))
                j++;
            if (j < n && is_word(s[j]))
                return 1;
        }
    }
    Py_ssize_t j = 0;
    while (j < n && (is_word(s[j]) || s[j] == '.' || s[j] == '-'))
        j++;
    Py_ssize_t eq = j < n && s[j] == '=' ? j : j + 1 < n && is_str_space(s[j]) && s[j + 1] == '=' ? j + 1 : -1;
    if (eq >= 0 && eq + 1 < n && (!is_str_space(s[eq + 1]) || (eq + 2 < n && !is_str_space(s[eq + 2]))))
        return 1;
    return 0;
}

/* Whether the line text[from:to] is data (_DATA_LINE): 1, 0, or -1 on an error. */
static int is_data_line(PyObject *text, Py_ssize_t from, Py_ssize_t to) {
    int data = data_line(PyUnicode_1BYTE_DATA(text) + from, to - from);
    if (data >= 0)
        return data;
    PyObject *line = PyUnicode_Substring(text, from, to);
    if (line == NULL)
        return -1;
    PyObject *m = call1(data_line_match, line);
    Py_DECREF(line);
    if (m == NULL)
        return -1;
    data = m != Py_None;
    Py_DECREF(m);
    return data;
}

/* _TABLE_ROW.match(line), "[^|\n]{1,40} \| \S": a row needs its first "|" after one to forty characters,
 * the last of them a space, then a space and a character that is no space. */
static int table_row(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t q = 0;
    while (q < n && s[q] != '|')
        q++;
    return q >= 2 && q <= 41 && q + 2 < n && s[q - 1] == ' ' && s[q + 1] == ' ' && !is_str_space(s[q + 2]);
}

static PyObject *INTRO_FIRSTS;  /* frozenset[bytes]: _INTRO_FIRSTS, Latin-1 (it owns the words intro_firsts points into) */
static KeySet intro_firsts;

static unsigned char latin1_word[256], latin1_lower[256];  /* _LATIN1_WORD, _LATIN1_LOWER: \w and str.lower in Latin-1 */

/* Whether _intro may find a data intro in the line ("Contents of notes.txt: …"): 0 when its words before
 * its first colon (\w+, lower-cased: of Latin-1 letters too) hold no intro's first word (_INTRO_FIRSTS), as
 * _intro answers at once; 1 when they do (then _INTRO reads the line); 2 for a word longer than any
 * intro's (then _head reads the text).  (A stand-in for an inert character beyond Latin-1 is read as that
 * character would be: no letter, no colon — what _intro's look at the original's other script leaves to
 * _INTRO, which finds what it finds here.) */
static int may_intro(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t colon = 0;
    while (colon < n && s[colon] != ':')
        colon++;
    if (colon == n)
        return 0;
    for (Py_ssize_t i = 0; i < colon;) {
        if (!latin1_word[s[i]]) {
            i++;
            continue;
        }
        unsigned char word[64];
        Py_ssize_t len = 0;
        while (i < colon && latin1_word[s[i]]) {
            if (len < (Py_ssize_t)sizeof(word))
                word[len] = latin1_lower[s[i]];
            len++;
            i++;
        }
        if (len > (Py_ssize_t)sizeof(word))
            return 2;
        if (keyset_has(&intro_firsts, word, len, hash_of(word, len)))
            return 1;
    }
    return 0;
}

enum { HEAD_ERROR = -2, HEAD_PYTHON = -1, HEAD_NONE = 0, HEAD_TEXT = 1, HEAD_BUILT = 2 };

/* Whether the character at s[i] marks a name (_name_hint): a path's "/" or "\\", a flag's "-" after white
 * space, a file name's extension after a "." (then _unnamed reads the head, in Python). */
static inline int name_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t i) {
    unsigned char c = s[i];
    return c == '/' || c == '\\' || (c == '-' && i > 0 && is_str_space(s[i - 1])) || (c == '.' && extension_at(s, n, i));
}

/* _name_hint of a head whose quotations are blanked out (`blank`: where " … " stands, no character of
 * the head's): it starts with "-", or a character of its own marks a name (name_at). */
static int named(const unsigned char *s, Py_ssize_t n, const unsigned char *blank) {
    if (n > 0 && s[0] == '-')
        return 1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!blank[i] && name_at(s, n, i))
            return 1;
    return 0;
}

/* A head built of Latin-1 characters and "…" (where `blank` says) in *built, a str of the least kind that holds
 * them (CPython's one form of it): HEAD_BUILT, or HEAD_ERROR. */
static int built_head(unsigned char *t, unsigned char *blank, Py_ssize_t n, PyObject **built) {
    /* (not const: gcc takes a stack buffer handed to a const parameter for one read before it is written) */
    Py_UCS4 most = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        most = blank[k] ? 0x2026 : t[k] > most ? t[k] : most;
    if ((*built = PyUnicode_New(n, most)) == NULL)
        return HEAD_ERROR;
    int kind = PyUnicode_KIND(*built);
    for (Py_ssize_t k = 0; k < n; k++)
        PyUnicode_WRITE(kind, PyUnicode_DATA(*built), k, blank[k] ? 0x2026 : (Py_UCS4)t[k]);
    return HEAD_BUILT;
}

/* _NAMES.sub(" … ", word) of a word of Latin-1 (w[0:len], no white space in it; `wb` marks a blanked
 * quotation's "…", which is no character of a name), written to t and tb (its "…" marked): the matches
 * from left to right — at the word's start a flag (--?[A-Za-z][\w-]*) or, where the word holds a "/" or a
 * "\\", the whole word; at the start of a run of [\w.-] the longest part of the run that ends in "." and an
 * extension (_EXTENSIONS in their order, any case) with no word character after it — each " … ".
 * (\w: Latin-1's; re.I takes no Latin-1 letter for an ASCII one.)  The count written. */
static Py_ssize_t names_sub(const unsigned char *w, const unsigned char *wb, Py_ssize_t len, unsigned char *t,
                            unsigned char *tb) {
#define WORD(i) (!wb[i] && latin1_word[w[i]])
#define NAMEY(i) (!wb[i] && (latin1_word[w[i]] || w[i] == '.' || w[i] == '-'))
#define IS(i, c) (!wb[i] && w[i] == (c))
    Py_ssize_t out = 0, p = 0;
    while (p < len) {
        Py_ssize_t e = -1;
        if (p == 0) {
            Py_ssize_t q = IS(0, '-') ? (len > 1 && IS(1, '-') ? 2 : 1) : 0;
            if (q > 0 && q < len && !wb[q] && is_lower(lower(w[q]))) {  /* a flag */
                e = q + 1;
                while (e < len && (WORD(e) || IS(e, '-')))
                    e++;
            }
            for (Py_ssize_t i = 0; e < 0 && i < len; i++)  /* a path */
                if (IS(i, '/') || IS(i, '\\'))
                    e = len;
        }
        if (e < 0 && NAMEY(p) && (p == 0 || !NAMEY(p - 1))) {  /* a file name */
            Py_ssize_t q = p;
            while (q < len && NAMEY(q))
                q++;
            for (Py_ssize_t k = q - 1; e < 0 && k > p; k--) {
                if (!IS(k, '.'))
                    continue;
                for (int x = 0; e < 0 && x < extension_count; x++) {
                    Py_ssize_t el = extension_len[x], j = 0;
                    if (k + 1 + el > len)
                        continue;
                    while (j < el && !wb[k + 1 + j] && lower(w[k + 1 + j]) == (unsigned char)extension_text[x][j])
                        j++;
                    if (j == el && (k + 1 + el == len || !WORD(k + 1 + el)))
                        e = k + 1 + el;
                }
            }
        }
        if (e < 0) {
            t[out] = w[p];
            tb[out++] = wb[p];
            p++;
            continue;
        }
        tb[out] = 0, t[out++] = ' ';
        tb[out] = 1, t[out++] = '.';
        tb[out] = 0, t[out++] = ' ';
        p = e;
    }
    return out;
#undef WORD
#undef NAMEY
#undef IS
}

/* _unnamed(head) of a head of Latin-1 (`s`, `blank`: what unquoted_head makes, or none blanked): each word
 * (between white space) that holds a mark of a name — a "-", "/", "\\", a "." before an extension — read by
 * names_sub, the rest as it stands; the new head in *built (U+2026 where a "…" is).  HEAD_BUILT, or
 * HEAD_ERROR. */
static int unnamed_head(const unsigned char *s, const unsigned char *blank, Py_ssize_t n, PyObject **built) {
    unsigned char stack[1024 * 2];
    Py_ssize_t size = 3 * n + 3;
    unsigned char *t = 2 * size <= (Py_ssize_t)sizeof(stack) ? stack : PyMem_Malloc(2 * size);
    if (t == NULL) {
        PyErr_NoMemory();
        return HEAD_ERROR;
    }
    unsigned char *tb = t + size;
    Py_ssize_t out = 0;
    for (Py_ssize_t i = 0; i < n;) {
        if (!blank[i] && is_str_space(s[i])) {
            t[out] = s[i];
            tb[out++] = 0;
            i++;
            continue;
        }
        Py_ssize_t j = i;
        int mark = 0;
        for (; j < n && (blank[j] || !is_str_space(s[j])); j++)
            mark |= !blank[j] && (s[j] == '-' || s[j] == '/' || s[j] == '\\' || (s[j] == '.' && extension_at(s, n, j)));
        if (mark) {
            out += names_sub(s + i, blank + i, j - i, t + out, tb + out);
        } else {
            memcpy(t + out, s + i, j - i);
            memcpy(tb + out, blank + i, j - i);
            out += j - i;
        }
        i = j;
    }
    int kind = built_head(t, tb, out, built);
    if (t != stack)
        PyMem_Free(t);
    return kind;
}

/* The next match of _QUOTED in a head of Latin-1 (`s`, `n`) from `i`, as the engine finds them from left
 * to right — from a '"', '`', '«' or "'" to the first closing one or line break after it, a match when
 * that is the closing one after at most 400 characters (at least one for "'"): its start (-1: none),
 * `*last` its closing character, `*kept` whether _unquote keeps it (an apostrophe with a letter or a
 * digit next to it outside: "l'export … l'équipe"). */
static Py_ssize_t next_quotation(const unsigned char *s, Py_ssize_t n, Py_ssize_t i, Py_ssize_t *last, int *kept) {
    for (; i < n; i++) {
        unsigned char c = s[i];
        unsigned char close = c == '"' ? '"' : c == '`' ? '`' : c == 0xab ? 0xbb : c == '\'' ? '\'' : 0;
        if (!close)
            continue;
        Py_ssize_t j = i + 1;
        while (j < n && s[j] != close && s[j] != '\n')
            j++;
        Py_ssize_t inner = j - i - 1;
        if (j < n && s[j] == close && inner >= (c == '\'' ? 1 : 0) && inner <= 400) {
            *last = j;
            *kept = c == '\'' && ((i > 0 && Py_UNICODE_ISALNUM(s[i - 1])) || (j + 1 < n && Py_UNICODE_ISALNUM(s[j + 1])));
            return i;
        }
    }
    return -1;
}

/* _unquoted(head) of a head of Latin-1 (`s`, `n`; `name`: whether it has a name as it stands): each match
 * of _QUOTED (next_quotation) made " … " but those _unquote keeps.  HEAD_TEXT when none is blanked and
 * the head has no name (it is the text's); HEAD_BUILT with the new head in `built` when one is and the
 * result has no name; HEAD_PYTHON when it has one (_unnamed reads it), or when one is blanked and
 * `built` is NULL (the head is read through a stand-in: the new head would not hold the text's own
 * characters). */
static int unquoted_head(const unsigned char *s, Py_ssize_t n, int name, PyObject **built) {
    Py_ssize_t at = 0, last = 0;
    int kept = 1;
    while (kept && (at = next_quotation(s, n, at, &last, &kept)) >= 0 && kept)
        at = last + 1;
    if (at < 0)  /* (no quotation blanked: the head as it stands) */
        return name ? HEAD_PYTHON : HEAD_TEXT;
    if (built == NULL)
        return HEAD_PYTHON;
    unsigned char stack[1024 * 2];
    Py_ssize_t size = 3 * n + 3;  /* (an empty quotation, two characters, is three) */
    unsigned char *t = 2 * size <= (Py_ssize_t)sizeof(stack) ? stack : PyMem_Malloc(2 * size);
    if (t == NULL) {
        PyErr_NoMemory();
        return HEAD_ERROR;
    }
    unsigned char *blank = t + size;
    Py_ssize_t w = 0, from = 0;
    for (; at >= 0; at = next_quotation(s, n, last + 1, &last, &kept)) {
        Py_ssize_t upto = kept ? last + 1 : at;  /* (a quotation kept is copied as it stands) */
        memcpy(t + w, s + from, upto - from);
        memset(blank + w, 0, upto - from);
        w += upto - from;
        if (!kept) {
            blank[w] = 0, t[w++] = ' ';
            blank[w] = 1, t[w++] = '.';
            blank[w] = 0, t[w++] = ' ';
        }
        from = last + 1;
    }
    memcpy(t + w, s + from, n - from);
    memset(blank + w, 0, n - from);
    w += n - from;
    int kind = named(t, w, blank) ? unnamed_head(t, blank, w, built) : built_head(t, blank, w, built);
    if (t != stack)
        PyMem_Free(t);
    return kind;
}

/* Where _head(text) is a part of the text itself: HEAD_TEXT and its bounds — the stripped text's first
 * lines (at most three) up to a blank line, a data line, a table row or a data intro's colon ("Found 3
 * open incidents:"), cut at 400 characters, when the head has no quotation and no name; HEAD_NONE when
 * the head is empty (the text is data from its start); HEAD_PYTHON for any other text (_head reads it:
 * JSON, a path, a file name, a flag, an intro's line beyond ASCII; a quotation where `built` is NULL);
 * HEAD_BUILT with the head in `built` when its quotations are blanked out (unquoted_head).  A text of
 * Latin-1. */
static int head_of(PyObject *text, Py_ssize_t *from, Py_ssize_t *to, PyObject **built) {
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), a = 0, b = n;
    while (a < b && is_str_space(s[a]))
        a++;
    while (b > a && is_str_space(s[b - 1]))
        b--;
    if (a == b)
        return HEAD_NONE;
    unsigned char first = s[a];
    if (first == '{' || first == '[' || first == '"' || first == '-')
        return HEAD_PYTHON;  /* (JSON, or a flag first) */
    if ((b - a == 4 && (memcmp(s + a, "true", 4) == 0 || memcmp(s + a, "null", 4) == 0))
        || (b - a == 5 && memcmp(s + a, "false", 5) == 0))
        return HEAD_PYTHON;
    /* the lines (text.split("\n", 3): the first three read) */
    Py_ssize_t end = a, ls = a;
    for (int line = 0; line < 3; line++) {
        Py_ssize_t le = ls;
        while (le < b && s[le] != '\n')
            le++;
        if (line > 0) {  /* a blank line or a table row ends the head */
            int blank = 1;
            for (Py_ssize_t i = ls; blank && i < le; i++)
                blank = is_str_space(s[i]);
            if (blank || table_row(s + ls, le - ls))
                break;
        }
        int data = is_data_line(text, ls, le);  /* a data line too; the first one makes the text data */
        if (data < 0)
            return HEAD_ERROR;
        if (data) {
            if (line == 0)
                return HEAD_NONE;
            break;
        }
        int intro = may_intro(s + ls, le - ls);
        if (intro > 0) {  /* an intro's first word before the colon: _INTRO itself reads the line */
            if (intro == 2)
                return HEAD_PYTHON;
            PyObject *line_text = PyUnicode_Substring(text, ls, le);
            PyObject *m = line_text == NULL ? NULL : call1(intro_match, line_text);
            Py_XDECREF(line_text);
            if (m == NULL)
                return HEAD_ERROR;
            Py_ssize_t m_start = 0, m_end = 0;
            intro = m != Py_None;
            if (intro && span_of(m, &m_start, &m_end) < 0) {
                Py_DECREF(m);
                return HEAD_ERROR;
            }
            Py_DECREF(m);
            if (intro) {  /* the head ends before the intro's colon (_head: line[:intro.end() - 1], no line after) */
                end = ls + m_end - 1;
                break;
            }
        }
        end = le;
        if (le >= b)
            break;
        ls = le + 1;
    }
    if (end - a > 400)
        end = a + 400;
    /* the head: no quotation (_QUOTED needs two of a quote character, or « and »), no name (_name_hint) */
    int quotes[4] = {0, 0, 0, 0};  /* " ' ` « */
    int closing = 0, name = 0;     /* (a name in the head as it stands, in the same pass) */
    for (Py_ssize_t i = a; i < end; i++) {
        unsigned char c = s[i];
        if (c >= 'a' && c < 0x80)  /* (letters: most characters) */
            continue;
        switch (c) {
        case '"': quotes[0]++; break;
        case '\'': quotes[1]++; break;
        case '`': quotes[2]++; break;
        case 0xab: quotes[3]++; break;
        case 0xbb: closing = 1; break;
        case '/': case '\\': case '-': case '.': name |= !name && name_at(s + a, end - a, i - a); break;
        }
    }
    if (quotes[0] > 1 || quotes[1] > 1 || quotes[2] > 1 || (quotes[3] && closing)) {
        int kind = unquoted_head(s + a, end - a, name, built);
        if (kind == HEAD_TEXT) {
            *from = a;
            *to = end;
        }
        return kind;
    }
    if (name) {  /* (a head that starts with "-" was sent to _head above) */
        if (built == NULL)
            return HEAD_PYTHON;  /* (read through a stand-in: the new head would not hold the text's own characters) */
        unsigned char none_stack[512];
        unsigned char *none = end - a <= 512 ? none_stack : PyMem_Calloc(end - a, 1);
        if (none == NULL) {
            PyErr_NoMemory();
            return HEAD_ERROR;
        }
        if (none == none_stack)
            memset(none, 0, end - a);
        int kind = unnamed_head(s + a, none, end - a, built);
        if (none != none_stack)
            PyMem_Free(none);
        return kind;
    }
    *from = a;
    *to = end;
    return HEAD_TEXT;
}

/* The characters beyond ASCII a Latin text holds that normalise() keeps as they are and that no rule
 * read in C names (_claims._INERT: dashes, "€", "°", "→" …): in a normalised form read here each is a
 * byte of its own beyond ASCII (INERT_BYTE + k: past 0x85, which str.split takes for a space), no word
 * character, no space, no mark, as the character is to the rules; the normalised form's str holds the
 * character itself (what the patterns read). */
#define INERT_BYTE 0x86
#define INERT_MAX 24
static Py_UCS4 inert_chars[INERT_MAX];
static int inert_count;
static unsigned char inert_utf8[INERT_MAX][4];
static int inert_utf8_len[INERT_MAX];
static inline int inert_of(Py_UCS4 c) {
    for (int k = 0; k < inert_count; k++)
        if (inert_chars[k] == c)
            return k;
    return -1;
}
static inline int is_inert_byte(unsigned char c) { return c >= INERT_BYTE && c < INERT_BYTE + inert_count; }

/* -- normalising: normalise_uncamelled_ascii of a head of printable ASCII ------------------------ */

enum { HIGH_NONE, HIGH_INERT, HIGH_ANY };  /* joined(): which characters beyond ASCII it takes */

/* The one pass of _joined over a folded text's characters (`kind`: the 1- or 4-byte data of `s` and `t`;
 * `t` holds 2n): camelCase split (_CAMEL: a space before an ASCII capital after a small letter, or before one
 * that a capital precedes and a small letter follows — _fold's step before these, which inserts only
 * between two letters, where none of them looks), lower-cased, a run of "_ - ." that holds a "_" a space
 * (_JOIN_UNDERSCORE), and so one
 * between a letter or digit and another ([^\W_], of any script: _JOIN_DASH, _JOIN_DOT — such a run
 * starts with its "-" or "."; the two never meet, a run with an "_" being gone first); apostrophes and
 * " \t\r\f\v" spaces; runs of spaces one.  The count written, `*from` where it starts once its ends are
 * stripped (only ASCII white space is left here); -1 at a character beyond ASCII `high` does not take.
 * (Inlined with its kind a constant: normalised() and wide_normalised() each get their own loop.) */
static inline __attribute__((always_inline)) Py_ssize_t joined(int kind, const void *restrict s, Py_ssize_t n, void *restrict t,
                                                              Py_ssize_t *from, int high) {
#define LOWER(c) ((c) < 0x80 ? (Py_UCS4)lower((unsigned char)(c)) : (c))
#define ALNUM(c) ((c) < 0x80 ? is_token(lower((unsigned char)(c))) : Py_UNICODE_ISALNUM(c))
#define PUT(c) PyUnicode_WRITE(kind, t, w++, (c))
#define SPACE() do { if (w > 0 && PyUnicode_READ(kind, t, w - 1) != ' ') PUT(' '); } while (0)
    Py_ssize_t w = 0, i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, s, i);
        if (c > 0x7f && high != HIGH_ANY && !(high == HIGH_INERT && is_inert_byte((unsigned char)c)))
            return -1;
        switch (c) {
        case '-': case '.': case '_': {
            Py_ssize_t j = i;
            int underscore = 0;
            for (Py_UCS4 d; j < n && ((d = PyUnicode_READ(kind, s, j)) == '-' || d == '.' || d == '_'); j++)
                underscore |= d == '_';
            if (underscore || (i > 0 && ALNUM(PyUnicode_READ(kind, s, i - 1)) && j < n && ALNUM(PyUnicode_READ(kind, s, j)))) {
                SPACE();
            } else {
                for (Py_ssize_t k = i; k < j; k++)
                    PUT(PyUnicode_READ(kind, s, k));
            }
            i = j;
            continue;
        }
        case ' ': case '\'': case '`': case '\t': case '\r': case '\f': case '\v':
            SPACE();  /* (apostrophes; _SPACES: a run of " \t\r\f\v" one space) */
            break;
        default:
            if (c < 0x80 && is_upper((unsigned char)c) && i > 0) {  /* _CAMEL: a space at "aA" and "A|Aa" (ASCII letters) */
                Py_UCS4 b = PyUnicode_READ(kind, s, i - 1), a = i + 1 < n ? PyUnicode_READ(kind, s, i + 1) : 0;
                if (b < 0x80 && (is_lower((unsigned char)b) || (is_upper((unsigned char)b) && a < 0x80 && is_lower((unsigned char)a))))
                    SPACE();
            }
            PUT(LOWER(c));
        }
        i++;
    }
#undef LOWER
#undef ALNUM
#undef PUT
#undef SPACE
    Py_ssize_t f = 0;  /* .strip(): every white space character at the ends (a line break, \x1c-\x1f) */
    for (Py_UCS4 c; w > f && (c = PyUnicode_READ(kind, t, w - 1)) < 0x80 && is_str_space((unsigned char)c);)
        w--;
    for (Py_UCS4 c; f < w && (c = PyUnicode_READ(kind, t, f)) < 0x80 && is_str_space((unsigned char)c);)
        f++;
    *from = f;
    return w;
}

/* _joined(head.lower(), True) for an ASCII head (joined()).  NULL with no error set: the head has a
 * character beyond ASCII (normalised in Python) — but the bytes that stand for inert characters (`inert`:
 * latin_normalised's; made a str of ASCII and those bytes, which it makes the characters' str). */
static PyObject *normalised(const unsigned char *s, Py_ssize_t n, int inert) {
    unsigned char stack[1024];  /* (what joined() writes: at most 2n, a camelCase space before each capital) */
    unsigned char *t = 2 * n <= (Py_ssize_t)sizeof(stack) ? stack : PyMem_Malloc(2 * n + 1);
    if (t == NULL)
        return PyErr_NoMemory();
    Py_ssize_t from = 0, w = joined(PyUnicode_1BYTE_KIND, s, n, t, &from, inert ? HIGH_INERT : HIGH_NONE);
    PyObject *norm = w < 0 ? NULL : PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, t + from, w - from);
    if (t != stack)
        PyMem_Free(t);
    return norm;
}

/* -- normalising a Latin text: normalise() of Spanish, French, German (and English with a curly apostrophe)
 * in C ------------------------------------------------------------------------------------------------- */

static PyObject *latin1_tables;          /* _normalise._latin1_tables() -> (fold, safe) */
static unsigned char latin_fold[256];    /* each Latin-1 character as _fold's steps make it (its first table) */
static unsigned char latin_safe[256];    /* 1: a character the table folds (its second) */
static int latin_ready = 0;

static int latin_tables(void) {
    if (latin_ready)
        return 0;
    PyObject *tables = PyObject_CallNoArgs(latin1_tables);
    if (tables == NULL)
        return -1;
    PyObject *fold = PyTuple_Check(tables) && PyTuple_GET_SIZE(tables) == 2 ? PyTuple_GET_ITEM(tables, 0) : NULL;
    PyObject *safe = fold != NULL ? PyTuple_GET_ITEM(tables, 1) : NULL;
    if (fold == NULL || !PyBytes_Check(fold) || PyBytes_GET_SIZE(fold) != 256 || !PyBytes_Check(safe)) {
        Py_DECREF(tables);
        PyErr_SetString(PyExc_TypeError, "_latin1_tables: (bytes of 256, bytes)");
        return -1;
    }
    memcpy(latin_fold, PyBytes_AS_STRING(fold), 256);
    memset(latin_safe, 0, 256);
    for (Py_ssize_t k = 0; k < PyBytes_GET_SIZE(safe); k++)
        latin_safe[(unsigned char)PyBytes_AS_STRING(safe)[k]] = 1;
    Py_DECREF(tables);
    latin_ready = 1;
    return 0;
}

/* normalise(text) of a text whose characters are Latin-1, U+2019 (a curly apostrophe), U+2026 ("…": a
 * quotation _head blanked out) or an inert character, when it is ASCII but for those: each Latin-1 character one
 * the table folds (_latin1_tables: its accents off, as NFKC, NFD, the marks' removal and NFC make it —
 * what _fold's Latin-1 branch does; no character of these sets composes with another, so _fold_unicode's
 * steps over a text with the others make the same), U+2019 an apostrophe (_joined makes both a space),
 * "…" NFKC's "...", an inert character itself (`norm_bytes`: the bytes C reads, its INERT_BYTE's); then
 * _joined(_CAMEL.sub(" ", folded).lower()) (normalised()).  NULL with no error set:
 * any other text (normalise() makes its form).  `proxy`: for a text with a character beyond Latin-1,
 * the text with each made U+00A4 (a Latin-1 character that, like them, is no word character, no white
 * space and in no pattern of _head's), which head_of reads (one of Latin-1) where _head read the text:
 * the same lines, data, intros and bounds. */
static PyObject *latin_normalised(PyObject *text, PyObject **proxy, PyObject **norm_bytes) {
    *proxy = NULL;
    *norm_bytes = NULL;
    int kind = PyUnicode_KIND(text);
    if (kind == PyUnicode_4BYTE_KIND)
        return NULL;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (kind == PyUnicode_2BYTE_KIND) {  /* (the whole text read before the tables are made) */
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c > 0xff && c != 0x2019 && c != 0x2026 && inert_of(c) < 0)
                return NULL;
        }
    }
    if (latin_tables() < 0)
        return NULL;
    unsigned char stack[512];
    Py_ssize_t size = kind == PyUnicode_2BYTE_KIND ? 3 * n : n;  /* ("…" is three characters: NFKC's "...") */
    unsigned char *t = size <= (Py_ssize_t)sizeof(stack) ? stack : PyMem_Malloc(size ? size : 1);
    if (t == NULL)
        return PyErr_NoMemory();
    PyObject *norm = NULL;
    int inert = 0;
    Py_ssize_t w = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        unsigned char f;
        if (c == 0x2026) {  /* (a quotation _head blanked out: " … ") */
            t[w++] = '.';
            t[w++] = '.';
            f = '.';
        } else if (c == 0x2019)
            f = '\'';
        else if (c > 0xff) {
            f = INERT_BYTE + inert_of(c);
            inert = 1;
        } else if (!latin_safe[c])
            goto done;  /* (a character the table does not fold) */
        else if ((f = latin_fold[c]) >= 0x80) {  /* (one it leaves beyond ASCII: "ß" and "ð" no, "°" and "£" as they are) */
            int k = inert_of(f);
            if (k < 0)
                goto done;
            f = INERT_BYTE + k;
            inert = 1;
        }
        t[w++] = f;
    }
    if (kind == PyUnicode_2BYTE_KIND) {
        *proxy = PyUnicode_New(n, 0xff);
        if (*proxy == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            PyUnicode_1BYTE_DATA(*proxy)[i] = c > 0xff ? 0xa4 : (unsigned char)c;
        }
    }
    norm = normalised(t, w, inert);
    if (norm != NULL && inert) {  /* the bytes C reads; the str with its inert characters */
        Py_ssize_t m = PyUnicode_GET_LENGTH(norm);
        const unsigned char *b = PyUnicode_1BYTE_DATA(norm);
        for (Py_ssize_t i = 0; i < m; i++) {  /* (one inside a word: its words are not the bytes' — in Python) */
            if (is_inert_byte(b[i]) && ((i > 0 && !is_bytes_space(word_table[b[i - 1]]) && !is_inert_byte(b[i - 1]))
                                        || (i + 1 < m && !is_bytes_space(word_table[b[i + 1]]) && !is_inert_byte(b[i + 1])))) {
                Py_CLEAR(norm);
                break;
            }
        }
        if (norm != NULL) {
            *norm_bytes = PyBytes_FromStringAndSize((const char *)b, m);
            Py_UCS4 most = 0x7f;  /* (a str of the least kind that holds its characters: CPython's one form) */
            for (Py_ssize_t i = 0; i < m; i++)
                if (is_inert_byte(b[i]) && inert_chars[b[i] - INERT_BYTE] > most)
                    most = inert_chars[b[i] - INERT_BYTE];
            PyObject *wide = *norm_bytes == NULL ? NULL : PyUnicode_New(m, most);
            if (wide != NULL)
                for (Py_ssize_t i = 0; i < m; i++)
                    PyUnicode_WRITE(PyUnicode_KIND(wide), PyUnicode_DATA(wide), i,
                                    is_inert_byte(b[i]) ? inert_chars[b[i] - INERT_BYTE] : (Py_UCS4)b[i]);
            Py_SETREF(norm, wide);
        }
    }
    if (norm == NULL) {
        Py_CLEAR(*proxy);
        Py_CLEAR(*norm_bytes);
    }
done:
    if (t != stack)
        PyMem_Free(t);
    return norm;
}

/* -- normalising Chinese and Japanese text in C ------------------------------------------------------ */

/* The characters of Chinese and Japanese text that normalise() keeps as they are: the unified ideographs,
 * hiragana and katakana (with the prolonged sound mark and the iteration marks), 、 。 and the CJK
 * brackets (《》【】「」…), and the symbols such a text (or any) holds — dashes, curly double quotation
 * marks, bullets, arrows, dingbats, emoji — but those NFKC maps (a non-breaking hyphen, "…", "’", the
 * negated arrows, "〈" "〉" of the technical block); a character folded in context (a letter, a
 * mark) is none of them.  (tests/judge/test_speedups.py checks each against normalise(), alone and
 * between letters.) */
static inline int wide_kept(Py_UCS4 c) {
    if (c < 0x2010)
        return 0;
    if (c < 0x3000)  /* (dashes, quotation marks, bullets; arrows; technical and other symbols, dingbats) */
        return (c <= 0x2027 && c != 0x2011 && c != 0x2017 && c != 0x2019 && (c < 0x2024 || c > 0x2026))
               || (c >= 0x2190 && c <= 0x21ff && c != 0x219a && c != 0x219b && c != 0x21ae && (c < 0x21cd || c > 0x21cf))
               || (c >= 0x2300 && c <= 0x23ff && c != 0x2329 && c != 0x232a)
               || (c >= 0x2600 && c <= 0x27bf) || (c >= 0x2b00 && c <= 0x2bff);
    return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3041 && c <= 0x3096) || (c >= 0x30a1 && c <= 0x30fe)
           || c == 0x3001 || c == 0x3002 || c == 0x3005 || (c >= 0x3008 && c <= 0x301f)
           || c == 0xfe0f || (c >= 0x1f300 && c <= 0x1faff);  /* (brackets; emoji and their variation selector) */
}

/* normalise(text) of a text of ASCII and those characters, with fullwidth forms (，：！ａ…: NFKC's ASCII),
 * the ideographic space and Latin-1 letters and symbols (folded by the table latin_normalised reads: to
 * ASCII, or an inert symbol that no step changes — a text latin_normalised leaves, "«sic»" with its
 * guillemet against a word, or one with these characters too): what _fold_unicode's steps make of it (NFKC maps those two sets and keeps
 * the others; nothing of them decomposes into a mark the steps remove, has a case or is a confusable),
 * then camelCase split and _joined (joined(), as normalised() for ASCII).  NULL with no error set: any other
 * text (normalise() makes its form). */
static PyObject *wide_normalised(PyObject *text) {
    int kind = PyUnicode_KIND(text);
    if (PyUnicode_IS_ASCII(text) || latin_tables() < 0)
        return NULL;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_UCS4 stack[9 * 128];
    Py_UCS4 *u = 9 * n <= (Py_ssize_t)(sizeof(stack) / sizeof(Py_UCS4)) ? stack : PyMem_Malloc(9 * n * sizeof(Py_UCS4) + 1);
    if (u == NULL)
        return PyErr_NoMemory();
    Py_UCS4 *t = u + 3 * n;  /* (the folded text is at most 3n — "…" is "..." — and the joined one twice that: a
                                camelCase space before each capital) */
    PyObject *norm = NULL;
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0xff01 && c <= 0xff5e)
            c -= 0xfee0;
        else if (c == 0x3000)
            c = ' ';
        else if (c == 0x2026) {  /* (NFKC's "...": a head's blanked quotation is " … ") */
            u[m++] = '.';
            u[m++] = '.';
            c = '.';
        } else if (c >= 0x80 && c <= 0xff) {  /* (Latin-1: folded as latin_normalised folds it, to ASCII or an inert symbol) */
            if (!latin_safe[c])
                goto done;
            c = latin_fold[c];
            if (c >= 0x80 && inert_of(c) < 0)
                goto done;
        } else if (c >= 0x80 && !wide_kept(c))
            goto done;
        u[m++] = c;
    }
    Py_ssize_t from = 0, w = joined(PyUnicode_4BYTE_KIND, u, m, t, &from, HIGH_ANY);
    norm = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, t + from, w - from);
done:
    if (u != stack)
        PyMem_Free(u);
    return norm;
}

/* _evidence(base, phrase) of an ASCII phrase (`len` characters) in a text of Latin-1 characters and
 * U+2019, "…" and inert characters (the phrase's those INERT_BYTE's): where base.casefold() holds the phrase, as base has it (each character's case folded is one
 * character — NULL with no error where "ß" makes two, or a character is of neither set: _evidence
 * reads it), else the phrase; at most 80 characters. */
static PyObject *latin_evidence(PyObject *base, const unsigned char *phrase, Py_ssize_t len, PyObject *norm,
                                Py_ssize_t start) {
    int kind = PyUnicode_KIND(base);
    const void *data = PyUnicode_DATA(base);
    Py_ssize_t n = PyUnicode_GET_LENGTH(base), keep = len < 80 ? len : 80;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == 0xdf || (c > 0xff && c != 0x2019 && c != 0x2026 && inert_of(c) < 0))
            return NULL;
    }
    for (Py_ssize_t i = 0; i + len <= n; i++) {
        Py_ssize_t j = 0;
        for (; j < len; j++) {  /* (a character beyond ASCII folds to one beyond ASCII: only an inert one is the phrase's) */
            Py_UCS4 c = PyUnicode_READ(kind, data, i + j);
            if (c >= 0x80 ? !(is_inert_byte(phrase[j]) && inert_chars[phrase[j] - INERT_BYTE] == c)
                          : lower((unsigned char)c) != phrase[j])
                break;
        }
        if (j == len)
            return PyUnicode_Substring(base, i, i + keep);
    }
    return PyUnicode_Substring(norm, start, start + keep);
}

/* A word of a text: where it is, how long, its hash. */
typedef struct Span_ {
    Py_ssize_t start, len;
    uint64_t hash;
} Span;

/* -- the reading: _first_valid on a plain reading ------------------------------------------------- */

typedef struct {
    PyObject *norm;               /* borrowed */
    const unsigned char *s;
    Py_ssize_t n;
    const KeySet *tokens;         /* the raw words (given) or the norm's words */
    int plain_known[32], plain_found[32];  /* by cues_table index */
    Py_ssize_t *starts;           /* sentence starts; NULL until needed */
    Py_ssize_t n_starts;
    int dots;                     /* "..." in the norm: -1 until needed */
    const unsigned char *raw;     /* the raw words given to _Reading (`given`): spans of `raw` */
    const struct Span_ *spans;
    Py_ssize_t count;
    int given;
    PyObject *py_tokens;          /* owned: those as a set (or Py_None), made with py_reading */
    const Ints *candidates;       /* the text's candidate pieces */
    PyObject *py_reading;         /* owned: the _Reading the full rules read, made when first needed */
    PyObject *py_candidates;      /* owned: the candidates as a list, made when first needed */
    int wide;                     /* a Chinese or Japanese text read through a view (wide_claim): the quick rule
                                     here, every other in Python */
} Reading;

/* What a reading made while it read (the Python reading, its tokens and candidates, the sentence starts). */
static void reading_release(Reading *r) {
    Py_CLEAR(r->py_reading);
    Py_CLEAR(r->py_tokens);
    Py_CLEAR(r->py_candidates);
    if (r->starts != NULL)
        PyMem_Free(r->starts);
    r->starts = NULL;
}

/* The _Reading(norm, tokens) the full rules (_valid, _historical) read: made once, its marks found once. */
static PyObject *python_set_of(const unsigned char *s, const struct Span_ *spans, Py_ssize_t count);

static PyObject *reading_object(Reading *r) {
    if (r->py_reading != NULL)
        return r->py_reading;
    if (r->py_tokens == NULL
        && (r->py_tokens = r->given ? python_set_of(r->raw, r->spans, r->count) : Py_NewRef(Py_None)) == NULL)
        return NULL;
    r->py_reading = call2(reading_type, r->norm, r->py_tokens);
    return r->py_reading;
}

static int any_text(PyObject *norm, PyObject *texts);
static int any_text_between(PyObject *norm, PyObject *texts, Py_ssize_t from, Py_ssize_t to);
static int texts_readable(PyObject *texts);


/* Whether a pattern's search (or match: `search` 0) finds anything in norm[from:to] read as a str of its own
 * (what _claims does with a slice): 1, 0, or -1. */
static int found_in_part(PyObject *method, PyObject *norm, Py_ssize_t from, Py_ssize_t to) {
    PyObject *part = PyUnicode_Substring(norm, from < 0 ? 0 : from, to);
    if (part == NULL)
        return -1;
    PyObject *m = call1(method, part);
    Py_DECREF(part);
    if (m == NULL)
        return -1;
    int found = m != Py_None;
    Py_DECREF(m);
    return found;
}

static int reading_plain(Reading *r, PyObject *language, int failed) {
    Cues *c = cues_for(language, failed);
    if (c == NULL)
        return -1;
    int k = (int)(c - cues_table);
    if (r->plain_known[k])
        return r->plain_found[k];
    int found = 1;
    for (Py_ssize_t i = 0; found && i <= r->tokens->mask; i++) {  /* tokens.isdisjoint(words) */
        const Key *t = &r->tokens->slots[i];
        if (t->text != NULL && keyset_has(&c->words, t->text, t->len, t->hash))
            found = 0;
    }
    for (int j = 0; found && j < c->n_texts; j++)  /* the ASCII cue texts' pattern: any of them */
        if (find(r->s, r->n, c->texts[j].text, c->texts[j].len) != NULL)
            found = 0;
    if (found && r->wide) {  /* (every cue text) */
        int any = texts_readable(c->all_texts) ? any_text(r->norm, c->all_texts) : 1;  /* (else: not plain, _valid reads) */
        if (any < 0)
            return -1;
        found = !any;
    }
    const Key *phrase = c->phrase_keys;
    for (int j = 0; found && j < c->n_phrases; phrase += c->phrase_len[j], j++) {  /* phrase <= tokens */
        int all = 1;
        for (int q = 0; all && q < c->phrase_len[j]; q++)
            all = keyset_has(r->tokens, phrase[q].text, phrase[q].len, phrase[q].hash);
        if (all)
            found = 0;
    }
    r->plain_known[k] = 1;
    r->plain_found[k] = found;
    return found;
}

static inline int starts_word(const unsigned char *s, Py_ssize_t at) { return at == 0 || !is_token(s[at - 1]); }

/* _Reading.sentence_starts of an ASCII norm: 0; after each of _SENTENCE_MARKS (and after the one space
 * that follows it); past the decoration (_DECORATION_MARKS and spaces) at each of those. */
static Py_UCS4 sentence_mark_wide[8], decoration_wide[8];  /* _SENTENCE_MARKS', _DECORATION_MARKS' beyond ASCII */
static int sentence_mark_wide_count, decoration_wide_count;

/* Whether norm[i] of a wide reading (a character beyond ASCII) is a sentence mark. */
static int wide_sentence_mark(Reading *r, Py_ssize_t i) {
    Py_UCS4 c = PyUnicode_READ_CHAR(r->norm, i);
    for (int k = 0; k < sentence_mark_wide_count; k++)
        if (c == sentence_mark_wide[k])
            return 1;
    return 0;
}

/* Whether norm[i] of a wide reading (a character beyond ASCII) begins a decoration (`first`: _DECORATION_FIRST)
 * or goes on one (_DECORATION's class: dingbats, arrows and the emoji block too). */
static int wide_decoration(Reading *r, Py_ssize_t i, int first) {
    Py_UCS4 c = PyUnicode_READ_CHAR(r->norm, i);
    for (int k = 0; k < decoration_wide_count; k++)
        if (c == decoration_wide[k])
            return 1;
    return (c >= 0x2600 && c <= 0x27bf) || c == 0xfe0f
           || (!first && ((c >= 0x2b00 && c <= 0x2bff) || (c >= 0x1f300 && c <= 0x1faff)));
}

static int reading_starts(Reading *r) {
    if (r->starts != NULL)
        return 0;
    Py_ssize_t size = 2 * r->n + 4, count = 0;
    Py_ssize_t *starts = PyMem_Malloc(2 * size * sizeof(Py_ssize_t));
    if (starts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    starts[count++] = 0;
    for (Py_ssize_t i = 0; i < r->n; i++) {
        unsigned char c = r->s[i];
        if (sentence_mark[c] || (r->wide && c >= 0x80 && wide_sentence_mark(r, i))) {
            starts[count++] = i + 1;
            if (i + 1 < r->n && r->s[i + 1] == ' ')
                starts[count++] = i + 2;
        }
    }
    Py_ssize_t base = count;
    for (Py_ssize_t k = 0; k < base; k++) {
        Py_ssize_t at = starts[k];
        if (at < r->n && (decoration[r->s[at]] == 1 || (r->wide && r->s[at] >= 0x80 && wide_decoration(r, at, 1)))) {
            Py_ssize_t end = at;
            while (end < r->n && (decoration[r->s[end]] || (r->wide && r->s[end] >= 0x80 && wide_decoration(r, end, 0))))
                end++;
            if (end > at)
                starts[count++] = end;
        }
    }
    qsort(starts, count, sizeof(Py_ssize_t), compare_ssize);
    Py_ssize_t w = 0;
    for (Py_ssize_t k = 0; k < count; k++)
        if (w == 0 || starts[k] != starts[w - 1])
            starts[w++] = starts[k];
    r->starts = starts;
    r->n_starts = w;
    return 0;
}

/* _ABOUT_AFTER.match(norm, end) of an ASCII norm: a space, then one of its Latin words that no letter
 * or digit follows (its Chinese and Japanese words are in no ASCII text). */
static int about_after(const unsigned char *s, Py_ssize_t n, Py_ssize_t end) {
    if (end >= n || s[end] != ' ')
        return 0;
    for (int k = 0; k < about_count; k++) {
        Py_ssize_t len = about_len[k], at = end + 1;
        if (at + len <= n && memcmp(s + at, about_text[k], len) == 0 && (at + len == n || !is_token(s[at + len])))
            return 1;
    }
    return 0;
}

enum { FIRST_ERROR = -1, FIRST_NONE = 0, FIRST_FOUND = 1, FIRST_PYTHON = 2 };

/* The least start a match of a piece from `at` on can have: a match holds each of the piece's words
 * and runs, and spans at most `width` characters and `spaces` spaces, so it starts at most that many
 * characters before the end of each one's first occurrence from `at`, and after the space before the
 * `spaces` ones before it (-1: one of them has none from `at`, no match). */
static Py_ssize_t least_start(Reading *r, Piece *p, Py_ssize_t at) {
    Py_ssize_t least = at;
    for (int j = 0; j < p->n_words + p->n_runs; j++) {  /* (the runs follow the words) */
        const Key *k = &p->words[j];
        const unsigned char *found = at < r->n ? find(r->s + at, r->n - at, k->text, k->len) : NULL;
        if (found == NULL)
            return -1;
        Py_ssize_t q = found - r->s;
        if (p->width >= 0 && q + k->len - p->width > least)
            least = q + k->len - p->width;
        if (p->spaces >= 0) {
            Py_ssize_t seen = 0;
            for (Py_ssize_t i = q - 1; i >= least; i--)
                if (r->s[i] == ' ' && ++seen > p->spaces) {
                    least = i + 1;
                    break;
                }
        }
    }
    return least;
}

/* The greatest start a match of a piece can have: the last occurrence of each of its words and runs
 * (a match holds them all); the text's length when it has none. */
static Py_ssize_t latest_start(Reading *r, Piece *p) {
    Py_ssize_t latest = r->n;
    for (int j = 0; j < p->n_words + p->n_runs; j++) {
        const Key *k = &p->words[j];
        Py_ssize_t q = r->n - k->len;
        while (q >= 0 && (r->s[q] != k->text[0] || memcmp(r->s + q, k->text, k->len) != 0))
            q--;
        if (q < latest)
            latest = q;
    }
    return latest;
}

/* Piece p's match at `at` (match()): a new reference — the match, with its span, or Py_None — or NULL. */
static PyObject *match_at(Reading *r, Piece *p, Py_ssize_t at, Py_ssize_t *start, Py_ssize_t *end) {
    PyObject *m = call_at(p->match, r->norm, at);
    if (m != NULL && m != Py_None && span_of(m, start, end) < 0)
        Py_CLEAR(m);
    return m;
}

/* The next match of piece p from `at` that _next_match would give (at a word's start for a word piece,
 * at a sentence's start for a sentence piece): between the least and the greatest start a match can
 * have (least_start, latest_start), by a match at each place a match may start when there are at most
 * FEW_STARTS of them (a search tries every position, each alternative of the pattern's start at each),
 * else by a search from the least: a new reference, Py_None, or NULL. */
#define FEW_STARTS 6
static PyObject *next_match(Reading *r, Piece *p, Py_ssize_t at, Py_ssize_t *start, Py_ssize_t *end) {
    at = least_start(r, p, at);  /* (`at` itself for a piece that holds no words or runs) */
    if (at < 0)
        return Py_NewRef(Py_None);
    if (p->sentence) {
        if (reading_starts(r) < 0)
            return NULL;
        Py_ssize_t latest = latest_start(r, p);
        for (Py_ssize_t k = 0; k < r->n_starts; k++) {
            if (r->starts[k] < at)
                continue;
            if (r->starts[k] > latest)
                break;
            PyObject *m = match_at(r, p, r->starts[k], start, end);
            if (m != Py_None)
                return m;
            Py_DECREF(m);
        }
        return Py_NewRef(Py_None);
    }
    if (p->n_words + p->n_runs > 0) {  /* where a match may start is known: tried there when those are few */
        Py_ssize_t latest = latest_start(r, p), tries = 0;
        for (Py_ssize_t q = at; q <= latest && tries <= FEW_STARTS; q++)
            tries += !p->word || starts_word(r->s, q);
        if (tries <= FEW_STARTS) {
            for (Py_ssize_t q = at; q <= latest; q++) {
                if (p->word && !starts_word(r->s, q))
                    continue;
                PyObject *m = match_at(r, p, q, start, end);
                if (m != Py_None)
                    return m;
                Py_DECREF(m);
            }
            return Py_NewRef(Py_None);
        }
    }
    for (;;) {
        PyObject *m = call_at(p->search, r->norm, at);
        if (m == NULL || m == Py_None)
            return m;
        if (span_of(m, start, end) < 0) {
            Py_DECREF(m);
            return NULL;
        }
        if (!p->word || starts_word(r->s, *start))
            return m;
        Py_DECREF(m);
        at = least_start(r, p, *start + 1);
        if (at < 0)
            return Py_NewRef(Py_None);
    }
}

/* _first_valid's reading: the pieces in their order, each one's matches by start, the first valid one
 * (_valid: its quick rule here, its full rules in valid_full or Python) the claim — but a failure told as
 * past (historical), which is the claim only when no other valid match is, and none where those are:
 * FIRST_FOUND with the piece and the match's span, FIRST_NONE, or FIRST_PYTHON beyond 16 failures told
 * as past (then _claim reads the whole text). */
static PyObject *python_list_of(const Ints *ints);

/* -- the full reading rules: _valid's for an ASCII reading -------------------------------------------
 *
 * _negated, _question, _Reading.reported, _general and _historical written out over the same patterns
 * (_CLAUSE_END, _REPORTED, _DEFINED, _ANSWERED, _HISTORY and each language's conditions and modals) and
 * the same cue words; a Chinese or Japanese piece (never in an ASCII reading) is read by _valid itself. */

static PyObject *rules_of;            /* _rules_of(language) -> tuple */
static PyObject *clause_end_search, *reported_search, *defined_search, *answered_match, *history_search;
/* (a Chinese or Japanese reading's: the yes/no marks, reported speech and earlier attempts as tuples of texts,
   the negation patterns, "ません", the sentence ends beyond ASCII) */
static PyObject *yes_no_words, *reported_cjk, *history_cjk, *neg_zh_search, *neg_ja_after_match, *ja_polite_negation;
static Py_UCS4 sentence_end_wide[8];
static int sentence_end_wide_count;
static PyObject *RETRY_PIECES;        /* frozenset[int] */
static KeySet reported_words, number_marks, neg_words;
static PyObject *REPORTED_WORDS, *NUMBER_MARKS, *NEG_WORDS;  /* (the sets the key sets point into) */
static unsigned char sentence_end[256];

/* The members of `items` (an iterable, kept alive by the caller) as keys: bytes as they are, str only
 * when ASCII letters and digits (what a [a-z0-9]+ word of an ASCII reading can equal). */
static int keyset_from(PyObject *items, KeySet *set) {
    PyObject *list = PySequence_List(items);
    if (list == NULL)
        return -1;
    int status = keyset_init(set, PyList_GET_SIZE(list), NULL, 0);
    for (Py_ssize_t k = 0; status == 0 && k < PyList_GET_SIZE(list); k++) {
        PyObject *item = PyList_GET_ITEM(list, k);
        const unsigned char *text = NULL;
        Py_ssize_t len = 0;
        if (PyBytes_Check(item)) {
            text = (const unsigned char *)PyBytes_AS_STRING(item);
            len = PyBytes_GET_SIZE(item);
        } else if (PyUnicode_Check(item) && PyUnicode_IS_ASCII(item)) {
            text = PyUnicode_1BYTE_DATA(item);
            len = PyUnicode_GET_LENGTH(item);
            for (Py_ssize_t i = 0; text != NULL && i < len; i++)
                if (!is_token(text[i]))
                    text = NULL;
        }
        if (text != NULL && len > 0)
            keyset_add(set, text, len, hash_of(text, len));
    }
    Py_DECREF(list);
    return status;
}

/* A _Cues tuple (words, phrases of words, texts) in C form; its ASCII texts only (an ASCII reading holds
 * no other). */
typedef struct {
    KeySet words;
    int n_phrases;
    int *phrase_len;
    Key *phrase_keys;
    int n_texts;
    Key *texts;
    PyObject *all;  /* every text (the tuple, which the rules' tuple owns): what a Chinese or Japanese reading reads */
} CueSet;

static int cueset_from(PyObject *cues, CueSet *c) {
    memset(c, 0, sizeof(*c));
    if (!PyTuple_Check(cues) || PyTuple_GET_SIZE(cues) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(cues, 1))
        || !PyTuple_Check(PyTuple_GET_ITEM(cues, 2))) {
        PyErr_SetString(PyExc_TypeError, "_speedups: a cue set is (words, phrases, texts)");
        return -1;
    }
    if (keyset_from(PyTuple_GET_ITEM(cues, 0), &c->words) < 0)
        return -1;
    PyObject *phrases = PyTuple_GET_ITEM(cues, 1), *texts = PyTuple_GET_ITEM(cues, 2);
    Py_ssize_t np = PyTuple_GET_SIZE(phrases), nt = PyTuple_GET_SIZE(texts), nk = 0;
    c->all = texts_readable(texts) ? texts : NULL;
    PyObject *lists = PyList_New(np);
    if (lists == NULL)
        return -1;
    for (Py_ssize_t k = 0; k < np; k++) {
        PyObject *words = PySequence_List(PyTuple_GET_ITEM(phrases, k));
        if (words == NULL) {
            Py_DECREF(lists);
            return -1;
        }
        nk += PyList_GET_SIZE(words);
        PyList_SET_ITEM(lists, k, words);
    }
    c->phrase_len = PyMem_Calloc(np + 1, sizeof(int));
    c->phrase_keys = PyMem_Calloc(nk + 1, sizeof(Key));
    c->texts = PyMem_Calloc(nt + 1, sizeof(Key));
    if (c->phrase_len == NULL || c->phrase_keys == NULL || c->texts == NULL) {
        Py_DECREF(lists);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < np; k++) {
        PyObject *words = PyList_GET_ITEM(lists, k);
        c->phrase_len[k] = (int)PyList_GET_SIZE(words);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(words); j++)
            if (key_of_bytes(PyList_GET_ITEM(words, j), &c->phrase_keys[at++]) < 0) {
                Py_DECREF(lists);
                return -1;
            }
    }
    Py_DECREF(lists);  /* (the frozensets in the tuple own the words) */
    c->n_phrases = (int)np;
    for (Py_ssize_t k = 0; k < nt; k++) {
        PyObject *t = PyTuple_GET_ITEM(texts, k);
        if (PyUnicode_Check(t) && PyUnicode_IS_ASCII(t) && PyUnicode_GET_LENGTH(t) > 0) {
            c->texts[c->n_texts].text = PyUnicode_1BYTE_DATA(t);
            c->texts[c->n_texts].len = PyUnicode_GET_LENGTH(t);
            c->n_texts++;
        }
    }
    return 0;
}

typedef struct {
    PyObject *language, *tuple;       /* owned: the tuple owns everything the sets point into */
    int cjk;
    KeySet neg_quick;                 /* the negation cues' words (the quick look) */
    KeySet neg_cues;                  /* the negation cues that a word can be */
    int has_condition, has_modal;
    CueSet condition, modal;
    PyObject *if_before, *if_after, *modals;  /* owned search methods, or NULL */
} Rules;

static Rules rules_table[32];
static int rules_count;

static Rules *rules_for(PyObject *language) {
    for (int k = 0; k < rules_count; k++)
        if (rules_table[k].language == language || PyUnicode_Compare(rules_table[k].language, language) == 0)
            return &rules_table[k];
    if (PyErr_Occurred())
        return NULL;
    if (rules_count == 32) {
        PyErr_SetString(PyExc_RuntimeError, "more than 32 languages' rules");
        return NULL;
    }
    PyObject *t = call1(rules_of, language);
    if (t == NULL)
        return NULL;
    for (int k = 0; k < rules_count; k++)  /* (_rules_of ran Python: another thread may have kept these meanwhile) */
        if (rules_table[k].language == language) {
            Py_DECREF(t);
            return &rules_table[k];
        }
    if (rules_count == 32) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_RuntimeError, "more than 32 languages' rules");
        return NULL;
    }
    Rules *r = &rules_table[rules_count];
    memset(r, 0, sizeof(*r));
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 8) {
        PyErr_SetString(PyExc_TypeError, "_rules_of: a tuple of eight");
        Py_DECREF(t);
        return NULL;
    }
    PyObject *methods[3] = {NULL, NULL, NULL};
    int failed = keyset_from(PyTuple_GET_ITEM(t, 0), &r->neg_quick) < 0 || keyset_from(PyTuple_GET_ITEM(t, 1), &r->neg_cues) < 0;
    if (!failed && PyTuple_GET_ITEM(t, 2) != Py_None) {
        r->has_condition = 1;
        failed = cueset_from(PyTuple_GET_ITEM(t, 2), &r->condition) < 0;
    }
    if (!failed && PyTuple_GET_ITEM(t, 3) != Py_None) {
        r->has_modal = 1;
        failed = cueset_from(PyTuple_GET_ITEM(t, 3), &r->modal) < 0;
    }
    for (int k = 0; !failed && k < 3; k++)
        if (PyTuple_GET_ITEM(t, 4 + k) != Py_None)
            failed = (methods[k] = PyObject_GetAttrString(PyTuple_GET_ITEM(t, 4 + k), "search")) == NULL;
    if (failed) {  /* (the key sets' memory is not freed: an error here is a broken vocabulary, not input) */
        for (int k = 0; k < 3; k++)
            Py_XDECREF(methods[k]);
        Py_DECREF(t);
        memset(r, 0, sizeof(*r));
        return NULL;
    }
    r->cjk = PyObject_IsTrue(PyTuple_GET_ITEM(t, 7)) == 1;
    r->if_before = methods[0];
    r->if_after = methods[1];
    r->modals = methods[2];
    r->language = Py_NewRef(language);
    r->tuple = t;
    rules_count++;
    return r;
}

/* _at_word: a match that starts with a letter or digit starts a word. */
static inline int at_word(const unsigned char *s, Py_ssize_t at) {
    return !is_token(s[at]) || starts_word(s, at);
}

/* Whether the str t stands in a str's data (`kind`, `data`) at q, ending at `to` at the latest. */
static int text_at(int kind, const void *data, Py_ssize_t to, Py_ssize_t q, PyObject *t) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(t);
    if (q + len > to)
        return 0;
    int tkind = PyUnicode_KIND(t);
    const void *tdata = PyUnicode_DATA(t);
    for (Py_ssize_t j = 0; j < len; j++)
        if (PyUnicode_READ(kind, data, q + j) != PyUnicode_READ(tkind, tdata, j))
            return 0;
    return 1;
}

/* -- an alternation of literals (_claims._ALTERNATIONS), searched in C --------------------------- */

typedef struct {
    const unsigned char *text;  /* (in a str of the entries' tuple, which the table owns) */
    Py_ssize_t len;
    int ends_word;              /* (?![a-z0-9]) after it */
} Literal;

typedef struct {
    PyObject *search;           /* the pattern's bound search method (owned: its identity is the key) */
    PyObject *entries;          /* owned: the tuple the literals point into */
    Literal *literals;          /* by first byte, each byte's in the pattern's order */
    int first[257];             /* literals[first[b]:first[b + 1]] begin with byte b */
    int in_c;                   /* 0: the pattern's own search (a literal C does not read) */
    int read;                   /* its literals are kept (the ASCII ones above, the others in `wide`) */
    PyObject *wide;             /* owned: its literals beyond ASCII, (str, ends a word) in the pattern's order */
} Alternation;

static PyObject *ALTERNATIONS;  /* dict[Pattern, tuple[tuple[str, bool], ...]] */
static Alternation alternations[64];
static int alternation_count;

/* The alternation a search method's pattern is (in_c 0 where it is none of _ALTERNATIONS, or holds a
 * literal with an inert character, or one whose code is an inert byte), made when first asked; NULL on an error. */
static Alternation *alternation_of(PyObject *search) {
    for (int k = 0; k < alternation_count; k++)
        if (alternations[k].search == search)
            return &alternations[k];
    if (alternation_count == 64) {
        PyErr_SetString(PyExc_RuntimeError, "more than 64 alternations");
        return NULL;
    }
    PyObject *pattern = PyObject_GetAttrString(search, "__self__");
    if (pattern == NULL)
        return NULL;
    PyObject *entries = PyDict_GetItemWithError(ALTERNATIONS, pattern);
    Py_DECREF(pattern);
    if (entries == NULL && PyErr_Occurred())
        return NULL;
    for (int k = 0; k < alternation_count; k++)  /* (a lookup that ran Python: kept meanwhile?) */
        if (alternations[k].search == search)
            return &alternations[k];
    Alternation *a = &alternations[alternation_count];
    memset(a, 0, sizeof(*a));
    Py_ssize_t n = entries != NULL && PyTuple_Check(entries) ? PyTuple_GET_SIZE(entries) : 0;
    int in_c = n > 0;
    Literal *literals = in_c ? PyMem_Calloc(n, sizeof(Literal)) : NULL;
    if (in_c && literals == NULL)
        return (Alternation *)PyErr_NoMemory();
    int count = 0, per_byte[256] = {0};
    PyObject *wide = in_c ? PyList_New(0) : NULL;
    if (in_c && wide == NULL) {
        PyMem_Free(literals);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyTuple_GET_ITEM(entries, k);
        PyObject *text = PyTuple_Check(e) && PyTuple_GET_SIZE(e) == 2 ? PyTuple_GET_ITEM(e, 0) : NULL;
        if (text == NULL || !PyUnicode_Check(text) || PyUnicode_GET_LENGTH(text) == 0) {
            PyMem_Free(literals);
            Py_XDECREF(wide);
            PyErr_SetString(PyExc_TypeError, "_ALTERNATIONS: (str, bool) entries");
            return NULL;
        }
        if (!PyUnicode_IS_ASCII(text)) {  /* (Chinese, Japanese: in a Latin text's bytes never — but an inert character is) */
            for (Py_ssize_t i = 0; in_c && i < PyUnicode_GET_LENGTH(text); i++) {
                Py_UCS4 c = PyUnicode_READ_CHAR(text, i);
                in_c = inert_of(c) < 0 && !is_inert_byte(c <= 0xff ? (unsigned char)c : 0);
            }
            if (PyList_Append(wide, e) < 0) {
                PyMem_Free(literals);
                Py_DECREF(wide);
                return NULL;
            }
            continue;
        }
        Literal *l = &literals[count++];
        l->text = PyUnicode_1BYTE_DATA(text);
        l->len = PyUnicode_GET_LENGTH(text);
        l->ends_word = PyObject_IsTrue(PyTuple_GET_ITEM(e, 1)) == 1;
        per_byte[l->text[0]]++;
    }
    a->search = Py_NewRef(search);
    a->in_c = in_c;
    a->read = wide != NULL;
    a->wide = wide;
    if (a->read) {  /* (a stable sort by first byte: each byte's literals in the pattern's order) */
        Literal *sorted = PyMem_Calloc(count ? count : 1, sizeof(Literal));
        if (sorted == NULL) {
            PyMem_Free(literals);
            Py_CLEAR(a->search);
            Py_CLEAR(a->wide);
            return (Alternation *)PyErr_NoMemory();
        }
        int at = 0;
        for (int b = 0; b < 256; b++) {
            a->first[b] = at;
            at += per_byte[b];
        }
        a->first[256] = at;
        int fill[256];
        memcpy(fill, a->first, sizeof(fill));
        for (int k = 0; k < count; k++)
            sorted[fill[literals[k].text[0]]++] = literals[k];
        a->literals = sorted;
        a->entries = Py_NewRef(entries);
    }
    PyMem_Free(literals);
    alternation_count++;
    return a;
}

/* The next match of a bound search method in norm[pos:endpos] (a new reference, Py_None, or NULL) with
 * its span: in C where its pattern is an alternation of literals (the first place one of them is, the
 * first of those that begin with that place's byte, a word's end after it where it must end a word —
 * endpos is the text's end for the pattern's look-ahead), else by the search itself. */
static PyObject *search_in(PyObject *search, Reading *r, Py_ssize_t pos, Py_ssize_t endpos, Py_ssize_t *start,
                           Py_ssize_t *end) {
    Alternation *alt = alternation_of(search);
    if (alt == NULL)
        return NULL;
    if (r->wide ? alt->read : alt->in_c) {  /* (a wide reading: its ASCII literals on the view, the others on the str) */
        if (pos < 0)
            pos = 0;
        if (endpos > r->n)
            endpos = r->n;
        int kind = PyUnicode_KIND(r->norm);
        const void *data = PyUnicode_DATA(r->norm);
        for (Py_ssize_t q = pos; q < endpos; q++) {
            unsigned char c = r->s[q];
            for (int k = alt->first[c]; k < alt->first[c + 1]; k++) {  /* (ASCII literals: none begin beyond it) */
                const Literal *l = &alt->literals[k];
                if (q + l->len <= endpos && memcmp(r->s + q, l->text, l->len) == 0
                    && (!l->ends_word || q + l->len == endpos || !is_token(r->s[q + l->len]))) {
                    *start = q;
                    *end = q + l->len;
                    return Py_NewRef(Py_True);
                }
            }
            for (Py_ssize_t k = 0; r->wide && c >= 0x80 && k < PyList_GET_SIZE(alt->wide); k++) {
                PyObject *e = PyList_GET_ITEM(alt->wide, k), *t = PyTuple_GET_ITEM(e, 0);
                Py_ssize_t len = PyUnicode_GET_LENGTH(t);
                if (text_at(kind, data, endpos, q, t)
                    && (PyObject_IsTrue(PyTuple_GET_ITEM(e, 1)) != 1 || q + len == endpos || !is_token(r->s[q + len]))) {
                    *start = q;
                    *end = q + len;
                    return Py_NewRef(Py_True);
                }
            }
        }
        return Py_NewRef(Py_None);
    }
    PyObject *norm = r->norm;
    PyObject *a = PyLong_FromSsize_t(pos), *b = PyLong_FromSsize_t(endpos);
    PyObject *m = NULL;
    if (a != NULL && b != NULL) {
        PyObject *args[4] = {NULL, norm, a, b};
        m = PyObject_Vectorcall(search, args + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    if (m != NULL && m != Py_None && span_of(m, start, end) < 0)
        Py_CLEAR(m);
    return m;
}

/* _words_in(regex, text, pos, endpos): the first match that starts a word (`base`: where the text
 * starts, for a clause read on its own), found from `pos`: 1 with its span, 0, or -1. */
static int word_in(PyObject *search, Reading *r, Py_ssize_t base, Py_ssize_t pos, Py_ssize_t endpos, Py_ssize_t *start,
                   Py_ssize_t *end) {
    for (;;) {
        PyObject *m = search_in(search, r, pos, endpos, start, end);
        if (m == NULL)
            return -1;
        if (m == Py_None) {
            Py_DECREF(m);
            return 0;
        }
        Py_DECREF(m);
        if (*start == base || at_word(r->s, *start))
            return 1;
        pos = *start + 1;
    }
}

/* _Reading.clause_start: the end of the last clause mark in the 80 characters before `start` (-1: none
 * there, and `start` is beyond 80). */
static int clause_start_of(Reading *r, Py_ssize_t start, Py_ssize_t *found) {
    Py_ssize_t pos = start > 80 ? start - 80 : 0, last = -1, s0, e0;
    for (;;) {
        PyObject *m = search_in(clause_end_search, r, pos, start, &s0, &e0);
        if (m == NULL)
            return -1;
        if (m == Py_None) {
            Py_DECREF(m);
            break;
        }
        Py_DECREF(m);
        if (at_word(r->s, s0))
            last = e0;
        pos = e0 > s0 ? e0 : s0 + 1;
    }
    *found = last >= 0 ? last : start <= 80 ? 0 : -1;
    return 0;
}

/* _Reading.clause(start, end). */
static int clause_of(Reading *r, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *from, Py_ssize_t *to) {
    Py_ssize_t cs, s0, e0;
    if (clause_start_of(r, start, &cs) < 0)
        return -1;
    PyObject *m = search_in(clause_end_search, r, end, r->n, &s0, &e0);
    if (m == NULL)
        return -1;
    *from = cs < 0 ? (start > 80 ? start - 80 : 0) : cs;
    *to = m == Py_None ? r->n : s0;
    Py_DECREF(m);
    return 0;
}

/* The [a-z0-9]+ words of norm[from:to] as _WORD.findall reads them (a word cut by `from` or `to` is cut),
 * into spans (at most `max`); their count. */
static Py_ssize_t words_between(Reading *r, Py_ssize_t from, Py_ssize_t to, Span *spans, Py_ssize_t max) {
    Py_ssize_t count = 0, i = from < 0 ? 0 : from;
    if (to > r->n)
        to = r->n;
    while (i < to && count < max) {
        while (i < to && !is_token(r->s[i]))
            i++;
        Py_ssize_t j = i;
        while (j < to && is_token(r->s[j]))
            j++;
        if (j > i) {
            spans[count].start = i;
            spans[count].len = j - i;
            spans[count].hash = hash_of(r->s + i, j - i);
            count++;
        }
        i = j;
    }
    return count;
}

static int de_after(Reading *r, Py_ssize_t end) {  /* norm.startswith(_DE_NEGATION_AFTER, end) */
    for (int k = 0; k < de_count; k++)
        if (end + de_len[k] <= r->n && memcmp(r->s + end, de_text[k], de_len[k]) == 0)
            return 1;
    return 0;
}

static int neg_after(Reading *r, Py_ssize_t e) {  /* _NEG_AFTER.match(norm, end): it starts "\s?[:=]" */
    const unsigned char *s = r->s;
    if (!(e < r->n && (s[e] == ':' || s[e] == '=' || (is_str_space(s[e]) && e + 1 < r->n && (s[e + 1] == ':' || s[e + 1] == '=')))))
        return 0;
    PyObject *after = call_at(neg_after_match, r->norm, e);
    if (after == NULL)
        return -1;
    int found = after != Py_None;
    Py_DECREF(after);
    return found;
}

static int disjoint(const KeySet *tokens, const KeySet *words) {  /* tokens.isdisjoint(words) */
    for (Py_ssize_t i = 0; i <= tokens->mask; i++) {
        const Key *t = &tokens->slots[i];
        if (t->text != NULL && keyset_has(words, t->text, t->len, t->hash))
            return 0;
    }
    return 1;
}

static int all_digits(const unsigned char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(s[i] >= '0' && s[i] <= '9'))
            return 0;
    return n > 0;
}

/* _negated(reading, start, end, term) of a Latin term (a Chinese or Japanese one in a wide reading): 1, 0,
 * or -1. */
static int negated(Reading *r, Rules *rules, Piece *p, Py_ssize_t start, Py_ssize_t end) {
    int found = neg_after(r, end);
    if (found)
        return found;
    if (!rules->cjk && starts_word(r->s, start) && disjoint(r->tokens, &rules->neg_quick))
        return p->german && de_after(r, end);
    Py_ssize_t cs;
    if (clause_start_of(r, start, &cs) < 0)
        return -1;
    int whole = cs >= 0;
    if (!whole)
        cs = start - 80;
    if (rules->cjk) {  /* Chinese: a negation just before the match, in its clause; Japanese: one just after it */
        if (p->language == str_zh || PyUnicode_Compare(p->language, str_zh) == 0)
            return found_in_part(neg_zh_search, r->norm, cs, start);
        found = found_in_part(neg_ja_after_match, r->norm, end, end + 8 < r->n ? end + 8 : r->n);
        if (found <= 0)
            return found;
        Py_ssize_t polite = PyUnicode_Find(r->norm, ja_polite_negation, start, end, 1);
        return polite == -2 ? -1 : polite == -1;
    }
    Span words[8];
    Py_ssize_t n = 0, from = cs;
    /* the clause's last four words (of all its words: counted up to five, then the last four) */
    Span all[512];
    Py_ssize_t total = words_between(r, from, start, all, 512);
    if (total == 512)
        return -2;  /* (a clause of more words than kept here: _negated reads it) */
    if (total < 5 && !whole) {
        Py_ssize_t pos = 0, last = 0, s0, e0;
        for (;;) {
            PyObject *m = search_in(clause_end_search, r, pos, start, &s0, &e0);
            if (m == NULL)
                return -1;
            if (m == Py_None) {
                Py_DECREF(m);
                break;
            }
            Py_DECREF(m);
            if (at_word(r->s, s0) && e0 > last)
                last = e0;
            pos = e0 > s0 ? e0 : s0 + 1;
        }
        total = words_between(r, last, start, all, 512);
        if (total == 512)
            return -2;
    }
    for (Py_ssize_t k = total > 4 ? total - 4 : 0; k < total; k++)
        words[n++] = all[k];
    for (Py_ssize_t k = 0; k < n; k++) {
        const unsigned char *w = r->s + words[k].start;
        if (!keyset_has(&rules->neg_cues, w, words[k].len, words[k].hash))
            continue;
        if (k + 1 < n && all_digits(r->s + words[k + 1].start, words[k + 1].len)
            && keyset_has(&number_marks, w, words[k].len, words[k].hash))
            continue;  /* ("n° 77", "no. 5": a number's mark) */
        return 1;
    }
    return p->german && de_after(r, end);
}

/* Whether norm[i] ends a sentence (_SENTENCE_ENDS: in a Chinese or Japanese reading, its marks beyond
 * ASCII too). */
static inline int ends_sentence(Reading *r, Py_ssize_t i) {
    if (r->s[i] < 0x80 || !r->wide)
        return sentence_end[r->s[i]];
    Py_UCS4 c = PyUnicode_READ_CHAR(r->norm, i);
    for (int k = 0; k < sentence_end_wide_count; k++)
        if (c == sentence_end_wide[k])
            return 1;
    return 0;
}

/* _Reading.sentence(start, end). */
static void sentence_of(Reading *r, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *from, Py_ssize_t *to) {
    Py_ssize_t a = 0, b = r->n;
    for (Py_ssize_t i = start - 1; i >= 0; i--)
        if (ends_sentence(r, i)) {
            a = i + 1;
            break;
        }
    for (Py_ssize_t i = end; i < r->n; i++)
        if (ends_sentence(r, i)) {
            b = i;
            break;
        }
    *from = a;
    *to = b;
}

/* _question of an ASCII reading: its sentence ends with "?" ("¿" and the yes/no marks are in no ASCII
 * text). */
static int question(Reading *r, Py_ssize_t start, Py_ssize_t end) {
    if (r->wide) {  /* (_question: "？", "¿" and the yes/no marks as well) */
        int kind = PyUnicode_KIND(r->norm);
        const void *data = PyUnicode_DATA(r->norm);
        int asks = memchr(r->s, '?', r->n) != NULL;
        for (Py_ssize_t i = 0; !asks && i < r->n; i++)
            asks = r->s[i] >= 0x80 && (PyUnicode_READ(kind, data, i) == 0xff1f || PyUnicode_READ(kind, data, i) == 0xbf);
        if (!asks && (asks = any_text(r->norm, yes_no_words)) < 0)
            return -1;
        if (!asks)
            return 0;
        Py_ssize_t a, b;
        sentence_of(r, start, end, &a, &b);
        if (b < r->n && (r->s[b] == '?' || (r->s[b] >= 0x80 && PyUnicode_READ(kind, data, b) == 0xff1f)))
            return 1;
        int wide = 0;
        for (Py_ssize_t i = a; i < b; i++) {
            if (r->s[i] >= 0x80 && PyUnicode_READ(kind, data, i) == 0xbf)
                return 1;
            wide |= r->s[i] >= 0x80;
        }
        return wide ? any_text_between(r->norm, yes_no_words, a, b) : 0;
    }
    if (memchr(r->s, '?', r->n) == NULL)
        return 0;
    Py_ssize_t a, b;
    sentence_of(r, start, end, &a, &b);
    return b < r->n && r->s[b] == '?';
}

/* _Reading.reported(start) of an ASCII reading. */
static int reported(Reading *r, Py_ssize_t start) {
    int cjk = 0;
    if (r->wide && (cjk = any_text(r->norm, reported_cjk)) < 0)
        return -1;
    if (!cjk && disjoint(r->tokens, &reported_words))
        return 0;
    /* the norm's words split at separators (_WORD_BYTES), as reports() compares them */
    int any = 0;
    for (Py_ssize_t i = 0; i < r->n && !any;) {
        while (i < r->n && is_bytes_space(word_table[r->s[i]]))
            i++;
        unsigned char word[64];
        Py_ssize_t len = 0;
        while (i < r->n && !is_bytes_space(word_table[r->s[i]])) {
            if (len < (Py_ssize_t)sizeof(word))
                word[len] = word_table[r->s[i]];
            len++;
            i++;
        }
        if (len > 0 && len <= (Py_ssize_t)sizeof(word) && keyset_has(&reported_words, word, len, hash_of(word, len)))
            any = 1;
    }
    if (!any && !cjk)
        return 0;
    Py_ssize_t a, b, pos = 0, s0, e0;
    sentence_of(r, start, start, &a, &b);
    for (;;) {
        PyObject *m = search_in(reported_search, r, pos, r->n, &s0, &e0);
        if (m == NULL)
            return -1;
        if (m == Py_None) {
            Py_DECREF(m);
            return 0;
        }
        Py_DECREF(m);
        if (at_word(r->s, s0) && a <= s0 && e0 <= start)
            return 1;
        pos = e0 > s0 ? e0 : s0 + 1;
    }
}

static int holds_cue(Reading *r, const CueSet *c) {  /* _holds_cue */
    if (!disjoint(r->tokens, &c->words))
        return 1;
    const Key *phrase = c->phrase_keys;
    for (int j = 0; j < c->n_phrases; phrase += c->phrase_len[j], j++) {
        int all = 1;
        for (int q = 0; all && q < c->phrase_len[j]; q++)
            all = keyset_has(r->tokens, phrase[q].text, phrase[q].len, phrase[q].hash);
        if (all)
            return 1;
    }
    if (r->wide)
        return c->all != NULL ? any_text(r->norm, c->all) : -2;
    for (int j = 0; j < c->n_texts; j++)
        if (find(r->s, r->n, c->texts[j].text, c->texts[j].len) != NULL)
            return 1;
    return 0;
}

/* _defines(norm, start): the last definition ("... means") in the 160 characters before, with no end of a
 * sentence between it and the match. */
static int defines(Reading *r, Py_ssize_t start) {
    Py_ssize_t pos = start > 160 ? start - 160 : 0, last = -1, s0, e0;
    for (;;) {
        PyObject *m = search_in(defined_search, r, pos, start, &s0, &e0);
        if (m == NULL)
            return -1;
        if (m == Py_None) {
            Py_DECREF(m);
            break;
        }
        Py_DECREF(m);
        last = e0;
        pos = e0 > s0 ? e0 : s0 + 1;
    }
    if (last < 0)
        return 0;
    for (Py_ssize_t i = last; i < start; i++)
        if (ends_sentence(r, i))
            return 0;
    return 1;
}

/* _general(reading, start, end, term): 1, 0, or -1. */
static int general(Reading *r, Rules *rules, Piece *p, Py_ssize_t start, Py_ssize_t end) {
    if (r->dots < 0)
        r->dots = find(r->s, r->n, (const unsigned char *)"...", 3) != NULL;
    if (r->dots) {
        int d = defines(r, start);
        if (d)
            return d;
    }
    if (starts_word(r->s, start)) {  /* (no cue of a condition, nor for a failure of a modal: none there) */
        int cue = rules->has_condition ? holds_cue(r, &rules->condition) : 0;  /* (-2: not known here) */
        if (cue == -1)
            return -1;
        if (!cue) {
            cue = p->failed && rules->has_modal ? holds_cue(r, &rules->modal) : 0;
            if (cue == -1)
                return -1;
            if (!cue)
                return 0;
        }
    }
    Py_ssize_t cs, ce, s0, e0;
    if (clause_of(r, start, end, &cs, &ce) < 0)
        return -1;
    if (rules->if_before != NULL) {
        Py_ssize_t pos = cs;
        for (;;) {
            int found = word_in(rules->if_before, r, -1, pos, start, &s0, &e0);
            if (found <= 0) {
                if (found < 0)
                    return -1;
                break;
            }
            PyObject *answered = call_at(answered_match, r->norm, e0);
            if (answered == NULL)
                return -1;
            int is_answer = answered != Py_None;
            Py_DECREF(answered);
            if (!is_answer)
                return 1;  /* a condition before the match ("if the upload fails") */
            pos = e0 > s0 ? e0 : s0 + 1;
        }
    }
    if (rules->if_after != NULL) {
        int found = word_in(rules->if_after, r, -1, end, ce, &s0, &e0);
        if (found)
            return found;
    }
    if (!p->failed || rules->modals == NULL)
        return 0;
    Py_ssize_t pos = cs;
    for (;;) {
        int found = word_in(rules->modals, r, -1, pos, ce, &s0, &e0);
        if (found <= 0)
            return found;
        pos = e0 > s0 ? e0 : s0 + 1;
        if (s0 < end && e0 > start)
            continue;  /* (part of the failure phrase: "can t") */
        Span after[1], before[8];
        Py_ssize_t na = words_between(r, e0, ce < e0 + 12 ? ce : e0 + 12, after, 1);
        Py_ssize_t nb = words_between(r, cs > s0 - 8 ? cs : s0 - 8, s0, before, 8);
        int negative = (na && keyset_has(&neg_words, r->s + after[0].start, after[0].len, after[0].hash))
                       || (nb && keyset_has(&neg_words, r->s + before[nb - 1].start, before[nb - 1].len, before[nb - 1].hash));
        if (!negative)
            return 1;  /* a modal of possibility ("failed uploads can be retried") */
    }
}

static unsigned char *retry_piece;  /* per piece: one of _RETRY_PIECES */

/* _historical(reading, start, term, candidates) of a Latin term (`cjk`: a Chinese or Japanese one, in a wide
 * reading): 1, 0, or -1. */
static int historical(Reading *r, Py_ssize_t start, int cjk) {
    Py_ssize_t cs, ce, s0, e0;
    if (clause_of(r, start, start, &cs, &ce) < 0)
        return -1;
    int found = cjk ? any_text_between(r->norm, history_cjk, cs, ce)
                    : word_in(history_search, r, cs, cs, ce, &s0, &e0);  /* (read on the clause alone: its start starts a word) */
    if (found)
        return found;
    for (Py_ssize_t k = 0; k < r->candidates->count; k++) {
        Py_ssize_t i = r->candidates->items[k];
        if (!retry_piece[i])
            continue;
        if (piece_ready(i) < 0)
            return -1;
        PyObject *m = next_match(r, &pieces_table[i], start, &s0, &e0);
        if (m == NULL)
            return -1;
        found = m != Py_None;
        Py_DECREF(m);
        if (found)
            return 1;  /* a retry taken on after the failure */
    }
    return 0;
}

/* _ABOUT_AFTER.match(norm, end): its Latin words here, its Chinese and Japanese ones by the pattern. */
static int about_after_at(Reading *r, Py_ssize_t end) {
    if (!(r->wide && end < r->n && r->s[end] >= 0x80))
        return about_after(r->s, r->n, end);
    PyObject *after = call_at(about_after_match, r->norm, end);
    if (after == NULL)
        return -1;
    int found = after != Py_None;
    Py_DECREF(after);
    return found;
}

/* _valid's full rules: 1, 0, -1 on an error, -2 where _valid itself reads the match (a Chinese or
 * Japanese term in a Latin reading; a clause of more words than kept here). */
static int valid_full(Reading *r, Piece *p, Py_ssize_t start, Py_ssize_t end) {
    Rules *rules = rules_for(p->language);
    if (rules == NULL)
        return -1;
    if (rules->cjk && !r->wide)
        return -2;
    int about = about_after_at(r, end);
    if (about)
        return about < 0 ? -1 : 0;
    int no = negated(r, rules, p, start, end);
    if (no == 0)
        no = question(r, start, end);
    if (no == 0)
        no = reported(r, start);
    if (no == 0)
        no = general(r, rules, p, start, end);
    return no < 0 ? no : !no;
}

/* _valid(reading, term, m) by the full rules (a reading that is not plain, a match that does not start a
 * word, a quotation's dots): 1, 0, or -1 on an error. */
static int valid_in_python(Reading *r, Py_ssize_t i, PyObject *m) {
    PyObject *reading = reading_object(r);
    if (reading == NULL)
        return -1;
    PyObject *said = call3(valid_py, reading, PyList_GET_ITEM(PIECE_TERM, i), m);
    if (said == NULL)
        return -1;
    int valid = PyObject_IsTrue(said);
    Py_DECREF(said);
    return valid;
}

/* _historical(reading, start, term, candidates): whether a failure is told as past. */
static int told_as_past(Reading *r, Py_ssize_t i, Py_ssize_t start) {
    PyObject *reading = reading_object(r);
    if (reading == NULL)
        return -1;
    if (r->py_candidates == NULL && (r->py_candidates = python_list_of(r->candidates)) == NULL)
        return -1;
    PyObject *at = PyLong_FromSsize_t(start);
    if (at == NULL)
        return -1;
    PyObject *args[5] = {NULL, reading, at, PyList_GET_ITEM(PIECE_TERM, i), r->py_candidates};
    PyObject *said = PyObject_Vectorcall(historical_py, args + 1, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(at);
    if (said == NULL)
        return -1;
    int past = PyObject_IsTrue(said);
    Py_DECREF(said);
    return past;
}

static int first_valid(Reading *r, const Ints *candidates, Py_ssize_t *piece, Py_ssize_t *start, Py_ssize_t *end) {
    Py_ssize_t past_from[16], past_to[16], history = -1, history_start = 0, history_end = 0;
    int n_past = 0;
    for (Py_ssize_t k = 0; k < candidates->count; k++) {
        Py_ssize_t i = candidates->items[k];
        if (piece_ready(i) < 0)
            return FIRST_ERROR;
        Piece *p = &pieces_table[i];
        int missing = 0;
        for (int j = 0; !missing && j < p->n_words; j++)
            missing = !keyset_has(r->tokens, p->words[j].text, p->words[j].len, p->words[j].hash);
        for (int j = 0; !missing && j < p->n_runs; j++)
            missing = find(r->s, r->n, p->runs[j].text, p->runs[j].len) == NULL;
        for (Py_ssize_t j = 0; !missing && p->wide_runs != NULL && j < PyTuple_GET_SIZE(p->wide_runs); j++) {
            Py_ssize_t at = PyUnicode_Find(r->norm, PyTuple_GET_ITEM(p->wide_runs, j), 0, r->n, 1);
            if (at == -2)
                return FIRST_ERROR;
            missing = at == -1;
        }
        if (missing)
            continue;
        PyObject *m = next_match(r, p, 0, start, end);
        while (m != NULL && m != Py_None) {
            /* _valid: its quick rule here (at a word's start, the reading plain for the language, no
               quotation's dots), the full rules in Python */
            int plain = starts_word(r->s, *start) ? reading_plain(r, p->language, p->failed) : 0;
            if (plain < 0) {
                Py_DECREF(m);
                return FIRST_ERROR;
            }
            if (plain && r->dots < 0)
                r->dots = find(r->s, r->n, (const unsigned char *)"...", 3) != NULL;
            int valid;
            if (!plain || r->dots) {
                valid = valid_full(r, p, *start, *end);
                if (valid == -2)
                    valid = valid_in_python(r, i, m);
            } else {
                int invalid = about_after_at(r, *end);
                Py_ssize_t e = *end;
                if (!invalid && e < r->n && (r->s[e] == ':' || r->s[e] == '='
                                             || (is_str_space(r->s[e]) && e + 1 < r->n && (r->s[e + 1] == ':' || r->s[e + 1] == '=')))) {
                    PyObject *after = call_at(neg_after_match, r->norm, e);  /* (_NEG_AFTER starts "\s?[:=]") */
                    invalid = after == NULL ? -1 : after != Py_None;
                    Py_XDECREF(after);
                }
                for (int k = 0; invalid == 0 && p->german && k < de_count; k++)  /* norm.startswith(_DE_NEGATION_AFTER, end) */
                    invalid = *end + de_len[k] <= r->n && memcmp(r->s + *end, de_text[k], de_len[k]) == 0;
                valid = invalid < 0 ? -1 : !invalid;
            }
            Py_DECREF(m);
            if (valid < 0)
                return FIRST_ERROR;
            if (valid) {
                int told = 0;  /* a failure told as past: the claim only when no other is (one not where those are) */
                if (p->failed) {
                    Rules *rules = rules_for(p->language);
                    if (rules == NULL)
                        return FIRST_ERROR;
                    told = rules->cjk && !r->wide ? told_as_past(r, i, *start) : historical(r, *start, rules->cjk);
                    if (told < 0)
                        return FIRST_ERROR;
                }
                if (told) {
                    if (n_past == 16)
                        return FIRST_PYTHON;  /* (more failures told as past than kept here) */
                    past_from[n_past] = *start;
                    past_to[n_past++] = *end;
                    if (history < 0) {
                        history = i;
                        history_start = *start;
                        history_end = *end;
                    }
                } else {
                    int overlaps = 0;
                    for (int q = 0; q < n_past; q++)
                        overlaps |= *start < past_to[q] && past_from[q] < *end;
                    if (!overlaps) {
                        *piece = i;
                        return FIRST_FOUND;
                    }
                }
            }
            m = next_match(r, p, *end > *start + 1 ? *end : *start + 1, start, end);
        }
        if (m == NULL)
            return FIRST_ERROR;
        Py_DECREF(m);
    }
    if (history < 0)
        return FIRST_NONE;
    *piece = history;
    *start = history_start;
    *end = history_end;
    return FIRST_FOUND;
}

/* Claim(kind, language, evidence), made as Claim._made makes it. */
static PyObject *claim_of(PyObject *kind, PyObject *language, PyObject *evidence) {
    PyObject *claim = PyBaseObject_Type.tp_new((PyTypeObject *)claim_type, empty_tuple, NULL);
    if (claim == NULL)
        return NULL;
    if (PyObject_GenericSetAttr(claim, str_kind, kind) < 0 || PyObject_GenericSetAttr(claim, str_language, language) < 0
        || PyObject_GenericSetAttr(claim, str_evidence, evidence) < 0) {
        Py_DECREF(claim);
        return NULL;
    }
    return claim;
}

/* _evidence(head, norm[start:end]) of an ASCII head (its characters `h`, `n` of them, at `at` in `base`):
 * where the phrase is in the head (case folded), as the head has it, else the phrase; at most 80
 * characters. */
static PyObject *evidence_of(const unsigned char *h, Py_ssize_t n, PyObject *base, Py_ssize_t at,
                             const unsigned char *phrase, Py_ssize_t len, PyObject *norm, Py_ssize_t start) {
    Py_ssize_t keep = len < 80 ? len : 80;
    for (Py_ssize_t i = 0; i + len <= n; i++) {
        Py_ssize_t j = 0;
        while (j < len && lower(h[i + j]) == phrase[j])
            j++;
        if (j == len)
            return PyUnicode_Substring(base, at + i, at + i + keep);
    }
    return PyUnicode_Substring(norm, start, start + keep);
}

/* -- the judgment --------------------------------------------------------------------------------- */



/* A set of a text's words (spans of `s`): the keys point into `s`. */
static int words_of(const unsigned char *s, const Span *spans, Py_ssize_t count, KeySet *set, Key *stack,
                    Py_ssize_t stack_slots) {
    if (keyset_init(set, count, stack, stack_slots) < 0)
        return -1;
    for (Py_ssize_t k = 0; k < count; k++)
        keyset_add(set, s + spans[k].start, spans[k].len, spans[k].hash);
    return 0;
}

static PyObject *python_list_of(const Ints *ints) {
    PyObject *list = PyList_New(ints->count);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < ints->count; k++) {
        PyObject *v = PyLong_FromLong(ints->items[k]);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, v);
    }
    return list;
}

static PyObject *python_set_of(const unsigned char *s, const Span *spans, Py_ssize_t count) {
    PyObject *set = PySet_New(NULL);
    if (set == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *w = PyBytes_FromStringAndSize((const char *)s + spans[k].start, spans[k].len);
        if (w == NULL || PySet_Add(set, w) < 0) {
            Py_XDECREF(w);
            Py_DECREF(set);
            return NULL;
        }
        Py_DECREF(w);
    }
    return set;
}

/* The words of `s` split at what `split` says, with their hashes: a new array (PyMem), or `stack`. */
static Span *spans_of(const unsigned char *s, Py_ssize_t n, int tokens_only, Span *stack, Py_ssize_t stack_size,
                      Py_ssize_t *count) {
    Span *spans = n / 2 + 1 <= stack_size ? stack : PyMem_Malloc((n / 2 + 1) * sizeof(Span));
    if (spans == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t c = 0;
    for (Py_ssize_t i = 0; i < n;) {
        if (tokens_only)
            while (i < n && !is_token(s[i]))
                i++;
        else
            while (i < n && is_bytes_space(s[i]))
                i++;
        Py_ssize_t j = i;
        if (tokens_only)
            while (j < n && is_token(s[j]))
                j++;
        else
            while (j < n && !is_bytes_space(s[j]))
                j++;
        if (j > i) {
            spans[c].start = i;
            spans[c].len = j - i;
            spans[c].hash = hash_of(s + i, j - i);
            c++;
        }
        i = j;
    }
    *count = c;
    return spans;
}

/* raw's bytes with each inert character's byte its UTF-8: what _normalised_candidates hands the phrase hints
 * of a normalised form with such characters. */
static PyObject *utf8_raw(const unsigned char *raw, Py_ssize_t n) {
    Py_ssize_t m = n;
    for (Py_ssize_t i = 0; i < n; i++)
        m += is_inert_byte(raw[i]) ? inert_utf8_len[raw[i] - INERT_BYTE] - 1 : 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, m);
    if (out == NULL)
        return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (is_inert_byte(raw[i])) {
            int k = raw[i] - INERT_BYTE;
            memcpy(o, inert_utf8[k], inert_utf8_len[k]);
            o += inert_utf8_len[k];
        } else {
            *o++ = raw[i];
        }
    }
    return out;
}

/* Whether a module function can read `arg`: bind() was called and it is a str (0), else -1 with the error. */
static int bound_for(const char *name, PyObject *arg) {
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.bind() was not called");
        return -1;
    }
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s takes a str", name);
        return -1;
    }
    return 0;
}

/* Adds to `found` the pieces of the phrase hints a text's raw bytes hold (_across): 0, or -1 on an error. */
static int add_across(PyObject *raw_bytes, Ints *found) {
    PyObject *hit = call1(any_across_search, raw_bytes);
    if (hit == NULL)
        return -1;
    int crossed = hit != Py_None;
    Py_DECREF(hit);
    if (!crossed)
        return 0;
    PyObject *more = call1(across_pieces, raw_bytes);
    int *ints = NULL, nints = 0;
    if (more == NULL || ints_of(more, &ints, &nints) < 0) {
        Py_XDECREF(more);
        return -1;
    }
    Py_DECREF(more);
    int added = nints ? ints_add(found, ints, nints) : 0;
    PyMem_Free(ints);
    return added < 0 ? -1 : 0;
}

static PyObject *kw_tokens;  /* ("tokens",): _claim's keyword */

/* _claim(head, candidates, norm, tokens=tokens) (norm, tokens: None where not known). */
static PyObject *claim_in_python(PyObject *head, PyObject *candidates, PyObject *norm, PyObject *tokens) {
    PyObject *call[5] = {NULL, head, candidates, norm, tokens};
    return PyObject_Vectorcall(claim_py, call + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw_tokens);
}

static uint64_t judgments;  /* judge_text's calls: each one's serial (0 is no call's: a word never added) */
static int wide_read(PyObject *norm, PyObject **list, PyObject **tokens);
static int wide_claim(PyObject *text, PyObject *norm, PyObject *list, PyObject **result);
static int wide_head_whole(PyObject *text);
static PyObject *wide_head_claim(PyObject *text, PyObject *norm, PyObject *list, PyObject *words);

static PyObject *judge_text(PyObject *module, PyObject *text) {
    if (bound_for("judge()", text) < 0)
        return NULL;
    /* An ASCII text's raw words are its own; any other (Spanish, French, German; English with a curly
       apostrophe, a dash or a euro sign) is normalised first (in Python: NFKC, accents, confusables), and when that is
       ASCII its words are read from it, as _judge_unicode does (else: _judge_unicode, as Chinese and
       Japanese text is) */
    PyObject *head = NULL, *norm = NULL, *result = NULL;
    int folded = !PyUnicode_IS_ASCII(text);
    PyObject *proxy = NULL, *norm_bytes = NULL;  /* (a text with U+2019 or an inert character: latin_normalised) */
    if (folded) {
        norm = latin_normalised(text, &proxy, &norm_bytes);
        if (norm == NULL && !PyErr_Occurred())
            norm = wide_normalised(text);  /* (Chinese, Japanese) */
        if (norm == NULL && (PyErr_Occurred() || (norm = call1(normalise_py, text)) == NULL))
            return NULL;
        int plain = norm_bytes != NULL || (PyUnicode_Check(norm) && PyUnicode_IS_ASCII(norm));
        const unsigned char *b = norm_bytes != NULL ? (const unsigned char *)PyBytes_AS_STRING(norm_bytes)
                                                    : plain ? PyUnicode_1BYTE_DATA(norm) : NULL;
        for (Py_ssize_t i = 0; plain && i < PyUnicode_GET_LENGTH(norm); i++)
            plain = b[i] < 0x1c || b[i] > 0x1f;  /* (str.split splits at these and bytes.split does not) */
        if (!plain) {  /* (Chinese, Japanese: its candidates read here, or its normalised form given to Python) */
            PyObject *list = NULL, *words = NULL;
            int read = PyUnicode_Check(norm) && !PyUnicode_IS_ASCII(norm) ? wide_read(norm, &list, &words) : 0;
            int whole = read > 0 && PyList_GET_SIZE(list) > 0 && wide_head_whole(text);
            int in_c = whole ? wide_claim(text, norm, list, &result) : 0;  /* (1: read, -1: an error) */
            if (read == 0) {
                result = call2(judge_unicode, text, norm);
            } else if (read < 0 || in_c != 0) {
                /* (the claim read in C, or an error) */
            } else if (PyList_GET_SIZE(list) == 0) {
                result = Py_NewRef(Py_None);
            } else if (whole) {
                result = claim_in_python(text, list, norm, words);
            } else if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND) {  /* (Latin-1: its head read here, as _judge_read) */
                result = wide_head_claim(text, norm, list, words);
            } else {
                PyObject *call[5] = {NULL, text, norm, list, words};
                result = PyObject_Vectorcall(judge_read, call + 1, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            }
            Py_XDECREF(list);
            Py_XDECREF(words);
            Py_DECREF(norm);
            Py_XDECREF(proxy);
            Py_XDECREF(norm_bytes);
            return result;
        }
    }
    const unsigned char *s = norm_bytes != NULL ? (const unsigned char *)PyBytes_AS_STRING(norm_bytes)
                             : folded ? PyUnicode_1BYTE_DATA(norm) : PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = folded ? PyUnicode_GET_LENGTH(norm) : PyUnicode_GET_LENGTH(text);
    unsigned char raw_stack[1024];
    Span spans_stack[256], norm_spans_stack[256];
    Key keys_stack[1024];
    Span *spans = NULL, *norm_spans = NULL;
    Py_ssize_t count = 0, norm_count = 0;
    KeySet tokens = {0};
    Ints candidates = {.items = NULL, .count = 0, .size = 256};
    candidates.items = candidates.stack;
    Reading reading;
    memset(&reading, 0, sizeof(reading));
    reading.dots = -1;

    /* raw = text.encode("ascii").translate(_WORD_BYTES); its words (bytes.split()) */
    unsigned char *raw = n <= (Py_ssize_t)sizeof(raw_stack) ? raw_stack : PyMem_Malloc(n ? n : 1);
    if (raw == NULL) {
        Py_XDECREF(norm);
        Py_XDECREF(proxy);
        Py_XDECREF(norm_bytes);
        return PyErr_NoMemory();
    }
    int only_words = 1;  /* _words_hold_the_heads: [a-z0-9] and white space only */
    int camel = 0;       /* _camel: "aA" or "AAa" */
    spans = n / 2 + 1 <= 256 ? spans_stack : PyMem_Malloc((n / 2 + 1) * sizeof(Span));
    if (spans == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t word_start = -1;
    for (Py_ssize_t i = 0; i < n; i++) {  /* (one pass: the raw bytes, their words, the case of the letters) */
        unsigned char ch = s[i], c = word_table[ch];
        raw[i] = c;
        if (is_bytes_space(c)) {
            if (word_start >= 0) {
                spans[count].start = word_start;
                spans[count].len = i - word_start;
                spans[count].hash = hash_of(raw + word_start, i - word_start);
                count++;
                word_start = -1;
            }
            continue;
        }
        if (word_start < 0)
            word_start = i;
        if (!is_token(c))
            only_words = 0;
        if (is_upper(ch) && ((i > 0 && is_lower(s[i - 1])) || (i + 2 < n && is_upper(s[i + 1]) && is_lower(s[i + 2]))))
            camel = 1;
    }
    if (word_start >= 0) {
        spans[count].start = word_start;
        spans[count].len = n - word_start;
        spans[count].hash = hash_of(raw + word_start, n - word_start);
        count++;
    }

    /* _raw_candidates: each word's pieces (once a judgment: `serial`, unique to this call — a word stamped
       with it was added by this call, whatever another thread's judgment did meanwhile), and the phrase
       hints' */
    uint64_t serial = ++judgments;
    for (Py_ssize_t k = 0; k < count; k++)
        if (add_word_pieces(raw + spans[k].start, spans[k].len, spans[k].hash, serial, &candidates) < 0)
            goto done;
    int across = across_count == 0;
    for (int k = 0; !across && k < across_count; k++)
        across = find(raw, n, (const unsigned char *)across_text[k], across_len[k]) != NULL;
    if (across) {  /* (the hints read the UTF-8 of the normalised form: an inert character's bytes) */
        PyObject *raw_bytes = norm_bytes != NULL ? utf8_raw(raw, n) : PyBytes_FromStringAndSize((const char *)raw, n);
        int added = raw_bytes == NULL ? -1 : add_across(raw_bytes, &candidates);
        Py_XDECREF(raw_bytes);
        if (added < 0)
            goto done;
    }
    if (candidates.count == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    ints_sort_unique(&candidates);

    /* the head: a part of the text (no object made of it unless _claim is called), or what _head makes */
    Py_ssize_t head_at = 0, head_end = 0;
    PyObject *built = NULL;  /* (a head with its quotations blanked out: HEAD_BUILT) */
    int kind = PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND ? head_of(text, &head_at, &head_end, &built)
               : proxy != NULL ? head_of(proxy, &head_at, &head_end, NULL) : HEAD_PYTHON;
    if (kind == HEAD_ERROR)
        goto done;
    if (kind == HEAD_NONE) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *head_base = text;
    if (kind == HEAD_BUILT) {
        head = built;
        head_base = head;
        head_at = 0;
        head_end = PyUnicode_GET_LENGTH(head);
    } else if (kind == HEAD_PYTHON) {
        head = call1(head_py, text);
        if (head == NULL)
            goto done;
        if (!PyUnicode_Check(head)) {
            PyErr_SetString(PyExc_TypeError, "_head gave no str");
            goto done;
        }
        if (PyUnicode_GET_LENGTH(head) == 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        head_base = head;
        head_at = 0;
        head_end = PyUnicode_GET_LENGTH(head);
    }
    int given = !folded && n <= 400 && !camel && only_words;  /* the raw words stand for the head's */
    if (folded) {  /* the text's normalised form is the head's when the head is the text (_judge_unicode) */
        int whole = kind == HEAD_TEXT ? head_at == 0 && head_end == PyUnicode_GET_LENGTH(text)
                                      : PyUnicode_Compare(head, text) == 0;
        if (PyErr_Occurred())
            goto done;
        if (whole)
            goto read_norm;
        Py_CLEAR(norm);  /* (else the head's, as _claim makes it) */
        Py_CLEAR(norm_bytes);
    }
    if (folded || !PyUnicode_IS_ASCII(head_base)) {  /* (a quotation or a name blanked out: "…"; a folded text) */
        if (head == NULL && (head = PyUnicode_Substring(text, head_at, head_end)) == NULL)
            goto done;
        PyObject *unused = NULL;
        norm = latin_normalised(head, &unused, &norm_bytes);
        Py_XDECREF(unused);
        if (norm == NULL && PyErr_Occurred())
            goto done;
        head_base = head;
        head_at = 0;
        head_end = PyUnicode_GET_LENGTH(head);
        goto read_norm;
    }
    {  /* (camelCase split as it is read) */
        norm = normalised(PyUnicode_1BYTE_DATA(head_base) + head_at, head_end - head_at, 0);
        if (norm == NULL) {
            if (PyErr_Occurred() || (head == NULL && (head = PyUnicode_Substring(text, head_at, head_end)) == NULL))
                goto done;
            norm = call1(normalise_ascii, head);
            if (norm == NULL)
                goto done;
        }
    }
read_norm:
    if (norm == NULL || !PyUnicode_Check(norm) || !(PyUnicode_IS_ASCII(norm) || norm_bytes != NULL))
        goto python;  /* (a head C does not normalise: _claim normalises it) */

    /* the reading */
    reading.norm = norm;
    reading.s = norm_bytes != NULL ? (const unsigned char *)PyBytes_AS_STRING(norm_bytes) : PyUnicode_1BYTE_DATA(norm);
    reading.n = PyUnicode_GET_LENGTH(norm);
    if (given) {
        if (words_of(raw, spans, count, &tokens, keys_stack, 1024) < 0)
            goto done;
    } else {
        norm_spans = spans_of(reading.s, reading.n, 1, norm_spans_stack, 256, &norm_count);
        if (norm_spans == NULL || words_of(reading.s, norm_spans, norm_count, &tokens, keys_stack, 1024) < 0)
            goto done;
    }
    reading.tokens = &tokens;
    reading.raw = raw;
    reading.spans = spans;
    reading.count = count;
    reading.given = given;
    reading.candidates = &candidates;
    Py_ssize_t piece = -1, start = 0, end = 0;
    int first = first_valid(&reading, &candidates, &piece, &start, &end);
    if (first == FIRST_ERROR)
        goto done;
    if (first == FIRST_NONE) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (first == FIRST_PYTHON)
        goto python;
    PyObject *said;
    if (folded || !PyUnicode_IS_ASCII(head_base)) {  /* (_evidence: the head case folded, where "ß" is two letters) */
        PyObject *base = head != NULL ? head : text;
        said = latin_evidence(base, reading.s + start, end - start, norm, start);
        if (said == NULL && !PyErr_Occurred()) {
            PyObject *phrase = PyUnicode_Substring(norm, start, end);
            said = phrase == NULL ? NULL : call2(evidence_py, base, phrase);
            Py_XDECREF(phrase);
        }
    } else {
        said = evidence_of(PyUnicode_1BYTE_DATA(head_base) + head_at, head_end - head_at, head_base, head_at,
                           reading.s + start, end - start, norm, start);
    }
    if (said == NULL)
        goto done;
    Piece *p = &pieces_table[piece];
    result = claim_of(p->kind, p->language, said);
    Py_DECREF(said);
    goto done;

python: {
        if (head == NULL && (head = PyUnicode_Substring(text, head_at, head_end)) == NULL)
            goto done;
        PyObject *list = python_list_of(&candidates);
        PyObject *words = list != NULL && given ? python_set_of(raw, spans, count) : Py_NewRef(Py_None);
        if (list != NULL && words != NULL)
            result = claim_in_python(head, list, norm != NULL ? norm : Py_None, words);
        Py_XDECREF(list);
        Py_XDECREF(words);
    }
done:
    keyset_free(&tokens, keys_stack);
    reading_release(&reading);
    if (candidates.items != candidates.stack)
        PyMem_Free(candidates.items);
    if (spans != NULL && spans != spans_stack)
        PyMem_Free(spans);
    if (norm_spans != NULL && norm_spans != norm_spans_stack)
        PyMem_Free(norm_spans);
    if (raw != raw_stack)
        PyMem_Free(raw);
    Py_XDECREF(head);
    Py_XDECREF(norm);
    Py_XDECREF(proxy);
    Py_XDECREF(norm_bytes);
    return result;
}

/* -- the Chinese and Japanese anchors of a normalised text (_claims._cjk_pieces_python), in C ----------- */

typedef struct {
    uint64_t key;      /* a character, or a pair (first << 21 | second) with bit 63 set; 0: empty */
    int at, count;     /* its pieces: cjk_ints[at:at + count] */
} CjkSlot;

#define CJK_SLOTS 4096
static CjkSlot cjk_slots[CJK_SLOTS];
static int *cjk_ints;
static unsigned char cjk_pair_first[0x10000 / 8], cjk_single[0x10000 / 8];  /* (bitmaps of the BMP) */
static int cjk_ready = 0;  /* 0: not made, 1: made, -1: a key this cannot hold (the Python look-up runs) */

static inline uint64_t cjk_key(Py_UCS4 a, Py_UCS4 b, int pair) {
    return pair ? (1ULL << 63) | ((uint64_t)a << 21) | b : (uint64_t)a + 1;
}

static CjkSlot *cjk_slot(uint64_t key) {
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    for (size_t k = (size_t)(h >> 52) % CJK_SLOTS;; k = (k + 1) % CJK_SLOTS)
        if (cjk_slots[k].key == key || cjk_slots[k].key == 0)
            return &cjk_slots[k];
}

/* The tables from _BY_CJK (a phrase's first two characters, or one, -> its pieces): -1 (the Python
 * look-up runs) for a key beyond the BMP or more keys than the slots hold well. */
static int cjk_tables(PyObject *by_cjk) {
    Py_ssize_t pos = 0, total = 0;
    PyObject *key, *value;
    if (!PyDict_Check(by_cjk) || PyDict_GET_SIZE(by_cjk) > CJK_SLOTS / 2)
        return -1;
    while (PyDict_Next(by_cjk, &pos, &key, &value)) {
        if (!PyUnicode_Check(key) || PyUnicode_GET_LENGTH(key) < 1 || PyUnicode_GET_LENGTH(key) > 2 || !PyList_Check(value))
            return -1;
        for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(key); i++)
            if (PyUnicode_READ_CHAR(key, i) > 0xffff)
                return -1;
        total += PyList_GET_SIZE(value);
    }
    cjk_ints = PyMem_Calloc(total + 1, sizeof(int));
    if (cjk_ints == NULL)
        return -1;
    int at = 0;
    pos = 0;
    while (PyDict_Next(by_cjk, &pos, &key, &value)) {
        int pair = PyUnicode_GET_LENGTH(key) == 2;
        Py_UCS4 a = PyUnicode_READ_CHAR(key, 0), b = pair ? PyUnicode_READ_CHAR(key, 1) : 0;
        CjkSlot *slot = cjk_slot(cjk_key(a, b, pair));
        slot->key = cjk_key(a, b, pair);
        slot->at = at;
        slot->count = (int)PyList_GET_SIZE(value);
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(value); k++) {
            long piece = PyLong_AsLong(PyList_GET_ITEM(value, k));
            if (piece == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return -1;
            }
            cjk_ints[at++] = (int)piece;
        }
        unsigned char *bits = pair ? cjk_pair_first : cjk_single;
        bits[a >> 3] |= 1 << (a & 7);
    }
    return 1;
}

/* cjk_pieces(norm): the pieces of the Chinese and Japanese anchors a normalised text holds — each two
 * characters that begin with a pair's first character (overlapping; a line break is no second
 * character, as "." is none), each character that is one — as a list (repeats and all: the caller
 * makes a set of it); what _cjk_pieces_python gives as a set. */
/* Adds to `found` the pieces of the Chinese and Japanese anchors norm holds (cjk_pieces): 0, or -1 (no memory). */
static int add_cjk_pieces(PyObject *norm, Ints *found) {
    int kind = PyUnicode_KIND(norm);
    const void *data = PyUnicode_DATA(norm);
    Py_ssize_t n = PyUnicode_IS_ASCII(norm) ? 0 : PyUnicode_GET_LENGTH(norm);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 0xffff)
            continue;
        for (int pair = 0; pair < 2; pair++) {
            const unsigned char *bits = pair ? cjk_pair_first : cjk_single;
            if (!(bits[c >> 3] & (1 << (c & 7))))
                continue;
            Py_UCS4 next = pair && i + 1 < n ? PyUnicode_READ(kind, data, i + 1) : 0;
            if (pair && (i + 1 >= n || next == '\n' || next > 0xffff))
                continue;
            const CjkSlot *slot = cjk_slot(cjk_key(c, next, pair));
            if (slot->key != 0 && ints_add(found, cjk_ints + slot->at, slot->count) < 0)
                return -1;
        }
    }
    return 0;
}

static PyObject *cjk_pieces(PyObject *module, PyObject *norm) {
    if (!PyUnicode_Check(norm)) {
        PyErr_SetString(PyExc_TypeError, "cjk_pieces() takes a str");
        return NULL;
    }
    if (cjk_ready <= 0) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups: the Chinese and Japanese anchors are not bound");
        return NULL;
    }
    Ints found = {.items = NULL, .count = 0, .size = 256};
    found.items = found.stack;
    PyObject *out = add_cjk_pieces(norm, &found) < 0 ? NULL : python_list_of(&found);
    if (found.items != found.stack)
        PyMem_Free(found.items);
    return out;
}

/* -- the candidates of a Chinese or Japanese text (_claims._normalised_candidates), in C ----------- */

/* wide_read(norm): what _normalised_candidates gives a normalised text that is not ASCII, with its words
 * as _Reading.tokens() reads them: 1 with *list (the sorted pieces) and *tokens (a set of bytes), 0
 * where the Python reading answers (a character str.split splits at and bytes.split does not, an anchor
 * word written into other characters that holds a stem or an in-word hint's literal, anchors these
 * tables cannot hold), -1 on an error.
 *
 * The text's Latin words are its runs of ASCII characters that _WORD_BYTES makes no space (every
 * other character ends one, as _LATIN_ONLY makes it a space): each gives its in-word pieces, and one
 * that white space, a separator or the text's edge bounds on both sides is a word of
 * raw.decode().split() too, whose anchor pieces it gives (_WORDS are ASCII: a word with any other
 * character is none of them) — add_word_pieces gives both, as for an ASCII text, and a word that is no
 * anchor its in-word pieces alone. */
static int wide_read(PyObject *norm, PyObject **list, PyObject **tokens) {
    *list = *tokens = NULL;
    if (cjk_ready <= 0 || across_count == 0 || literal_count == 0)
        return 0;
    for (int k = 0; k < across_count; k++)  /* (a literal beyond ASCII would be missed in the view below) */
        for (int j = 0; j < across_len[k]; j++)
            if ((unsigned char)across_text[k][j] >= 0x80)
                return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(norm);
    int kind = PyUnicode_KIND(norm);
    const void *data = PyUnicode_DATA(norm);
    unsigned char view_stack[512], token_stack[512];
    Span spans_stack[256];
    unsigned char *view = n <= 512 ? view_stack : PyMem_Malloc(n);
    unsigned char *tv = n <= 512 ? token_stack : PyMem_Malloc(n);
    Span *spans = NULL;
    Ints found = {.items = NULL, .count = 0, .size = 256};
    found.items = found.stack;
    int status = -1;
    if (view == NULL || tv == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* view: an ASCII character as _WORD_BYTES makes it, any other 0x80 (0x81: white space), which no
       literal holds; tv: a token character as it is, any other a space */
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x80) {
            if (c >= 0x1c && c <= 0x1f) {
                status = 0;
                goto done;
            }
            view[i] = word_table[c];
            tv[i] = is_token((unsigned char)c) ? (unsigned char)c : ' ';
        } else {
            view[i] = Py_UNICODE_ISSPACE(c) ? 0x81 : 0x80;
            tv[i] = ' ';
        }
    }
    uint64_t serial = ++judgments;
    for (Py_ssize_t i = 0; i < n;) {
        if (view[i] >= 0x80 || is_bytes_space(view[i])) {
            i++;
            continue;
        }
        Py_ssize_t j = i;
        while (j < n && view[j] < 0x80 && !is_bytes_space(view[j]))
            j++;
        int whole = (i == 0 || view[i - 1] != 0x80) && (j == n || view[j] != 0x80);
        uint64_t hash = hash_of(view + i, j - i);
        if (!whole && word_lookup(&anchors, view + i, j - i, hash) != NULL) {
            /* (an anchor word written into other characters: its in-word pieces alone, which the kept
               words' table does not hold apart — none without a literal, else Python's) */
            if (holds_literal(view + i, j - i)) {
                status = 0;
                goto done;
            }
        } else if (add_word_pieces(view + i, j - i, hash, serial, &found) < 0) {
            goto done;
        }
        i = j;
    }
    int across = 0;
    for (int k = 0; !across && k < across_count; k++)
        across = find(view, n, (const unsigned char *)across_text[k], across_len[k]) != NULL;
    if (across) {  /* (the phrase hints read raw: the UTF-8 of the text, _WORD_BYTES made) */
        PyObject *raw = PyUnicode_AsUTF8String(norm);
        if (raw == NULL)
            goto done;
        unsigned char *r = (unsigned char *)PyBytes_AS_STRING(raw);
        for (Py_ssize_t k = 0; k < PyBytes_GET_SIZE(raw); k++)
            r[k] = word_table[r[k]];
        int added = add_across(raw, &found);
        Py_DECREF(raw);
        if (added < 0)
            goto done;
    }
    if (add_cjk_pieces(norm, &found) < 0)
        goto done;
    ints_sort_unique(&found);
    Py_ssize_t count = 0;
    spans = spans_of(tv, n, 1, spans_stack, 256, &count);
    if (spans == NULL)
        goto done;
    if ((*list = python_list_of(&found)) == NULL || (*tokens = python_set_of(tv, spans, count)) == NULL) {
        Py_CLEAR(*list);
        goto done;
    }
    status = 1;
done:
    if (found.items != found.stack)
        PyMem_Free(found.items);
    if (spans != NULL && spans != spans_stack)
        PyMem_Free(spans);
    if (view != view_stack)
        PyMem_Free(view);
    if (tv != token_stack)
        PyMem_Free(tv);
    return status;
}

static PyObject *intro_cjk_words;  /* _INTRO_CJK_WORDS */

/* Whether text[0:colon] may hold a data intro as _intro reads a line beyond ASCII (0: it does not —
 * its characters are Latin-1, Chinese and Japanese ones, it holds no Chinese or Japanese intro, and no
 * word of ASCII letters that is an intro's first word, nor one of other Latin-1 letters). */
static int wide_may_intro(PyObject *text, Py_ssize_t colon) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < colon; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 0xff && !((c >= 0x3000 && c <= 0x30ff) || (c >= 0x3400 && c <= 0x9fff) || (c >= 0xf900 && c <= 0xfaff)
                          || (c >= 0xff00 && c <= 0xffef)))
            return 1;  /* (_INTRO_OTHER_SCRIPT) */
    }
    int intro = any_text_between(text, intro_cjk_words, 0, colon);  /* (a Chinese or Japanese intro) */
    if (intro < 0)
        PyErr_Clear();  /* (no memory to look: _head reads the line) */
    if (intro)
        return 1;
    for (Py_ssize_t i = 0; i < colon;) {  /* (the words of \w+ before the colon) */
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (!(Py_UNICODE_ISALNUM(c) || c == '_')) {
            i++;
            continue;
        }
        unsigned char word[64];
        Py_ssize_t len = 0;
        int latin = 1, wide = 0;
        for (; i < colon && (Py_UNICODE_ISALNUM(c = PyUnicode_READ(kind, data, i)) || c == '_'); i++, len++) {
            if (c > 0xff)
                wide = 1;
            else if (c >= 0x80)
                latin = 0;
            else if (len < (Py_ssize_t)sizeof(word))
                word[len] = lower((unsigned char)c);
        }
        if (wide)
            continue;  /* (a word with a Chinese or Japanese character is no intro's first word: those are Latin-1) */
        if (!latin || len > (Py_ssize_t)sizeof(word) || keyset_has(&intro_firsts, word, len, hash_of(word, len)))
            return 1;
    }
    return 0;
}

/* Whether a "." at text[i] may start a file name's extension (_EXTENSION, whose re.I takes some letters
 * beyond ASCII for ASCII ones: a letter beyond ASCII where an extension's is, is taken for one). */
static int wide_extension_at(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    for (int k = 0; k < extension_count; k++) {
        Py_ssize_t len = extension_len[k], j = 0;
        if (i + 1 + len > n)
            continue;
        for (; j < len; j++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i + 1 + j);
            if (c >= 0x80)
                return 1;
            if (lower((unsigned char)c) != (unsigned char)extension_text[k][j])
                break;
        }
        if (j < len)
            continue;
        Py_UCS4 after = i + 1 + len < n ? PyUnicode_READ(kind, data, i + 1 + len) : ' ';
        if (!(Py_UNICODE_ISALNUM(after) || after == '_'))
            return 1;
    }
    return 0;
}

/* Whether text starts with the ASCII word w (len): 1 when white space follows it, 2 when a colon does, else 0. */
static int starts_with_word(int kind, const void *data, Py_ssize_t n, const char *w, int len) {
    if (n <= len)
        return 0;
    for (int j = 0; j < len; j++)
        if (PyUnicode_READ(kind, data, j) != (Py_UCS4)(unsigned char)w[j])
            return 0;
    Py_UCS4 after = PyUnicode_READ(kind, data, len);
    return Py_UNICODE_ISSPACE(after) ? 1 : after == ':' ? 2 : 0;
}

/* Whether _head(text) is the text itself, read for a text beyond Latin-1 that starts with a letter (ASCII,
 * Latin-1, Chinese, Japanese) or a symbol (1; 0: not known — _head answers): one line of at most 400
 * characters, no white space at its end (none at its start), no "=" or "," (no assignment, no CSV header),
 * not a line of code or a mail header (the other ways a line is data start with a digit, a mark, white space
 * or the bullet, and a text beyond ASCII is no JSON word), no data intro before its
 * first colon (wide_may_intro), no quotation mark (_QUOTE_OPENS), no mark of a name (a "/" or "\\", a "-"
 * after white space, a file name's extension: wide_extension_at). */
static int wide_head_whole(PyObject *text) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n == 0 || n > 400)
        return 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 first = PyUnicode_READ(kind, data, 0);
    if (first < 0x80 && !is_lower(lower((unsigned char)first)))
        return 0;  /* (a digit, a mark, white space: a data line may start so) */
    if (first < 0x80) {  /* (a letter: a line of code or a mail header starts with one of their words) */
        for (int k = 0; k < code_count; k++)
            if (starts_with_word(kind, data, n, code_text[k], code_len[k]) == 1)
                return 0;
        for (int k = 0; k < mail_count; k++)
            if (starts_with_word(kind, data, n, mail_text[k], mail_len[k]) == 2)
                return 0;
    } else if (!((first >= 0xc0 && first <= 0xff && first != 0xd7 && first != 0xf7)  /* (a Latin-1 letter) */
                 || (first >= 0x2010 && first <= 0x2bff && first != 0x2022)  /* (a symbol, but the bullet) */
                 || (first >= 0x3040 && first <= 0x30ff) || (first >= 0x3400 && first <= 0x4dbf)
                 || (first >= 0x4e00 && first <= 0x9fff) || (first >= 0xf900 && first <= 0xfaff)
                 || (first >= 0x1f300 && first <= 0x1faff))) {
        return 0;
    }
    if (Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, n - 1)))
        return 0;
    Py_ssize_t colon = -1;
    for (Py_ssize_t i = 0; i < n; i++) {  /* (the first character too: a quotation may open the text) */
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        switch (c) {
        case ':': case 0xff1a:  /* (：) */
            if (colon < 0)
                colon = i;
            break;
        case '\n': case '=': case ',':
        case '"': case '\'': case '`': case 0x201c: case 0x2018: case 0xab: case 0x300c: case 0x300e: case 0x300a:
        case 0x201e: case '/': case '\\':
            return 0;
        case '-':
            if (i == 0 || Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i - 1)))
                return 0;
            break;
        case '.':
            if (wide_extension_at(kind, data, n, i))
                return 0;
            break;
        }
    }
    return colon < 0 || !wide_may_intro(text, colon);
}

/* The claim of a Chinese or Japanese text whose head is the whole text, its candidates read (wide_read):
 * first_valid over a view of its normalised form — each ASCII character itself, each other a byte that is
 * no letter, digit or mark the quick rule reads (0x85, which reads as white space, for white space beyond
 * ASCII: _NEG_AFTER's pattern then reads the text) — its quick rule in C and every other rule in Python
 * (_valid, _historical; a sentence's piece hands the whole reading to _claim).  1: *result is the claim
 * or None; 0: _claim reads the text; -1: an error. */
static int wide_claim(PyObject *text, PyObject *norm, PyObject *list, PyObject **result) {
    *result = NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(norm);
    int kind = PyUnicode_KIND(norm);
    const void *data = PyUnicode_DATA(norm);
    unsigned char s_stack[512];
    unsigned char *s = n <= 512 ? s_stack : PyMem_Malloc(n ? n : 1);
    Span spans_stack[256], *spans = NULL;
    Py_ssize_t count = 0;
    Key keys_stack[1024];
    KeySet tokens = {0};
    Ints candidates = {.items = NULL, .count = 0, .size = 256};
    candidates.items = candidates.stack;
    Reading reading;
    memset(&reading, 0, sizeof(reading));
    reading.dots = -1;
    int status = -1;
    if (s == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        s[i] = c < 0x80 ? (unsigned char)c : Py_UNICODE_ISSPACE(c) ? 0x85 : 0x80;
    }
    spans = spans_of(s, n, 1, spans_stack, 256, &count);  /* (its words: _Reading.tokens()) */
    if (spans == NULL || words_of(s, spans, count, &tokens, keys_stack, 1024) < 0)
        goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(list); k++) {
        long piece = PyLong_AsLong(PyList_GET_ITEM(list, k));
        if (piece == -1 && PyErr_Occurred())
            goto done;
        int one = (int)piece;
        if (piece < 0 || piece >= piece_count) {
            PyErr_SetString(PyExc_IndexError, "wide_claim: a candidate that is no piece");
            goto done;
        }
        if (ints_add(&candidates, &one, 1) < 0)
            goto done;
    }
    reading.norm = norm;
    reading.s = s;
    reading.n = n;
    reading.tokens = &tokens;
    reading.raw = s;
    reading.spans = spans;
    reading.count = count;
    reading.given = 1;
    reading.candidates = &candidates;
    reading.wide = 1;
    Py_ssize_t piece = -1, start = 0, end = 0;
    int first = first_valid(&reading, &candidates, &piece, &start, &end);
    if (first == FIRST_ERROR)
        goto done;
    if (first == FIRST_PYTHON) {
        status = 0;
        goto done;
    }
    if (first == FIRST_NONE) {
        *result = Py_NewRef(Py_None);
        status = 1;
        goto done;
    }
    PyObject *phrase = PyUnicode_Substring(norm, start, end);
    PyObject *said = phrase == NULL ? NULL : call2(evidence_py, text, phrase);
    Py_XDECREF(phrase);
    if (said == NULL)
        goto done;
    *result = claim_of(pieces_table[piece].kind, pieces_table[piece].language, said);
    Py_DECREF(said);
    status = *result == NULL ? -1 : 1;
done:
    keyset_free(&tokens, keys_stack);
    reading_release(&reading);
    if (candidates.items != candidates.stack)
        PyMem_Free(candidates.items);
    if (spans != NULL && spans != spans_stack)
        PyMem_Free(spans);
    if (s != s_stack)
        PyMem_Free(s);
    return status;
}

/* wide_claim(head, norm, candidates): the claim of a head (of a text beyond ASCII) that _head made,
 * normalised (norm) and read as judge() reads a Chinese or Japanese text's: the claim or None, or
 * Ellipsis where _claim reads it. */
static PyObject *wide_claim_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.bind() was not called");
        return NULL;
    }
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1]) || !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "wide_claim(head, norm, candidates) takes two strs and a list");
        return NULL;
    }
    PyObject *result;
    int read = wide_claim(args[0], args[1], args[2], &result);
    if (read == 0)
        return Py_NewRef(Py_Ellipsis);
    return read < 0 ? NULL : result;
}

/* head(text): the head judge() reads of a text of Latin-1 (head_of: a part of it, or one built with its
 * quotations and names blanked out; "" where the text is data), or None where _head makes it. */
static PyObject *head_in_c(PyObject *module, PyObject *text) {
    if (bound_for("head()", text) < 0)
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        Py_RETURN_NONE;
    Py_ssize_t from = 0, to = 0;
    PyObject *built = NULL;
    int kind = head_of(text, &from, &to, &built);
    switch (kind) {
    case HEAD_ERROR:
        return NULL;
    case HEAD_PYTHON:
        Py_RETURN_NONE;
    case HEAD_NONE:
        return PyUnicode_New(0, 0);
    case HEAD_BUILT:
        return built;
    default:
        return PyUnicode_Substring(text, from, to);
    }
}

/* _judge_read(text, norm, candidates, tokens) of a Latin-1 text that C normalises into a wide reading ("«sic»",
 * its guillemet against a word): its head by head_of, normalised and read by wide_claim (what _judge_read's
 * _head, _normalise_head and _read_head make), _claim where wide_claim hands it over, _judge_read where
 * head_of does. */
static PyObject *wide_head_claim(PyObject *text, PyObject *norm, PyObject *list, PyObject *words) {
    Py_ssize_t from = 0, to = 0;
    PyObject *built = NULL;
    int kind = head_of(text, &from, &to, &built);
    if (kind == HEAD_ERROR)
        return NULL;
    if (kind == HEAD_NONE)
        Py_RETURN_NONE;
    if (kind == HEAD_PYTHON) {
        PyObject *call[5] = {NULL, text, norm, list, words};
        return PyObject_Vectorcall(judge_read, call + 1, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    PyObject *head = kind == HEAD_BUILT ? built : PyUnicode_Substring(text, from, to), *head_norm = NULL, *result = NULL;
    if (head == NULL)
        return NULL;
    int whole = PyUnicode_Compare(head, text) == 0;
    if (whole) {
        head_norm = Py_NewRef(norm);
    } else if ((head_norm = wide_normalised(head)) == NULL && !PyErr_Occurred()) {
        head_norm = call1(normalise_py, head);
    }
    if (head_norm != NULL && !PyErr_Occurred()) {
        int read = wide_claim(head, head_norm, list, &result);
        if (read == 0)  /* (the text's words stand for the head's where the head is the text) */
            result = claim_in_python(head, list, head_norm, whole ? words : Py_None);
    }
    Py_DECREF(head);
    Py_XDECREF(head_norm);
    return result;
}

static PyObject *wide_head_whole_py(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "wide_head_whole() takes a str");
        return NULL;
    }
    return PyBool_FromLong(wide_head_whole(text));
}

/* wide_candidates(norm): (wide_read's pieces, its tokens), or None where the Python reading answers. */
static PyObject *wide_candidates(PyObject *module, PyObject *norm) {
    if (bound_for("wide_candidates()", norm) < 0)
        return NULL;
    if (PyUnicode_IS_ASCII(norm))
        Py_RETURN_NONE;
    PyObject *list, *tokens;
    int read = wide_read(norm, &list, &tokens);
    if (read <= 0)
        return read < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *out = PyTuple_Pack(2, list, tokens);
    Py_DECREF(list);
    Py_DECREF(tokens);
    return out;
}

/* -- any of a few texts in a text (_claims._any_text_in_python) ------------------------------------- */

#define TEXT_BITS 4096  /* (a character's low bits: a bitmap of 512 bytes, which another character shares) */

typedef struct {
    PyObject *texts;                     /* the tuple (owned: its identity is the key) */
    unsigned char first[TEXT_BITS / 8];  /* the texts' first characters, by their low bits */
} TextSet;

static TextSet *text_sets[64];
static int text_set_count;

/* Whether `texts` is a tuple of non-empty strs (what any_text reads). */
static int texts_readable(PyObject *texts) {
    if (!PyTuple_Check(texts))
        return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(texts); k++) {
        PyObject *t = PyTuple_GET_ITEM(texts, k);
        if (!PyUnicode_Check(t) || PyUnicode_GET_LENGTH(t) == 0)
            return 0;
    }
    return 1;
}

/* The first characters of `texts`, made once per tuple (the rules' few tuples); NULL where more tuples come
 * than are kept (or no memory: then the texts are looked for one by one). */
static TextSet *text_set_of(PyObject *texts) {
    for (int k = 0; k < text_set_count; k++)
        if (text_sets[k]->texts == texts)
            return text_sets[k];
    if (text_set_count == 64)
        return NULL;
    TextSet *set = PyMem_Calloc(1, sizeof(TextSet));
    if (set == NULL)
        return NULL;
    set->texts = Py_NewRef(texts);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(texts); k++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(PyTuple_GET_ITEM(texts, k), 0) % TEXT_BITS;
        set->first[c >> 3] |= 1 << (c & 7);
    }
    text_sets[text_set_count++] = set;
    return set;
}

/* Whether norm[from:to] holds one of the texts (a tuple of non-empty strs): 1, 0, or -1 on an error. */
static int any_text_between(PyObject *norm, PyObject *texts, Py_ssize_t from, Py_ssize_t to) {
    TextSet *set = text_set_of(texts);
    if (from < 0)
        from = 0;
    if (to > PyUnicode_GET_LENGTH(norm))
        to = PyUnicode_GET_LENGTH(norm);
    if (set == NULL) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(texts); k++) {
            Py_ssize_t at = PyUnicode_Find(norm, PyTuple_GET_ITEM(texts, k), from, to, 1);
            if (at != -1)
                return at == -2 ? -1 : 1;
        }
        return 0;
    }
    int kind = PyUnicode_KIND(norm);
    const void *data = PyUnicode_DATA(norm);
    for (Py_ssize_t i = from; i < to; i++) {
        Py_UCS4 low = PyUnicode_READ(kind, data, i) % TEXT_BITS;
        if (!(set->first[low >> 3] & (1 << (low & 7))))
            continue;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(set->texts); k++)
            if (text_at(kind, data, to, i, PyTuple_GET_ITEM(set->texts, k)))
                return 1;
    }
    return 0;
}

/* Whether norm holds one of the texts: 1, 0, or -1 on an error. */
static int any_text(PyObject *norm, PyObject *texts) {
    return any_text_between(norm, texts, 0, PyUnicode_GET_LENGTH(norm));
}

/* any_text_in(norm, texts, pattern): whether norm holds one of the texts (the pattern, which finds them, is
 * the Python reading's: not read here). */
static PyObject *any_text_in(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !texts_readable(args[1])) {
        PyErr_SetString(PyExc_TypeError, "any_text_in(norm, texts, pattern) takes a str, a tuple of non-empty strs and a "
                                         "pattern");
        return NULL;
    }
    int found = any_text(args[0], args[1]);
    return found < 0 ? NULL : PyBool_FromLong(found);
}

/* -- bind ----------------------------------------------------------------------------------------- */

static PyObject *take(PyObject *ns, const char *name) {
    PyObject *value = PyDict_GetItemString(ns, name);  /* borrowed */
    if (value == NULL) {
        PyErr_Format(PyExc_KeyError, "_speedups.bind: %s is missing", name);
        return NULL;
    }
    return Py_NewRef(value);
}

static int literals(PyObject *ns, const char *name, int max, int max_len, char *text, int *lens, int *count,
                    int is_str) {
    /* is_str 2: str items, those not ASCII left out (they are in no ASCII text) */
    PyObject *items = PyDict_GetItemString(ns, name);
    if (items == NULL || !PyTuple_Check(items) || PyTuple_GET_SIZE(items) > max) {
        PyErr_Format(PyExc_TypeError, "_speedups.bind: %s: a tuple of at most %d", name, max);
        return -1;
    }
    *count = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items); k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k);
        const char *data;
        Py_ssize_t len;
        if (is_str == 2 && PyUnicode_Check(item) && !PyUnicode_IS_ASCII(item))
            continue;
        if (is_str && PyUnicode_Check(item) && PyUnicode_IS_ASCII(item)) {
            data = (const char *)PyUnicode_1BYTE_DATA(item);
            len = PyUnicode_GET_LENGTH(item);
        } else if (!is_str && PyBytes_Check(item)) {
            data = PyBytes_AS_STRING(item);
            len = PyBytes_GET_SIZE(item);
        } else {
            PyErr_Format(PyExc_TypeError, "_speedups.bind: %s holds a wrong item", name);
            return -1;
        }
        if (len >= max_len || len == 0) {
            PyErr_Format(PyExc_ValueError, "_speedups.bind: %s holds an item of a wrong length", name);
            return -1;
        }
        memcpy(text + *count * max_len, data, len);
        lens[*count] = (int)len;
        ++*count;
    }
    return 0;
}

/* The ASCII characters of a str in `ns` marked `mark` in `table`, and those beyond ASCII in `beyond` (at most
 * 8: a wide reading's; `beyond` NULL: not kept — they are in no ASCII text). */
static int characters(PyObject *ns, const char *name, unsigned char *table, unsigned char mark, Py_UCS4 *beyond,
                      int *count) {
    PyObject *text = PyDict_GetItemString(ns, name);
    if (text == NULL || !PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "_speedups.bind: %s: a str", name);
        return -1;
    }
    if (beyond != NULL)
        *count = 0;
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(text); k++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(text, k);
        if (c < 128) {
            table[c] = mark;
        } else if (beyond != NULL) {
            if (*count == 8) {
                PyErr_Format(PyExc_ValueError, "_speedups.bind: %s: more than 8 characters beyond ASCII", name);
                return -1;
            }
            beyond[(*count)++] = c;
        }
    }
    return 0;
}

static PyObject *bind(PyObject *module, PyObject *ns) {
    if (!PyDict_Check(ns)) {
        PyErr_SetString(PyExc_TypeError, "bind() takes a dict");
        return NULL;
    }
    if (bound)  /* (once a process: a module that imports _claims again — a reload — runs in Python) */
        Py_RETURN_FALSE;
#define TAKE(var, name) do { if ((var = take(ns, name)) == NULL) return NULL; } while (0)
    TAKE(BY_WORD_BYTES, "_BY_WORD_BYTES");
    TAKE(any_in_word_search, "_ANY_IN_WORD_search");
    TAKE(word_pieces, "_word_pieces");
    TAKE(any_across_search, "_ANY_ACROSS_search");
    TAKE(across_pieces, "_across_pieces");
    TAKE(head_py, "_head");
    TAKE(data_line_match, "_DATA_LINE_match");
    TAKE(intro_match, "_INTRO_match");
    TAKE(normalise_ascii, "normalise_uncamelled_ascii");
    TAKE(claim_py, "_claim");
    TAKE(SINGLE, "_SINGLE");
    TAKE(single, "_single");
    TAKE(PIECE_KIND, "_PIECE_KIND");
    TAKE(PIECE_LANGUAGE, "_PIECE_LANGUAGE");
    TAKE(PLAIN_CUES, "_PLAIN_CUES");
    TAKE(plain_cues, "_plain_cues");
    TAKE(judge_unicode, "_judge_unicode");
    TAKE(judge_read, "_judge_read");
    TAKE(about_after_match, "_ABOUT_AFTER_match");
    TAKE(normalise_py, "normalise");
    TAKE(latin1_tables, "_latin1_tables");
    TAKE(evidence_py, "_evidence");
    TAKE(neg_after_match, "_NEG_AFTER_match");
    TAKE(reading_type, "_Reading");
    TAKE(valid_py, "_valid");
    TAKE(historical_py, "_historical");
    TAKE(PIECE_TERM, "_PIECE_TERM");
    TAKE(rules_of, "_rules_of");
    TAKE(clause_end_search, "_CLAUSE_END_search");
    TAKE(reported_search, "_REPORTED_search");
    TAKE(defined_search, "_DEFINED_search");
    TAKE(answered_match, "_ANSWERED_match");
    TAKE(history_search, "_HISTORY_search");
    TAKE(yes_no_words, "_YES_NO_WORDS");
    TAKE(intro_cjk_words, "_INTRO_CJK_WORDS");
    TAKE(reported_cjk, "_REPORTED_CJK");
    TAKE(history_cjk, "_HISTORY_CJK");
    TAKE(neg_zh_search, "_NEG_ZH_search");
    TAKE(neg_ja_after_match, "_NEG_JA_AFTER_match");
    TAKE(ja_polite_negation, "_JA_POLITE_NEGATION");
    TAKE(RETRY_PIECES, "_RETRY_PIECES");
    TAKE(REPORTED_WORDS, "_REPORTED_WORDS");
    TAKE(NUMBER_MARKS, "_NUMBER_MARKS");
    TAKE(NEG_WORDS, "_NEG_WORDS");
    TAKE(claim_type, "Claim");
    TAKE(ALTERNATIONS, "_ALTERNATIONS");
    PyObject *by_cjk = PyDict_GetItemString(ns, "_BY_CJK");
    cjk_ready = by_cjk == NULL ? -1 : cjk_tables(by_cjk);
    PyObject *inert_text = PyDict_GetItemString(ns, "_INERT");
    if (inert_text == NULL || !PyUnicode_Check(inert_text) || PyUnicode_GET_LENGTH(inert_text) > INERT_MAX) {
        PyErr_SetString(PyExc_TypeError, "_speedups.bind: _INERT: a str of at most 24 characters");
        return NULL;
    }
    inert_count = 0;
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(inert_text); k++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(inert_text, k);
        if (c < 0x80 || c > 0xffff) {
            PyErr_SetString(PyExc_ValueError, "_speedups.bind: _INERT: characters beyond ASCII, within U+FFFF");
            return NULL;
        }
        PyObject *one = PyUnicode_Substring(inert_text, k, k + 1);
        Py_ssize_t len = 0;
        const char *utf8 = one == NULL ? NULL : PyUnicode_AsUTF8AndSize(one, &len);  /* (two or three bytes) */
        if (utf8 != NULL)
            memcpy(inert_utf8[inert_count], utf8, len);
        Py_XDECREF(one);
        if (utf8 == NULL)
            return NULL;
        inert_utf8_len[inert_count] = (int)len;
        inert_chars[inert_count++] = c;
    }
#undef TAKE
    PyObject *table = PyDict_GetItemString(ns, "_WORD_BYTES");
    if (table == NULL || !PyBytes_Check(table) || PyBytes_GET_SIZE(table) != 256 || !PyDict_Check(BY_WORD_BYTES)
        || !PyList_Check(SINGLE) || !PyList_Check(PIECE_KIND) || !PyList_Check(PIECE_LANGUAGE)
        || PyList_GET_SIZE(PIECE_KIND) != PyList_GET_SIZE(SINGLE)
        || PyList_GET_SIZE(PIECE_LANGUAGE) != PyList_GET_SIZE(SINGLE) || !PyDict_Check(PLAIN_CUES)
        || !PyList_Check(PIECE_TERM) || PyList_GET_SIZE(PIECE_TERM) != PyList_GET_SIZE(SINGLE)
        || !PyType_Check(claim_type) || !PyDict_Check(ALTERNATIONS)) {
        PyErr_SetString(PyExc_TypeError, "_speedups.bind: a table of the wrong type");
        return NULL;
    }
    if (literals(ns, "_EXTENSIONS", 64, 8, &extension_text[0][0], extension_len, &extension_count, 1) < 0
        || literals(ns, "_ACROSS_LITERALS", 8, 32, &across_text[0][0], across_len, &across_count, 0) < 0
        || literals(ns, "_ABOUT_AFTER_LATIN", 64, 32, &about_text[0][0], about_len, &about_count, 2) < 0
        || literals(ns, "_CODE_WORDS", 32, 16, &code_text[0][0], code_len, &code_count, 1) < 0
        || literals(ns, "_MAIL_HEADERS", 16, 16, &mail_text[0][0], mail_len, &mail_count, 1) < 0
        || literals(ns, "_DE_NEGATION_AFTER", 8, 16, &de_text[0][0], de_len, &de_count, 1) < 0
        || characters(ns, "_SENTENCE_MARKS", sentence_mark, 1, sentence_mark_wide, &sentence_mark_wide_count) < 0
        || characters(ns, "_DECORATION_MARKS", decoration, 1, decoration_wide, &decoration_wide_count) < 0)
        return NULL;
    PyObject *kept = PyDict_GetItemString(ns, "_WORDS_KEPT"), *longest = PyDict_GetItemString(ns, "_LONGEST_KEPT");
    if (kept == NULL || longest == NULL) {
        PyErr_SetString(PyExc_KeyError, "_speedups.bind: _WORDS_KEPT or _LONGEST_KEPT is missing");
        return NULL;
    }
    WORDS_KEPT = PyLong_AsSsize_t(kept);
    LONGEST_KEPT = PyLong_AsSsize_t(longest);
    if (PyErr_Occurred())
        return NULL;
    memcpy(word_table, PyBytes_AS_STRING(table), 256);
    PyObject *word_table_1 = PyDict_GetItemString(ns, "_LATIN1_WORD"), *lower_table = PyDict_GetItemString(ns, "_LATIN1_LOWER");
    if (word_table_1 == NULL || lower_table == NULL || !PyBytes_Check(word_table_1) || !PyBytes_Check(lower_table)
        || PyBytes_GET_SIZE(word_table_1) != 256 || PyBytes_GET_SIZE(lower_table) != 256) {
        PyErr_SetString(PyExc_TypeError, "_speedups.bind: _LATIN1_WORD, _LATIN1_LOWER: 256 bytes each");
        return NULL;
    }
    memcpy(latin1_word, PyBytes_AS_STRING(word_table_1), 256);
    memcpy(latin1_lower, PyBytes_AS_STRING(lower_table), 256);
    INTRO_FIRSTS = PyDict_GetItemString(ns, "_INTRO_FIRSTS_LATIN1");
    PyObject *firsts = INTRO_FIRSTS != NULL && PyFrozenSet_Check(INTRO_FIRSTS) ? PySequence_List(INTRO_FIRSTS) : NULL;
    if (firsts == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "_speedups.bind: _INTRO_FIRSTS: a frozenset of bytes");
        return NULL;
    }
    Py_INCREF(INTRO_FIRSTS);
    if (keyset_init(&intro_firsts, PyList_GET_SIZE(firsts), NULL, 0) < 0) {
        Py_DECREF(firsts);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(firsts); k++) {
        PyObject *w = PyList_GET_ITEM(firsts, k);
        if (!PyBytes_Check(w)) {
            Py_DECREF(firsts);
            PyErr_SetString(PyExc_TypeError, "_speedups.bind: _INTRO_FIRSTS: a frozenset of bytes");
            return NULL;
        }
        const unsigned char *text = (const unsigned char *)PyBytes_AS_STRING(w);
        keyset_add(&intro_firsts, text, PyBytes_GET_SIZE(w), hash_of(text, PyBytes_GET_SIZE(w)));
    }
    Py_DECREF(firsts);
    if (!texts_readable(yes_no_words) || !texts_readable(reported_cjk) || !texts_readable(history_cjk)
        || !texts_readable(intro_cjk_words) || !PyUnicode_Check(ja_polite_negation)) {
        PyErr_SetString(PyExc_TypeError, "_speedups.bind: the Chinese and Japanese cue texts: tuples of strs");
        return NULL;
    }
    decoration[' '] = decoration[' '] ? decoration[' '] : 2;  /* (_DECORATION's run: the marks and spaces) */
    piece_count = PyList_GET_SIZE(SINGLE);
    if (literals(ns, "_IN_WORD_LITERALS", 64, 32, &literal_text[0][0], literal_len, &literal_count, 0) < 0)
        return NULL;
    memset(literal_by_first, -1, sizeof(literal_by_first));
    for (int k = 0; k < literal_count; k++) {
        signed char *which = literal_by_first[(unsigned char)literal_text[k][0]];
        int j = 0;
        while (j < 8 && which[j] >= 0)
            j++;
        if (j == 8) {  /* (more than 8 literals of one first byte: every word is searched) */
            literal_count = 0;
            break;
        }
        which[j] = (signed char)k;
    }
    kept_words.limit = WORDS_KEPT;
    anchors.limit = PyDict_GET_SIZE(BY_WORD_BYTES) + 1;
    Py_ssize_t saved_longest = LONGEST_KEPT, pos = 0;
    LONGEST_KEPT = PY_SSIZE_T_MAX;  /* (every anchor word is kept) */
    PyObject *word, *pieces;
    while (PyDict_Next(BY_WORD_BYTES, &pos, &word, &pieces)) {
        int *ints = NULL, count = 0;
        if (!PyBytes_Check(word) || PyBytes_GET_SIZE(word) == 0) {
            PyErr_SetString(PyExc_TypeError, "_BY_WORD_BYTES: a word of no bytes");
            return NULL;
        }
        if (ints_of(pieces, &ints, &count) < 0)
            return NULL;
        const unsigned char *text = (const unsigned char *)PyBytes_AS_STRING(word);
        Py_ssize_t len = PyBytes_GET_SIZE(word);
        if (word_keep(&anchors, text, len, hash_of(text, len), count, ints) == NULL) {
            PyMem_Free(ints);
            return PyErr_NoMemory();
        }
    }
    LONGEST_KEPT = saved_longest;
    pieces_table = PyMem_Calloc(piece_count + 1, sizeof(Piece));
    retry_piece = PyMem_Calloc(piece_count + 1, 1);
    if (pieces_table == NULL || retry_piece == NULL)
        return PyErr_NoMemory();
    PyObject *retry = PySequence_List(RETRY_PIECES);
    if (retry == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(retry); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(retry, k));
        if (i < 0 || i >= piece_count) {
            Py_DECREF(retry);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_IndexError, "_RETRY_PIECES: a piece out of range");
            return NULL;
        }
        retry_piece[i] = 1;
    }
    Py_DECREF(retry);
    if (keyset_from(REPORTED_WORDS, &reported_words) < 0 || keyset_from(NUMBER_MARKS, &number_marks) < 0
        || keyset_from(NEG_WORDS, &neg_words) < 0 || characters(ns, "_SENTENCE_ENDS", sentence_end, 1, sentence_end_wide,
                                                                                 &sentence_end_wide_count) < 0)
        return NULL;
    bound = 1;
    Py_RETURN_TRUE;
}

/* -- claim_in_result ------------------------------------------------------------------------------ */

static PyObject *claim_cached;  /* _claim_cached: the lru cache around judge() */
static PyObject *str_content, *str_type, *str_text, *str_accepted, *str_completed, *str_get;

static PyObject *bind_results(PyObject *module, PyObject *cached) {
    Py_XSETREF(claim_cached, Py_NewRef(cached));
    Py_RETURN_NONE;
}

/* isinstance(o, type): 1, 0, or -1 on an error (an object's __class__ is asked too: a proxy or a mock may
 * pass for a dict or a list, and _claim_in_result_python reads it as one). */
static int is_instance(PyObject *o, PyTypeObject *type) {
    if (Py_IS_TYPE(o, type) || PyType_IsSubtype(Py_TYPE(o), type))
        return 1;
    return PyObject_IsInstance(o, (PyObject *)type);
}

/* block.get(key): a new reference (None when missing); NULL on an error.  An exact dict is read directly,
 * any other (a subclass) through its own get, as _claim_in_result_python reads it. */
static PyObject *block_get(PyObject *block, PyObject *key) {
    if (!PyDict_CheckExact(block))
        return PyObject_CallMethodOneArg(block, str_get, key);
    PyObject *value = PyDict_GetItemWithError(block, key);
    if (value == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    return Py_NewRef(value);
}

static int rank_of(PyObject *claim) {  /* _RANK[claim.kind] */
    PyObject *kind = PyObject_GetAttr(claim, str_kind);
    if (kind == NULL)
        return -1;
    int rank = PyUnicode_Check(kind) ? (PyUnicode_Compare(kind, str_failed) == 0 ? 0
                                        : PyUnicode_Compare(kind, str_accepted) == 0 ? 1
                                        : PyUnicode_Compare(kind, str_completed) == 0 ? 2 : 3) : 3;
    Py_DECREF(kind);
    if (rank == 3) {
        PyErr_SetString(PyExc_ValueError, "a claim of no known kind");
        return -1;
    }
    return rank;
}

/* _claim_in_result_python(result), in C. */
static PyObject *claim_in_result(PyObject *module, PyObject *result) {
    if (claim_cached == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.bind_results() was not called");
        return NULL;
    }
    PyObject *content;
    if (PyDict_CheckExact(result)) {
        content = PyDict_GetItemWithError(result, str_content);
        if (content == NULL && PyErr_Occurred())
            return NULL;
        Py_XINCREF(content);
    } else {
        content = PyObject_CallMethod(result, "get", "O", str_content);
        if (content == NULL)
            return NULL;
    }
    int listed = content == NULL ? 0 : is_instance(content, &PyList_Type);
    if (listed <= 0) {
        Py_XDECREF(content);
        return listed < 0 ? NULL : Py_NewRef(Py_None);
    }
    /* `for block in content` and block.get(...) as Python reads them: an iterator (a list subclass may have
       its own __iter__; a list changed while judged is read as its iterator reads it), a block's own get
       (a dict subclass may have one), and each value held while Python runs (a comparison may empty the
       block: a value borrowed from it would then be freed) */
    PyObject *best = NULL, *blocks = PyObject_GetIter(content), *block = NULL;
    int best_rank = 3;
    Py_DECREF(content);
    if (blocks == NULL)
        return NULL;
    while ((block = PyIter_Next(blocks)) != NULL) {
        int is_dict = is_instance(block, &PyDict_Type);
        if (is_dict <= 0) {
            Py_DECREF(block);
            if (is_dict < 0)
                goto error;
            continue;
        }
        PyObject *type = block_get(block, str_type);  /* block.get("type") != "text" */
        int not_text = type == NULL ? -1 : PyObject_RichCompareBool(type, str_text, Py_NE);
        Py_XDECREF(type);
        PyObject *text = not_text == 0 ? block_get(block, str_text) : NULL;
        Py_DECREF(block);
        if (not_text < 0 || (not_text == 0 && text == NULL))
            goto error;
        int empty = 1;  /* not isinstance(text, str) or not text; then len(text) (a subclass's own) */
        Py_ssize_t length = 0;
        if (text != NULL && PyUnicode_CheckExact(text)) {
            length = PyUnicode_GET_LENGTH(text);
            empty = length == 0;
        } else if (text != NULL) {  /* (a subclass, or what passes for a str: its own truth and length) */
            int is_str = is_instance(text, &PyUnicode_Type);
            empty = is_str < 0 ? -1 : is_str == 0 ? 1 : PyObject_Not(text);
            if (empty == 0)
                length = PyObject_Length(text);
        }
        if (empty < 0 || length < 0) {
            Py_DECREF(text);
            goto error;
        }
        if (empty) {
            Py_XDECREF(text);
            continue;
        }
        PyObject *cached = Py_NewRef(claim_cached);  /* (held: bind_results may run while Python does) */
        PyObject *claim = length <= 512 ? call1(cached, text) : judge_text(module, text);
        Py_DECREF(cached);
        Py_DECREF(text);
        if (claim == NULL)
            goto error;
        if (claim == Py_None) {
            Py_DECREF(claim);
            continue;
        }
        int rank = rank_of(claim);
        if (rank < 0) {
            Py_DECREF(claim);
            goto error;
        }
        if (best == NULL || rank < best_rank) {
            Py_XSETREF(best, claim);
            best_rank = rank;
            if (rank == 0)
                break;
        } else {
            Py_DECREF(claim);
        }
    }
    Py_DECREF(blocks);
    if (PyErr_Occurred()) {  /* (the iterator's error) */
        Py_XDECREF(best);
        return NULL;
    }
    return best != NULL ? best : Py_NewRef(Py_None);
error:
    Py_DECREF(blocks);
    Py_XDECREF(best);
    return NULL;
}

/* normalise(text) as judge() makes it in C (latin_normalised, wide_normalised), or None where it hands
 * the text to _normalise.normalise (the tests compare the two). */
static PyObject *normalise_in_c(PyObject *module, PyObject *text) {
    if (bound_for("normalise()", text) < 0)
        return NULL;
    PyObject *proxy = NULL, *norm_bytes = NULL;
    PyObject *norm = latin_normalised(text, &proxy, &norm_bytes);
    Py_XDECREF(proxy);
    Py_XDECREF(norm_bytes);
    if (norm == NULL && !PyErr_Occurred())
        norm = wide_normalised(text);
    if (norm == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return norm;
}

static PyMethodDef methods[] = {
    {"bind_results", bind_results, METH_O, "bind_results(cached): the cached judge claim_in_result calls."},
    {"claim_in_result", claim_in_result, METH_O, "claim_in_result(result): _claims._claim_in_result_python, in C."},
    {"bind", bind, METH_O, "bind(namespace): the _claims tables, patterns and functions this reads through; False\n"
                           "when bound already (once a process)."},
    {"judge", judge_text, METH_O, "judge(text): _claims._judge(text), in C where its words are ASCII."},
    {"cjk_pieces", cjk_pieces, METH_O, "cjk_pieces(norm): _claims._cjk_pieces_python(norm), in C (a list)."},
    {"any_text_in", (PyCFunction)(void (*)(void))any_text_in, METH_FASTCALL,
     "any_text_in(norm, texts, pattern): _claims._any_text_in_python, in C."},
    {"wide_claim", (PyCFunction)(void (*)(void))wide_claim_py, METH_FASTCALL,
     "wide_claim(head, norm, candidates): _claims._claim(head, candidates, norm) read in C as judge() reads a\n"
     "Chinese or Japanese text, or Ellipsis where the Python reading answers."},
    {"head", head_in_c, METH_O, "head(text): _claims._head(text) as judge() reads it in C (a text of Latin-1), or None\n"
                                "where it hands the text to _head."},
    {"wide_head_whole", wide_head_whole_py, METH_O, "wide_head_whole(text): True where _claims._head(text) is known to be\n"
                                                     "the text (one that starts with a CJK character), read in C."},
    {"wide_candidates", wide_candidates, METH_O, "wide_candidates(norm): (_claims._normalised_candidates(norm), the\n"
                                                 "set of its words as _Reading.tokens() reads them) of a text beyond ASCII,\n"
                                                 "in C; None where the Python reading answers."},
    {"normalise", normalise_in_c, METH_O, "normalise(text): _normalise.normalise(text) as judge() makes it in C, or\n"
                                          "None where it hands the text to Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "truecall.judge._speedups",
    "The claim judgment of a text in one C call (see _claims._judge).", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(str_span, "span");
    INTERN(str_tokens, "tokens");
    INTERN(str_failed, "failed");
    INTERN(str_de, "de");
    INTERN(str_zh, "zh");
    INTERN(str_kind, "kind");
    INTERN(str_language, "language");
    INTERN(str_evidence, "evidence");
    INTERN(str_content, "content");
    INTERN(str_type, "type");
    INTERN(str_text, "text");
    INTERN(str_accepted, "accepted");
    INTERN(str_completed, "completed");
    INTERN(str_get, "get");
#undef INTERN
    if ((empty_tuple = PyTuple_New(0)) == NULL || (kw_tokens = PyTuple_Pack(1, str_tokens)) == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
