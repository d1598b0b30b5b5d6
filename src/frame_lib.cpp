// Anchor translation unit of libframe.so; the layers are linked whole-archive into it.
namespace frame {
/// Library version string.
const char* version() { return "0.1.0"; }
}  // namespace frame
