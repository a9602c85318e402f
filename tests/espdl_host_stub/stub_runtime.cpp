// Host stand-in (tests only): see README.md. Trivial implementations; a "model run" spins ~200 us.
//
// The stand-in "model" has the inputs and outputs the environment names (STAND_IN_INPUTS and
// STAND_IN_OUTPUTS: "name:1x28x28x1:int8:-7;..."; default one int8 input and output) and
// computes a fixed integer function instead of a network (stand_in_function below), so a test can
// compute exactly what a correct transport must deliver. STAND_IN_RESET_AFTER=N makes the
// process "reset" (print "Rebooting..." and exit with status 3) after N evaluation inferences.
#include <algorithm>
#include <chrono>
#include <cmath>
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

// The harness idles reading stdin for the evaluation protocol; the stand-in ends when its stdin
// is closed and the harness waits on it (a board would wait forever).
static void end_if_stdin_closed()
{
    if (feof(stdin)) {
        fflush(stdout);
        std::exit(0);
    }
}

void vTaskDelay(TickType_t ticks)
{
    end_if_stdin_closed();
    std::this_thread::sleep_for(std::chrono::milliseconds(ticks));
}

namespace dl {
template <typename RT, typename T>
RT quantize(T input, float inv_scale)
{
    // esp-dl: tool::round (round half to even) then clip to the type's range.
    long v = std::lrint(static_cast<float>(input) * inv_scale);
    long lo = sizeof(RT) == 1 ? -128 : -32768, hi = sizeof(RT) == 1 ? 127 : 32767;
    return static_cast<RT>(std::min(hi, std::max(lo, v)));
}
template int8_t quantize<int8_t, float>(float, float);
template int16_t quantize<int16_t, float>(float, float);

template <typename T, typename RT>
RT dequantize(T input, float scale)
{
    return static_cast<RT>(input * scale);
}
template float dequantize<int8_t, float>(int8_t, float);
template float dequantize<int16_t, float>(int16_t, float);

TensorBase::TensorBase(std::vector<int> shape_, dtype_t dtype_, int exponent_) : shape(shape_), dtype(dtype_), exponent(exponent_)
{
    size = 1;
    for (int d : shape) size *= d;
    size_t bytes = dtype == DATA_TYPE_INT8 ? 1 : dtype == DATA_TYPE_INT16 ? 2 : 4;
    data = calloc(static_cast<size_t>(size), bytes);
}
TensorBase::~TensorBase() { free(data); }

// "name:1x28x28x1:int8:-7;name2:..." -> tensors.
static std::map<std::string, TensorBase *> tensors_from(const char *spec, const char *fallback)
{
    std::map<std::string, TensorBase *> result;
    std::string text = spec && *spec ? spec : fallback;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(';', start);
        std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        start = end == std::string::npos ? text.size() : end + 1;
        size_t a = item.find(':'), b = item.find(':', a + 1), c = item.find(':', b + 1);
        std::string name = item.substr(0, a), dims = item.substr(a + 1, b - a - 1), type = item.substr(b + 1, c - b - 1);
        int exponent = std::atoi(item.substr(c + 1).c_str());
        std::vector<int> shape;
        size_t p = 0;
        while (p < dims.size()) {
            size_t q = dims.find('x', p);
            shape.push_back(std::atoi(dims.substr(p, q == std::string::npos ? std::string::npos : q - p).c_str()));
            p = q == std::string::npos ? dims.size() : q + 1;
        }
        dtype_t dtype = type == "int16" ? DATA_TYPE_INT16 : type == "float32" ? DATA_TYPE_FLOAT : DATA_TYPE_INT8;
        result[name] = new TensorBase(shape, dtype, exponent);
    }
    return result;
}

static long element(TensorBase *t, int i)
{
    if (t->dtype == DATA_TYPE_INT8) return static_cast<int8_t *>(t->data)[i];
    if (t->dtype == DATA_TYPE_INT16) return static_cast<int16_t *>(t->data)[i];
    return std::lrint(static_cast<float *>(t->data)[i]);
}

// NOT a network: output element j (over all outputs, in order) is the integer mean (truncated)
// of the input elements i (over all inputs, in order) with i % N == j, clipped to the type.
static void stand_in_function(std::map<std::string, TensorBase *> &inputs, std::map<std::string, TensorBase *> &outputs)
{
    std::vector<long> in;
    for (auto &e : inputs)
        for (int i = 0; i < e.second->size; ++i) in.push_back(element(e.second, i));
    long n = 0;
    for (auto &e : outputs) n += e.second->size;
    long j = 0;
    for (auto &e : outputs) {
        TensorBase *t = e.second;
        for (int k = 0; k < t->size; ++k, ++j) {
            long sum = 0, count = 0;
            for (size_t i = static_cast<size_t>(j); i < in.size(); i += static_cast<size_t>(n)) {
                sum += in[i];
                ++count;
            }
            long v = count ? sum / count : 0;
            if (t->dtype == DATA_TYPE_INT8) static_cast<int8_t *>(t->data)[k] = static_cast<int8_t>(std::min(127L, std::max(-128L, v)));
            else if (t->dtype == DATA_TYPE_INT16) static_cast<int16_t *>(t->data)[k] = static_cast<int16_t>(std::min(32767L, std::max(-32768L, v)));
            else static_cast<float *>(t->data)[k] = static_cast<float>(v);
        }
    }
}

Model::Model(const char *where, fbs::model_location_type_t location, int, memory_manager_t, const uint8_t *, bool param_copy,
             const std::map<std::string, std::vector<int>> &)
{
    inputs_ = tensors_from(std::getenv("STAND_IN_INPUTS"), "input:1x8x8x1:int8:-7");
    outputs_ = tensors_from(std::getenv("STAND_IN_OUTPUTS"), "output:1x4:int8:-3");
    if (location == fbs::MODEL_LOCATION_IN_FLASH_RODATA) {
        fprintf(stderr, "stand-in: model from rodata, magic %.4s, param_copy %d\n", where, param_copy);
    } else {
        fprintf(stderr, "stand-in: model from partition %s, param_copy %d\n", where, param_copy);
    }
}
Model::~Model()
{
    for (auto &e : inputs_) delete e.second;
    for (auto &e : outputs_) delete e.second;
}
std::map<std::string, TensorBase *> &Model::get_inputs() { return inputs_; }
std::map<std::string, TensorBase *> &Model::get_outputs() { return outputs_; }
void Model::run(runtime_mode_t)
{
    int64_t until = esp_timer_get_time() + 200;
    while (esp_timer_get_time() < until) {
    }
    stand_in_function(inputs_, outputs_);
    // Only the evaluation's inferences count towards a stand-in reset: the evaluation's model is
    // the one the harness never test()s (each timed session does).
    static long evaluated = 0;
    const char *reset_after = std::getenv("STAND_IN_RESET_AFTER");
    if (reset_after && !tested_ && ++evaluated >= std::atol(reset_after)) {
        printf("Rebooting...\n");
        fflush(stdout);
        std::_Exit(3);
    }
}
esp_err_t Model::test()
{
    tested_ = true;
    return std::getenv("STAND_IN_TEST_FAILS") ? ESP_FAIL : ESP_OK;
}
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
