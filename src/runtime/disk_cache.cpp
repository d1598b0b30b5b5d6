// The compile cache on disk (src/runtime/disk_cache.h; docs/architecture/execution-model.md,
// "Compile cache on disk"). File layout of DIR:
//   entries/<digest of key>.entry   one specialization's compiled graph, plan and choices
//   blobs/<digest of bytes>.blob    one tensor of 4 KiB or more, or the packed form a kernel
//                                   made of one (core/packed_constants.h), shared by entries
// An entry is a text header, then a JSON document, then a binary section with the small
// tensors:
//   frame-compile-cache <format>
//   build frame <version> <revision>
//   cpu <cpu fingerprint>
//   blobs <digest>,<digest>,...       ("-" for none; read by eviction without the JSON)
//   json <bytes>
//   binary <bytes>
//   digest <digest of json and binary>
//   <empty line>
// A blob is a 64-byte header line "frame-blob <format> <bytes> <digest>" padded with spaces,
// then the bytes (so a mapped blob's data is 64-byte aligned).

#include "runtime/disk_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "core/aligned_memory.h"
#include "core/packed_constants.h"
#include "frame/core/digest.h"
#include "frame/ir/text.h"
#include "frame/passes/pass.h"
#include "runtime/compile_internal.h"
#include "runtime/executable_impl.h"

namespace frame::runtime::detail {

// File helpers, also used by the cache records (read_cache_record, write_cache_record).
bool parse_size(std::string_view s, size_t& out);
Status write_atomically(const std::string& path, std::initializer_list<std::string_view> parts);
Result<std::string> read_file(const std::string& path, size_t max_bytes);

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kBlobMinBytes = 4096;  // smaller tensors stay in the entry
constexpr size_t kBlobHeaderBytes = 64;
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;
constexpr size_t kMaxEntryBytes = size_t{1} << 30;  // JSON + small tensors; weights are blobs
constexpr std::string_view kEntryMagic = "frame-compile-cache";
constexpr std::string_view kBlobMagic = "frame-blob";

Status damaged(std::string msg) { return make_error(StatusCode::kIo, "{}", msg); }

// Text read from a cache file, safe to print: bytes outside printable ASCII as \xHH, at most
// 200 characters (a header line can hold anything).
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > 200) out += "...";
  return out;
}

std::string entry_path(const std::string& dir, const std::string& key) {
  return (fs::path(dir) / "entries" / (digest_hex(key.data(), key.size()) + ".entry")).string();
}

std::string blob_path(const std::string& dir, std::string_view digest) {
  return (fs::path(dir) / "blobs" / (std::string(digest) + ".blob")).string();
}

bool is_digest(std::string_view s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

bool parse_size(std::string_view s, size_t& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

namespace {

// A read-only (copy-on-write) mapping of a verified blob; constants view into it.
struct Mapping {
  void* base = nullptr;
  size_t length = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base != nullptr) munmap(base, length);
  }
  const std::byte* data() const { return static_cast<const std::byte*>(base) + kBlobHeaderBytes; }
};

// Blobs mapped and verified by this process, by path: a second entry of one model (another
// shape) shares the mapping, so its constants have the same addresses and the packed-weight
// cache of the oneDNN backend packs them once.
std::mutex g_blobs_mu;
std::map<std::string, std::weak_ptr<Mapping>>& mapped_blobs() {
  static auto* m = new std::map<std::string, std::weak_ptr<Mapping>>();
  return *m;
}

// Blob files this process verified (read with their digest checked, or wrote), by path, with
// the stat fields a replacement or rewrite changes: a store keeps such a file as it is and
// checks any other file of the right size before it keeps it, so that a damaged blob is
// rewritten by the first store that needs it, not left for a later read to reject.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size,
          int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
          int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
}

std::mutex g_checked_mu;
std::map<std::string, FileStamp>& checked_blobs() {
  static auto* m = new std::map<std::string, FileStamp>();
  return *m;
}

void note_checked(const std::string& path, const struct stat& st) {
  std::lock_guard lock(g_checked_mu);
  checked_blobs()[path] = stamp_of(st);
}

bool checked_unchanged(const std::string& path, const struct stat& st) {
  std::lock_guard lock(g_checked_mu);
  auto it = checked_blobs().find(path);
  return it != checked_blobs().end() && it->second == stamp_of(st);
}

Result<std::shared_ptr<Mapping>> map_blob(const std::string& blob_dir, const std::string& digest,
                                          size_t bytes) {
  const std::string path = blob_path(blob_dir, digest);
  {
    std::lock_guard lock(g_blobs_mu);
    if (auto it = mapped_blobs().find(path); it != mapped_blobs().end()) {
      if (std::shared_ptr<Mapping> m = it->second.lock()) {
        if (m->length == kBlobHeaderBytes + bytes) return m;
      }
    }
  }
  // O_NONBLOCK: a FIFO put in the cache must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return damaged(fmt::format("blob {}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return damaged(fmt::format("blob {}: not a regular file", path));
  }
  if (static_cast<size_t>(st.st_size) != kBlobHeaderBytes + bytes) {
    ::close(fd);
    ::unlink(path.c_str());  // damaged: the rebuild writes it again
    return damaged(fmt::format("blob {}: {} bytes, expected {}", path,
                               static_cast<long long>(st.st_size), kBlobHeaderBytes + bytes));
  }
  const struct stat opened = st;
  auto m = std::make_shared<Mapping>();
  m->length = kBlobHeaderBytes + bytes;
  void* p = mmap(nullptr, m->length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    return damaged(fmt::format("blob {}: cannot map: {}", path, std::strerror(errno)));
  }
  m->base = p;
  const std::string header(static_cast<const char*>(p), kBlobHeaderBytes);
  const std::string want = fmt::format("{} {} {} {}", kBlobMagic, kDiskCacheFormat, bytes, digest);
  // A damaged blob is removed (its name is its content's digest, so it can only be wrong):
  // the store that follows the rebuild writes it again.
  if (header.compare(0, want.size(), want) != 0 || header.back() != '\n') {
    ::unlink(path.c_str());
    return damaged(fmt::format("blob {}: bad header", path));
  }
  if (digest_hex(m->data(), bytes) != digest) {
    ::unlink(path.c_str());
    return damaged(fmt::format("blob {}: its bytes do not match their digest", path));
  }
  note_checked(path, opened);
  std::lock_guard lock(g_blobs_mu);
  mapped_blobs()[path] = m;
  return m;
}

}  // namespace

// Writes `parts` to `path` through a fresh temporary file in the same directory and rename(),
// so a reader sees the old file or the whole new one and two writers of one path both succeed.
Status write_atomically(const std::string& path, std::initializer_list<std::string_view> parts) {
  size_t total = 0;
  for (std::string_view p : parts) total += p.size();
  rlimit lim{};
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      total > static_cast<size_t>(lim.rlim_cur)) {
    // Checked before writing: going over the limit would raise SIGXFSZ, which ends the process.
    return make_error(StatusCode::kIo,
                      "'{}' needs {} bytes, over the file size limit (RLIMIT_FSIZE) of {} bytes",
                      path, total, static_cast<unsigned long long>(lim.rlim_cur));
  }
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, getpid(), counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(StatusCode::kIo, "cannot create '{}': {}", tmp, std::strerror(errno));
  }
  for (std::string_view p : parts) {
    size_t done = 0;
    while (done < p.size()) {
      const ssize_t n = ::write(fd, p.data() + done, p.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return make_error(StatusCode::kIo, "cannot write '{}': {}", tmp, std::strerror(err));
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error(StatusCode::kIo, "cannot write '{}': {}", path, std::strerror(err));
  }
  return Status();
}

// The whole file at `path`; kNotFound when it does not exist.
Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: a FIFO put in the cache must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return not_found("{}", path);
    return make_error(StatusCode::kIo, "cannot open '{}': {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(StatusCode::kIo, "'{}' is not a regular file", path);
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return make_error(StatusCode::kIo, "'{}' is {} bytes, over the limit of {}", path,
                      static_cast<long long>(st.st_size), max_bytes);
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(done);
  return out;
}

namespace {

// ---- what an entry holds -----------------------------------------------------------------

// One tensor storage of an entry: in the binary section (small) or a blob (4 KiB or more).
struct Storage {
  size_t bytes = 0;
  bool blob = false;
  size_t offset = 0;           // into the binary section
  std::string digest;          // of a blob
  const void* data = nullptr;  // when writing
};

// The tensor refs of a printed graph: one storage per distinct (address, byte count), so
// constants that share storage (copies of one initializer) still share it when read back.
class StorageTable {
 public:
  std::string ref(const Tensor& t) {
    if (t.nbytes() == 0) return "";
    const auto key = std::make_pair(t.raw_data(), t.nbytes());
    if (auto it = index_.find(key); it != index_.end()) return std::to_string(it->second);
    Storage s;
    s.bytes = t.nbytes();
    s.data = t.raw_data();
    if (s.bytes >= kBlobMinBytes) {
      s.blob = true;
      s.digest = tensor_digest(t);
    } else {
      binary_.resize((binary_.size() + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment);
      s.offset = binary_.size();
      binary_.append(static_cast<const char*>(t.raw_data()), s.bytes);
    }
    storages_.push_back(std::move(s));
    index_.emplace(key, storages_.size() - 1);
    return std::to_string(storages_.size() - 1);
  }
  const std::vector<Storage>& storages() const { return storages_; }
  const std::string& binary() const { return binary_; }

 private:
  std::map<std::pair<const void*, size_t>, size_t> index_;
  std::vector<Storage> storages_;
  std::string binary_;
};

// Typed accessors of the entry's JSON: an absent field or one of another type is an error
// naming the field, never an exception.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  Result<const json*> get(const char* name, json::value_t type) const {
    if (!j_.is_object()) return damaged("entry JSON is not an object");
    auto it = j_.find(name);
    const bool ok = it != j_.end() &&
                    (it->type() == type ||
                     (type == json::value_t::number_unsigned &&
                      it->type() == json::value_t::number_integer && it->get<int64_t>() >= 0));
    if (!ok) return damaged(fmt::format("entry field '{}' is missing or has the wrong type", name));
    return &*it;
  }

 private:
  const json& j_;
};

bool is_string(const json& j) { return j.is_string(); }
bool is_size(const json& j) { return j.is_number_unsigned(); }

// Checks the memory plan read from an entry before any buffer is bound to it: every value a
// node produces (graph outputs aside) has a 64-byte aligned slot inside the arena, large enough
// for its type, and two values alive at once never overlap, except an output written in place
// over the input whose last use is its own step (memory-planning's in-place rule).
Status check_buffers(const ir::Graph& g, const passes::PassContext& ctx,
                     const std::vector<ir::NodeId>& order) {
  std::vector<int64_t> step_of(g.num_node_slots(), -1);
  for (size_t i = 0; i < order.size(); ++i)
    step_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  const std::vector<std::vector<ir::NodeId>> uses = g.use_lists();
  struct Live {
    ir::ValueId v;
    int64_t def, last;
    size_t offset, bytes;
    bool in_place;
  };
  std::vector<Live> live;
  for (ir::NodeId id : order) {
    for (ir::ValueId v : g.node(id).outputs) {
      const ir::Value& val = g.value(v);
      if (g.is_output(v)) {
        if (ctx.buffers.count(v) > 0) {
          return damaged(fmt::format("buffer given for graph output '{}'", val.name));
        }
        continue;
      }
      auto it = ctx.buffers.find(v);
      if (it == ctx.buffers.end()) {
        return damaged(fmt::format("value '{}' has no buffer", val.name));
      }
      const passes::BufferSlot& b = it->second;
      Result<size_t> need = checked_nbytes(val.type->dtype, val.type->shape);
      if (!need.is_ok() || b.bytes < *need || b.offset % kTensorAlignment != 0 ||
          b.offset > ctx.peak_arena_bytes || b.bytes > ctx.peak_arena_bytes - b.offset) {
        return damaged(
            fmt::format("buffer of '{}' (offset {}, {} bytes) does not hold {} inside "
                        "the {}-byte arena",
                        val.name, b.offset, b.bytes, val.type->to_string(), ctx.peak_arena_bytes));
      }
      int64_t last = step_of[static_cast<size_t>(id)];
      for (ir::NodeId u : uses[static_cast<size_t>(v)])
        last = std::max(last, step_of[static_cast<size_t>(u)]);
      live.push_back({v, step_of[static_cast<size_t>(id)], last, b.offset, b.bytes, b.in_place});
    }
  }
  if (live.size() != ctx.buffers.size()) {
    return damaged("the memory plan has buffers for values no node produces");
  }
  std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) { return a.def < b.def; });
  for (size_t i = 0; i < live.size(); ++i) {
    const Live& a = live[i];
    for (size_t j = i + 1; j < live.size() && live[j].def <= a.last; ++j) {
      const Live& b = live[j];
      const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (!overlap) continue;
      const bool in_place = b.in_place && b.def == a.last && b.def > a.def && b.offset == a.offset;
      if (!in_place) {
        return damaged(fmt::format("buffers of '{}' and '{}' overlap while both are alive",
                                   g.value(a.v).name, g.value(b.v).name));
      }
    }
  }
  return Status();
}

// Kernels trust the types of the graph they run (a gemm reads K elements of its weight because
// its input type says K): every node's output types must be what its schema's shape function
// infers from its input types and constants. Checked by running shape inference on a copy (a
// check of the entry, not a compile: its types must come out unchanged).
Status check_types(const ir::Graph& g, const CompileOptions& resolved) {
  ir::Graph copy = g;
  passes::PassContext ctx = pass_context(resolved);
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<passes::Pass> infer, passes::make_pass("shape-inference"));
  if (Status s = infer->run(copy, ctx); !s.is_ok()) return s.with_prefix("entry graph: ");
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    for (ir::ValueId v : n.outputs) {
      const std::optional<ir::TensorType>& declared = g.value(v).type;
      const std::optional<ir::TensorType>& inferred = copy.value(v).type;
      if (!declared || !inferred || *declared != *inferred) {
        return damaged(fmt::format("node '{}' ({}) output '{}' is declared {}, its inputs give {}",
                                   n.name, n.op, g.value(v).name,
                                   declared ? declared->to_string() : "?",
                                   inferred ? inferred->to_string() : "?"));
      }
    }
  }
  return Status();
}

// The lowered graph an entry describes, checked against everything build_plan relies on.
// The packed forms of an entry's constants (its "packed" field: [storage, layout, bytes,
// blob digest] each) are offered through `offers` once their constants are mapped, so that the
// kernels built while it lives take them instead of packing again.
Result<LoweredGraph> lowered_from_json(const json& j, const std::string& binary,
                                       const CompileOptions& resolved, const std::string& blob_dir,
                                       frame::detail::PackedOffers& offers) {
  const Fields f(j);
  FRAME_ASSIGN_OR_RETURN(const json* storages_j, f.get("storages", json::value_t::array));
  std::vector<Storage> storages;
  for (const json& s : *storages_j) {
    if (!s.is_object() || !s.contains("bytes") || !is_size(s["bytes"])) {
      return damaged("entry storage without a byte count");
    }
    Storage st;
    st.bytes = s["bytes"].get<size_t>();
    if (s.contains("blob")) {
      if (!is_string(s["blob"]) || !is_digest(s["blob"].get<std::string>())) {
        return damaged("entry storage with a bad blob digest");
      }
      st.blob = true;
      st.digest = s["blob"].get<std::string>();
    } else {
      if (!s.contains("offset") || !is_size(s["offset"])) {
        return damaged("entry storage without an offset");
      }
      st.offset = s["offset"].get<size_t>();
      if (st.offset > binary.size() || st.bytes > binary.size() - st.offset) {
        return damaged(
            fmt::format("entry storage at {} ({} bytes) is past the {}-byte binary "
                        "section",
                        st.offset, st.bytes, binary.size()));
      }
    }
    storages.push_back(std::move(st));
  }
  // Storage made once per id; every ref of it views the same bytes.
  std::vector<std::shared_ptr<void>> made(storages.size());
  std::vector<void*> data(storages.size(), nullptr);
  ir::ParseOptions po;
  po.resolve_tensor = [&](std::string_view id, const ir::TensorType& type) -> Result<Tensor> {
    size_t k = 0;
    if (!parse_size(id, k) || k >= storages.size()) {
      return damaged(fmt::format("tensor ref \"{}\" names no storage", id));
    }
    const Storage& st = storages[k];
    Result<size_t> need = checked_nbytes(type.dtype, type.shape);
    if (!need.is_ok() || *need != st.bytes) {
      return damaged(fmt::format("tensor ref \"{}\" is {} bytes, its type {} needs {}", id,
                                 st.bytes, type.to_string(), need.is_ok() ? *need : 0));
    }
    if (!made[k]) {
      if (st.blob) {
        FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Mapping> m, map_blob(blob_dir, st.digest, st.bytes));
        data[k] = const_cast<std::byte*>(m->data());
        made[k] = std::move(m);
      } else {
        const size_t size = (st.bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
        void* p = frame::detail::allocate_aligned(size, kTensorAlignment);
        if (p == nullptr) return make_error(StatusCode::kOutOfRange, "out of memory");
        std::memcpy(p, binary.data() + st.offset, st.bytes);
        made[k] =
            std::shared_ptr<void>(p, [size](void* q) { frame::detail::free_aligned(q, size); });
        data[k] = p;
      }
    }
    return Tensor::wrap(type.dtype, type.shape, data[k], made[k]);
  };
  FRAME_ASSIGN_OR_RETURN(const json* graph_j, f.get("graph", json::value_t::string));
  Result<ir::Graph> parsed = ir::parse_text(graph_j->get_ref<const std::string&>(), po);
  if (!parsed.is_ok()) return parsed.status().with_prefix("entry graph: ");
  FRAME_ASSIGN_OR_RETURN(const json* packed_j, f.get("packed", json::value_t::array));
  for (const json& p : *packed_j) {
    if (!p.is_array() || p.size() != 4 || !is_size(p[0]) || !is_string(p[1]) || !is_size(p[2]) ||
        !is_string(p[3]) || !is_digest(p[3].get<std::string>())) {
      return damaged("entry packed form is not [storage, layout, bytes, blob]");
    }
    const size_t k = p[0].get<size_t>();
    if (k >= storages.size() || !storages[k].blob) {
      return damaged(fmt::format("entry packed form of storage {}, which is no blob", k));
    }
    if (!made[k]) continue;  // its constant is not in the graph
    const size_t bytes = p[2].get<size_t>();
    FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Mapping> m,
                           map_blob(blob_dir, p[3].get<std::string>(), bytes));
    void* bytes_at = const_cast<std::byte*>(m->data());
    offers.add(data[k], storages[k].bytes, p[1].get<std::string>(),
               Tensor::wrap(DTypeCode::kUInt8, {static_cast<int64_t>(bytes)}, bytes_at, m));
  }
  LoweredGraph out;
  out.graph = std::make_shared<ir::Graph>(std::move(*parsed));
  const ir::Graph& g = *out.graph;
  if (Status s = g.verify(nullptr); !s.is_ok()) return s.with_prefix("entry graph: ");
  for (ir::ValueId v : g.inputs()) {
    if (!g.value(v).type) return damaged("entry graph input without a type");
  }
  FRAME_RETURN_IF_ERROR(check_types(g, resolved));

  out.ctx = pass_context(resolved);
  passes::PassContext& ctx = out.ctx;
  FRAME_ASSIGN_OR_RETURN(const json* pl, f.get("placements", json::value_t::array));
  for (const json& p : *pl) {
    if (!p.is_array() || p.size() != 4 || !is_string(p[0]) || !is_string(p[1]) ||
        !is_string(p[2]) || !p[3].is_array()) {
      return damaged("entry placement is not [node, backend, path, rejected]");
    }
    const ir::NodeId id = g.find_node(p[0].get<std::string>());
    passes::NodePlacement np;
    np.backend = p[1].get<std::string>();
    np.path = p[2].get<std::string>();
    if (id < 0 || ctx.placements.count(id) > 0) {
      return damaged(
          fmt::format("entry placement of unknown or repeated node '{}'", p[0].get<std::string>()));
    }
    if (np.path != "kernel" && np.path != "decomposition" && np.path != "cpu-fallback") {
      return damaged(fmt::format("entry placement path '{}'", np.path));
    }
    if (std::find(resolved.backends.begin(), resolved.backends.end(), np.backend) ==
            resolved.backends.end() &&
        np.backend != "cpu") {
      return damaged(fmt::format("node '{}' placed on backend '{}', not in the chain",
                                 p[0].get<std::string>(), np.backend));
    }
    for (const json& r : p[3]) {
      if (!is_string(r)) return damaged("entry placement reason is not a string");
      np.rejected.push_back(r.get<std::string>());
    }
    ctx.placements.emplace(id, std::move(np));
  }
  if (ctx.placements.size() != g.num_nodes()) {
    return damaged(
        fmt::format("entry places {} of {} nodes", ctx.placements.size(), g.num_nodes()));
  }
  FRAME_ASSIGN_OR_RETURN(const json* peak,
                         f.get("peak_arena_bytes", json::value_t::number_unsigned));
  ctx.peak_arena_bytes = peak->get<size_t>();
  FRAME_ASSIGN_OR_RETURN(const json* bufs, f.get("buffers", json::value_t::array));
  for (const json& b : *bufs) {
    if (!b.is_array() || b.size() != 4 || !is_string(b[0]) || !is_size(b[1]) || !is_size(b[2]) ||
        !b[3].is_boolean()) {
      return damaged("entry buffer is not [value, offset, bytes, in_place]");
    }
    const ir::ValueId v = g.find_value(b[0].get<std::string>());
    if (v == ir::kNoValue || ctx.buffers.count(v) > 0) {
      return damaged(
          fmt::format("entry buffer of unknown or repeated value '{}'", b[0].get<std::string>()));
    }
    ctx.buffers.emplace(
        v, passes::BufferSlot{b[1].get<size_t>(), b[2].get<size_t>(), b[3].get<bool>()});
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  FRAME_RETURN_IF_ERROR(check_buffers(g, ctx, order));
  FRAME_ASSIGN_OR_RETURN(const json* rewrites, f.get("lowering_rewrites", json::value_t::array));
  for (const json& r : *rewrites) {
    if (!is_string(r)) return damaged("entry lowering rewrite is not a string");
    ctx.lowering_rewrites.push_back(r.get<std::string>());
  }
  FRAME_ASSIGN_OR_RETURN(const json* counts, f.get("op_counts_before", json::value_t::object));
  for (const auto& [op, n] : counts->items()) {
    if (!n.is_number_integer() || n.get<int64_t>() < 0 ||
        n.get<int64_t>() > std::numeric_limits<int>::max()) {
      return damaged("entry op count is not a count");
    }
    out.op_counts_before[op] = n.get<int>();
  }
  return out;
}

struct Header {
  std::string format, build, cpu, blobs, digest;
  size_t json_bytes = 0, binary_bytes = 0;
  size_t end = 0;  // offset of the JSON
};

// The entry's header lines, checked in order: format, build, CPU, then the section sizes.
Result<Header> parse_header(std::string_view bytes) {
  Header h;
  if (bytes.substr(0, kEntryMagic.size() + 1) != std::string(kEntryMagic) + " ") {
    return damaged("not a frame compile cache entry");
  }
  size_t pos = 0;
  std::vector<std::pair<std::string, std::string>> lines;
  for (;;) {
    const size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos || nl > kMaxHeaderBytes) {
      return damaged("truncated entry (no end of header)");
    }
    const std::string_view line = bytes.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) break;
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return damaged("entry header line without a value");
    lines.emplace_back(std::string(line.substr(0, sp)), std::string(line.substr(sp + 1)));
  }
  h.end = pos;
  auto field = [&](const char* name) -> std::string* {
    for (auto& [k, v] : lines) {
      if (k == name) return &v;
    }
    return nullptr;
  };
  if (lines[0].second != std::to_string(kDiskCacheFormat)) {
    return damaged(fmt::format("entry format {}, this build reads format {}",
                               printable(lines[0].second), kDiskCacheFormat));
  }
  const std::string* build = field("build");
  if (build == nullptr || *build != build_fingerprint()) {
    return damaged(fmt::format("entry written by '{}', this is '{}'",
                               build ? printable(*build) : "?", build_fingerprint()));
  }
  const std::string* cpu = field("cpu");
  if (cpu == nullptr || *cpu != cpu_fingerprint()) {
    return damaged(fmt::format("entry written on a CPU with other features ({}; this one: {})",
                               cpu ? printable(*cpu) : "?", cpu_fingerprint()));
  }
  const std::string* js = field("json");
  const std::string* bin = field("binary");
  const std::string* dg = field("digest");
  if (js == nullptr || bin == nullptr || dg == nullptr || !parse_size(*js, h.json_bytes) ||
      !parse_size(*bin, h.binary_bytes) || !is_digest(*dg)) {
    return damaged("entry header without section sizes and digest");
  }
  const size_t have = bytes.size() - h.end;
  if (h.json_bytes > have || h.binary_bytes != have - h.json_bytes) {
    return damaged(
        fmt::format("truncated or padded entry: {} bytes after the header, the header "
                    "says {} + {}",
                    have, h.json_bytes, h.binary_bytes));
  }
  h.digest = *dg;
  const std::string* blobs = field("blobs");
  if (blobs == nullptr) return damaged("entry header without its blobs line");
  h.blobs = *blobs;
  return h;
}

// The referenced blob digests of the entry file at `path` (its header's blobs line).
std::vector<std::string> entry_blobs(const std::string& path) {
  std::vector<std::string> out;
  Result<std::string> head = read_file(path, kMaxEntryBytes);
  if (!head.is_ok()) return out;
  const size_t at = head->find("\nblobs ");
  if (at == std::string::npos) return out;
  const size_t end = head->find('\n', at + 1);
  std::string_view list = std::string_view(*head).substr(at + 7, end - at - 7);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view d = list.substr(0, comma);
    if (is_digest(d)) out.emplace_back(d);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

DiskCache::DiskCache(std::string dir, size_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

void DiskCache::warn(const std::string& message) const {
  const std::string line = fmt::format("frame: warning: compile cache '{}': {}\n", dir_, message);
  std::fputs(line.c_str(), stderr);
}

void DiskCache::disable(const std::string& why) {
  std::lock_guard lock(mu_);
  if (disabled_) return;
  disabled_ = true;
  warn(why + "; running without the compile cache");
}

DiskCacheCounters DiskCache::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

Result<Executable> DiskCache::parse_entry(std::string_view bytes, const std::string& key,
                                          const CompileOptions& resolved,
                                          const std::string& blob_dir) {
  auto t0 = std::chrono::steady_clock::now();
  FRAME_ASSIGN_OR_RETURN(Header h, parse_header(bytes));
  const std::string_view payload = bytes.substr(h.end);
  if (digest_hex(payload.data(), payload.size()) != h.digest) {
    return damaged("entry bytes do not match their digest (damaged)");
  }
  const json j = json::parse(payload.substr(0, h.json_bytes), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return damaged("entry JSON does not parse");
  const Fields f(j);
  FRAME_ASSIGN_OR_RETURN(const json* k, f.get("key", json::value_t::string));
  if (k->get_ref<const std::string&>() != key) {
    return damaged("entry holds another key (a digest collision or a foreign file)");
  }
  // The header's blob list (read by eviction without the JSON) must name the storages' blobs.
  std::string blob_list;
  if (const json* st = j.is_object() && j.contains("storages") ? &j["storages"] : nullptr;
      st != nullptr && st->is_array()) {
    for (const json& e : *st) {
      if (e.is_object() && e.contains("blob") && e["blob"].is_string()) {
        blob_list += (blob_list.empty() ? "" : ",") + e["blob"].get<std::string>();
      }
    }
  }
  if (const json* pk = j.is_object() && j.contains("packed") ? &j["packed"] : nullptr;
      pk != nullptr && pk->is_array()) {
    for (const json& e : *pk) {
      if (e.is_array() && e.size() == 4 && e[3].is_string()) {
        blob_list += (blob_list.empty() ? "" : ",") + e[3].get<std::string>();
      }
    }
  }
  if ((blob_list.empty() ? "-" : blob_list) != h.blobs) {
    return damaged("the entry header's blob list differs from its storages and packed forms");
  }
  const std::string binary(payload.substr(h.json_bytes));
  // Held until the plan is built: its kernels take the packed forms offered (and keep them).
  frame::detail::PackedOffers offers;
  FRAME_ASSIGN_OR_RETURN(LoweredGraph lowered,
                         lowered_from_json(j, binary, resolved, blob_dir, offers));
  const std::chrono::duration<double, std::milli> read = std::chrono::steady_clock::now() - t0;
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledCore> core,
                         build_core(std::move(lowered), resolved, {{"disk_read", read.count()}},
                                    std::chrono::steady_clock::now()));
  auto impl = std::make_shared<ExecutableImpl>();
  impl->core = core;
  impl->report = core->report;
  impl->report.disk_cache_hit = true;
  return Executable(std::move(impl));
}

std::optional<Executable> DiskCache::load(const std::string& key, const CompileOptions& resolved) {
  const std::string path = entry_path(dir_, key);
  Result<std::string> bytes = read_file(path, kMaxEntryBytes);
  if (!bytes.is_ok()) {
    const bool found = bytes.status().code() != StatusCode::kNotFound;
    if (found) warn(bytes.status().message() + "; compiling it again");
    std::lock_guard lock(mu_);
    ++counters_.misses;
    if (found) ++counters_.rejected;
    return std::nullopt;
  }
  Result<Executable> exe = parse_entry(*bytes, key, resolved, dir_);
  if (!exe.is_ok()) {
    warn(fmt::format("ignoring entry {}: {}; compiling it again", path, exe.status().message()));
    std::lock_guard lock(mu_);
    ++counters_.misses;
    ++counters_.rejected;
    return std::nullopt;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // least recently used goes first
  std::lock_guard lock(mu_);
  ++counters_.hits;
  return std::move(exe).value();
}

void DiskCache::store(const std::string& key, const Executable& exe) {
  {
    std::lock_guard lock(mu_);
    if (disabled_) return;
  }
  const ir::Graph& g = exe.compiled_graph();
  const CompileReport& report = exe.report();
  StorageTable table;
  ir::PrintOptions po;
  po.tensor_ref = [&](const Tensor& t) { return table.ref(t); };
  json j;
  j["key"] = key;
  j["graph"] = ir::print_text(g, po);
  json storages = json::array();
  std::vector<std::string> blob_digests;
  for (const Storage& s : table.storages()) {
    if (s.blob) {
      storages.push_back({{"bytes", s.bytes}, {"blob", s.digest}});
      blob_digests.push_back(s.digest);
    } else {
      storages.push_back({{"bytes", s.bytes}, {"offset", s.offset}});
    }
  }
  j["storages"] = std::move(storages);
  // The packed forms kernels made of the entry's large constants (stored once, like the
  // constants: a blob is named by its bytes). A layout name that is not printable text (a
  // oneDNN format other than blocked) is not stored.
  struct PackedBlob {
    std::string digest;
    Tensor bytes;
  };
  std::vector<PackedBlob> packed_blobs;
  json packed = json::array();
  for (size_t k = 0; k < table.storages().size(); ++k) {
    const Storage& s = table.storages()[k];
    if (!s.blob) continue;
    for (auto& [layout, bytes] : frame::detail::packed_copies_of(s.data, s.bytes)) {
      if (!std::all_of(layout.begin(), layout.end(),
                       [](char c) { return c >= 0x20 && c < 0x7f; }) ||
          layout.find("raw:") != std::string::npos) {
        continue;
      }
      std::string digest = tensor_digest(bytes);
      packed.push_back({k, layout, bytes.nbytes(), digest});
      blob_digests.push_back(digest);
      packed_blobs.push_back({std::move(digest), std::move(bytes)});
    }
  }
  j["packed"] = std::move(packed);
  // Placements and buffers by name: the text form renumbers ids.
  const CompiledCore& core = *exe.impl_->core;
  json pl = json::array();
  for (const auto& [id, p] : core.placements) {
    pl.push_back({g.node(id).name, p.backend, p.path, p.rejected});
  }
  j["placements"] = std::move(pl);
  json bufs = json::array();
  for (const auto& [v, b] : core.buffers) {
    bufs.push_back({g.value(v).name, b.offset, b.bytes, b.in_place});
  }
  j["buffers"] = std::move(bufs);
  j["peak_arena_bytes"] = report.peak_arena_bytes;
  j["lowering_rewrites"] = report.lowering_rewrites;
  j["op_counts_before"] = report.op_counts_before;
  const std::string& binary = table.binary();
  size_t blob_bytes = 0, packed_bytes = 0;
  for (const Storage& s : table.storages()) blob_bytes += s.blob ? kBlobHeaderBytes + s.bytes : 0;
  for (const PackedBlob& b : packed_blobs) packed_bytes += kBlobHeaderBytes + b.bytes.nbytes();
  std::string js, header;
  auto compose = [&] {
    js = j.dump();
    const std::string payload = js + binary;
    std::string blob_list;
    for (const std::string& d : blob_digests) blob_list += (blob_list.empty() ? "" : ",") + d;
    header = fmt::format("{} {}\nbuild {}\ncpu {}\nblobs {}\njson {}\nbinary {}\ndigest {}\n\n",
                         kEntryMagic, kDiskCacheFormat, build_fingerprint(), cpu_fingerprint(),
                         blob_list.empty() ? "-" : blob_list, js.size(), binary.size(),
                         digest_hex(payload.data(), payload.size()));
    return header.size() + js.size() + binary.size() + blob_bytes + packed_bytes;
  };
  size_t total = compose();
  if (total > max_bytes_ && !packed_blobs.empty()) {
    // Over the directory's bound; without its packed forms (which double a model's weights on
    // disk) it may fit, and then goes without them: a warm start packs again but skips the
    // compiler.
    blob_digests.resize(blob_digests.size() - packed_blobs.size());
    packed_blobs.clear();
    packed_bytes = 0;
    j["packed"] = json::array();
    total = compose();
  }
  if (total > max_bytes_) {  // larger than the whole cache: not kept (like the LRU)
    std::lock_guard lock(mu_);
    if (!warned_oversize_) {
      warned_oversize_ = true;
      warn(
          fmt::format("an entry of {} bytes is over the directory's bound of {} bytes "
                      "(max_cache_dir_bytes); such entries are not stored",
                      total, max_bytes_));
    }
    return;
  }

  std::error_code ec;
  fs::create_directories(fs::path(dir_) / "entries", ec);
  if (!ec) fs::create_directories(fs::path(dir_) / "blobs", ec);
  if (ec) {
    disable(fmt::format("cannot create the directory: {}", ec.message()));
    return;
  }
  std::vector<std::pair<const std::string*, std::string_view>> blobs;  // digest, bytes
  for (const Storage& s : table.storages()) {
    if (s.blob)
      blobs.emplace_back(&s.digest, std::string_view(static_cast<const char*>(s.data), s.bytes));
  }
  for (const PackedBlob& b : packed_blobs) {
    blobs.emplace_back(&b.digest, std::string_view(static_cast<const char*>(b.bytes.raw_data()),
                                                   b.bytes.nbytes()));
  }
  for (const auto& [digest, bytes] : blobs) {
    const std::string path = blob_path(dir_, *digest);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 &&
        static_cast<size_t>(st.st_size) == kBlobHeaderBytes + bytes.size()) {
      // Stored by an earlier entry (contents are addressed by their digest): kept once it is
      // known intact (map_blob checks it and removes it when damaged).
      if (checked_unchanged(path, st) || map_blob(dir_, *digest, bytes.size()).is_ok()) continue;
    }
    std::string head =
        fmt::format("{} {} {} {}", kBlobMagic, kDiskCacheFormat, bytes.size(), *digest);
    head.resize(kBlobHeaderBytes - 1, ' ');
    head += '\n';
    if (Status w = write_atomically(path, {head, bytes}); !w.is_ok()) {
      disable(w.message());
      return;
    }
    if (::stat(path.c_str(), &st) == 0) note_checked(path, st);
  }
  if (Status w = write_atomically(entry_path(dir_, key), {header, js, binary}); !w.is_ok()) {
    disable(w.message());
    return;
  }
  {
    std::lock_guard lock(mu_);
    ++counters_.writes;
  }
  evict_over_budget();
}

void DiskCache::evict_over_budget() {
  struct File {
    fs::path path;
    size_t bytes;
    fs::file_time_type mtime;
  };
  std::vector<File> entries;
  std::map<std::string, size_t> blobs;  // digest -> bytes
  size_t total = 0;
  std::error_code ec;
  // A temporary file (write_atomically's "<name>.tmp.<pid>.<n>") an hour old is what a writer
  // killed mid-write left: removed, so the directory does not grow past its bound with them.
  const auto stale_before = fs::file_time_type::clock::now() - std::chrono::hours(1);
  const auto remove_if_stale_temp = [&](const fs::directory_entry& e) {
    std::error_code ec2;
    if (e.path().filename().string().find(".tmp.") != std::string::npos && e.is_regular_file(ec2) &&
        e.last_write_time(ec2) < stale_before) {
      fs::remove(e.path(), ec2);
    }
  };
  for (const auto& e : fs::directory_iterator(fs::path(dir_) / "entries", ec)) {
    std::error_code ec2;
    remove_if_stale_temp(e);
    if (e.path().extension() != ".entry" || !e.is_regular_file(ec2)) continue;
    const size_t n = static_cast<size_t>(e.file_size(ec2));
    entries.push_back({e.path(), n, e.last_write_time(ec2)});
    total += n;
  }
  for (const auto& e : fs::directory_iterator(fs::path(dir_) / "blobs", ec)) {
    std::error_code ec2;
    remove_if_stale_temp(e);
    if (e.path().extension() != ".blob" || !e.is_regular_file(ec2)) continue;
    const size_t n = static_cast<size_t>(e.file_size(ec2));
    blobs[e.path().stem().string()] = n;
    total += n;
  }
  if (total <= max_bytes_) return;
  // Oldest first; the newest entry (just written) is kept.
  std::sort(entries.begin(), entries.end(),
            [](const File& a, const File& b) { return a.mtime < b.mtime; });
  size_t removed = 0;
  while (total > max_bytes_ && removed + 1 < entries.size()) {
    fs::remove(entries[removed].path, ec);
    total -= entries[removed].bytes;
    ++removed;
    std::set<std::string> kept;
    for (size_t i = removed; i < entries.size(); ++i) {
      for (std::string& d : entry_blobs(entries[i].path.string())) kept.insert(std::move(d));
    }
    for (auto it = blobs.begin(); it != blobs.end();) {
      if (kept.count(it->first) == 0) {
        fs::remove(blob_path(dir_, it->first), ec);
        total -= it->second;
        it = blobs.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace frame::runtime::detail

namespace frame::runtime {

namespace {

constexpr std::string_view kRecordMagic = "frame-cache-record";

std::string record_path(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / "records" / (digest_hex(key.data(), key.size()) + ".record"))
      .string();
}

}  // namespace

// A record: "frame-cache-record <format>\nbuild <fingerprint>\nkey <bytes>\nvalue <bytes>\n
// digest <digest of key and value>\n\n<key><value>".
std::optional<std::string> read_cache_record(const std::string& dir, const std::string& key) {
  Result<std::string> bytes = detail::read_file(record_path(dir, key), size_t{16} << 20);
  if (!bytes.is_ok()) return std::nullopt;
  const std::string want =
      fmt::format("{} {}\nbuild {}\nkey {}\nvalue ", kRecordMagic, detail::kDiskCacheFormat,
                  detail::build_fingerprint(), key.size());
  const std::string& b = *bytes;
  if (b.compare(0, want.size(), want) != 0) return std::nullopt;
  size_t value_bytes = 0;
  const size_t nl = b.find('\n', want.size());
  if (nl == std::string::npos ||
      !detail::parse_size(std::string_view(b).substr(want.size(), nl - want.size()), value_bytes)) {
    return std::nullopt;
  }
  const std::string digest_line = "digest ";
  if (b.compare(nl + 1, digest_line.size(), digest_line) != 0) return std::nullopt;
  const size_t body = nl + 1 + digest_line.size() + 32 + 2;
  if (body > b.size() || b.size() - body != key.size() + value_bytes ||
      b.compare(body - 2, 2, "\n\n") != 0) {
    return std::nullopt;
  }
  const std::string_view payload = std::string_view(b).substr(body);
  if (b.compare(nl + 1 + digest_line.size(), 32, digest_hex(payload.data(), payload.size())) != 0 ||
      payload.substr(0, key.size()) != key) {
    return std::nullopt;
  }
  return std::string(payload.substr(key.size()));
}

bool write_cache_record(const std::string& dir, const std::string& key, std::string_view value) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir) / "records", ec);
  if (ec) return false;
  const std::string payload = key + std::string(value);
  const std::string header =
      fmt::format("{} {}\nbuild {}\nkey {}\nvalue {}\ndigest {}\n\n", kRecordMagic,
                  detail::kDiskCacheFormat, detail::build_fingerprint(), key.size(), value.size(),
                  digest_hex(payload.data(), payload.size()));
  return detail::write_atomically(record_path(dir, key), {header, payload}).is_ok();
}

}  // namespace frame::runtime
