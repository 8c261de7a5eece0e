#include "processor/service/local_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "processor/base/byte_io.h"

namespace oncecount::service {
namespace {

constexpr char kMagic[4] = {'O', 'C', 'C', 'P'};
constexpr uint16_t kVersion = 3;  // 1: without the claim offset; 2: without the snapshot end
constexpr size_t kMaxSnapshotBytes = std::numeric_limits<uint32_t>::max();

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Writes all of `bytes` to `fd`.
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string EncodeCheckpoint(const LocalCheckpoint& c) {
  std::string out;
  out.reserve(4 + 2 + 4 + 8 * 6 + 4 + c.snapshot.size() + 8);
  base::ByteWriter w(out);
  for (char ch : kMagic) w.U8(static_cast<uint8_t>(ch));
  w.U16(kVersion);
  w.U32(static_cast<uint32_t>(c.partition.value()));
  w.U64(c.epoch.value());
  w.U64(c.claim);
  w.U64(c.seq.value());
  w.I64(c.changelog_offset.value());
  w.I64(c.check_from ? c.check_from->value() : -1);
  w.I64(c.snapshot_end ? c.snapshot_end->value() : -1);
  w.Bytes(c.snapshot);
  w.U64(XXH3_64bits(out.data(), out.size()));
  return out;
}

base::Result<LocalCheckpoint> DecodeCheckpoint(std::string_view bytes) {
  if (bytes.size() < 4 + 8 || bytes.substr(0, 4) != std::string_view(kMagic, 4)) {
    return base::Corrupt("local checkpoint: bad magic");
  }
  const std::string_view covered = bytes.substr(0, bytes.size() - 8);
  base::ByteReader tail(bytes.substr(covered.size()));
  if (tail.U64() != XXH3_64bits(covered.data(), covered.size())) {
    return base::Corrupt("local checkpoint: checksum mismatch");
  }
  base::ByteReader r(covered.substr(4));
  const uint16_t version = r.U16();
  if (version == 0 || version > kVersion) {
    return base::Corrupt("local checkpoint: unsupported version " + std::to_string(version));
  }
  LocalCheckpoint c;
  c.partition = base::Partition(static_cast<int32_t>(r.U32()));
  c.epoch = base::Epoch(r.U64());
  c.claim = r.U64();
  c.seq = base::Seq(r.U64());
  c.changelog_offset = base::Offset(r.I64());
  if (version >= 2) {
    if (const base::Offset check_from(r.I64()); check_from != base::Offset(-1)) {
      c.check_from = check_from;
    }
  }
  if (version >= 3) {
    if (const base::Offset end(r.I64()); end != base::Offset(-1)) c.snapshot_end = end;
  }
  c.snapshot = std::string(r.Bytes(kMaxSnapshotBytes));
  if (!r.done()) return base::Corrupt("local checkpoint: truncated or trailing bytes");
  if (c.partition.value() < 0 || base::IsLogical(c.changelog_offset) || c.seq == base::Seq() ||
      (c.check_from && (base::IsLogical(*c.check_from) || *c.check_from > c.changelog_offset)) ||
      (c.snapshot_end && (!c.check_from || *c.snapshot_end < c.changelog_offset))) {
    return base::Corrupt("local checkpoint: impossible position");
  }
  return c;
}

std::string CheckpointPath(const std::string& dir, const std::string& changelog_topic,
                           base::Partition partition) {
  return dir + "/" + changelog_topic + "-" + std::to_string(partition.value()) + ".checkpoint";
}

base::Status WriteCheckpoint(const std::string& dir, const std::string& changelog_topic,
                             const LocalCheckpoint& checkpoint) {
  if (checkpoint.snapshot.size() > kMaxSnapshotBytes) {
    return base::InvalidArgument("local checkpoint: snapshot too large");
  }
  const std::string path = CheckpointPath(dir, changelog_topic, checkpoint.partition);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return base::IoFailure(Errno("cannot create " + tmp));
  const bool written = WriteAll(fd, EncodeCheckpoint(checkpoint)) && ::fsync(fd) == 0;
  const std::string write_error = written ? "" : Errno("cannot write " + tmp);
  ::close(fd);
  if (!written) {
    std::remove(tmp.c_str());
    return base::IoFailure(write_error);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return base::IoFailure(Errno("cannot rename " + tmp));
  }
  // The rename is durable once the directory is.
  if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return {};
}

base::Result<std::optional<LocalCheckpoint>> ReadCheckpoint(const std::string& dir,
                                                            const std::string& changelog_topic,
                                                            base::Partition partition) {
  const std::string path = CheckpointPath(dir, changelog_topic, partition);
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    if (errno == ENOENT) return std::optional<LocalCheckpoint>();
    return base::IoFailure(Errno("cannot open " + path));
  }
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return base::IoFailure("cannot read " + path);
  auto decoded = DecodeCheckpoint(bytes);
  if (!decoded) return std::move(decoded).error().Wrap(path);
  if (decoded->partition != partition) {
    return base::Corrupt(path + ": holds shard " + std::to_string(decoded->partition.value()));
  }
  return std::optional<LocalCheckpoint>(std::move(decoded).value());
}

}  // namespace oncecount::service
