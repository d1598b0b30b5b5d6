#pragma once
/// \file
/// Minimal `.npy` (format 1.0/2.0, C order, little-endian) reading and writing for the
/// ONNX Runtime driver, which links nothing of frame so its memory and start-up are its own.
/// Supports `<f4`, `<f8`, `<i4`, `<i8`.

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace npy_lite {

/// A dense array: numpy descr, shape and raw little-endian bytes.
struct Array {
  std::string descr;  ///< "<f4", "<f8", "<i4" or "<i8"
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

/// Bytes per element of `descr`; throws std::runtime_error for other descrs.
inline size_t item_size(const std::string& descr) {
  if (descr == "<f4" || descr == "<i4") return 4;
  if (descr == "<f8" || descr == "<i8") return 8;
  throw std::runtime_error("npy: unsupported dtype '" + descr + "' (want <f4 <f8 <i4 <i8)");
}

/// Reads `path`. Throws std::runtime_error naming the file on any problem.
inline Array read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("npy: cannot open " + path);
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    throw std::runtime_error("npy: " + path + " is not an .npy file");
  }
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  std::string header(header_len, '\0');
  f.read(header.data(), header_len);
  auto field = [&](const std::string& key) {
    size_t p = header.find("'" + key + "'");
    if (p == std::string::npos) throw std::runtime_error("npy: " + path + " lacks " + key);
    return header.substr(header.find(':', p) + 1);
  };
  Array a;
  std::string d = field("descr");
  size_t q = d.find('\'');
  a.descr = d.substr(q + 1, d.find('\'', q + 1) - q - 1);
  if (field("fortran_order").find("True") < field("fortran_order").find(',')) {
    throw std::runtime_error("npy: " + path + " is in Fortran order");
  }
  std::string s = field("shape");
  s = s.substr(s.find('(') + 1, s.find(')') - s.find('(') - 1);
  std::stringstream ss(s);
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (tok.find_first_not_of(' ') != std::string::npos) a.shape.push_back(std::stoll(tok));
  }
  size_t n = item_size(a.descr);
  for (int64_t dim : a.shape) n *= static_cast<size_t>(dim);
  a.bytes.resize(n);
  f.read(reinterpret_cast<char*>(a.bytes.data()), static_cast<std::streamsize>(n));
  if (!f) throw std::runtime_error("npy: " + path + " is truncated");
  return a;
}

/// Writes `data` (bytes of `descr` elements) with `shape` to `path` (format 1.0).
inline void write(const std::string& path, const std::string& descr,
                  const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("npy: cannot write " + path);
  f.write("\x93NUMPY\x01\x00", 8);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  f.write(reinterpret_cast<const char*>(len), 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(nbytes));
}

}  // namespace npy_lite
