/* SPDX-License-Identifier: MIT */
/* nrsack.analyzer._native.fill_layout: the JSON writer's hot loop (views/formats.py), compiled. */
#include "_analyzer.h"

#include <string.h>

/* ---- many summaries' JSON text in one call (views/formats.py write_json) ----
 * fill_layout(pieces, values, fallback) -> str: values taken k = len(pieces) - 1 at a time, each run
 * written as pieces[0] + json(v0) + pieces[1] + ... + json(v[k-1]) + pieces[k], the runs one after the
 * other. json(v) is json.dumps(v) for None, a bool, an int of 64 bits, a float (NaN: null, as the
 * writer's NaN -> null) and a str of printable ASCII without quote or backslash; any other value is
 * fallback(v), which returns its JSON text. Pieces and that text must be ASCII: the result is. A flow's
 * item made a value at a time in Python cost more than the rest of its analysis. */
typedef struct { char *p; size_t n, cap; } text_t;

static int text_put(text_t *t, const char *s, size_t n) {
    if (n > t->cap - t->n) {
        size_t cap = t->cap ? t->cap : 1 << 16;
        while (cap - t->n < n) {
            if (cap > PY_SSIZE_T_MAX / 2) { PyErr_NoMemory(); return -1; }
            cap *= 2;
        }
        char *p = PyMem_Realloc(t->p, cap);
        if (!p) { PyErr_NoMemory(); return -1; }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    return 0;
}

static int text_put_ascii(text_t *t, PyObject *s, const char *who) {
    if (!PyUnicode_Check(s) || !PyUnicode_IS_ASCII(s)) {
        PyErr_Format(PyExc_ValueError, "fill_layout: %s is not an ASCII str", who);
        return -1;
    }
    Py_ssize_t n;
    const char *data = PyUnicode_AsUTF8AndSize(s, &n);
    return data ? text_put(t, data, (size_t)n) : -1;
}

static int text_put_value(text_t *t, PyObject *v, PyObject *fallback) {
    if (v == Py_None) return text_put(t, "null", 4);
    if (v == Py_True) return text_put(t, "true", 4);
    if (v == Py_False) return text_put(t, "false", 5);
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow) {
            if (x == -1 && PyErr_Occurred()) return -1;
            char digits[32];
            int n = snprintf(digits, sizeof digits, "%lld", x);
            return text_put(t, digits, (size_t)n);
        }
    } else if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        if (Py_IS_NAN(d)) return text_put(t, "null", 4);
        if (Py_IS_INFINITY(d)) return d > 0 ? text_put(t, "Infinity", 8) : text_put(t, "-Infinity", 9);
        char *repr = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);  /* float.__repr__'s */
        if (!repr) return -1;
        int rc = text_put(t, repr, strlen(repr));
        PyMem_Free(repr);
        return rc;
    } else if (PyUnicode_CheckExact(v) && PyUnicode_IS_ASCII(v)) {
        Py_ssize_t n, i = 0;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) return -1;
        while (i < n && s[i] >= ' ' && s[i] <= '~' && s[i] != '"' && s[i] != '\\') i++;
        if (i == n)  /* nothing json escapes */
            return text_put(t, "\"", 1) < 0 || text_put(t, s, (size_t)n) < 0 ? -1 : text_put(t, "\"", 1);
    }
    PyObject *encoded = PyObject_CallOneArg(fallback, v);
    if (!encoded) return -1;
    int rc = text_put_ascii(t, encoded, "fallback's text");
    Py_DECREF(encoded);
    return rc;
}

PyObject *fill_layout(PyObject *self, PyObject *args) {
    PyObject *pieces, *values, *fallback;
    if (!PyArg_ParseTuple(args, "O!O!O:fill_layout", &PyTuple_Type, &pieces, &PyList_Type, &values, &fallback))
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(pieces) - 1;
    /* a tuple of the values: the fallback cannot change what is read */
    PyObject *items = PyList_AsTuple(values), *result = NULL;
    if (!items) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    text_t t = {NULL, 0, 0};
    if (k < 1 || n % k) {
        PyErr_SetString(PyExc_ValueError, "fill_layout: len(values) is not a multiple of len(pieces) - 1");
        goto out;
    }
    for (Py_ssize_t j = 0; j <= k; j++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(pieces, j)) || !PyUnicode_IS_ASCII(PyTuple_GET_ITEM(pieces, j))) {
            PyErr_SetString(PyExc_ValueError, "fill_layout: a piece is not an ASCII str");
            goto out;
        }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i % k == 0 && text_put_ascii(&t, PyTuple_GET_ITEM(pieces, 0), "a piece") < 0) goto out;
        if (text_put_value(&t, PyTuple_GET_ITEM(items, i), fallback) < 0 ||
            text_put_ascii(&t, PyTuple_GET_ITEM(pieces, i % k + 1), "a piece") < 0)
            goto out;
    }
    if (t.n > (size_t)PY_SSIZE_T_MAX) { PyErr_NoMemory(); goto out; }
    if (!(result = PyUnicode_New((Py_ssize_t)t.n, 127))) goto out;
    if (t.n) memcpy(PyUnicode_1BYTE_DATA(result), t.p, t.n);
out:
    PyMem_Free(t.p);
    Py_DECREF(items);
    return result;
}
