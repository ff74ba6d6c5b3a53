/* array.h - the number of elements of an array (not of a pointer: the
 * compiler must see the array's declaration). */
#ifndef PAYCALLBACK_ARRAY_H
#define PAYCALLBACK_ARRAY_H

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
