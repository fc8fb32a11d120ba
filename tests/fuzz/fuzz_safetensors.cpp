// A checkpoint file's bytes: whatever the safetensors reader accepts lies inside the input (every
// tensor's bytes within the data, of its dtype and shape's size, none overlapping) and converts
// to fp32 without reading past it; anything else is a refusal (std::runtime_error), never a
// crash or an allocation out of proportion to the input.
#include "replica/models/safetensors.hpp"

#include <cstdint>
#include <cstdlib>
#include <span>
#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace lanes::replica;
    const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
    std::unique_ptr<safetensors_file> f;
    try {
        f = safetensors_file::parse(input, "fuzz.safetensors");
    } catch (const std::runtime_error&) {
        return 0;
    }
    const std::byte* end = input.data() + input.size();
    for (const auto& [name, t] : f->tensors()) {
        if (t.bytes.data() < input.data() || t.bytes.data() + t.bytes.size() > end)
            std::abort();
        if (t.numel() * dtype_bytes(t.dtype) != t.bytes.size())
            std::abort();
        try {
            const std::vector<float> values = t.to_f32();
            if (values.size() != t.numel())
                std::abort();
        } catch (const std::runtime_error&) { // a dtype lanes does not compute with
        }
    }
    return 0;
}
