// A reader of Hugging Face's safetensors format: an 8-byte little-endian header length N, N bytes
// of JSON naming each tensor's dtype, shape and [begin, end) byte range, then the raw row-major
// little-endian data. Files are mapped, never copied; the header is checked before any tensor is
// handed out (dtype known, numel × dtype size == end - begin without overflow, ranges inside the
// file and not overlapping, names unique, header at most max_header_bytes), and every refusal
// names the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

enum class tensor_dtype { f32, f16, bf16, f64, i64, i32, i16, i8, u8, u16, u32, u64, boolean, f8 };

std::string_view to_string(tensor_dtype d);
std::size_t dtype_bytes(tensor_dtype d);

struct tensor_view {
    std::string name;
    tensor_dtype dtype = tensor_dtype::f32;
    std::vector<std::size_t> shape;
    std::span<const std::byte> bytes; // inside the mapped file

    std::size_t numel() const;
    // The values as fp32 (bf16 widened, f16 converted exactly); throws std::runtime_error naming
    // the tensor for any other dtype.
    void to_f32(std::span<float> out) const;
    std::vector<float> to_f32() const;
};

// The safetensors reference implementation's cap on the JSON header.
inline constexpr std::size_t max_header_bytes = 100 * 1024 * 1024;

// One mapped file. Parse errors throw std::runtime_error("FILE: ...").
class safetensors_file {
public:
    static std::unique_ptr<safetensors_file> open(const std::string& path);
    // Parses `data` in place (not owned; it must outlive the object): the fuzz target's entry.
    static std::unique_ptr<safetensors_file> parse(std::span<const std::byte> data,
                                                   const std::string& label);
    ~safetensors_file();
    safetensors_file(const safetensors_file&) = delete;
    safetensors_file& operator=(const safetensors_file&) = delete;

    const std::map<std::string, tensor_view, std::less<>>& tensors() const { return tensors_; }
    const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }
    const std::string& path() const { return path_; }

private:
    safetensors_file() = default;
    void parse_header(std::span<const std::byte> data);

    std::string path_;
    void* map_ = nullptr;
    std::size_t map_size_ = 0;
    std::map<std::string, tensor_view, std::less<>> tensors_;
    std::map<std::string, std::string, std::less<>> metadata_;
};

// The weights of a model directory: model.safetensors, or the shards model.safetensors.index.json
// lists (each tensor must be in the shard the index names, and no tensor in two shards).
class checkpoint_files {
public:
    explicit checkpoint_files(const std::string& dir);

    // The tensor, or nullptr when the checkpoint lacks it.
    const tensor_view* find(std::string_view name) const;
    // Throws std::runtime_error naming the tensor when it is missing or its shape differs.
    const tensor_view& require(std::string_view name, std::vector<std::size_t> shape) const;
    std::vector<std::string> names() const;
    std::size_t file_count() const { return files_.size(); }
    // The dtype most tensors are stored in (for the start-up log).
    tensor_dtype main_dtype() const;

private:
    std::vector<std::unique_ptr<safetensors_file>> files_;
    std::map<std::string, const tensor_view*, std::less<>> index_;
};

// fp32 <-> 16-bit conversions, exact where the target can hold the value; to_bf16 rounds to
// nearest even (NaN kept a NaN), as torch does.
float bf16_to_f32(std::uint16_t v);
float f16_to_f32(std::uint16_t v);
std::uint16_t f32_to_bf16(float f);
std::uint16_t f32_to_f16(float f);

// Writes one safetensors file: tensors in the given order, header padded to 8 bytes. Each
// tensor's values are asked for only when it is written, so a large model is never held whole.
struct tensor_to_write {
    std::string name;
    tensor_dtype dtype = tensor_dtype::f32; // f32, bf16 or f16
    std::vector<std::size_t> shape;
    std::function<std::vector<float>()> values; // numel values, row-major
};
void write_safetensors(const std::string& path, const std::vector<tensor_to_write>& tensors);

} // namespace lanes::replica
