// Compiled GPU kernels on disk (binary_cache.h).

#include "backends/gpu/binary_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace frame::backends::gpu {
namespace {

// File layout: u64 key length, key, u64 binary length, u64 FNV-1a of the binary, binary.
std::filesystem::path cache_file(const std::string& dir, const std::string& key,
                                 std::string_view ext) {
  return std::filesystem::path(dir) / fmt::format("{:016x}{}", fnv1a(key), ext);
}

}  // namespace

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

std::optional<std::string> read_cached_binary(const std::string& dir, const std::string& key,
                                              std::string_view ext) {
  if (dir.empty()) return std::nullopt;
  std::ifstream in(cache_file(dir, key, ext), std::ios::binary);
  if (!in) return std::nullopt;
  uint64_t n = 0;
  if (!in.read(reinterpret_cast<char*>(&n), sizeof(n)) || n != key.size()) return std::nullopt;
  std::string stored(key.size(), '\0');
  if (!in.read(stored.data(), static_cast<std::streamsize>(n)) || stored != key) {
    return std::nullopt;
  }
  uint64_t bin_size = 0;
  uint64_t bin_hash = 0;
  if (!in.read(reinterpret_cast<char*>(&bin_size), sizeof(bin_size)) ||
      !in.read(reinterpret_cast<char*>(&bin_hash), sizeof(bin_hash))) {
    return std::nullopt;
  }
  std::string bin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bin.empty() || bin.size() != bin_size || fnv1a(bin) != bin_hash) return std::nullopt;
  return bin;
}

void write_cached_binary(const std::string& dir, const std::string& key, std::string_view ext,
                         std::string_view binary, std::string_view salt) {
  if (dir.empty() || binary.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path file = cache_file(dir, key, ext);
  const std::filesystem::path tmp =
      file.string() + fmt::format(".tmp{}", fnv1a(std::string(salt) + std::to_string(getpid())));
  {
    std::ofstream out(tmp, std::ios::binary);
    const uint64_t n = key.size();
    const uint64_t bin_size = binary.size();
    const uint64_t bin_hash = fnv1a(binary);
    out.write(reinterpret_cast<const char*>(&n), sizeof(n));
    out.write(key.data(), static_cast<std::streamsize>(key.size()));
    out.write(reinterpret_cast<const char*>(&bin_size), sizeof(bin_size));
    out.write(reinterpret_cast<const char*>(&bin_hash), sizeof(bin_hash));
    out.write(binary.data(), static_cast<std::streamsize>(binary.size()));
    out.close();  // flushes: a full disk shows here, not after the rename
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace frame::backends::gpu
