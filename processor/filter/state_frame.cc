#include "processor/filter/state_frame.h"

#include <xxhash.h>

#include <cstring>

namespace oncecount::filter {
namespace {

constexpr char kMagic[4] = {'O', 'C', 'D', 'F'};
constexpr size_t kHeaderBytes = 16;
constexpr size_t kChecksumBytes = 8;

uint64_t Checksum(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace

void WriteStateFrame(DedupMode mode, uint8_t constituent, std::string& out,
                     const std::function<void(base::ByteWriter&)>& write_payload) {
  const size_t start = out.size();
  base::ByteWriter w(out);
  out.append(kMagic, 4);
  w.U16(kStateFormatVersion);
  w.U8(static_cast<uint8_t>(mode));
  w.U8(constituent);
  w.U64(0);  // payload length, patched below
  write_payload(w);
  const uint64_t payload = out.size() - start - kHeaderBytes;
  for (int i = 0; i < 8; ++i) out[start + 8 + i] = static_cast<char>((payload >> (8 * i)) & 0xFF);
  w.U64(Checksum(std::string_view(out).substr(start)));
}

base::Result<StateFrame> ReadStateFrame(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes + kChecksumBytes) return CorruptState("shorter than its header");
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) return CorruptState("bad magic");
  base::ByteReader header(bytes.substr(4, kHeaderBytes - 4));
  const uint16_t version = header.U16();
  StateFrame frame;
  frame.mode = header.U8();
  frame.constituent = header.U8();
  const uint64_t payload = header.U64();
  if (version != kStateFormatVersion && version != kUnboundedStateFormatVersion) {
    return CorruptState("format version " + std::to_string(version) +
                        " is not supported (expected " +
                        std::to_string(kUnboundedStateFormatVersion) + " or " +
                        std::to_string(kStateFormatVersion) + ")");
  }
  frame.version = version;
  if (payload != bytes.size() - kHeaderBytes - kChecksumBytes) {
    return CorruptState("length mismatch");
  }
  base::ByteReader trailer(bytes.substr(bytes.size() - kChecksumBytes));
  if (trailer.U64() != Checksum(bytes.substr(0, bytes.size() - kChecksumBytes))) {
    return CorruptState("checksum mismatch");
  }
  frame.payload = bytes.substr(kHeaderBytes, payload);
  return frame;
}

base::Result<uint64_t> DecodeLimits::BoundFor(uint64_t declared) const {
  if (declared > most) {
    return CorruptState("a memory bound of " + std::to_string(declared) +
                        " bytes, above the most a decoded filter may take (" +
                        std::to_string(most) + ")");
  }
  return declared != 0 ? declared : bound_if_none;
}

base::Error CorruptState(const std::string& what) {
  return base::Corrupt("corrupt filter state: " + what);
}

}  // namespace oncecount::filter
