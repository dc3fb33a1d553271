// Written for kt's tests: a host timing header that includes what a configure step generates.
#ifndef BENCH_TIMER_H
#define BENCH_TIMER_H
#include <vector>
#include "generated_config.h"
double bench_seconds();
#endif
