// Host stand-in (tests only): see README.md.
#pragma once
#include "freertos/FreeRTOS.h"
void vTaskDelay(TickType_t ticks);
