// Host stand-in (tests only): see README.md.
#pragma once
#include <cstdint>
#include "esp_err.h"
const char *esp_get_idf_version(void);
uint32_t esp_get_free_heap_size(void);
