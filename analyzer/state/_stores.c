/* SPDX-License-Identifier: MIT */
/* stores.SummaryStore's packing of a chunk's pass-1 rows (summary_pack): what a summary's pass 2 reads of
 * them, one packed record a row, in one pass over the pieces after one for the columns' ranges. The numpy
 * version (a dozen passes over the chunk: joined, narrowed, the bits, packed field by field) took a tenth of
 * a long TCP transfer's summary. */
#include "_analyzer.h"

#include <string.h>

/* a pass-1 row as Board.feed_level writes it (scoreboard.ROW_DTYPE, _scoreboard.c board_row_t) */
typedef struct __attribute__((packed)) {
    int64_t sack, sacked, nr, freed, acked, usack, usacked, unr, time_ns;
    uint32_t frame;
    int32_t flags;
    uint8_t is_data;
} summary_source_row_t;

enum { PK_TIME, PK_SACK, PK_NR, PK_ACKED, PK_N };     /* the narrowed columns, in SummaryStore.COLUMNS' order */
enum { COL_FLAGS = PK_N, COL_IS_DATA, COL_SACKED, N_COLS };  /* then flags, is_data, sacked: KEPT's order */
enum { BIT_NEW_GAP = 3, BIT_DATA = 4, BIT_SACKED = 8 };   /* SummaryStore's NEW | GAP, DATA, SACKED */

typedef struct {
    const summary_source_row_t *records;  /* a records piece, or NULL: a columns piece */
    const int64_t *col[PK_N];
    const int32_t *flags;
    const uint8_t *is_data;
    const int64_t *sacked;
    Py_ssize_t n;
} piece_t;

/* a row's bits byte (SummaryStore._bits) */
static inline uint8_t row_bits(int32_t flags, uint8_t is_data, int64_t sacked) {
    return (uint8_t)((flags & BIT_NEW_GAP) | (is_data ? BIT_DATA : 0) | (sacked > 0 ? BIT_SACKED : 0));
}

/* row i of a records piece: its four narrowed columns' values and its bits byte */
static inline void record_row(const summary_source_row_t *r, int64_t v[PK_N], uint8_t *bits) {
    v[PK_TIME] = r->time_ns; v[PK_SACK] = r->sack; v[PK_NR] = r->nr; v[PK_ACKED] = r->acked;
    *bits = row_bits(r->flags, r->is_data, r->sacked);
}

/* A packed record's layout: each column's place (offset[c]), the bits byte's (offset[PK_N]) -> its width. */
static size_t record_layout(const int whole[PK_N], size_t offset[PK_N + 1]) {
    offset[0] = 0;
    for (int c = 0; c < PK_N; c++) offset[c + 1] = offset[c] + (whole[c] ? 8 : 4);
    return offset[PK_N] + 1;
}

/* One column's values into the records at `out` (`width` bytes apart): as int64, or as uint32 above base. */
static void pack_column(uint8_t *out, size_t width, const int64_t *v, Py_ssize_t n, int whole, int64_t base) {
    if (whole)
        for (Py_ssize_t i = 0; i < n; i++) memcpy(out + i * width, &v[i], 8);
    else
        for (Py_ssize_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)((uint64_t)v[i] - (uint64_t)base);
            memcpy(out + i * width, &u, 4);
        }
}

/* summary_pack(pieces) -> (packed bytes, the four columns' bases, whether each is kept whole): pieces are
 * ROW_DTYPE record arrays or tuples of KEPT's seven columns (int64, int64, int64, int64, int32, bool, int64).
 * A column whose values span less than 2^32 is kept as uint32 above its least value (the base), else as
 * int64 with base 0 (SummaryStore._narrow's rule); each record: the four columns in turn, then the bits byte. */
PyObject *summary_pack(PyObject *self, PyObject *args) {
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list)) return NULL;
    Py_ssize_t n_pieces = PyList_GET_SIZE(list);
    piece_t *pieces = PyMem_Calloc(n_pieces ? n_pieces : 1, sizeof *pieces);
    buf_t *bufs = PyMem_Calloc(n_pieces ? n_pieces * N_COLS : 1, sizeof *bufs);
    PyObject *packed = NULL, *result = NULL;
    if (!pieces || !bufs) { PyErr_NoMemory(); goto out; }
    static const size_t sizes[N_COLS] = {8, 8, 8, 8, 4, 1, 8};
    Py_ssize_t rows = 0;
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        PyObject *item = PyList_GET_ITEM(list, k);
        piece_t *p = &pieces[k];
        buf_t *b = &bufs[k * N_COLS];
        if (PyTuple_Check(item)) {
            if (PyTuple_GET_SIZE(item) != N_COLS) {
                PyErr_SetString(PyExc_ValueError, "summary_pack: a columns piece has seven columns");
                goto out;
            }
            for (int c = 0; c < N_COLS; c++) {
                if (get_buf(PyTuple_GET_ITEM(item, c), &b[c], sizes[c], c ? p->n : -1, 0, "summary_pack") < 0) goto out;
                if (c == 0) p->n = b[0].b.len / 8;
            }
            for (int c = 0; c < PK_N; c++) p->col[c] = b[c].b.buf;
            p->flags = b[COL_FLAGS].b.buf; p->is_data = b[COL_IS_DATA].b.buf; p->sacked = b[COL_SACKED].b.buf;
        } else {
            if (get_buf(item, &b[0], sizeof(summary_source_row_t), -1, 0, "summary_pack") < 0) goto out;
            p->records = b[0].b.buf;
            p->n = b[0].b.len / (Py_ssize_t)sizeof(summary_source_row_t);
        }
        rows += p->n;
    }
    int64_t lo[PK_N], hi[PK_N], base[PK_N] = {0};
    int whole[PK_N];
    for (int c = 0; c < PK_N; c++) { lo[c] = INT64_MAX; hi[c] = INT64_MIN; }
    /* the loops over rows without the GIL (the buffers are held): with --jobs the store packs a chunk in a
     * thread while the pipeline goes on */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        const piece_t *p = &pieces[k];
        for (Py_ssize_t i = 0; p->records && i < p->n; i++) {
            int64_t v[PK_N]; uint8_t bits;
            record_row(&p->records[i], v, &bits);
            for (int c = 0; c < PK_N; c++) {
                if (v[c] < lo[c]) lo[c] = v[c];
                if (v[c] > hi[c]) hi[c] = v[c];
            }
        }
        for (int c = 0; !p->records && c < PK_N; c++)  /* a column at a time: a loop the compiler vectorizes */
            for (Py_ssize_t i = 0; i < p->n; i++) {
                int64_t v = p->col[c][i];
                lo[c] = v < lo[c] ? v : lo[c];
                hi[c] = v > hi[c] ? v : hi[c];
            }
    }
    Py_END_ALLOW_THREADS
    for (int c = 0; c < PK_N; c++) {
        /* (the difference as unsigned: exact for any two int64 values, lo <= hi) */
        whole[c] = !rows || (uint64_t)hi[c] - (uint64_t)lo[c] >= (1ULL << 32);
        base[c] = whole[c] ? 0 : lo[c];
    }
    size_t offset[PK_N + 1], width = record_layout(whole, offset);
    packed = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(rows * width));
    if (!packed) goto out;
    uint8_t *at = (uint8_t *)PyBytes_AS_STRING(packed);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        const piece_t *p = &pieces[k];
        for (Py_ssize_t i = 0; p->records && i < p->n; i++) {
            int64_t v[PK_N]; uint8_t bits;
            record_row(&p->records[i], v, &bits);
            for (int c = 0; c < PK_N; c++) pack_column(at + i * width + offset[c], width, &v[c], 1, whole[c], base[c]);
            at[i * width + offset[PK_N]] = bits;
        }
        if (!p->records) {
            for (int c = 0; c < PK_N; c++) pack_column(at + offset[c], width, p->col[c], p->n, whole[c], base[c]);
            for (Py_ssize_t i = 0; i < p->n; i++)
                at[i * width + offset[PK_N]] = row_bits(p->flags[i], p->is_data[i], p->sacked[i]);
        }
        at += p->n * width;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(O(LLLL)(iiii))", packed, (long long)base[0], (long long)base[1], (long long)base[2],
                           (long long)base[3], whole[0], whole[1], whole[2], whole[3]);
out:
    Py_XDECREF(packed);
    if (bufs)
        for (Py_ssize_t k = 0; k < n_pieces * N_COLS; k++)
            if (bufs[k].ok) PyBuffer_Release(&bufs[k].b);
    PyMem_Free(bufs);
    PyMem_Free(pieces);
    return result;
}

/* summary_unpack(packed, wide, bases, counts) -> (the four columns as int64, one after another; the bits bytes),
 * as bytearrays: pieces packed by summary_pack with one layout (`wide`: whether each column is kept whole),
 * read back (summary_pack's inverse): counts[k] rows of piece k, whose columns were narrowed above
 * bases[k * 4 + column] (int64 arrays). */
PyObject *summary_unpack(PyObject *self, PyObject *args) {
    PyObject *o_packed, *o_bases, *o_counts, *columns = NULL, *bits = NULL, *result = NULL;
    int whole[PK_N];
    if (!PyArg_ParseTuple(args, "O(iiii)OO:summary_unpack", &o_packed, &whole[0], &whole[1], &whole[2], &whole[3],
                          &o_bases, &o_counts))
        return NULL;
    buf_t packed = {0}, bases = {0}, counts = {0};
    if (get_buf(o_counts, &counts, 8, -1, 0, "summary_unpack") < 0) goto out;
    Py_ssize_t n_pieces = counts.b.len / 8, rows = 0;
    if (get_buf(o_bases, &bases, 8, n_pieces * PK_N, 0, "summary_unpack") < 0) goto out;
    size_t offset[PK_N + 1], width = record_layout(whole, offset);
    const int64_t *count = counts.b.buf, *base = bases.b.buf;
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        if (count[k] < 0) { PyErr_SetString(PyExc_ValueError, "summary_unpack: a negative count"); goto out; }
        rows += count[k];
    }
    if (get_buf(o_packed, &packed, 1, -1, 0, "summary_unpack") < 0) goto out;
    if ((size_t)packed.b.len != (size_t)rows * width) {
        PyErr_Format(PyExc_ValueError, "summary_unpack: %zd bytes for %zd rows of %zu", packed.b.len, rows, width);
        goto out;
    }
    if (!(columns = PyByteArray_FromStringAndSize(NULL, rows * 8 * PK_N)) || !(bits = PyByteArray_FromStringAndSize(NULL, rows)))
        goto out;
    const uint8_t *in = packed.b.buf;
    int64_t *col = (int64_t *)PyByteArray_AS_STRING(columns);
    uint8_t *bit = (uint8_t *)PyByteArray_AS_STRING(bits);
    Py_BEGIN_ALLOW_THREADS
    for (int c = 0; c < PK_N; c++) {
        const uint8_t *at = in + offset[c];
        int64_t *out = col + (size_t)c * rows;
        for (Py_ssize_t k = 0; k < n_pieces; k++) {
            uint64_t b = (uint64_t)base[k * PK_N + c];
            for (int64_t i = 0; i < count[k]; i++, at += width, out++) {
                if (whole[c]) memcpy(out, at, 8);
                else { uint32_t u; memcpy(&u, at, 4); *out = (int64_t)(b + u); }
            }
        }
    }
    for (Py_ssize_t i = 0; i < rows; i++) bit[i] = in[i * width + offset[PK_N]];
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, columns, bits);
out:
    Py_XDECREF(columns);
    Py_XDECREF(bits);
    if (packed.ok) PyBuffer_Release(&packed.b);
    if (bases.ok) PyBuffer_Release(&bases.b);
    if (counts.ok) PyBuffer_Release(&counts.b);
    return result;
}
