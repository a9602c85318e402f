// Host stand-in (tests only): see README.md.
#pragma once
#include <cstdint>
typedef uint32_t TickType_t;
#define pdMS_TO_TICKS(ms) ((TickType_t)(ms))
