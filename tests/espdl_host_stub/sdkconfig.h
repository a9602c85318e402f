// Host stand-in (tests only): see README.md.
#pragma once
#define CONFIG_ESP_DEFAULT_CPU_FREQ_MHZ 240
