// edgedeploy ESP-DL harness: load the model, check it, time it, print one result line per session.
// Hand-written, copied verbatim into every generated project (edit firmware/espdl in edgedeploy);
// what depends on the model is in the generated edgedeploy_model.h.
//
// Console output the host reads (toolkit/devices/serial.py):
//   "edgedeploy: harness start ..."    once per boot, before the first session
//   "EDGEDEPLOY {json}"                 one line per session (schema edgedeploy.run/1)
//   "edgedeploy: done ..."              after the last session
//   "EDGEDEPLOY-EVAL {json}"            then the evaluation protocol (edgedeploy_eval.hpp): the
//                                       host may stream the user's samples in and read the outputs
// Everything else (esp-dl's and ESP-IDF's logs) is ignored by the host.
//
// Uses the documented esp-dl 3.x API: dl::Model from flash rodata or a flash partition,
// Model::test() (test input and expected outputs that esp-ppq embeds with
// export_test_values=True), Model::run(); ESP-IDF's esp_timer and heap_caps for time and memory.

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dl_model_base.hpp"
#include "esp_err.h"
#include "esp_heap_caps.h"
#include "esp_idf_version.h"
#include "esp_random.h"
#include "esp_system.h"
#include "esp_timer.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#include "sdkconfig.h"

#include "edgedeploy_eval.hpp"
#include "edgedeploy_model.h"
#include "edgedeploy_stats.hpp"

// Reading the console: ESP-IDF's console VFS does not block on stdin until the console's own
// driver is installed (UART, or the USB-Serial-JTAG of the S3 and P4 dev kits' USB port).
#if defined(CONFIG_ESP_CONSOLE_USB_SERIAL_JTAG)
#include "driver/usb_serial_jtag.h"
#include "driver/usb_serial_jtag_vfs.h"
#elif defined(CONFIG_ESP_CONSOLE_UART)
#include "driver/uart.h"
#include "driver/uart_vfs.h"
#endif

#if !EDGEDEPLOY_MODEL_IN_PARTITION
// Placed by target_add_aligned_binary_data (main/CMakeLists.txt) from main/model.espdl.
extern const uint8_t edgedeploy_model_espdl[] asm("_binary_model_espdl_start");
#endif

namespace {

// Yield to FreeRTOS at least this often between timed runs (never inside one), so the idle
// task and the task watchdog are served during long sessions.
constexpr int64_t YIELD_EVERY_US = 200000;

dl::Model *load_model()
{
#if EDGEDEPLOY_MODEL_IN_PARTITION
    return new dl::Model(EDGEDEPLOY_MODEL_PARTITION_LABEL, fbs::MODEL_LOCATION_IN_FLASH_PARTITION, 0,
                         dl::MEMORY_MANAGER_GREEDY, nullptr, EDGEDEPLOY_PARAM_COPY);
#else
    return new dl::Model(reinterpret_cast<const char *>(edgedeploy_model_espdl), fbs::MODEL_LOCATION_IN_FLASH_RODATA, 0,
                         dl::MEMORY_MANAGER_GREEDY, nullptr, EDGEDEPLOY_PARAM_COPY);
#endif
}

struct HeapSnapshot {
    size_t internal;
    size_t psram;
};

HeapSnapshot heap_now()
{
    return {heap_caps_get_free_size(MALLOC_CAP_INTERNAL | MALLOC_CAP_8BIT), heap_caps_get_free_size(MALLOC_CAP_SPIRAM)};
}

std::string runtime_scope(dl::Model *model)
{
    // The generated scope plus what only the board knows; the model's own metadata says which
    // model this firmware really loaded.
    std::string scope = EDGEDEPLOY_SCOPE_JSON;
    edgedeploy::JsonWriter extra;
    extra.integer("cpu_freq_mhz", CONFIG_ESP_DEFAULT_CPU_FREQ_MHZ);
    extra.str("idf_version", esp_get_idf_version());
    extra.str("espdl_model_sha256", model->get_metadata_prop("edgedeploy_model_sha256"));
    std::string more = extra.close();
    // Splice the two objects: {...} + {...} -> {..., ...}
    return scope.substr(0, scope.size() - 1) + "," + more.substr(1);
}

void run_session(int index, uint32_t boot_id)
{
    HeapSnapshot before = heap_now();
    int64_t load_start = esp_timer_get_time();
    dl::Model *model = load_model();
    int64_t load_us = esp_timer_get_time() - load_start;
    HeapSnapshot loaded = heap_now();

    // Correctness first: one inference on the embedded test input, compared with the outputs
    // esp-ppq's simulation produced (esp-dl allows +-1 LSB for int16).
    esp_err_t test_status = model->test();
    bool outputs_match = test_status == ESP_OK;

    // Timing: the input tensors hold the test input that test() assigned.
    int64_t t0 = esp_timer_get_time();
    model->run();
    double first_us = static_cast<double>(esp_timer_get_time() - t0);
    for (int i = 0; i < EDGEDEPLOY_WARMUP_RUNS; ++i) {
        model->run();
    }
    std::vector<double> samples;
    samples.reserve(EDGEDEPLOY_MAX_ITERATIONS);
    int64_t started = esp_timer_get_time();
    int64_t last_yield = started;
    while (true) {
        int64_t a = esp_timer_get_time();
        model->run();
        int64_t b = esp_timer_get_time();
        samples.push_back(static_cast<double>(b - a));
        size_t n = samples.size();
        if ((n >= EDGEDEPLOY_MIN_ITERATIONS && b - started >= EDGEDEPLOY_MIN_DURATION_US) || n >= EDGEDEPLOY_MAX_ITERATIONS) {
            break;
        }
        if (b - last_yield >= YIELD_EVERY_US) {
            vTaskDelay(1);
            last_yield = esp_timer_get_time();
        }
    }
    double duration_s = static_cast<double>(esp_timer_get_time() - started) / 1e6;
    edgedeploy::LatencyStats stats = edgedeploy::summarize(samples);

    HeapSnapshot after = heap_now();
    edgedeploy::JsonWriter heap;
    heap.integer("free_internal_bytes", static_cast<long long>(after.internal));
    heap.integer("free_psram_bytes", static_cast<long long>(after.psram));
    heap.integer("min_free_internal_bytes", static_cast<long long>(heap_caps_get_minimum_free_size(MALLOC_CAP_INTERNAL | MALLOC_CAP_8BIT)));
    heap.integer("min_free_psram_bytes", static_cast<long long>(heap_caps_get_minimum_free_size(MALLOC_CAP_SPIRAM)));
    heap.integer("model_internal_bytes", static_cast<long long>(before.internal) - static_cast<long long>(loaded.internal));
    heap.integer("model_psram_bytes", static_cast<long long>(before.psram) - static_cast<long long>(loaded.psram));

    char boot_hex[12];
    snprintf(boot_hex, sizeof(boot_hex), "%08" PRIx32, boot_id);

    edgedeploy::JsonWriter line;
    line.str("schema", "edgedeploy.run/1");
    line.raw("scope", runtime_scope(model));
    line.integer("session", index);
    line.integer("sessions", EDGEDEPLOY_SESSIONS);
    line.str("boot_id", boot_hex);
    line.num("model_load_us", static_cast<double>(load_us));
    line.num("first_inference_us", first_us);
    line.integer("warmup", EDGEDEPLOY_WARMUP_RUNS);
    line.integer("iterations", static_cast<long long>(stats.count));
    line.num("duration_s", duration_s);
    line.raw("latency_us", edgedeploy::latency_json(stats));
    line.integer("batch", 1);
    line.num("throughput_items_per_s", stats.mean > 0 ? 1e6 / stats.mean : 0.0);
    line.boolean("outputs_match", outputs_match);
    line.str("test_status", esp_err_to_name(test_status));
    line.integer("free_heap_bytes", static_cast<long long>(esp_get_free_heap_size()));
    line.raw("heap", heap.close());

    // One printf, flushed: the line reaches the console whole even if other tasks log.
    printf("EDGEDEPLOY %s\n", line.close().c_str());
    fflush(stdout);
    delete model;
}

void console_init()
{
#if defined(CONFIG_ESP_CONSOLE_USB_SERIAL_JTAG)
    usb_serial_jtag_driver_config_t config = USB_SERIAL_JTAG_DRIVER_CONFIG_DEFAULT();
    config.rx_buffer_size = 4096;
    usb_serial_jtag_driver_install(&config);
    usb_serial_jtag_vfs_use_driver();
#elif defined(CONFIG_ESP_CONSOLE_UART)
    uart_driver_install(static_cast<uart_port_t>(CONFIG_ESP_CONSOLE_UART_NUM), 4096, 0, 0, nullptr, 0);
    uart_vfs_dev_use_driver(CONFIG_ESP_CONSOLE_UART_NUM);
#endif
    setvbuf(stdin, nullptr, _IONBF, 0);
}

const char *dtype_name(dl::dtype_t dtype)
{
    switch (dtype) {
    case dl::DATA_TYPE_INT8: return "int8";
    case dl::DATA_TYPE_INT16: return "int16";
    case dl::DATA_TYPE_FLOAT: return "float32";
    default: return "unsupported";
    }
}

size_t element_count(const std::vector<int> &shape)
{
    size_t n = 1;
    for (int d : shape) {
        n *= static_cast<size_t>(d > 0 ? d : 1);
    }
    return n;
}

// The loaded dl::Model as the evaluation protocol sees it: float32 in, quantized as esp-dl does
// (dl::quantize with the tensor's exponent), run, dequantized float32 out.
class EspDlEvalModel : public edgedeploy::eval::Model {
public:
    explicit EspDlEvalModel(dl::Model *model) : model_(model)
    {
        for (auto &entry : model_->get_inputs()) {
            inputs_.push_back(entry);
        }
        for (auto &entry : model_->get_outputs()) {
            outputs_.push_back(entry);
        }
    }

    size_t input_bytes() override { return bytes_of(inputs_); }
    size_t output_bytes() override { return bytes_of(outputs_); }

    bool infer(const std::vector<uint8_t> &input, std::vector<uint8_t> &output, std::string &error, double &inference_us) override
    {
        size_t offset = 0;
        for (auto &entry : inputs_) {
            dl::TensorBase *tensor = entry.second;
            size_t n = element_count(tensor->shape);
            std::vector<float> values(n);
            memcpy(values.data(), input.data() + offset, n * sizeof(float));
            offset += n * sizeof(float);
            int exponent = tensor->exponent;
            float inv_scale = ldexpf(1.0f, -exponent);
            if (tensor->dtype == dl::DATA_TYPE_INT8) {
                int8_t *dst = tensor->get_element_ptr<int8_t>();
                for (size_t i = 0; i < n; ++i) dst[i] = dl::quantize<int8_t>(values[i], inv_scale);
            } else if (tensor->dtype == dl::DATA_TYPE_INT16) {
                int16_t *dst = tensor->get_element_ptr<int16_t>();
                for (size_t i = 0; i < n; ++i) dst[i] = dl::quantize<int16_t>(values[i], inv_scale);
            } else if (tensor->dtype == dl::DATA_TYPE_FLOAT) {
                memcpy(tensor->get_element_ptr<float>(), values.data(), n * sizeof(float));
            } else {
                error = std::string("input ") + entry.first + " has a data type the protocol does not feed";
                return false;
            }
        }
        int64_t t0 = esp_timer_get_time();
        model_->run();
        inference_us = static_cast<double>(esp_timer_get_time() - t0);
        output.clear();
        for (auto &entry : outputs_) {
            dl::TensorBase *tensor = entry.second;
            size_t n = element_count(tensor->shape);
            float scale = ldexpf(1.0f, static_cast<int>(tensor->exponent));
            std::vector<float> values(n);
            if (tensor->dtype == dl::DATA_TYPE_INT8) {
                const int8_t *src = tensor->get_element_ptr<int8_t>();
                for (size_t i = 0; i < n; ++i) values[i] = dl::dequantize<int8_t, float>(src[i], scale);
            } else if (tensor->dtype == dl::DATA_TYPE_INT16) {
                const int16_t *src = tensor->get_element_ptr<int16_t>();
                for (size_t i = 0; i < n; ++i) values[i] = dl::dequantize<int16_t, float>(src[i], scale);
            } else if (tensor->dtype == dl::DATA_TYPE_FLOAT) {
                memcpy(values.data(), tensor->get_element_ptr<float>(), n * sizeof(float));
            } else {
                error = std::string("output ") + entry.first + " has a data type the protocol does not read";
                return false;
            }
            const uint8_t *bytes = reinterpret_cast<const uint8_t *>(values.data());
            output.insert(output.end(), bytes, bytes + n * sizeof(float));
        }
        return true;
    }

    std::string describe_io() override { return "\"inputs\":" + list_json(inputs_) + ",\"outputs\":" + list_json(outputs_); }

private:
    using Entry = std::pair<std::string, dl::TensorBase *>;

    static size_t bytes_of(const std::vector<Entry> &entries)
    {
        size_t total = 0;
        for (auto &entry : entries) total += element_count(entry.second->shape) * sizeof(float);
        return total;
    }

    static std::string list_json(const std::vector<Entry> &entries)
    {
        std::string out = "[";
        for (size_t i = 0; i < entries.size(); ++i) {
            dl::TensorBase *tensor = entries[i].second;
            std::string shape = "[";
            for (size_t d = 0; d < tensor->shape.size(); ++d) {
                shape += (d ? "," : "") + std::to_string(tensor->shape[d]);
            }
            shape += "]";
            edgedeploy::JsonWriter w;
            w.str("name", entries[i].first);
            w.raw("shape", shape);
            w.str("dtype", dtype_name(tensor->dtype));
            w.integer("exponent", static_cast<int>(tensor->exponent));
            out += (i ? "," : "") + w.close();
        }
        return out + "]";
    }

    dl::Model *model_;
    std::vector<Entry> inputs_;
    std::vector<Entry> outputs_;
};

void print_eval(const std::string &json)
{
    printf("%s%s\n", edgedeploy::eval::REPLY_PREFIX, json.c_str());
    fflush(stdout);
}

// After the timed sessions: answer the host's evaluation stream, forever (the board idles here).
void eval_loop(uint32_t boot_id)
{
    console_init();
    dl::Model *model = load_model();
    EspDlEvalModel adapter(model);
    edgedeploy::eval::Session session(adapter);
    char boot_hex[12];
    snprintf(boot_hex, sizeof(boot_hex), "%08" PRIx32, boot_id);
    print_eval(session.ready(boot_hex, EDGEDEPLOY_MODEL_SHA256));
    std::vector<char> line(edgedeploy::eval::MAX_LINE_BYTES + 2);
    while (true) {
        if (fgets(line.data(), static_cast<int>(line.size()), stdin) == nullptr) {
            vTaskDelay(pdMS_TO_TICKS(20));
            clearerr(stdin);
            continue;
        }
        size_t n = strlen(line.data());
        if (n == line.size() - 1 && line[n - 1] != '\n') {
            // Longer than any frame: drop the rest of the line; what was read fails its checks.
            int c;
            while ((c = getchar()) != '\n' && c != EOF) {
            }
        }
        for (const std::string &reply : session.handle(line.data())) {
            print_eval(reply);
        }
    }
}

}  // namespace

extern "C" void app_main(void)
{
    uint32_t boot_id = esp_random();
    printf("edgedeploy: harness start, model %s, chip %s, %d sessions, boot %08" PRIx32 "\n", EDGEDEPLOY_MODEL_SHA256,
           EDGEDEPLOY_CHIP, EDGEDEPLOY_SESSIONS, boot_id);
    fflush(stdout);
    for (int i = 0; i < EDGEDEPLOY_SESSIONS; ++i) {
        run_session(i, boot_id);
        vTaskDelay(pdMS_TO_TICKS(10));
    }
    printf("edgedeploy: done, %d sessions, boot %08" PRIx32 "\n", EDGEDEPLOY_SESSIONS, boot_id);
    fflush(stdout);
    eval_loop(boot_id);
}
