// Host stand-in (tests only): see README.md. The few members of esp-dl 3.3's dl_tensor_base.hpp the harness uses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dl {
typedef enum {
    DATA_TYPE_UNDEFINED = 0,
    DATA_TYPE_FLOAT = 1,
    DATA_TYPE_UINT8 = 2,
    DATA_TYPE_INT8 = 3,
    DATA_TYPE_UINT16 = 4,
    DATA_TYPE_INT16 = 5,
} dtype_t;

// As esp-dl declares them: quantize takes the inverse scale, dequantize the scale.
template <typename RT, typename T = float>
RT quantize(T input, float inv_scale);
template <typename T, typename RT = float>
RT dequantize(T input, float scale);

class TensorBase {
public:
    int size;
    std::vector<int> shape;
    dtype_t dtype;
    int exponent;
    void *data;

    TensorBase(std::vector<int> shape, dtype_t dtype, int exponent);
    virtual ~TensorBase();
    template <typename T>
    T *get_element_ptr()
    {
        return static_cast<T *>(data);
    }
};
}  // namespace dl
