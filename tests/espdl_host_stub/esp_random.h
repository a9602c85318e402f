// Host stand-in (tests only): see README.md.
#pragma once
#include <cstdint>
uint32_t esp_random(void);
