#pragma once
#ifdef HEADER_DOUBLE
typedef double real;
#else
typedef float real;
#endif
struct Pair {
    real a;
    real b;
};
#ifdef HEADER_UNUSED
#include "not_included.cuh"
#endif
