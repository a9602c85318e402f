// Host stand-in (tests only): see README.md. Declarations follow esp-dl 3.3's dl_model_base.hpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "dl_tensor_base.hpp"
#include "esp_err.h"

namespace fbs {
typedef enum {
    MODEL_LOCATION_IN_FLASH_RODATA = 0,
    MODEL_LOCATION_IN_FLASH_PARTITION = 1,
    MODEL_LOCATION_IN_SDCARD = 2,
} model_location_type_t;
}  // namespace fbs

namespace dl {
typedef enum { RUNTIME_MODE_AUTO = 0, RUNTIME_MODE_SINGLE_CORE = 1, RUNTIME_MODE_MULTI_CORE = 2 } runtime_mode_t;
typedef enum { MEMORY_MANAGER_GREEDY = 0, LINEAR_MEMORY_MANAGER = 1 } memory_manager_t;

class Model {
public:
    Model(const char *rodata_address_or_partition_label_or_path,
          fbs::model_location_type_t location = fbs::MODEL_LOCATION_IN_FLASH_RODATA,
          int max_internal_size = 0,
          memory_manager_t mm_type = MEMORY_MANAGER_GREEDY,
          const uint8_t *key = nullptr,
          bool param_copy = true,
          const std::map<std::string, std::vector<int>> &input_shapes = {});
    virtual ~Model();
    virtual void run(runtime_mode_t mode = RUNTIME_MODE_SINGLE_CORE);
    esp_err_t test();
    std::string get_metadata_prop(const std::string &key);
    std::map<std::string, TensorBase *> &get_inputs();
    std::map<std::string, TensorBase *> &get_outputs();

private:
    std::map<std::string, TensorBase *> inputs_;
    std::map<std::string, TensorBase *> outputs_;
    bool tested_ = false;
};
}  // namespace dl
