// Host stand-in (tests only): see README.md. Trivial implementations; a "model run" spins ~200 us.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "dl_model_base.hpp"
#include "esp_heap_caps.h"
#include "esp_random.h"
#include "esp_system.h"
#include "esp_timer.h"
#include "freertos/task.h"

extern "C" void app_main(void);

int64_t esp_timer_get_time(void)
{
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

size_t heap_caps_get_free_size(uint32_t caps) { return (caps & MALLOC_CAP_SPIRAM) ? 8000000 : 300000; }
size_t heap_caps_get_minimum_free_size(uint32_t caps) { return (caps & MALLOC_CAP_SPIRAM) ? 7900000 : 290000; }
uint32_t esp_random(void) { return 0x1a2b3c4d; }
const char *esp_get_idf_version(void) { return "v5.4-host-stand-in"; }
uint32_t esp_get_free_heap_size(void) { return 8300000; }
const char *esp_err_to_name(esp_err_t code) { return code == ESP_OK ? "ESP_OK" : "ESP_FAIL"; }

// The harness idles forever after its last session (vTaskDelay of 1000 ms); the stand-in ends there.
void vTaskDelay(TickType_t ticks)
{
    if (ticks >= 1000) {
        fflush(stdout);
        std::exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ticks));
}

namespace dl {
Model::Model(const char *where, fbs::model_location_type_t location, int, memory_manager_t, const uint8_t *, bool param_copy,
             const std::map<std::string, std::vector<int>> &)
{
    if (location == fbs::MODEL_LOCATION_IN_FLASH_RODATA) {
        fprintf(stderr, "stand-in: model from rodata, magic %.4s, param_copy %d\n", where, param_copy);
    } else {
        fprintf(stderr, "stand-in: model from partition %s, param_copy %d\n", where, param_copy);
    }
}
Model::~Model() {}
void Model::run(runtime_mode_t)
{
    int64_t until = esp_timer_get_time() + 200;
    while (esp_timer_get_time() < until) {
    }
}
esp_err_t Model::test() { return std::getenv("STAND_IN_TEST_FAILS") ? ESP_FAIL : ESP_OK; }
std::string Model::get_metadata_prop(const std::string &key)
{
    const char *sha = std::getenv("STAND_IN_MODEL_SHA256");
    return key == "edgedeploy_model_sha256" && sha ? sha : "";
}
}  // namespace dl

// What target_add_aligned_binary_data provides on the board: the .espdl bytes under this symbol.
extern const uint8_t stand_in_model[16] asm("_binary_model_espdl_start") = {'E', 'D', 'L', '2'};

int main()
{
    app_main();
    return 0;
}
