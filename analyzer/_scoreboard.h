/* The scoreboard type of nrsack.analyzer._reader (see _scoreboard.c). */
#ifndef NRSACK_SCOREBOARD_H
#define NRSACK_SCOREBOARD_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

int add_board_type(PyObject *module);

#endif
