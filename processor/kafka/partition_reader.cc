#include "processor/kafka/partition_reader.h"

#include <algorithm>
#include <set>

namespace oncecount::kafka {

namespace {

// Two records with offsets between them that hold nothing to read: transaction
// markers (or aborted records, which only a cluster that writes markers hides) —
// unless retention deleted them while the read ran and the reader jumped to the new
// log start. Retention deletes from the front, so offsets after a record the
// partition still keeps were not deleted.
void NoteMarkers(Clients& clients, const std::string& topic,
                 const std::map<base::Partition, base::Offset>& before_skip,
                 std::chrono::milliseconds timeout) {
  for (const auto& [p, before] : before_skip) {
    if (clients.WritesTransactionMarkers()) return;
    const auto start = clients.LogStart(topic, p, timeout);
    if (start && start.value() <= before) clients.NoteTransactionMarker();
  }
}

}  // namespace

base::Result<std::map<base::Partition, base::Offset>> StreamPartitions(
    Clients& clients, base::Clock& clock, const std::string& topic,
    const std::vector<base::Partition>& partitions, std::chrono::milliseconds wait_limit,
    const RecordSink& sink, const std::map<base::Partition, base::Offset>& start,
    const ProgressSink& progress) {
  std::map<base::Partition, base::Offset> result;  // partition → next offset
  if (partitions.empty()) return result;
  // Pushed back each time the read moves: the limit is on waiting, not on reading a
  // long tail.
  int64_t deadline = clock.SteadyMs() + wait_limit.count();
  std::map<base::Partition, base::Offset> target;  // the high watermark when the read began
  std::vector<TopicPartitionOffset> assignment;
  for (base::Partition p : partitions) {
    auto high = clients.HighWatermark(topic, p, wait_limit);
    if (!high) return high.error();
    const auto from = start.find(p);
    const base::Offset first = from == start.end() ? base::Offset(0) : from->second;
    result[p] = first;
    if (high.value() > first) {
      target[p] = high.value();
      // A read from the oldest record reports once it has one: the log's start is
      // not 0 once retention or compaction removed records.
      if (progress && from != start.end()) progress(p, first, high.value());
      assignment.push_back({topic, p, from == start.end() ? kOffsetBeginning : first});
    }
  }
  if (assignment.empty()) return result;
  auto reader = clients.NewPartitionReader("changelog-reader");
  if (!reader) return reader.error();
  if (KafkaError e = reader.value()->Assign(assignment)) return base::KafkaFailure(e.ToString());
  std::set<base::Partition> open;
  for (const auto& [p, high] : target) open.insert(p);
  std::map<base::Partition, base::Offset> last_reached = result;
  std::map<base::Partition, base::Offset> last_record;
  // Per partition, the record after which the newest skipped offset was seen.
  std::map<base::Partition, base::Offset> before_skip;
  while (!open.empty()) {
    if (clock.SteadyMs() > deadline) {
      const base::Partition p = *open.begin();
      return base::Error(
          base::Errc::kUnavailable,
          "reading " + topic + "/" + std::to_string(p.value()) + " stopped at offset " +
              std::to_string(result[p].value()) + " for " + std::to_string(wait_limit.count()) +
              " ms short of the high watermark " + std::to_string(target[p].value()) +
              ": a transaction begun before the read is still open (the broker aborts one "
              "whose owner died after kafka.transaction_timeout_ms, at its next check)");
    }
    std::optional<Message> m = reader.value()->Poll(std::chrono::milliseconds(100));
    if (!m) {
      clock.Sleep(std::chrono::milliseconds(10));
      continue;
    }
    if (!open.contains(m->partition)) continue;
    base::Offset& next_offset = result[m->partition];
    base::Offset reached;
    if (m->kind == MessageKind::kRecord) {
      const auto [before, first] = last_record.try_emplace(m->partition, m->offset);
      if (!first && m->offset > before->second.Next()) before_skip[m->partition] = before->second;
      before->second = m->offset;
      if (m->value) sink(m->partition, *m->value);
      next_offset = m->offset.Next();
      reached = next_offset;
    } else if (m->kind == MessageKind::kPartitionEnd) {
      next_offset = std::max(next_offset, m->offset);
      reached = m->offset;
    } else if (m->kind == MessageKind::kFatal || m->kind == MessageKind::kError) {
      return base::KafkaFailure("reading " + topic + ": " + m->error);
    } else if (m->kind == MessageKind::kUnreadable) {
      // Read on, the state would be built without it: what it held is not known.
      return base::Corrupt(
          "reading " + topic + ": partition " + std::to_string(m->partition.value()) + ", offset " +
          std::to_string(m->offset.value()) + " cannot be read (" + m->error + ")");
    }
    if (reached > last_reached[m->partition]) {
      last_reached[m->partition] = reached;
      deadline = clock.SteadyMs() + wait_limit.count();
    }
    if (progress && reached > base::Offset(0))
      progress(m->partition, reached, target[m->partition]);
    if (reached >= target[m->partition]) open.erase(m->partition);
  }
  reader.value()->Close();
  NoteMarkers(clients, topic, before_skip, wait_limit);
  return result;
}

base::Result<ReadResult> ReadPartitions(Clients& clients, base::Clock& clock,
                                        const std::string& topic,
                                        const std::vector<base::Partition>& partitions,
                                        std::chrono::milliseconds wait_limit,
                                        const std::map<base::Partition, base::Offset>& start) {
  ReadResult result;
  auto read = StreamPartitions(
      clients, clock, topic, partitions, wait_limit,
      [&result](base::Partition p, std::string_view value) {
        result[p].records.emplace_back(value);
      },
      start);
  if (!read) return read.error();
  for (const auto& [p, next] : read.value()) result[p].next_offset = next;
  return result;
}

}  // namespace oncecount::kafka
