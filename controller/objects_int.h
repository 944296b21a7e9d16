/*
 * objects_int: what the two files of the objects module share (objects.c builds the
 * objects, objects_result.c reads a run's result). Nothing outside them includes this.
 */
#ifndef LODE_CTL_OBJECTS_INT_H
#define LODE_CTL_OBJECTS_INT_H

#include <jansson.h>

/* The string member key of obj, or dflt when it is missing, not a string, or empty. */
const char *ctl_str_or(const json_t *obj, const char *key, const char *dflt);

#endif
